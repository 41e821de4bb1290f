// CUDA implementation of backends/cuda/statevector.h.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "backends/cpu/statevector.h"
#include "backends/cuda/index_math.h"
#include "backends/cuda/statevector.h"
#include "core/error.h"

namespace qmlsim::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}
#define QMLSIM_CUDA_CHECK(call) check((call), #call)

constexpr int kThreads = 256;       // threads per block
constexpr int kReduceBlocks = 256;  // fixed grid of the reductions (reproducible sums)

int grid_for(u64 work) {
  const u64 blocks = (work + kThreads - 1) / kThreads;
  return static_cast<int>(std::min<u64>(std::max<u64>(blocks, 1), 65535ull * 8));
}

// A gate as the kernels see it (passed by value, a few hundred bytes).
struct GateDesc {
  int k = 0;                     // targets
  int targets[kMaxQubits] = {};  // ascending
  int npos = 0;                  // targets and controls, ascending
  int pos[kMaxQubits] = {};
  u64 ones = 0;                         // control bits
  u64 groups = 0;                       // 2^(n - npos)
  u64 off[1 << kMaxDenseTargets] = {};  // offset of local index r (dense gates)
  const double* m = nullptr;            // device: interleaved, dim x dim or dim (diagonal)
};

GateDesc describe(const BoundGate& g, int n, const double* device_matrix) {
  GateDesc d;
  d.k = g.num_targets();
  for (int j = 0; j < d.k; ++j) d.targets[j] = g.targets[j];
  std::vector<int> pos = g.targets;
  pos.insert(pos.end(), g.controls.begin(), g.controls.end());
  std::sort(pos.begin(), pos.end());
  d.npos = static_cast<int>(pos.size());
  for (int j = 0; j < d.npos; ++j) d.pos[j] = pos[j];
  for (int c : g.controls) d.ones |= u64{1} << c;
  d.groups = u64{1} << (n - d.npos);
  if (!g.diagonal && d.k <= kMaxDenseTargets)
    for (u64 r = 0; r < (u64{1} << d.k); ++r)
      for (int j = 0; j < d.k; ++j)
        if (r >> j & 1) d.off[r] |= u64{1} << g.targets[j];
  d.m = device_matrix;
  return d;
}

// One thread per group of 2^K amplitudes: out_r = sum_c m[r][c] in_c.
template <class R, int K>
__global__ void dense_kernel(R* a, GateDesc g) {
  constexpr int D = 1 << K;
  for (u64 t = blockIdx.x * u64{blockDim.x} + threadIdx.x; t < g.groups;
       t += u64{gridDim.x} * blockDim.x) {
    const u64 base = insert_zeros(t, g.pos, g.npos) | g.ones;
    double vr[D], vi[D];
#pragma unroll
    for (int r = 0; r < D; ++r) {
      vr[r] = a[2 * (base | g.off[r])];
      vi[r] = a[2 * (base | g.off[r]) + 1];
    }
#pragma unroll
    for (int r = 0; r < D; ++r) {
      double sr = 0, si = 0;
#pragma unroll
      for (int c = 0; c < D; ++c) {
        const double mr = g.m[2 * (r * D + c)], mi = g.m[2 * (r * D + c) + 1];
        sr += mr * vr[c] - mi * vi[c];
        si += mr * vi[c] + mi * vr[c];
      }
      a[2 * (base | g.off[r])] = static_cast<R>(sr);
      a[2 * (base | g.off[r]) + 1] = static_cast<R>(si);
    }
  }
}

// One thread per amplitude: multiply by the diagonal entry of its local index.
template <class R>
__global__ void diagonal_kernel(R* a, u64 size, GateDesc g) {
  for (u64 i = blockIdx.x * u64{blockDim.x} + threadIdx.x; i < size;
       i += u64{gridDim.x} * blockDim.x) {
    if ((i & g.ones) != g.ones) continue;
    const unsigned r = local_index(i, g.targets, g.k);
    const double mr = g.m[2 * r], mi = g.m[2 * r + 1];
    const double xr = a[2 * i], xi = a[2 * i + 1];
    a[2 * i] = static_cast<R>(mr * xr - mi * xi);
    a[2 * i + 1] = static_cast<R>(mr * xi + mi * xr);
  }
}

template <class R>
__global__ void scale_kernel(R* a, u64 reals, R s) {
  for (u64 i = blockIdx.x * u64{blockDim.x} + threadIdx.x; i < reals;
       i += u64{gridDim.x} * blockDim.x)
    a[i] *= s;
}

