// Helpers shared by the CUDA translation units (statevector.cu, small_batch.cu):
// error checks, device buffers, block-wide sums, packed lists on the device.
// Included only by .cu files.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/small_batch_pack.h"
#include "core/error.h"

namespace qmlsim::cuda {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}
#define QMLSIM_CUDA_CHECK(call) ::qmlsim::cuda::check((call), #call)

// Device buffer of `count` T, freed on scope exit; optionally a copy of a host vector.
template <class T>
struct DeviceArray {
  T* p = nullptr;
  std::size_t n = 0;
  explicit DeviceArray(std::size_t count) : n(count) {
    if (count) QMLSIM_CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    if (n) QMLSIM_CUDA_CHECK(cudaMemcpy(p, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceArray() {
    if (p) cudaFree(p);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  std::vector<T> to_host() const {
    std::vector<T> out(n);
    if (n) QMLSIM_CUDA_CHECK(cudaMemcpy(out.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return out;
  }
};

// Block-wide sum of v (every thread of the block passes one value, `shared`
// holds blockDim.x doubles, blockDim.x a power of two); every thread gets the total.
__device__ inline double block_sum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  const double out = shared[0];
  __syncthreads();
  return out;
}

// A packed gate list (small_batch_pack.h) on the device.
struct DeviceItems {
  DeviceArray<PackedGate> gates;
  DeviceArray<std::uint32_t> first;
  DeviceArray<double> matrices;
  explicit DeviceItems(const PackedItems& p)
      : gates(p.gates), first(p.first), matrices(p.matrices) {}
};

// Packed Pauli sums on the device; terms(i) is sum i's view.
struct DeviceSums {
  DeviceArray<u64> x, z;
  DeviceArray<double> c;
  DeviceArray<std::uint32_t> first;
  explicit DeviceSums(const PackedSums& s) : x(s.x), z(s.z), c(s.c), first(s.first) {}
  PackedTerms terms(const PackedSums& s, std::size_t i) const { return s.terms(i, x.p, z.p, c.p); }
};

}  // namespace qmlsim::cuda
