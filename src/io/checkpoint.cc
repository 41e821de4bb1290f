#include "io/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/checksum.h"
#include "core/error.h"
#include "io/hdf5_file.h"

namespace qmlsim::io {
namespace {

void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) throw Error(path + ": cannot open for sync: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw Error(path + ": fsync failed: " + std::strerror(errno));
}

void write_params(H5Writer& w, const ml::ParamLayout& layout, std::span<const double> params,
                  Checksum& sum) {
  for (const ml::TensorSpec& t : layout.tensors()) {
    const auto v = params.subspan(t.offset, t.size());
    w.write("params/" + t.name, v, t.shape);
    sum.add(v);
  }
}

std::vector<double> read_params(const H5Reader& r, const std::string& path,
                                const ml::ParamLayout& layout, Checksum* sum) {
  std::vector<double> params(layout.size());
  for (const ml::TensorSpec& t : layout.tensors()) {
    std::vector<int> shape;
    const std::vector<double> v = r.doubles("params/" + t.name, &shape);
    if (shape != t.shape) throw Error(path + ": tensor '" + t.name + "' has the wrong shape");
    std::copy(v.begin(), v.end(), params.begin() + static_cast<std::ptrdiff_t>(t.offset));
    if (sum) sum->add(std::span<const double>(v));
  }
  return params;
}

}  // namespace

void create_temporary(const std::string& tmp) {
  struct stat st {};
  if (::lstat(tmp.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      throw Error(tmp +
                  ": a symbolic link where a temporary file is written; refusing to write "
                  "through it (remove the link)");
    if (::unlink(tmp.c_str()) != 0)
      throw Error(tmp + ": cannot remove a stale temporary file: " + std::strerror(errno));
  }
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(tmp + ": cannot create: " + std::strerror(errno));
  ::close(fd);
}

void commit_file(const std::string& tmp, const std::string& path) {
  fsync_path(tmp, false);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error(path + ": cannot rename " + tmp + ": " + std::strerror(errno));
  std::string dir = std::filesystem::path(path).parent_path().string();
  fsync_path(dir.empty() ? "." : dir, true);
}

void save_checkpoint(const std::string& path, const RunIdentity& id, const ml::ParamLayout& layout,
                     const TrainingState& s) {
  write_atomically(path, [&](const std::string& tmp) {
    H5Writer w(tmp);
    Checksum sum;
    write_params(w, layout, s.params, sum);
    for (const auto& [name, v] : s.optimizer) {
      w.write("optimizer/" + name, v, {static_cast<int>(v.size())});
      sum.add(name.data(), name.size());
      sum.add(std::span<const double>(v));
    }
    w.write("state/rng", std::span<const std::uint64_t>(s.rng));
    const std::int64_t counters[3] = {s.epoch, s.step, s.step_in_epoch};
    w.write("state/counters", std::span<const std::int64_t>(counters));
    w.write("state/sums", s.sums, {static_cast<int>(s.sums.size())});
    w.write("state/train_time_s", std::span<const double>(&s.train_time_s, 1), {1});
    sum.add(std::span<const std::uint64_t>(s.rng));
    sum.add(std::span<const std::int64_t>(counters));
    sum.add(std::span<const double>(s.sums));
    sum.add(std::span<const double>(&s.train_time_s, 1));
    w.attribute("job", id.job);
    w.attribute("config_hash", id.config_hash);
    w.attribute("run_id", id.run_id);
    w.attribute("checksum", sum.hex());
    w.close();
  });
}

TrainingState load_checkpoint(const std::string& path, const std::string& job,
                              const ml::ParamLayout& layout, RunIdentity* found) {
  H5Reader r(path);
  const std::string saved_job = r.attribute("job");
  if (saved_job != job)
    throw Error(path + ": checkpoint of a '" + saved_job + "' job, not '" + job + "'");
  if (found) {
    found->job = saved_job;
    found->config_hash = r.has_attribute("config_hash") ? r.attribute("config_hash") : "";
    found->run_id = r.has_attribute("run_id") ? r.attribute("run_id") : "";
  }
  TrainingState s;
  Checksum sum;
  s.params = read_params(r, path, layout, &sum);
  for (const char* name : {"m", "t", "v"}) {  // std::map order, as saved
    const std::string key = std::string("optimizer/") + name;
    if (!r.has(key)) continue;
    s.optimizer[name] = r.doubles(key);
    sum.add(name, std::strlen(name));
    sum.add(std::span<const double>(s.optimizer[name]));
  }
  const std::vector<std::uint64_t> rng = r.uint64s("state/rng");
  const std::vector<std::int64_t> counters = r.int64s("state/counters");
  s.sums = r.doubles("state/sums");
  if (rng.size() != 4 || counters.size() != 3)
    throw Error(path + ": damaged checkpoint (state has the wrong size)");
  std::copy(rng.begin(), rng.end(), s.rng.begin());
  s.epoch = counters[0];
  s.step = counters[1];
  s.step_in_epoch = counters[2];
  sum.add(std::span<const std::uint64_t>(rng));
  sum.add(std::span<const std::int64_t>(counters));
  sum.add(std::span<const double>(s.sums));
  if (r.has("state/train_time_s")) {
    const std::vector<double> t = r.doubles("state/train_time_s");
    if (t.size() != 1) throw Error(path + ": damaged checkpoint (state has the wrong size)");
    s.train_time_s = t[0];
    sum.add(std::span<const double>(t));
  }
  if (sum.hex() != r.attribute("checksum"))
    throw Error(path + ": damaged checkpoint (checksum mismatch)");
  return s;
}

void save_weights(const std::string& path, const std::string& job, const ml::ParamLayout& layout,
                  std::span<const double> params) {
  write_atomically(path, [&](const std::string& tmp) {
    H5Writer w(tmp);
    Checksum sum;
    write_params(w, layout, params, sum);
    w.attribute("job", job);
    w.close();
  });
}

std::vector<double> load_weights(const std::string& path, const ml::ParamLayout& layout) {
  H5Reader r(path);
  return read_params(r, path, layout, nullptr);
}

}  // namespace qmlsim::io
