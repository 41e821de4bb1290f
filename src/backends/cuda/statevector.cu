// CUDA implementation of backends/cuda/statevector.h.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "backends/cpu/statevector.h"
#include "backends/cuda/density_ops.h"
#include "backends/cuda/device_util.cuh"
#include "backends/cuda/index_math.h"
#include "backends/cuda/small_batch_ops.h"
#include "backends/cuda/statevector.h"

namespace qmlsim::cuda {
namespace {

constexpr int kThreads = 256;       // threads per block
constexpr int kReduceBlocks = 512;  // fixed grid of the reductions (reproducible sums; ~4 per SM)

// Blocks for `work` grid-stride items: at most two full waves of the device
// (each thread then takes many items, so its set-up, the kernel argument's
// copy that indexing into it needs, is paid once per thread, not per item).
int grid_for(u64 work) {
  static const u64 cap = [] {
    int device = 0, sms = 0, threads = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, device) !=
            cudaSuccess)
      return u64{65535} * 8;
    return u64{2} * static_cast<u64>(sms) * static_cast<u64>(threads / kThreads);
  }();
  const u64 blocks = (work + kThreads - 1) / kThreads;
  return static_cast<int>(std::min<u64>(std::max<u64>(blocks, 1), cap));
}

// Grid-stride workers: every thread of the grid is one worker of
// small_batch_ops.h's functions.
__device__ int worker() { return static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); }
__device__ int workers() { return static_cast<int>(gridDim.x * blockDim.x); }

// One kernel per arity: a single kernel for every k sized its registers and
// stack for five targets (166 registers, a 384-byte frame: one block per SM).
// The matrix is read once per block into shared memory: from global memory,
// every group would load it again (the state's stores may alias it).
template <class R, int K>
__global__ void dense_kernel(R* a, int n, PackedGate g, const double* m) {
  constexpr int doubles = 2 << 2 * K;
  __shared__ double matrix[doubles];
  for (int e = static_cast<int>(threadIdx.x); e < doubles; e += static_cast<int>(blockDim.x))
    matrix[e] = m[e];
  __syncthreads();
  dense_packed<R, K>(a, n, g, matrix, worker(), workers());
}

// A dense gate on one or two targets below qubit 5, without controls: each
// lane holds one amplitude (lane = bits 0-4 of its index, so a warp's loads
// are one contiguous run) and takes its partners' from the lanes that hold
// them. The strided kernel reads such groups at a stride that a warp's loads
// cannot coalesce (1.3-1.5x the bandwidth pass at 28 qubits on an H200).
template <class R, int K>
__global__ void dense_low_kernel(R* a, int n, PackedGate g, const double* m) {
  constexpr int D = 1 << K;
  __shared__ double matrix[2 * D * D];
  for (int e = static_cast<int>(threadIdx.x); e < 2 * D * D; e += static_cast<int>(blockDim.x))
    matrix[e] = m[e];
  __syncthreads();
  int bit[K];
  for (int j = 0; j < K; ++j) bit[j] = 1 << g.targets[j];
  const u64 size = u64{1} << n;  // n >= 5: whole warps, the grid's stride a multiple of 32
  for (u64 i = blockIdx.x * u64{blockDim.x} + threadIdx.x; i < size;
       i += u64{gridDim.x} * blockDim.x) {
    double re, im;
    load_amp(a, i, re, im);
    int row = 0;  // this lane's local index
    for (int j = 0; j < K; ++j)
      if (i & bit[j]) row |= 1 << j;
    double sr = 0, si = 0;
    for (int c = 0; c < D; ++c) {
      int flip = 0;  // lane distance to the amplitude of local index c
      for (int j = 0; j < K; ++j)
        if ((row ^ c) >> j & 1) flip |= bit[j];
      // In R: a complex64 amplitude takes two 32-bit shuffles, not four.
      const double vr = __shfl_xor_sync(0xffffffffu, static_cast<R>(re), flip);
      const double vi = __shfl_xor_sync(0xffffffffu, static_cast<R>(im), flip);
      const double mr = matrix[2 * (row * D + c)], mi = matrix[2 * (row * D + c) + 1];
      sr += mr * vr - mi * vi;
      si += mr * vi + mi * vr;
    }
    store_amp(a, i, sr, si);
  }
}

