#include "io/hdf5_file.h"

#include <hdf5.h>

#include "core/error.h"

namespace qmlsim::io {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(path + ": " + what);
}

template <class T>
void write_dataset(hid_t file, const std::string& path, const std::string& name, const T* data,
                   const std::vector<hsize_t>& dims, hid_t mem_type, hid_t file_type) {
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  // No modification times in object headers: identical runs write identical files.
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_obj_track_times(dcpl, 0);
  const hid_t ds = H5Dcreate2(file, name.c_str(), file_type, space, lcpl, dcpl, H5P_DEFAULT);
  H5Pclose(dcpl);
  H5Pclose(lcpl);
  H5Sclose(space);
  if (ds < 0) fail(path, "cannot create dataset '" + name + "'");
  const herr_t st = H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  H5Dclose(ds);
  if (st < 0) fail(path, "cannot write dataset '" + name + "'");
}

template <class T>
std::vector<T> read_dataset(hid_t file, const std::string& path, const std::string& name,
                            hid_t mem_type, H5T_class_t cls, std::vector<int>* shape,
                            H5T_class_t also = H5T_NO_CLASS) {
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0) fail(path, "missing dataset '" + name + "'");
  const hid_t ds = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  if (ds < 0) fail(path, "'" + name + "' is not a dataset");
  const hid_t type = H5Dget_type(ds);
  const H5T_class_t found = H5Tget_class(type);
  const bool ok = found == cls || (also != H5T_NO_CLASS && found == also);
  H5Tclose(type);
  const hid_t space = H5Dget_space(ds);
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  H5Sclose(space);
  if (!ok || rank < 0) {
    H5Dclose(ds);
    fail(path, "dataset '" + name + "' has the wrong type");
  }
  // Declared sizes are untrusted: at most 2^31 values (16 GiB of doubles) are read.
  constexpr std::size_t kMaxValues = std::size_t{1} << 31;
  std::size_t count = 1;
  for (hsize_t d : dims) {
    if (d > kMaxValues || (d > 0 && count > kMaxValues / d)) {
      H5Dclose(ds);
      fail(path, "dataset '" + name + "' is too large (over 2^31 values)");
    }
    count *= static_cast<std::size_t>(d);
  }
  std::vector<T> out(count);
  const herr_t st = count ? H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) : 0;
  H5Dclose(ds);
  if (st < 0) fail(path, "cannot read dataset '" + name + "' (damaged file?)");
  if (shape) shape->assign(dims.begin(), dims.end());
  return out;
}

}  // namespace

void prepare_hdf5() {
  static const bool done = [] {
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

H5Writer::H5Writer(const std::string& path) : path_(path) {
  prepare_hdf5();
  file_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file_ < 0) fail(path, "cannot create HDF5 file");
}

H5Writer::~H5Writer() {
  if (file_ >= 0) H5Fclose(file_);
}

void H5Writer::write(const std::string& name, std::span<const double> data,
                     const std::vector<int>& shape) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  write_dataset(file_, path_, name, data.data(), dims, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE);
}

void H5Writer::write(const std::string& name, std::span<const std::int64_t> data) {
  write_dataset(file_, path_, name, data.data(), {data.size()}, H5T_NATIVE_INT64, H5T_STD_I64LE);
}

void H5Writer::write(const std::string& name, std::span<const std::uint64_t> data) {
  write_dataset(file_, path_, name, data.data(), {data.size()}, H5T_NATIVE_UINT64, H5T_STD_U64LE);
}

void H5Writer::attribute(const std::string& name, const std::string& value) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, std::max<std::size_t>(1, value.size()));
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(file_, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  const herr_t st = attr < 0 ? -1 : H5Awrite(attr, type, value.data());
  if (attr >= 0) H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
  if (st < 0) fail(path_, "cannot write attribute '" + name + "'");
}

void H5Writer::close() {
  if (file_ < 0) return;
  const herr_t a = H5Fflush(file_, H5F_SCOPE_GLOBAL);
  const herr_t b = H5Fclose(file_);
  file_ = -1;
  if (a < 0 || b < 0) fail(path_, "cannot write HDF5 file (disk full?)");
}

H5Reader::H5Reader(const std::string& path) : path_(path) {
  prepare_hdf5();
  if (H5Fis_hdf5(path.c_str()) <= 0) fail(path, "missing, unreadable or not an HDF5 file");
  file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file_ < 0) fail(path, "cannot open HDF5 file (damaged?)");
}

H5Reader::~H5Reader() {
  if (file_ >= 0) H5Fclose(file_);
}

bool H5Reader::has(const std::string& name) const {
  // H5Lexists needs every intermediate group to exist.
  std::size_t pos = 0;
  while ((pos = name.find('/', pos + 1)) != std::string::npos)
    if (H5Lexists(file_, name.substr(0, pos).c_str(), H5P_DEFAULT) <= 0) return false;
  return H5Lexists(file_, name.c_str(), H5P_DEFAULT) > 0;
}

void H5Reader::require(const std::string& name) const {
  if (!has(name)) fail(path_, "missing dataset '" + name + "'");
}

std::vector<double> H5Reader::doubles(const std::string& name, std::vector<int>* shape) const {
  require(name);
  return read_dataset<double>(file_, path_, name, H5T_NATIVE_DOUBLE, H5T_FLOAT, shape);
}

std::vector<double> H5Reader::numbers(const std::string& name, std::vector<int>* shape) const {
  require(name);
  return read_dataset<double>(file_, path_, name, H5T_NATIVE_DOUBLE, H5T_FLOAT, shape, H5T_INTEGER);
}

std::vector<std::int64_t> H5Reader::int64s(const std::string& name) const {
  require(name);
  return read_dataset<std::int64_t>(file_, path_, name, H5T_NATIVE_INT64, H5T_INTEGER, nullptr);
}

std::vector<std::uint64_t> H5Reader::uint64s(const std::string& name) const {
  require(name);
  return read_dataset<std::uint64_t>(file_, path_, name, H5T_NATIVE_UINT64, H5T_INTEGER, nullptr);
}

bool H5Reader::has_attribute(const std::string& name) const {
  return H5Aexists(file_, name.c_str()) > 0;
}

std::string H5Reader::attribute(const std::string& name) const {
  if (H5Aexists(file_, name.c_str()) <= 0) fail(path_, "missing attribute '" + name + "'");
  const hid_t attr = H5Aopen(file_, name.c_str(), H5P_DEFAULT);
  const hid_t type = H5Aget_type(attr);
  std::string out;
  if (H5Tget_class(type) == H5T_STRING && !H5Tis_variable_str(type)) {
    out.resize(H5Tget_size(type));
    if (H5Aread(attr, type, out.data()) < 0) out.clear();
    out.resize(out.find('\0') == std::string::npos ? out.size() : out.find('\0'));
  }
  H5Tclose(type);
  H5Aclose(attr);
  return out;
}

}  // namespace qmlsim::io
