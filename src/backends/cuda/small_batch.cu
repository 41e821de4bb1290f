// CUDA implementation of backends/cuda/small_batch.h: one thread block per item
// runs small_batch_ops.h's programs on states in shared memory.
#include <memory>
#include <string>

#include "backends/cuda/device_util.cuh"
#include "backends/cuda/small_batch.h"
#include "backends/cuda/statevector.h"

namespace qmlsim::cuda {
namespace {

constexpr int kBlock = 256;
constexpr std::size_t kMaxShared = std::size_t{128} << 10;

struct BlockSync {
  __device__ void operator()() const { __syncthreads(); }
};

struct BlockSum {  // every thread's value summed; all threads get the total
  double* scratch;
  __device__ double operator()(double v) const { return block_sum(v, scratch); }
};

template <class R>
__global__ void forward_kernel(int n, const PackedGate* gates, const std::uint32_t* first,
                               const double* m, const u64* ox, const u64* oz, const double* oc,
                               const std::uint32_t* ofirst, int nobs, double* expvals,
                               R* final_states) {
  extern __shared__ double shared_mem[];
  __shared__ double scratch[kBlock];
  R* a = reinterpret_cast<R*>(shared_mem);
  const std::uint32_t item = blockIdx.x;
  PackedTerms obs[kSmallBatchMaxObservables];
  for (int k = 0; k < nobs; ++k)
    obs[k] = {ox + ofirst[k], oz + ofirst[k], oc + 2 * ofirst[k],
              static_cast<int>(ofirst[k + 1] - ofirst[k])};
  forward_item(a, n, gates + first[item], static_cast<int>(first[item + 1] - first[item]), m, obs,
               nobs, expvals + static_cast<std::size_t>(item) * nobs, threadIdx.x, blockDim.x,
               BlockSync{}, BlockSum{scratch});
  R* out = final_states + (static_cast<std::size_t>(item) << (n + 1));
  for (u64 i = threadIdx.x; i < (u64{2} << n); i += blockDim.x) out[i] = a[i];
}

template <class R>
__global__ void backward_kernel(int n, const PackedGate* gates, const std::uint32_t* first,
                                const double* m, const u64* hx, const u64* hz, const double* hc,
                                const std::uint32_t* hfirst, const R* final_states, double* cross) {
  extern __shared__ double shared_mem[];
  __shared__ double scratch[kBlock];
  R* phi = reinterpret_cast<R*>(shared_mem);
  R* lam = phi + (u64{2} << n);
  const std::uint32_t item = blockIdx.x;
  const R* in = final_states + (static_cast<std::size_t>(item) << (n + 1));
  for (u64 i = threadIdx.x; i < (u64{2} << n); i += blockDim.x) phi[i] = in[i];
  __syncthreads();
  const PackedTerms h = {hx + hfirst[item], hz + hfirst[item], hc + 2 * hfirst[item],
                         static_cast<int>(hfirst[item + 1] - hfirst[item])};
  backward_item(phi, lam, n, gates + first[item], static_cast<int>(first[item + 1] - first[item]),
                m, h, cross, threadIdx.x, blockDim.x, BlockSync{}, BlockSum{scratch});
}

}  // namespace

template <class R>
struct SmallBatch<R>::Impl {
  int n = 0;
  std::size_t items = 0;
  PackedItems forward;
  std::unique_ptr<DeviceArray<R>> states;  // final states, item after item
};

template <class R>
SmallBatch<R>::SmallBatch(int n, const std::vector<std::vector<BoundGate>>& forward)
    : impl_(new Impl) {
  const Precision p = kPrecisionOf<R>;
  if (n < 1 || n > small_batch_max_qubits(p)) {
    delete impl_;
    throw Error("cuda small batch: " + std::to_string(n) + " qubits (at most " +
                std::to_string(small_batch_max_qubits(p)) + " in " + precision_name(p) + ")");
  }
  if (device_status().count == 0) {
    delete impl_;
    throw Error("--backend cuda: no usable GPU: " + device_status().error);
  }
  impl_->n = n;
  impl_->items = forward.size();
  impl_->forward = pack_items(n, forward);
}

template <class R>
SmallBatch<R>::~SmallBatch() {
  delete impl_;
}

template <class R>
std::vector<std::vector<double>> SmallBatch<R>::run(const std::vector<PauliSum>& observables) {
  const int n = impl_->n;
  const std::size_t items = impl_->items;
  const int nobs = static_cast<int>(observables.size());
  if (nobs > kSmallBatchMaxObservables)
    throw Error("cuda small batch: at most " + std::to_string(kSmallBatchMaxObservables) +
                " observables per item");
  std::vector<std::vector<double>> out(items);
  if (items == 0) return out;
  const PackedItems& p = impl_->forward;
  const PackedSums s = pack_sums(observables);
  const DeviceItems d(p);
  const DeviceSums o(s);
  DeviceArray<double> e(items * static_cast<std::size_t>(nobs));
  impl_->states = std::make_unique<DeviceArray<R>>(items << (n + 1));
  const std::size_t shared = (std::size_t{2} << n) * sizeof(R);
  QMLSIM_CUDA_CHECK(cudaFuncSetAttribute(forward_kernel<R>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(kMaxShared)));
  forward_kernel<R><<<static_cast<unsigned>(items), kBlock, shared>>>(
      n, d.gates.p, d.first.p, d.matrices.p, o.x.p, o.z.p, o.c.p, o.first.p, nobs, e.p,
      impl_->states->p);
  QMLSIM_CUDA_CHECK(cudaGetLastError());
  const std::vector<double> host = e.to_host();
  for (std::size_t i = 0; i < items; ++i)
    out[i].assign(host.begin() + static_cast<std::ptrdiff_t>(i * nobs),
                  host.begin() + static_cast<std::ptrdiff_t>((i + 1) * nobs));
  return out;
}

template <class R>
void SmallBatch<R>::adjoint_sweep(const std::vector<PauliSum>& h,
                                  const std::vector<std::vector<BoundGate>>& inverse,
                                  const std::vector<std::vector<Measure>>& measure,
                                  std::vector<std::vector<Matrix>>& out) {
  const int n = impl_->n;
  const std::size_t items = impl_->items;
  if (!impl_->states) throw Error("cuda small batch: adjoint_sweep before run");
  if (h.size() != items || inverse.size() != items || measure.size() != items)
    throw Error("cuda small batch: one observable and gate list per item expected");
  out.assign(items, {});
  if (items == 0) return;
  const PackedItems p = pack_items(n, inverse, &measure);
  const PackedSums s = pack_sums(h);
  const DeviceItems d(p);
  const DeviceSums w(s);
  DeviceArray<double> cross(p.cross_doubles);
  const std::size_t shared = (std::size_t{4} << n) * sizeof(R);
  QMLSIM_CUDA_CHECK(cudaFuncSetAttribute(backward_kernel<R>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(kMaxShared)));
  backward_kernel<R><<<static_cast<unsigned>(items), kBlock, shared>>>(
      n, d.gates.p, d.first.p, d.matrices.p, w.x.p, w.z.p, w.c.p, w.first.p, impl_->states->p,
      cross.p);
  QMLSIM_CUDA_CHECK(cudaGetLastError());
  const std::vector<double> host = cross.to_host();
  for (std::size_t i = 0; i < items; ++i) {
    out[i].assign(inverse[i].size(), Matrix{});
    for (std::size_t j = 0; j < inverse[i].size(); ++j) {
      const PackedGate& g = p.gates[p.first[i] + j];
      if (g.cross >= 0) out[i][j] = cross_matrix_of(g, inverse[i][j], &host[g.cross]);
    }
  }
}

template class SmallBatch<float>;
template class SmallBatch<double>;

}  // namespace qmlsim::cuda
