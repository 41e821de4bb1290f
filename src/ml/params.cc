#include "ml/params.h"

#include "core/error.h"

namespace qmlsim::ml {

std::size_t TensorSpec::size() const {
  std::size_t n = 1;
  for (int d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

std::size_t ParamLayout::add(std::string name, std::vector<int> shape) {
  TensorSpec t{std::move(name), std::move(shape), size_};
  size_ += t.size();
  tensors_.push_back(std::move(t));
  return tensors_.back().offset;
}

const TensorSpec& ParamLayout::find(const std::string& name) const {
  for (const TensorSpec& t : tensors_)
    if (t.name == name) return t;
  throw Error("no parameter tensor named '" + name + "'");
}

}  // namespace qmlsim::ml
