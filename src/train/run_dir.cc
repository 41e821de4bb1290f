#include "train/run_dir.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "io/checkpoint.h"

namespace qmlsim::train {
namespace fs = std::filesystem;

RunDir::RunDir(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  fs::create_directories(fs::path(path_) / "checkpoints", ec);
  if (ec) throw Error(path_ + ": cannot create run directory: " + ec.message());
}

std::string RunDir::checkpoint_path(std::int64_t step) const {
  char name[64];
  std::snprintf(name, sizeof name, "checkpoints/ckpt-%08lld.h5", static_cast<long long>(step));
  return file(name);
}

std::vector<std::string> RunDir::checkpoints() const {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(fs::path(path_) / "checkpoints")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("ckpt-", 0) == 0 && name.size() > 8 && name.substr(name.size() - 3) == ".h5")
      out.push_back(e.path().string());
  }
  std::sort(out.rbegin(), out.rend());  // zero-padded steps: newest first
  return out;
}

void RunDir::prune_checkpoints(int keep) const {
  const std::vector<std::string> all = checkpoints();
  for (std::size_t i = static_cast<std::size_t>(std::max(keep, 1)); i < all.size(); ++i)
    fs::remove(all[i]);
}

void RunDir::write_text(const std::string& name, const std::string& text) const {
  io::write_atomically(file(name), [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw Error(tmp + ": cannot write");
  });
}

namespace {
// The integer after "key": in a JSON line we wrote ourselves; -1 if absent.
std::int64_t field(const std::string& line, const std::string& key) {
  const auto p = line.find("\"" + key + "\":");
  if (p == std::string::npos) return -1;
  return std::atoll(line.c_str() + p + key.size() + 3);
}
}  // namespace

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
  {
    std::ofstream rewrite(path, std::ios::trunc);
    rewrite << kept;
    if (!rewrite) throw Error(path + ": cannot write");
  }
  out_.open(path, std::ios::app);
}

void MetricsLog::write(const std::string& json) {
  out_ << json << '\n';
  out_.flush();
}

}  // namespace qmlsim::train
