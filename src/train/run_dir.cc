#include "train/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/object_store.h"

namespace qmlsim::train {
namespace fs = std::filesystem;

// A bucket's run: its location and what each local file was when last sent.
struct RunDir::Mirror {
  io::S3Location prefix;  // key ends in '/'
  mutable std::map<std::string, std::pair<std::uintmax_t, fs::file_time_type>> sent;
};

namespace {
std::pair<std::uintmax_t, fs::file_time_type> stamp(const fs::path& p) {
  return {fs::file_size(p), fs::last_write_time(p)};
}

// An Error naming the first symbolic link among the run's entries (the folder
// itself, named by the user, may be one): a link planted in a shared run
// directory would make the trainer write or read wherever it points.
void refuse_links(const std::string& run) {
  std::error_code ec;
  for (const fs::path& dir : {fs::path(run), fs::path(run) / "checkpoints"})
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_symlink(ec))  // checkpoints/ itself is checked in the first pass
        throw Error(it->path().string() +
                    ": a symbolic link in the run directory; refusing to follow it (remove it)");
}

// The path inside the run of an object key under the run's prefix, or "" for
// a folder marker (a key ending in '/'). A key that would leave the mirror (an
// empty, '.' or '..' segment, which an absolute remainder has; a backslash; a
// control byte) is an Error naming it: nothing is written outside the mirror.
std::string run_file_of_key(const std::string& url, const std::string& key,
                            const std::string& prefix) {
  if (key.size() <= prefix.size() || key.compare(0, prefix.size(), prefix) != 0)
    throw Error(url + ": the bucket listed object key '" + key + "', which is not inside the run");
  std::string rel = key.substr(prefix.size());
  const bool folder = !rel.empty() && rel.back() == '/';
  if (folder) rel.pop_back();
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = std::min(rel.find('/', start), rel.size());
    const std::string segment = rel.substr(start, end - start);
    const bool bad = segment.empty() || segment == "." || segment == ".." ||
                     std::any_of(segment.begin(), segment.end(), [](char ch) {
                       return ch == '\\' || static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
                     });
    if (bad)
      throw Error(url + ": object key '" + key +
                  "' is not a file inside the run (an empty, '.' or '..' segment, a backslash or "
                  "a control byte); remove it from the bucket");
    if (end == rel.size()) break;
    start = end + 1;
  }
  return folder ? "" : rel;
}
}  // namespace

