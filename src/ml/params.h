// Trainable parameters: named tensors laid out in one flat vector, so that
// optimizers, gradient reductions and checkpoints see a single array while
// weight files keep one dataset per tensor.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace qmlsim::ml {

struct TensorSpec {
  std::string name;        // "dense1/weight"; '/' makes an HDF5 group
  std::vector<int> shape;  // row-major
  std::size_t offset = 0;  // into the flat vector
  std::size_t size() const;
};

class ParamLayout {
 public:
  // Appends a tensor; returns its offset in the flat vector.
  std::size_t add(std::string name, std::vector<int> shape);
  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  std::size_t size() const { return size_; }
  // Throws Error when absent.
  const TensorSpec& find(const std::string& name) const;

 private:
  std::vector<TensorSpec> tensors_;
  std::size_t size_ = 0;
};

}  // namespace qmlsim::ml
