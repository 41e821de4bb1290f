// The CUDA backend's entry points in a build without the CUDA toolkit: every
// use is a clear error, so `--backend cuda` fails with one line, never a crash.
#include "backends/cuda/small_batch.h"
#include "backends/cuda/statevector.h"
#include "core/error.h"

namespace qmlsim::cuda {
namespace {

constexpr const char* kWhy =
    "this qmlsim was built without CUDA (nvcc was not found when it was configured; install "
    "the CUDA toolkit and rebuild, or use --backend cpu)";

[[noreturn]] void unavailable() { throw Error(std::string("--backend cuda: ") + kWhy); }

}  // namespace

bool built_with_cuda() { return false; }
DeviceStatus device_status() { return DeviceStatus{0, "", 0, kWhy}; }
int select_device(int) { unavailable(); }

template <class R>
struct StateVector<R>::Impl {};

template <class R>
StateVector<R>::StateVector(int) {
  unavailable();
}
template <class R>
StateVector<R>::~StateVector() = default;
template <class R>
StateVector<R>::StateVector(StateVector&&) noexcept = default;
template <class R>
StateVector<R>& StateVector<R>::operator=(StateVector&&) noexcept = default;
template <class R>
int StateVector<R>::num_qubits() const {
  unavailable();
}
template <class R>
void StateVector<R>::set_basis_state(index_t) {
  unavailable();
}
template <class R>
void StateVector<R>::set_amplitudes(std::span<const cplx>) {
  unavailable();
}
template <class R>
std::vector<cplx> StateVector<R>::to_vector() const {
  unavailable();
}
template <class R>
void StateVector<R>::copy_from(const StateVector&) {
  unavailable();
}
template <class R>
void StateVector<R>::apply(const BoundGate&) {
  unavailable();
}
template <class R>
void StateVector<R>::apply(const std::vector<BoundGate>&) {
  unavailable();
}
template <class R>
double StateVector<R>::norm_squared() const {
  unavailable();
}
template <class R>
std::vector<double> StateVector<R>::probabilities() const {
  unavailable();
}
template <class R>
double StateVector<R>::expval(const PauliSum&) const {
  unavailable();
}
template <class R>
void StateVector<R>::assign_applied(const PauliSum&, const StateVector&) {
  unavailable();
}
template <class R>
void StateVector<R>::adjoint_sweep(StateVector&, const std::vector<BoundGate>&,
                                   const std::vector<Measure>&, std::vector<Matrix>&, bool,
                                   const std::vector<Side>&) {
  unavailable();
}
template <class R>
cplx StateVector<R>::matrix_element(const BoundGate&, const StateVector&) const {
  unavailable();
}
template <class R>
double StateVector<R>::density_trace(const PauliSum&) const {
  unavailable();
}
template <class R>
void StateVector<R>::set_density_observable(const PauliSum&) {
  unavailable();
}
template <class R>
std::vector<double> StateVector<R>::density_diagonal() const {
  unavailable();
}
template <class R>
std::vector<cplx> StateVector<R>::density_rows() const {
  unavailable();
}
template <class R>
std::map<index_t, std::int64_t> StateVector<R>::sample(std::int64_t, std::uint64_t) const {
  unavailable();
}
template <class R>
void StateVector<R>::bandwidth_pass() {
  unavailable();
}
template <class R>
void StateVector<R>::synchronize() const {
  unavailable();
}

template class StateVector<float>;
template class StateVector<double>;

template <class R>
struct SmallBatch<R>::Impl {};
template <class R>
SmallBatch<R>::SmallBatch(int, const std::vector<std::vector<BoundGate>>&) : impl_(nullptr) {
  unavailable();
}
template <class R>
SmallBatch<R>::~SmallBatch() = default;
template <class R>
std::vector<std::vector<double>> SmallBatch<R>::run(const std::vector<PauliSum>&) {
  unavailable();
}
template <class R>
void SmallBatch<R>::adjoint_sweep(const std::vector<PauliSum>&,
                                  const std::vector<std::vector<BoundGate>>&,
                                  const std::vector<std::vector<Measure>>&,
                                  std::vector<std::vector<Matrix>>&) {
  unavailable();
}

template class SmallBatch<float>;
template class SmallBatch<double>;

}  // namespace qmlsim::cuda