RunDir::RunDir(std::string path) {
  if (io::is_s3_url(path)) {
    url_ = path;
    while (url_.size() > 5 && url_.back() == '/') url_.pop_back();
    mirror_ = std::make_unique<Mirror>();
    mirror_->prefix = io::parse_s3_url(url_, "run directory");
    if (!mirror_->prefix.key.empty()) mirror_->prefix.key += '/';
    std::string tmpl = (fs::temp_directory_path() / "qmlsim-run-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw Error(url_ + ": cannot create a local mirror folder");
    path_ = tmpl;
    try {
      const io::ObjectStore& store = io::object_store();
      for (const std::string& key : store.list(mirror_->prefix)) {
        if (key == mirror_->prefix.key) continue;  // the prefix's own folder marker
        const std::string rel = run_file_of_key(url_, key, mirror_->prefix.key);
        if (rel.empty()) continue;
        const fs::path local = fs::path(path_) / rel;
        if (!store.get_to_file({mirror_->prefix.bucket, key}, local.string()))
          continue;  // deleted since the listing
        mirror_->sent[rel] = stamp(local);
      }
    } catch (...) {  // no destructor runs for a constructor that throws
      std::error_code ec;
      fs::remove_all(path_, ec);
      throw;
    }
  } else {
    path_ = std::move(path);
  }
  refuse_links(path_);
  std::error_code ec;
  fs::create_directories(fs::path(path_) / "checkpoints", ec);
  if (ec && fs::is_symlink(fs::symlink_status(path_)) && !fs::exists(path_))
    throw Error(path_ + ": cannot create run directory: a symbolic link to " +
                fs::read_symlink(path_).string() + ", which does not exist");
  if (ec) throw Error(path_ + ": cannot create run directory: " + ec.message());
}

RunDir::~RunDir() {
  if (!mirror_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string RunDir::location(const std::string& name) const {
  const std::string& base = url_.empty() ? path_ : url_;
  return name.empty() ? base : base + "/" + name;
}

void RunDir::sync() const {
  if (!mirror_) return;
  std::vector<std::string> files, checkpoints;
  bool result = false;
  for (const auto& e : fs::recursive_directory_iterator(path_)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), path_).generic_string();
    if (rel.size() > 4 && rel.substr(rel.size() - 4) == ".tmp") continue;  // being written
    const auto it = mirror_->sent.find(rel);
    if (it != mirror_->sent.end() && it->second == stamp(e.path())) continue;
    if (rel == "result.json")
      result = true;
    else
      (rel.rfind("checkpoints/", 0) == 0 ? checkpoints : files).push_back(rel);
  }
  std::sort(checkpoints.begin(), checkpoints.end());
  if (result) files.push_back("result.json");
  files.insert(files.end(), checkpoints.begin(), checkpoints.end());
  const io::ObjectStore& store = io::object_store();
  for (const std::string& rel : files) {
    const fs::path local = fs::path(path_) / rel;
    const auto before = stamp(local);
    store.put_file({mirror_->prefix.bucket, mirror_->prefix.key + rel}, local.string());
    mirror_->sent[rel] = before;
  }
  for (auto it = mirror_->sent.begin(); it != mirror_->sent.end();) {
    if (fs::exists(fs::path(path_) / it->first)) {
      ++it;
      continue;
    }
    store.remove({mirror_->prefix.bucket, mirror_->prefix.key + it->first});
    it = mirror_->sent.erase(it);
  }
}

std::string RunDir::checkpoint_path(std::int64_t step) const {
  char name[64];
  std::snprintf(name, sizeof name, "checkpoints/ckpt-%08lld.h5", static_cast<long long>(step));
  return file(name);
}

std::vector<CheckpointFile> RunDir::checkpoints() const {
  std::vector<std::pair<long long, std::string>> found;  // (step, path)
  for (const auto& e : fs::directory_iterator(fs::path(path_) / "checkpoints")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("ckpt-", 0) != 0 || name.size() <= 8 || name.substr(name.size() - 3) != ".h5")
      continue;
    const std::string digits = name.substr(5, name.size() - 8);
    if (digits.empty() || digits.size() > 18 ||
        !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      continue;
    found.emplace_back(std::stoll(digits), e.path().string());
  }
  std::sort(found.rbegin(), found.rend());  // by step, not as text (past 10^8 steps too)
  std::vector<CheckpointFile> out;
  for (auto& [step, path] : found) out.push_back({step, std::move(path)});
  return out;
}

void RunDir::prune_checkpoints(int keep) const {
  const std::vector<CheckpointFile> all = checkpoints();
  for (std::size_t i = static_cast<std::size_t>(std::max(keep, 1)); i < all.size(); ++i)
    fs::remove(all[i].path);
}

void RunDir::write_text(const std::string& name, const std::string& text) const {
  io::write_atomically(file(name), [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw Error(tmp + ": cannot write: " + last_system_error());
  });
  sync();
}

namespace {
// The integer after "key": in a JSON line we wrote ourselves; -1 if absent.
std::int64_t field(const std::string& line, const std::string& key) {
  const auto p = line.find("\"" + key + "\":");
  if (p == std::string::npos) return -1;
  return std::atoll(line.c_str() + p + key.size() + 3);
}
}  // namespace

RunLock::RunLock(const RunDir& dir) {
  if (dir.in_bucket()) return;
  const std::string path = dir.file(".lock");
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0 && errno == ELOOP)
    throw Error(path + ": a symbolic link in the run directory; refusing to follow it");
  if (fd_ < 0) throw Error(path + ": cannot open the run's lock file: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char holder[256] = {};
    const ssize_t got = ::pread(fd_, holder, sizeof holder - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK)
      throw Error(path + ": cannot lock the run directory: " + std::strerror(err));
    std::string who = got > 0 ? std::string(holder, static_cast<std::size_t>(got)) : "";
    while (!who.empty() && (who.back() == '\n' || who.back() == '\r')) who.pop_back();
    throw Error(dir.location() + ": another training process writes this run (" +
                (who.empty() ? std::string("holder unknown") : printable(who)) +
                "); wait for it to end, or choose another --run-dir");
  }
  char host[HOST_NAME_MAX + 1] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string me = "host " + std::string(host) + ", pid " + std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    const int err = errno;
    ::close(fd_);
    throw Error(path + ": cannot write the run's lock file: " + std::strerror(err));
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

MetricsLog::MetricsLog(const std::string& path, bool resume, std::int64_t step,
                       std::int64_t epochs_done) {
  std::string kept;
  if (resume) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      const bool is_epoch = line.find("\"type\":\"epoch\"") != std::string::npos;
      const bool keep =
          is_epoch ? field(line, "epoch") <= epochs_done : field(line, "step") <= step;
      if (keep) kept += line + "\n";
    }
  }
  // Rewritten by way of a temporary file: a kill here keeps the whole history.
  io::write_atomically(path, [&](const std::string& tmp) {
    std::ofstream rewrite(tmp, std::ios::trunc);
    rewrite << kept;
    rewrite.close();
    if (!rewrite) throw Error(tmp + ": cannot write: " + last_system_error());
  });
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ < 0) throw Error(path + ": cannot open for appending: " + std::strerror(errno));
  path_ = path;
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::write(const std::string& json) {
  const std::string line = json + '\n';
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(path_ + ": cannot write: " + std::strerror(n < 0 ? errno : ENOSPC));
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace qmlsim::train