// Pauli terms in device memory: masks and complex coefficients coeff * i^popc(x & z).
struct TermsDesc {
  int count = 0;
  const u64* x = nullptr;
  const u64* z = nullptr;
  const double* c = nullptr;  // interleaved
};

// (H src)_j, accumulated in double.
template <class R>
__device__ void pauli_row(const R* src, u64 j, const TermsDesc& h, double& re, double& im) {
  re = 0;
  im = 0;
  for (int t = 0; t < h.count; ++t) {
    const u64 i = j ^ h.x[t];
    const double s = pauli_sign(j, h.x[t], h.z[t]);
    const double pr = src[2 * i], pi = src[2 * i + 1];
    const double cr = s * h.c[2 * t], ci = s * h.c[2 * t + 1];
    re += cr * pr - ci * pi;
    im += cr * pi + ci * pr;
  }
}

template <class R>
__global__ void pauli_apply_kernel(const R* src, R* dst, u64 size, TermsDesc h) {
  for (u64 j = blockIdx.x * u64{blockDim.x} + threadIdx.x; j < size;
       j += u64{gridDim.x} * blockDim.x) {
    double re, im;
    pauli_row(src, j, h, re, im);
    dst[2 * j] = static_cast<R>(re);
    dst[2 * j + 1] = static_cast<R>(im);
  }
}

// Block-wide sum of v (every thread passes one value); thread 0 gets the total.
__device__ double block_sum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  const double out = shared[0];
  __syncthreads();
  return out;
}

// partial[block] = sum over this block's j of conj(bra_j) (H ket)_j.
template <class R>
__global__ void pauli_element_kernel(const R* bra, const R* ket, u64 size, TermsDesc h,
                                     double* partial) {
  __shared__ double shared[kThreads];
  double sr = 0, si = 0;
  for (u64 j = blockIdx.x * u64{blockDim.x} + threadIdx.x; j < size;
       j += u64{gridDim.x} * blockDim.x) {
    double re, im;
    pauli_row(ket, j, h, re, im);
    const double br = bra[2 * j], bi = -bra[2 * j + 1];
    sr += br * re - bi * im;
    si += br * im + bi * re;
  }
  sr = block_sum(sr, shared);
  si = block_sum(si, shared);
  if (threadIdx.x == 0) {
    partial[2 * blockIdx.x] = sr;
    partial[2 * blockIdx.x + 1] = si;
  }
}

// partial[block][e] = sum over this block's groups of conj(bra_a) ket_b, e = a*D+b
// (DIAG: only a == b, e = a).
template <class R, int K, bool DIAG>
__global__ void cross_kernel(const R* bra, const R* ket, GateDesc g, double* partial) {
  constexpr int D = 1 << K;
  constexpr int E = DIAG ? D : D * D;
  __shared__ double shared[kThreads];
  double acc[2 * E];
#pragma unroll
  for (int e = 0; e < 2 * E; ++e) acc[e] = 0;
  for (u64 t = blockIdx.x * u64{blockDim.x} + threadIdx.x; t < g.groups;
       t += u64{gridDim.x} * blockDim.x) {
    const u64 base = insert_zeros(t, g.pos, g.npos) | g.ones;
    double br[D], bi[D], kr[D], ki[D];
#pragma unroll
    for (int r = 0; r < D; ++r) {
      u64 o = 0;
      for (int j = 0; j < K; ++j)
        if (r >> j & 1) o |= u64{1} << g.targets[j];
      br[r] = bra[2 * (base | o)];
      bi[r] = -bra[2 * (base | o) + 1];
      kr[r] = ket[2 * (base | o)];
      ki[r] = ket[2 * (base | o) + 1];
    }
#pragma unroll
    for (int a = 0; a < D; ++a)
#pragma unroll
      for (int b = 0; b < D; ++b) {
        if (DIAG && a != b) continue;
        const int e = DIAG ? a : a * D + b;
        acc[2 * e] += br[a] * kr[b] - bi[a] * ki[b];
        acc[2 * e + 1] += br[a] * ki[b] + bi[a] * kr[b];
      }
  }
  for (int e = 0; e < 2 * E; ++e) {
    const double s = block_sum(acc[e], shared);
    if (threadIdx.x == 0) partial[blockIdx.x * 2 * E + e] = s;
  }
}

