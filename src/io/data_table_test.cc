#include "io/data_table.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace qmlsim::io {
namespace {

const std::string kFile = QMLSIM_TESTDATA "/table.h5";

std::string error_of(const std::string& x, const std::string& y) {
  try {
    read_hdf5_table(kFile, x, y);
  } catch (const Error& e) {
    return std::string(e.what()).substr(std::string(QMLSIM_TESTDATA).size() + 1);
  }
  return "no error";
}

TEST(Hdf5Table, ReadsWhatH5pyWrites) {
  // Written by h5py 3.12: x float64 [4, 2], y int64 [4], features/scaled float32 = 2x.
  const ml::RawTable t = read_hdf5_table(kFile, "x", "y");
  EXPECT_EQ(t.x, (std::vector<std::vector<double>>{{1.5, -2}, {3.25, 4}, {5, 6.5}, {7, -8}}));
  EXPECT_EQ(t.labels, (std::vector<std::string>{"0", "1", "2", "1"}));
  ml::LabelRule rule;
  rule.kind = ml::LabelRule::Kind::kClasses;
  EXPECT_EQ(ml::label_table(t, rule).y, (std::vector<double>{0, 1, 2, 1}));
  const ml::RawTable scaled = read_hdf5_table(kFile, "features/scaled", "");
  EXPECT_EQ(scaled.x[3], (std::vector<double>{14, -16}));
  EXPECT_TRUE(scaled.labels.empty());
  EXPECT_TRUE(is_hdf5_path("a/b.h5") && is_hdf5_path("c.hdf5") && !is_hdf5_path("d.csv"));
}

TEST(Hdf5Table, ErrorsNameFileAndDataset) {
  EXPECT_EQ(error_of("nope", "y"), "table.h5: missing dataset 'nope'");
  EXPECT_EQ(error_of("y", "y"), "table.h5: dataset 'y' must be 2-D (rows, features)");
  EXPECT_EQ(error_of("x", "y_short"), "table.h5: dataset 'y_short' has 3 labels for 4 rows of 'x'");
  EXPECT_EQ(error_of("x_nan", "y"), "table.h5: row 2 of 'x_nan', column 2: not a finite number");
  EXPECT_EQ(error_of("x", "names"), "table.h5: dataset 'names' has the wrong type");
  EXPECT_THROW(read_hdf5_table(QMLSIM_TESTDATA "/missing.h5", "x", "y"), Error);
}

}  // namespace
}  // namespace qmlsim::io
