#include "io/data_table.h"

#include <charconv>
#include <cmath>

#include "core/error.h"
#include "io/hdf5_file.h"

namespace qmlsim::io {

bool is_hdf5_path(const std::string& path) {
  auto ends = [&](const std::string& s) {
    return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".h5") || ends(".hdf5");
}

ml::RawTable read_hdf5_table(const std::string& path, const std::string& features,
                             const std::string& labels) {
  const H5Reader file(path);
  std::vector<int> shape;
  const std::vector<double> x = file.numbers(features, &shape);
  if (shape.size() != 2 || shape[1] < 1)
    throw Error(path + ": dataset '" + features + "' must be 2-D (rows, features)");
  const auto rows = static_cast<std::size_t>(shape[0]), cols = static_cast<std::size_t>(shape[1]);
  if (rows == 0) throw Error(path + ": no data rows");
  std::vector<double> y;
  if (!labels.empty()) {
    std::vector<int> y_shape;
    y = file.numbers(labels, &y_shape);
    if (y_shape.size() != 1 && !(y_shape.size() == 2 && y_shape[1] == 1))
      throw Error(path + ": dataset '" + labels + "' must be 1-D (one label per row)");
    if (y.size() != rows) {
      throw Error(path + ": dataset '" + labels + "' has " + std::to_string(y.size()) +
                  " labels for " + std::to_string(rows) + " rows of '" + features + "'");
    }
  }
  ml::RawTable t;
  t.path = path;
  t.numbered_by_line = false;
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<double> row(x.begin() + static_cast<std::ptrdiff_t>(r * cols),
                            x.begin() + static_cast<std::ptrdiff_t>((r + 1) * cols));
    for (std::size_t c = 0; c < cols; ++c) {
      if (!std::isfinite(row[c])) {
        throw Error(path + ": row " + std::to_string(r + 1) + " of '" + features + "', column " +
                    std::to_string(c + 1) + ": not a finite number");
      }
    }
    t.x.push_back(std::move(row));
    t.rows.push_back(static_cast<int>(r + 1));
    if (labels.empty()) continue;
    if (!std::isfinite(y[r]))
      throw Error(path + ": row " + std::to_string(r + 1) + " of '" + labels +
                  "': not a finite number");
    char text[32];
    const auto res = std::to_chars(text, text + sizeof text, y[r]);
    t.labels.emplace_back(text, res.ptr);
  }
  return t;
}

}  // namespace qmlsim::io
