// A small HDF5 layer for weights and checkpoints: named datasets of doubles or
// 64-bit integers (names with '/' create groups) and string attributes on the
// root. Files are readable with h5py. Every failure is an Error naming the file.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace qmlsim::io {

// Called before any other HDF5 call of the process (the classes below call it;
// other users of HDF5 in io/ too): HDF5 prints no error stack of its own
// (qmlsim reports one line), and does not close files at process exit. A file
// whose close failed (a full disk) stays in HDF5's table, and the library's
// exit-time close of it crashed the process after its error was reported;
// every file qmlsim writes is closed explicitly and renamed only then.
void prepare_hdf5();

class H5Writer {
 public:
  // Creates (truncates) the file.
  explicit H5Writer(const std::string& path);
  ~H5Writer();
  H5Writer(const H5Writer&) = delete;
  H5Writer& operator=(const H5Writer&) = delete;

  void write(const std::string& name, std::span<const double> data, const std::vector<int>& shape);
  void write(const std::string& name, std::span<const std::int64_t> data);
  void write(const std::string& name, std::span<const std::uint64_t> data);
  void attribute(const std::string& name, const std::string& value);
  // Flushes and closes; further writes are errors.
  void close();

 private:
  std::string path_;
  std::int64_t file_ = -1;
};

class H5Reader {
 public:
  // Opens read-only; Error when the file is missing or not HDF5.
  explicit H5Reader(const std::string& path);
  ~H5Reader();
  H5Reader(const H5Reader&) = delete;
  H5Reader& operator=(const H5Reader&) = delete;

  bool has(const std::string& name) const;
  // Error when absent or of another type; `shape` receives the dimensions.
  std::vector<double> doubles(const std::string& name, std::vector<int>* shape = nullptr) const;
  // Floating-point or integer data, as doubles.
  std::vector<double> numbers(const std::string& name, std::vector<int>* shape = nullptr) const;
  std::vector<std::int64_t> int64s(const std::string& name) const;
  std::vector<std::uint64_t> uint64s(const std::string& name) const;
  std::string attribute(const std::string& name) const;  // Error when absent
  bool has_attribute(const std::string& name) const;

 private:
  void require(const std::string& name) const;  // Error naming the file when absent
  std::string path_;
  std::int64_t file_ = -1;
};

}  // namespace qmlsim::io