template <class R>
__global__ void diagonal_kernel(R* a, int n, PackedGate g, const double* m) {
  diagonal_packed(a, n, g, m, worker(), workers());
}

template <class R>
__global__ void scale_kernel(R* a, u64 reals, R s) {
  for (u64 i = blockIdx.x * u64{blockDim.x} + threadIdx.x; i < reals;
       i += u64{gridDim.x} * blockDim.x)
    a[i] *= s;
}

// The same in 16-byte accesses (the widest a thread has): the bandwidth pass.
template <class R>
struct alignas(16) Wide {
  R v[16 / sizeof(R)];
};
template <class R>
__global__ void scale_wide_kernel(Wide<R>* a, u64 count, R s) {
  for (u64 i = blockIdx.x * u64{blockDim.x} + threadIdx.x; i < count;
       i += u64{gridDim.x} * blockDim.x) {
    Wide<R> w = a[i];
    for (R& x : w.v) x *= s;
    a[i] = w;
  }
}

template <class R>
__global__ void pauli_apply_kernel(const R* src, R* dst, int n, PackedTerms h) {
  pauli_apply_packed(src, dst, n, h, worker(), workers());
}

// partial[block] = this block's share of Re <bra|H|ket>.
template <class R>
__global__ void pauli_element_kernel(const R* bra, const R* ket, int n, PackedTerms h,
                                     double* partial) {
  __shared__ double shared[kThreads];
  const double s = block_sum(element_partial_packed(bra, ket, n, h, worker(), workers()), shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// partial[block] = this block's share of Tr(H rho), rho held as vec(rho) on 2m qubits.
template <class R>
__global__ void density_trace_kernel(const R* rho, int m, PackedTerms h, double* partial) {
  __shared__ double shared[kThreads];
  const double s = block_sum(trace_partial_packed(rho, m, h, worker(), workers()), shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// a = vec(H), H on m qubits.
template <class R>
__global__ void density_observable_kernel(R* a, int m, PackedTerms h) {
  observable_packed(a, m, h, worker(), workers());
}

// partial[block][e] = this block's share of the measured gate's cross matrix;
// one kernel per shape, its accumulators sized for it (in registers).
template <class R, int K, bool DIAG>
__global__ void cross_kernel(const R* bra, const R* ket, int n, PackedGate g, double* partial) {
  __shared__ double shared[kThreads];
  constexpr int doubles = 2 * (DIAG ? 1 << K : 1 << 2 * K);
  double acc[doubles];
  for (int e = 0; e < doubles; ++e) acc[e] = 0;
  cross_packed<R, K, DIAG>(bra, ket, n, g, worker(), workers(), acc);
  for (int e = 0; e < doubles; ++e) {
    const double s = block_sum(acc[e], shared);
    if (threadIdx.x == 0) partial[blockIdx.x * doubles + e] = s;
  }
}

template <class R>
void launch_cross(const R* bra, const R* ket, int n, const PackedGate& g, double* partial) {
  if (g.diagonal && g.k == 1)
    cross_kernel<R, 1, true><<<kReduceBlocks, kThreads>>>(bra, ket, n, g, partial);
  else if (g.diagonal && g.k == 2)
    cross_kernel<R, 2, true><<<kReduceBlocks, kThreads>>>(bra, ket, n, g, partial);
  else if (g.diagonal && g.k == 3)
    cross_kernel<R, 3, true><<<kReduceBlocks, kThreads>>>(bra, ket, n, g, partial);
  else if (g.diagonal && g.k == 4)
    cross_kernel<R, 4, true><<<kReduceBlocks, kThreads>>>(bra, ket, n, g, partial);
  else if (g.diagonal)
    cross_kernel<R, 5, true><<<kReduceBlocks, kThreads>>>(bra, ket, n, g, partial);
  else if (g.k == 1)
    cross_kernel<R, 1, false><<<kReduceBlocks, kThreads>>>(bra, ket, n, g, partial);
  else
    cross_kernel<R, 2, false>
        <<<kReduceBlocks, kThreads>>>(bra, ket, n, g, partial);  // packing refuses wider
  QMLSIM_CUDA_CHECK(cudaGetLastError());
}

template <class R>
void launch_gate(R* a, int n, const PackedGate& g, const double* m) {
  const double* gm = m + g.matrix;
  const int grid = grid_for(g.diagonal ? u64{1} << n : u64{1} << (n - g.npos));
  const bool low = n >= 5 && g.k <= 2 && g.npos == g.k && g.targets[g.k - 1] < 5;
  if (g.diagonal)
    diagonal_kernel<R><<<grid, kThreads>>>(a, n, g, gm);
  else if (low && g.k == 1)
    dense_low_kernel<R, 1><<<grid_for(u64{1} << n), kThreads>>>(a, n, g, gm);
  else if (low)
    dense_low_kernel<R, 2><<<grid_for(u64{1} << n), kThreads>>>(a, n, g, gm);
  else if (g.k == 1)
    dense_kernel<R, 1><<<grid, kThreads>>>(a, n, g, gm);
  else if (g.k == 2)
    dense_kernel<R, 2><<<grid, kThreads>>>(a, n, g, gm);
  else if (g.k == 3)
    dense_kernel<R, 3><<<grid, kThreads>>>(a, n, g, gm);
  else if (g.k == 4)
    dense_kernel<R, 4><<<grid, kThreads>>>(a, n, g, gm);
  else
    dense_kernel<R, 5><<<grid, kThreads>>>(a, n, g, gm);
  QMLSIM_CUDA_CHECK(cudaGetLastError());
}

// The sum of a reduction over h's packed terms: launch(terms, partial) writes
// kReduceBlocks partials, added here in block order (reproducible); 0 without
// terms.
template <class Launch>
double sum_over_terms(const PauliSum& h, Launch&& launch) {
  if (h.terms.empty()) return 0;
  const PackedSums ps = pack_sums({h});
  const DeviceSums t(ps);
  DeviceArray<double> partial(kReduceBlocks);
  launch(t.terms(ps, 0), partial.p);
  QMLSIM_CUDA_CHECK(cudaGetLastError());
  double sum = 0;
  for (double v : partial.to_host()) sum += v;
  return sum;
}

// A state of n qubits at `a` written by launch(terms) from h's packed terms;
// zeroed without terms. Returns when the device is done.
template <class R, class Launch>
void write_from_terms(R* a, int n, const PauliSum& h, Launch&& launch) {
  if (h.terms.empty()) {
    QMLSIM_CUDA_CHECK(cudaMemset(a, 0, (std::size_t{2} << n) * sizeof(R)));
    return;
  }
  const PackedSums ps = pack_sums({h});
  const DeviceSums t(ps);
  launch(t.terms(ps, 0));
  QMLSIM_CUDA_CHECK(cudaGetLastError());
  QMLSIM_CUDA_CHECK(cudaDeviceSynchronize());
}

// The n-qubit state at `a` copied to the host, interleaved (re, im).
template <class R>
std::vector<R> host_copy(const R* a, int n) {
  std::vector<R> host(std::size_t{2} << n);
  QMLSIM_CUDA_CHECK(cudaMemcpy(host.data(), a, host.size() * sizeof(R), cudaMemcpyDeviceToHost));
  return host;
}

}  // namespace

bool built_with_cuda() { return true; }

DeviceStatus device_status() {
  DeviceStatus s;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    s.error = e == cudaErrorInsufficientDriver
                  ? "no NVIDIA driver is loaded, or it is older than this CUDA runtime needs"
                  : std::string("the CUDA runtime says: ") + cudaGetErrorString(e);
    cudaGetLastError();  // clear it
    return s;
  }
  if (count == 0) {
    s.error = "no CUDA device found";
    return s;
  }
  s.count = count;
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) {
    s.name = p.name;
    s.memory_gib = static_cast<double>(p.totalGlobalMem) / (1 << 30);
  }
  return s;
}

int select_device(int local_rank) {
  const DeviceStatus s = device_status();
  if (s.count == 0) throw Error("--backend cuda: no usable GPU: " + s.error);
  const int dev = (local_rank < 0 ? 0 : local_rank) % s.count;
  QMLSIM_CUDA_CHECK(cudaSetDevice(dev));
  return dev;
}

template <class R>
struct StateVector<R>::Impl {
  int n = 0;
  R* a = nullptr;
  ~Impl() {
    if (a) cudaFree(a);
  }
};

template <class R>
StateVector<R>::StateVector(int n) : impl_(std::make_unique<Impl>()) {
  if (n < 0 || n > kMaxQubits)
    throw Error("cuda: " + std::to_string(n) + " qubits: outside 0.." + std::to_string(kMaxQubits));
  const DeviceStatus s = device_status();
  if (s.count == 0) throw Error("--backend cuda: no usable GPU: " + s.error);
  impl_->n = n;
  const std::size_t bytes = (std::size_t{2} << n) * sizeof(R);
  if (cudaMalloc(&impl_->a, bytes) != cudaSuccess) {
    cudaGetLastError();
    impl_->a = nullptr;
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "cuda: a %d-qubit %s state needs %.2f GiB; the GPU has %.2f GiB free of %.2f", n,
                  sizeof(R) == 4 ? "complex64" : "complex128", bytes / double(1 << 30),
                  free_b / double(1 << 30), total_b / double(1 << 30));
    throw OutOfMemory(msg);
  }
  set_basis_state(0);
}