// Device buffer of T, freed on scope exit.
template <class T>
struct DeviceArray {
  T* p = nullptr;
  std::size_t n = 0;
  explicit DeviceArray(std::size_t count) : n(count) {
    if (count) QMLSIM_CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
  }
  DeviceArray(const T* host, std::size_t count) : DeviceArray(count) {
    if (count) QMLSIM_CUDA_CHECK(cudaMemcpy(p, host, count * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceArray() {
    if (p) cudaFree(p);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
};

// Every gate's matrix in one device buffer (interleaved doubles); offsets per gate.
struct DeviceMatrices {
  std::vector<std::size_t> offset;
  std::unique_ptr<DeviceArray<double>> data;
  explicit DeviceMatrices(const std::vector<BoundGate>& gates) {
    std::vector<double> host;
    for (const BoundGate& g : gates) {
      offset.push_back(host.size());
      for (const cplx& e : g.matrix) {
        host.push_back(e.real());
        host.push_back(e.imag());
      }
    }
    data = std::make_unique<DeviceArray<double>>(host.data(), host.size());
  }
  const double* at(std::size_t i) const { return data->p + offset[i]; }
};

// Terms of a Pauli sum on the device.
struct DeviceTerms {
  std::unique_ptr<DeviceArray<u64>> x, z;
  std::unique_ptr<DeviceArray<double>> c;
  TermsDesc desc;
  explicit DeviceTerms(const PauliSum& h) {
    std::vector<u64> xs, zs;
    std::vector<double> cs;
    for (const PauliTerm& t : h.terms) {
      xs.push_back(t.xmask);
      zs.push_back(t.zmask);
      // coeff * i^popc(x & z): the Y factors' phase
      const int ny = __builtin_popcountll(t.xmask & t.zmask) % 4;
      const cplx ph[4] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
      const cplx c = t.coeff * ph[ny];
      cs.push_back(c.real());
      cs.push_back(c.imag());
    }
    x = std::make_unique<DeviceArray<u64>>(xs.data(), xs.size());
    z = std::make_unique<DeviceArray<u64>>(zs.data(), zs.size());
    c = std::make_unique<DeviceArray<double>>(cs.data(), cs.size());
    desc = {static_cast<int>(xs.size()), x->p, z->p, c->p};
  }
};

template <class R>
void launch_gate(R* a, int n, const BoundGate& g, const double* m) {
  const GateDesc d = describe(g, n, m);
  const u64 size = u64{1} << n;
  if (g.diagonal) {
    diagonal_kernel<R><<<grid_for(size), kThreads>>>(a, size, d);
  } else {
    const int blocks = grid_for(d.groups);
    switch (d.k) {
      case 1:
        dense_kernel<R, 1><<<blocks, kThreads>>>(a, d);
        break;
      case 2:
        dense_kernel<R, 2><<<blocks, kThreads>>>(a, d);
        break;
      case 3:
        dense_kernel<R, 3><<<blocks, kThreads>>>(a, d);
        break;
      case 4:
        dense_kernel<R, 4><<<blocks, kThreads>>>(a, d);
        break;
      case 5:
        dense_kernel<R, 5><<<blocks, kThreads>>>(a, d);
        break;
      default:
        throw Error("cuda: dense gates of " + std::to_string(d.k) + " targets exceed the " +
                    std::to_string(kMaxDenseTargets) + " the GPU kernels take");
    }
  }
  QMLSIM_CUDA_CHECK(cudaGetLastError());
}

// Entries of a measured gate's cross matrix (0 if the GPU does not form it).
int cross_entries(const BoundGate& g) {
  if (g.diagonal) return g.num_targets() <= 5 ? static_cast<int>(g.dim()) : 0;
  return g.num_targets() <= 2 ? static_cast<int>(g.dim() * g.dim()) : 0;
}

template <class R>
void launch_cross(const R* bra, const R* ket, int n, const BoundGate& g, double* partial) {
  const GateDesc d = describe(g, n, nullptr);
  const int blocks = kReduceBlocks;
  if (g.diagonal) {
    switch (d.k) {
      case 1:
        cross_kernel<R, 1, true><<<blocks, kThreads>>>(bra, ket, d, partial);
        break;
      case 2:
        cross_kernel<R, 2, true><<<blocks, kThreads>>>(bra, ket, d, partial);
        break;
      case 3:
        cross_kernel<R, 3, true><<<blocks, kThreads>>>(bra, ket, d, partial);
        break;
      case 4:
        cross_kernel<R, 4, true><<<blocks, kThreads>>>(bra, ket, d, partial);
        break;
      case 5:
        cross_kernel<R, 5, true><<<blocks, kThreads>>>(bra, ket, d, partial);
        break;
      default:
        break;
    }
  } else if (d.k == 1) {
    cross_kernel<R, 1, false><<<blocks, kThreads>>>(bra, ket, d, partial);
  } else {
    cross_kernel<R, 2, false><<<blocks, kThreads>>>(bra, ket, d, partial);
  }
  QMLSIM_CUDA_CHECK(cudaGetLastError());
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
    throw Error(msg);
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
  std::vector<R> host(std::size_t{2} << impl_->n);
  QMLSIM_CUDA_CHECK(
      cudaMemcpy(host.data(), impl_->a, host.size() * sizeof(R), cudaMemcpyDeviceToHost));
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
  const DeviceMatrices m(gates);
  for (std::size_t i = 0; i < gates.size(); ++i) launch_gate(impl_->a, impl_->n, gates[i], m.at(i));
  synchronize();
}

template <class R>
double StateVector<R>::norm_squared() const {
  PauliSum one;
  one.add(1.0, 0, 0);
  return expval(one);
}

template <class R>
double StateVector<R>::expval(const PauliSum& h) const {
  if (h.terms.empty()) return 0;
  const DeviceTerms t(h);
  DeviceArray<double> partial(2 * kReduceBlocks);
  pauli_element_kernel<R>
      <<<kReduceBlocks, kThreads>>>(impl_->a, impl_->a, size(), t.desc, partial.p);
  QMLSIM_CUDA_CHECK(cudaGetLastError());
  std::vector<double> host(2 * kReduceBlocks);
  QMLSIM_CUDA_CHECK(
      cudaMemcpy(host.data(), partial.p, host.size() * sizeof(double), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (int b = 0; b < kReduceBlocks; ++b) sum += host[2 * b];
  return sum;
}

template <class R>
void StateVector<R>::assign_applied(const PauliSum& h, const StateVector& src) {
  if (h.terms.empty()) {
    QMLSIM_CUDA_CHECK(cudaMemset(impl_->a, 0, (std::size_t{2} << impl_->n) * sizeof(R)));
    return;
  }
  const DeviceTerms t(h);
  pauli_apply_kernel<R><<<grid_for(size()), kThreads>>>(src.impl_->a, impl_->a, size(), t.desc);
  QMLSIM_CUDA_CHECK(cudaGetLastError());
  synchronize();
}

template <class R>
void StateVector<R>::adjoint_sweep(StateVector& lambda, const std::vector<BoundGate>& inverse,
                                   const std::vector<char>& measure, std::vector<Matrix>& out) {
  out.assign(inverse.size(), Matrix{});
  // Partial sums of every measured gate stay on the device until the end.
  std::vector<std::size_t> at(inverse.size(), 0);
  std::size_t total = 0;
  for (std::size_t i = 0; i < inverse.size(); ++i) {
    if (!measure[i]) continue;
    const int e = cross_entries(inverse[i]);
    if (e == 0)
      throw Error("cuda: the adjoint gradient of a " +
                  std::string(inverse[i].diagonal ? "diagonal" : "dense") + " gate on " +
                  std::to_string(inverse[i].num_targets()) +
                  " targets is not implemented on the GPU (at most 2 dense, 5 diagonal); use "
                  "--backend cpu");
    at[i] = total;
    total += static_cast<std::size_t>(kReduceBlocks) * 2 * e;
  }
  DeviceArray<double> partial(total);
  const DeviceMatrices m(inverse);
  for (std::size_t j = inverse.size(); j-- > 0;) {
    launch_gate(impl_->a, impl_->n, inverse[j], m.at(j));
    if (measure[j])
      launch_cross(lambda.impl_->a, impl_->a, impl_->n, inverse[j], partial.p + at[j]);
    launch_gate(lambda.impl_->a, impl_->n, inverse[j], m.at(j));
  }
  std::vector<double> host(total);
  if (total)
    QMLSIM_CUDA_CHECK(
        cudaMemcpy(host.data(), partial.p, total * sizeof(double), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < inverse.size(); ++i) {
    if (!measure[i]) continue;
    const std::size_t dim = inverse[i].dim();
    const int e = cross_entries(inverse[i]);
    Matrix sum(dim * dim, 0.0);
    for (int b = 0; b < kReduceBlocks; ++b)
      for (int k = 0; k < e; ++k) {
        const double* p = &host[at[i] + (static_cast<std::size_t>(b) * e + k) * 2];
        const std::size_t idx = inverse[i].diagonal ? k * dim + k : static_cast<std::size_t>(k);
        sum[idx] += cplx{p[0], p[1]};
      }
    out[i] = std::move(sum);
  }
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
