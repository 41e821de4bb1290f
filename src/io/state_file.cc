#include "io/state_file.h"

#include <hdf5.h>

#include "core/error.h"
#include "io/hdf5_file.h"

namespace qmlsim::io {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(path + ": " + what);
}

void attribute(hid_t file, const char* name, int value) {
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(file, name, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT);
  if (attr >= 0) {
    H5Awrite(attr, H5T_NATIVE_INT, &value);
    H5Aclose(attr);
  }
  H5Sclose(space);
}

void attribute(hid_t file, const char* name, const std::string& value) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.size());
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  if (attr >= 0) {
    H5Awrite(attr, type, value.data());
    H5Aclose(attr);
  }
  H5Sclose(space);
  H5Tclose(type);
}

template <class T>
void write_rows(const std::string& path, std::uint64_t offset, std::uint64_t count, const T* data,
                hid_t mem_type) {
  prepare_hdf5();
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (file < 0) fail(path, "cannot open the state file for writing");
  const char* name = H5Lexists(file, "state", H5P_DEFAULT) > 0 ? "state" : "density_matrix";
  const hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  const hid_t space = ds < 0 ? -1 : H5Dget_space(ds);
  const hsize_t start[2] = {offset, 0}, size[2] = {count, 2};
  herr_t st =
      space < 0 ? -1 : H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, size, nullptr);
  const hid_t mem = H5Screate_simple(2, size, nullptr);
  if (st >= 0) st = H5Dwrite(ds, mem_type, mem, space, H5P_DEFAULT, data);
  H5Sclose(mem);
  if (space >= 0) H5Sclose(space);
  if (ds >= 0) H5Dclose(ds);
  if (H5Fclose(file) < 0 || st < 0 || ds < 0) fail(path, "cannot write the state (disk full?)");
}

}  // namespace

void create_state_file(const std::string& path, int n, bool single, bool density) {
  prepare_hdf5();
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0) fail(path, "cannot create the state file");
  const hsize_t dims[2] = {hsize_t{1} << (density ? 2 * n : n), 2};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  const hid_t ds = H5Dcreate2(file, density ? "density_matrix" : "state",
                              single ? H5T_IEEE_F32LE : H5T_IEEE_F64LE, space, H5P_DEFAULT,
                              H5P_DEFAULT, H5P_DEFAULT);
  H5Sclose(space);
  if (ds >= 0) H5Dclose(ds);
  attribute(file, "num_qubits", n);
  attribute(file, "precision", single ? "c64" : "c128");
  if (H5Fclose(file) < 0 || ds < 0) fail(path, "cannot create the state dataset");
}

void write_state_rows(const std::string& path, std::uint64_t offset, std::uint64_t count,
                      const float* data) {
  write_rows(path, offset, count, data, H5T_NATIVE_FLOAT);
}

void write_state_rows(const std::string& path, std::uint64_t offset, std::uint64_t count,
                      const double* data) {
  write_rows(path, offset, count, data, H5T_NATIVE_DOUBLE);
}

}  // namespace qmlsim::io