template <class R>
StateVector<R>::~StateVector() = default;
template <class R>
StateVector<R>::StateVector(StateVector&&) noexcept = default;
template <class R>
StateVector<R>& StateVector<R>::operator=(StateVector&&) noexcept = default;

template <class R>
int StateVector<R>::num_qubits() const {
  return impl_->n;
}

template <class R>
void StateVector<R>::set_basis_state(index_t i) {
  QMLSIM_CUDA_CHECK(cudaMemset(impl_->a, 0, (std::size_t{2} << impl_->n) * sizeof(R)));
  const R one = 1;
  QMLSIM_CUDA_CHECK(cudaMemcpy(impl_->a + 2 * i, &one, sizeof(R), cudaMemcpyHostToDevice));
}

template <class R>
void StateVector<R>::set_amplitudes(std::span<const cplx> v) {
  std::vector<R> host(2 * v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    host[2 * i] = static_cast<R>(v[i].real());
    host[2 * i + 1] = static_cast<R>(v[i].imag());
  }
  QMLSIM_CUDA_CHECK(
      cudaMemcpy(impl_->a, host.data(), host.size() * sizeof(R), cudaMemcpyHostToDevice));
}

template <class R>
std::vector<cplx> StateVector<R>::to_vector() const {
  const std::vector<R> host = host_copy(impl_->a, impl_->n);
  std::vector<cplx> out(size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = {host[2 * i], host[2 * i + 1]};
  return out;
}

template <class R>
void StateVector<R>::copy_from(const StateVector& o) {
  QMLSIM_CUDA_CHECK(cudaMemcpy(impl_->a, o.impl_->a, (std::size_t{2} << impl_->n) * sizeof(R),
                               cudaMemcpyDeviceToDevice));
}

template <class R>
void StateVector<R>::apply(const BoundGate& g) {
  apply(std::vector<BoundGate>{g});
}

template <class R>
void StateVector<R>::apply(const std::vector<BoundGate>& gates) {
  if (gates.empty()) return;
  const PackedItems packed = pack_items(impl_->n, {gates});
  const DeviceItems d(packed);
  for (const PackedGate& g : packed.gates) launch_gate(impl_->a, impl_->n, g, d.matrices.p);
  synchronize();
}

template <class R>
double StateVector<R>::norm_squared() const {
  PauliSum one;
  one.add(1.0, 0, 0);
  return expval(one);
}

template <class R>
std::vector<double> StateVector<R>::probabilities() const {
  const std::vector<R> host = host_copy(impl_->a, impl_->n);
  std::vector<double> p(size());
  for (std::size_t i = 0; i < p.size(); ++i)
    p[i] = static_cast<double>(host[2 * i]) * host[2 * i] +
           static_cast<double>(host[2 * i + 1]) * host[2 * i + 1];
  return p;
}

template <class R>
double StateVector<R>::expval(const PauliSum& h) const {
  return sum_over_terms(h, [&](const PackedTerms& terms, double* partial) {
    pauli_element_kernel<R>
        <<<kReduceBlocks, kThreads>>>(impl_->a, impl_->a, impl_->n, terms, partial);
  });
}

template <class R>
void StateVector<R>::assign_applied(const PauliSum& h, const StateVector& src) {
  write_from_terms(impl_->a, impl_->n, h, [&](const PackedTerms& terms) {
    pauli_apply_kernel<R><<<grid_for(size()), kThreads>>>(src.impl_->a, impl_->a, impl_->n, terms);
  });
}

template <class R>
void StateVector<R>::adjoint_sweep(StateVector& lambda, const std::vector<BoundGate>& inverse,
                                   const std::vector<Measure>& measure, std::vector<Matrix>& out,
                                   bool /*undo_all: every step is taken*/,
                                   const std::vector<Side>& sides) {
  out.assign(inverse.size(), Matrix{});
  const int n = impl_->n;
  // Packing checks that the GPU forms every measured gate's cross matrix; the
  // per-block partials of all of them stay on the device until the end.
  const std::vector<std::vector<Measure>> measured = {measure};
  const PackedItems packed = pack_items(n, {inverse}, &measured);
  const DeviceItems d(packed);
  const std::vector<PackedGate>& g = packed.gates;
  DeviceArray<double> partial(kReduceBlocks * packed.cross_doubles);
  for (std::size_t j = inverse.size(); j-- > 0;) {
    const Side side = sides.empty() ? Side::both : sides[j];
    if (side != Side::lambda_only) launch_gate(impl_->a, n, g[j], d.matrices.p);
    if (g[j].cross >= 0) {
      launch_cross(lambda.impl_->a, impl_->a, n, g[j], partial.p + kReduceBlocks * g[j].cross);
    }
    if (side != Side::this_only) launch_gate(lambda.impl_->a, n, g[j], d.matrices.p);
  }
  const std::vector<double> host = partial.to_host();
  for (std::size_t i = 0; i < inverse.size(); ++i) {
    if (g[i].cross < 0) continue;
    const int doubles = 2 * g[i].measured_entries;
    const double* p = &host[kReduceBlocks * g[i].cross];
    std::vector<double> sum(static_cast<std::size_t>(doubles), 0.0);
    for (int b = 0; b < kReduceBlocks; ++b)  // block order: reproducible
      for (int k = 0; k < doubles; ++k) sum[k] += p[b * doubles + k];
    out[i] = cross_matrix_of(g[i], inverse[i], sum.data());
  }
}

template <class R>
cplx StateVector<R>::matrix_element(const BoundGate& g, const StateVector& ket) const {
  const int n = impl_->n;
  StateVector applied(n);
  applied.copy_from(ket);
  applied.apply(g);
  // <this|applied>: the sums of a diagonal gate on qubit 0, conj(this_a) applied_a
  // for a = 0, 1, add up to it.
  BoundGate whole;
  whole.targets = {0};
  whole.diagonal = true;
  whole.matrix = {1, 1};
  const std::vector<std::vector<Measure>> measured = {{Measure::whole}};
  const PackedItems packed = pack_items(n, {{whole}}, &measured);
  DeviceArray<double> partial(kReduceBlocks * packed.cross_doubles);
  launch_cross(impl_->a, applied.impl_->a, n, packed.gates[0], partial.p);
  const std::vector<double> host = partial.to_host();
  cplx sum = 0;
  for (int b = 0; b < kReduceBlocks; ++b)  // block order: reproducible
    for (int e = 0; e < 2; ++e) sum += cplx(host[4 * b + 2 * e], host[4 * b + 2 * e + 1]);
  return sum;
}

template <class R>
double StateVector<R>::density_trace(const PauliSum& h) const {
  return sum_over_terms(h, [&](const PackedTerms& terms, double* partial) {
    density_trace_kernel<R><<<kReduceBlocks, kThreads>>>(impl_->a, impl_->n / 2, terms, partial);
  });
}

template <class R>
void StateVector<R>::set_density_observable(const PauliSum& h) {
  const int m = impl_->n / 2;
  write_from_terms(impl_->a, impl_->n, h, [&](const PackedTerms& terms) {
    density_observable_kernel<R><<<grid_for(u64{1} << m), kThreads>>>(impl_->a, m, terms);
  });
}

template <class R>
std::vector<cplx> StateVector<R>::density_rows() const {
  const std::size_t dim = std::size_t{1} << (impl_->n / 2);
  const std::vector<cplx> v = to_vector();
  std::vector<cplx> out(dim * dim);
  for (std::size_t r = 0; r < dim; ++r)
    for (std::size_t c = 0; c < dim; ++c) out[r * dim + c] = v[r + dim * c];
  return out;
}

template <class R>
std::vector<double> StateVector<R>::density_diagonal() const {
  const std::size_t dim = std::size_t{1} << (impl_->n / 2);
  // rho[c][c] is amplitude c (2^m + 1): its real part, one strided copy.
  std::vector<R> re(dim);
  QMLSIM_CUDA_CHECK(cudaMemcpy2D(re.data(), sizeof(R), impl_->a, 2 * (dim + 1) * sizeof(R),
                                 sizeof(R), dim, cudaMemcpyDeviceToHost));
  std::vector<double> p(dim);
  for (std::size_t c = 0; c < dim; ++c) p[c] = std::max(0.0, static_cast<double>(re[c]));
  return p;
}

template <class R>
std::map<index_t, std::int64_t> StateVector<R>::sample(std::int64_t shots,
                                                       std::uint64_t seed) const {
  cpu::StateVector<R> host(impl_->n, 1);
  QMLSIM_CUDA_CHECK(cudaMemcpy(host.data(), impl_->a, (std::size_t{2} << impl_->n) * sizeof(R),
                               cudaMemcpyDeviceToHost));
  return host.sample(shots, seed);
}

template <class R>
void StateVector<R>::bandwidth_pass() {
  const u64 reals = u64{2} << impl_->n;
  const u64 wide = reals * sizeof(R) / sizeof(Wide<R>);
  if (wide * sizeof(Wide<R>) == reals * sizeof(R))
    scale_wide_kernel<R>
        <<<grid_for(wide), kThreads>>>(reinterpret_cast<Wide<R>*>(impl_->a), wide, R(1));
  else
    scale_kernel<R><<<grid_for(reals), kThreads>>>(impl_->a, reals, R(1));
  QMLSIM_CUDA_CHECK(cudaGetLastError());
  synchronize();
}

template <class R>
void StateVector<R>::synchronize() const {
  QMLSIM_CUDA_CHECK(cudaDeviceSynchronize());
}

template class StateVector<float>;
template class StateVector<double>;

}  // namespace qmlsim::cuda
