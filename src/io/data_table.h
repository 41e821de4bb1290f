// Data sets stored in HDF5 files (h5py's `f["x"] = X; f["y"] = y`): a 2-D numeric
// features dataset and a 1-D numeric labels dataset of as many rows.
#pragma once

#include <string>

#include "ml/datasets.h"

namespace qmlsim::io {

// Labels as the numbers' shortest text (ml::label_table interprets them); an
// empty `labels` name reads the features alone. Errors name the file and the
// dataset: missing, wrong rank or type, row counts that differ, NaN or inf
// (naming the row), no rows.
ml::RawTable read_hdf5_table(const std::string& path, const std::string& features,
                             const std::string& labels);

// True when the path names an HDF5 file by its extension (.h5, .hdf5).
bool is_hdf5_path(const std::string& path);

}  // namespace qmlsim::io
