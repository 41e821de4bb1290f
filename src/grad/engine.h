// The execution policy shared by grad's entry points (internal to the layer):
// the fusion width a backend takes, and how many items share the threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/statevector.h"
#include "backends/cuda/statevector.h"
#include "circuit/circuit.h"
#include "core/error.h"
#include "core/memory.h"
#include "core/parallel.h"
#include "grad/adjoint.h"
#include "grad/method.h"

namespace qmlsim::detail {

// The options with the fusion width capped where the backend's kernels stop
// (the GPU's dense kernels take at most cuda::kMaxDenseTargets targets).
inline EngineOptions for_backend(EngineOptions o) {
  if (o.backend == Backend::cuda) o.fusion = std::min(o.fusion, cuda::kMaxDenseTargets);
  return o;
}

// Starts sv from options.initial_state when one is given (its size checked).
template <class SV>
void set_initial_state(SV& sv, const EngineOptions& options) {
  if (options.initial_state.empty()) return;
  const std::size_t size = static_cast<std::size_t>(sv.size());
  if (options.initial_state.size() == size * size)
    throw Error("initial state: a density matrix runs on the density-matrix method only");
  if (options.initial_state.size() != size) {
    throw Error("initial state: " + std::to_string(options.initial_state.size()) +
                " amplitudes for " + std::to_string(sv.num_qubits()) + " qubit(s)");
  }
  sv.set_amplitudes(options.initial_state);
}

template <class R>
bool serial_sweep(int n, const EngineOptions& o);
template <class R>
bool sweeps_one_per_thread(std::size_t count, int n, const EngineOptions& o);

// What grad knows of a backend beyond the state vectors' common interface:
// its capabilities and policies, so that grad's code names no backend. The
// defaults are a backend without the CPU's extras (the GPU's); the CPU's
// specialisation follows.
template <class SV>
struct BackendTraits {
  // Widest diagonal block of the sweep cut the backend's adjoint sweep measures.
  static constexpr int kDiagonalBlockQubits = 2;
  // adjoint_sweep_from(h, lambda, ...): lambda = H phi formed in the sweep's
  // first pass, <phi|H|phi> returned.
  static constexpr bool kSweepFromObservable = false;
  // apply_from_zero(gates): the forward pass writes the state from |0...0>.
  static constexpr bool kForwardFromZero = false;
  // adjoint_sweep skips steps no measured gate needs undone (leaving both
  // states unspecified without undo_all); otherwise every step is taken.
  static constexpr bool kSweepSkipsUnneededSteps = false;
  // A new state; where the backend allows, its amplitudes left unset.
  static SV make_state(int n, const EngineOptions&) { return SV(n); }
  // The sweeps of n qubits run on one thread (serial_sweep below).
  static bool serial_sweep(int, const EngineOptions&) { return false; }
  // `count` sweeps run one per thread (sweeps_one_per_thread below).
  static bool sweeps_one_per_thread(std::size_t, int, const EngineOptions&) { return false; }
  // The sweep cut gathers one-qubit phase steps (the sweep runs in segments
  // whose diagonal-run kernel takes them).
  static bool gather_phases(int, const EngineOptions&) { return false; }
};

template <class R>
struct BackendTraits<cpu::StateVector<R>> {
  using SV = cpu::StateVector<R>;
  // The fused step measures diagonals of up to 8 qubits in one pass
  // (kernels.h) and cache blocking places them in any chunk.
  static constexpr int kDiagonalBlockQubits = 6;
  static constexpr bool kSweepFromObservable = true;
  static constexpr bool kForwardFromZero = true;
  static constexpr bool kSweepSkipsUnneededSteps = true;
  static SV make_state(int n, const EngineOptions& o) {
    SV s(n, o.threads, typename SV::Unset{});
    if (o.chunk_qubits >= 0) s.set_chunk_qubits(o.chunk_qubits);
    return s;
  }
  static bool serial_sweep(int n, const EngineOptions& o) { return detail::serial_sweep<R>(n, o); }
  static bool sweeps_one_per_thread(std::size_t count, int n, const EngineOptions& o) {
    return detail::sweeps_one_per_thread<R>(count, n, o);
  }
  static bool gather_phases(int n, const EngineOptions& o) {
    return SV::sweep_in_segments(n, o.chunk_qubits, o.threads == 1);
  }
};

// fn.template operator()<SV>(options) with SV the state vector of the
// options' backend in precision R (on the GPU with the options it takes,
// for_backend): where an engine written over the state type is dispatched.
template <class R, class Fn>
decltype(auto) on_backend(const EngineOptions& o, Fn&& fn) {
  if (o.backend == Backend::cuda)
    return fn.template operator()<cuda::StateVector<R>>(for_backend(o));
  return fn.template operator()<cpu::StateVector<R>>(o);
}

// A state of the options' backend (threads and chunks apply to the CPU's).
template <class SV>
SV make_state(int n, const EngineOptions& o) {
  return BackendTraits<SV>::make_state(n, o);
}

// The state after `gates` from the options' initial state, else from |0...0>
// (on the CPU written by the forward pass itself: StateVector::apply_from_zero).
template <class SV>
SV forward_state(int n, const EngineOptions& o, const std::vector<BoundGate>& gates) {
  SV sv = make_state<SV>(n, o);
  if constexpr (BackendTraits<SV>::kForwardFromZero) {
    if (o.initial_state.empty()) {
      sv.apply_from_zero(gates);
      return sv;
    }
  }
  set_initial_state(sv, o);  // the GPU's new state is |0...0> without one
  sv.apply(gates);
  return sv;
}

// Runs fn(i, item_options) for i < count, items of n qubits: one item per
// thread (one thread inside each) when states are small and on the CPU; else in
// turn with the options' threads inside (on the GPU on the calling thread,
// which holds the device).
// An item's exception is rethrown after the loop (parallel_items).
template <class Fn>
void run_items(std::size_t count, bool one_per_thread, const EngineOptions& options, Fn&& fn) {
  parallel_items(count, one_per_thread, options.threads, [&](std::size_t i, int threads) {
    EngineOptions inner = options;
    inner.threads = threads;
    fn(i, inner);
  });
}

// Whether one item per thread (as many as `count` at once) of `size` fit in
// memory: where they do not, items run in turn, one in flight.
inline bool in_flight_fits(std::size_t count, const ItemSize& size, const EngineOptions& o) {
  const auto in_flight = std::min<std::uint64_t>(count, static_cast<std::uint64_t>(o.threads));
  return fits_in_memory(in_flight * size.bytes);
}

// Items whose states are smaller than kMinParallelWork amplitudes (a density
// matrix counts its 2n qubits) run one per thread where memory allows.
template <class Fn>
void for_each_item(std::size_t count, const ItemSize& size, const EngineOptions& options, Fn&& fn) {
  const bool small =
      size.state_qubits < 62 && (std::int64_t{1} << size.state_qubits) < kMinParallelWork;
  run_items(count, options.backend == Backend::cpu && small && in_flight_fits(count, size, options),
            options, fn);
}

// True for adjoint sweeps of n-qubit states on the CPU that a second thread
// does not speed up: below kMinParallelWork amplitudes, and states that fit
// one cache-blocked chunk, which the sweep takes gate by gate over the whole
// state with a parallel region per step instead of its fused single-pass
// steps (with 2 threads 2.3-2.6x slower than with 1 at 14 and 15 qubits in
// c128 on a 2 MiB L2: docs/performance.md). Such a sweep runs on one thread,
// and a batch of them one item per thread (for_each_sweep).
template <class R>
bool serial_sweep(int n, const EngineOptions& o) {
  if (o.backend != Backend::cpu || n >= 62) return false;
  if ((std::int64_t{1} << n) < kMinParallelWork) return true;
  const int chunk =
      o.chunk_qubits >= 0 ? o.chunk_qubits : cpu::StateVector<R>::default_chunk_qubits();
  return chunk > 0 && n <= chunk;
}

// True where `count` adjoint sweeps of n qubits run faster one per thread than
// in turn with the threads inside: serial_sweep's states, and, with at least
// one sweep per thread, states of two cache-blocked chunks, whose sweeps then
// stay blocked, each in its own thread's cache, without a parallel region per
// segment (16 readouts of the 16-wire transfer-learning circuit, c128, 2 MiB
// L2, 15-qubit chunks: 47 -> 42 ms; no gain at 17 qubits).
template <class R>
bool sweeps_one_per_thread(std::size_t count, int n, const EngineOptions& o) {
  if (serial_sweep<R>(n, o)) return true;
  if (o.backend != Backend::cpu || o.threads < 2 || count < static_cast<std::size_t>(o.threads))
    return false;
  const int chunk =
      o.chunk_qubits >= 0 ? o.chunk_qubits : cpu::StateVector<R>::default_chunk_qubits();
  return chunk > 0 && n <= chunk + 1;
}

// for_each_item for items that are adjoint sweeps (see sweeps_one_per_thread).
template <class R, class Fn>
void for_each_sweep(std::size_t count, const ItemSize& size, const EngineOptions& options,
                    Fn&& fn) {
  run_items(count,
            sweeps_one_per_thread<R>(count, size.state_qubits, options) &&
                in_flight_fits(count, size, options),
            options, fn);
}

// Trajectories do not differentiate channel parameters (their branch
// probabilities depend on them): a channel with a trainable one is an Error
// naming it and the density-matrix method, which does.
inline void require_literal_channel_params(const Operation& op) {
  for (const ParamExpr& p : op.params)
    if (p.slot >= 0)
      throw Error(describe(op) +
                  ": trajectories do not differentiate a channel's trainable parameter; the "
                  "density-matrix method does");
}

// The qubit count every circuit shares; an Error naming `what` if they differ.
inline int common_qubits(const std::vector<const Circuit*>& circuits, const char* what) {
  const int n = circuits.empty() ? 0 : circuits[0]->num_qubits();
  for (const Circuit* c : circuits)
    if (c->num_qubits() != n) throw Error(std::string(what) + ": circuits of different sizes");
  return n;
}

}  // namespace qmlsim::detail
