// Gate kernels for interleaved complex state vectors (re, im, re, im, ...),
// one set per instruction set, chosen at run time from the CPU's features.
//
// Every set is compiled from the same template (kernels_impl.inc) with a
// different vector width: portable builds (SSE2 baseline) of 16, 32 and 64-byte
// vectors, AVX2+FMA (32 bytes) and AVX-512 (64 bytes). Tests run every set the
// CPU can execute, so the 64-byte logic is tested even where AVX-512 is absent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"

namespace qmlsim::cpu {

inline constexpr int kMaxControls = kMaxQubits;

// A gate as the kernels see it (plain data: the kernel translation units use no
// shared inline code, so each can be compiled for its own instruction set).
// Canonical form as in BoundGate: targets ascending, local index bit j <-> targets[j].
struct KernelGate {
  int k = 0;
  int targets[kMaxQubits] = {};
  int num_controls = 0;
  int controls[kMaxControls] = {};  // ascending
  bool diagonal = false;
  const double* matrix = nullptr;  // interleaved complex: 2^k diagonal or 2^k x 2^k row-major
};

// A diagonal of signs over 2^n amplitudes: amplitude i is multiplied by
// (-1)^f(i), f(i) = parity(i & linear) ^ negate ^ (XOR over qubits p with bit p
// of i set: parity(i & partners[p])), partners[p] holding qubits above p only.
// A quadratic form over GF(2): any product of Z, CZ and other real +-1
// diagonal gates on at most two wires has this form.
struct SignDiagonal {
  std::uint64_t linear = 0;
  std::uint64_t partners[kMaxQubits] = {};
  bool negate = false;
};

// Kernel forms. On states that stream from memory, a dense gate whose targets
// all lie above the SIMD lanes, and a diagonal gate whose wires above the lanes
// leave runs of 64 vectors or more, have several forms: walks of the state in
// different orders that compute the same amplitudes, bit for bit. Which one is
// fastest depends on the memory system (docs/design/kernel-forms.md), so each
// class (kernel set, precision, kind, qubit count) is calibrated on its first
// calls: its forms run in turn, kFormTrials times each, timed, and the one with
// the least time of its trials runs from then on, for the rest of the process.
// QMLSIM_KERNEL_FORM=<form> (lockstep, tiled2, tiled4, tiled8, sequential)
// forces that form in every class that has it, on states of any size.
struct FormSlot;  // one class's calibration (kernels.cc)
inline constexpr int kMaxForms = 4;
inline constexpr int kFormTrials = 3;
// The slot of a class, created on first use: kind 0 for diagonal gates, k >= 1
// for dense gates with k targets above the lanes; names[0..count) its forms.
// Throws Error for a QMLSIM_KERNEL_FORM that names no form.
FormSlot* form_slot(const char* isa, int vector_bytes, int real_bytes, int kind, int n,
                    const char* const* names, int count);
int form_to_run(FormSlot* slot);  // the chosen (or forced) form, else the next to time
void form_report(FormSlot* slot, int form, double seconds);
const char* form_name(const FormSlot* slot);  // the chosen form's name, or "calibrating"
double form_clock();                          // seconds on a steady clock
// Forces a form as QMLSIM_KERNEL_FORM does ("" for none: calibrate) for gates
// run from now on; returns the previous setting. Throws Error for an unknown form.
std::string force_kernel_form(const std::string& form);
bool kernel_form_forced();  // a form is forced: every state size offers forms

// Gates are prepared once (coefficient tables for this instruction set) and
// then run on any number of states of the qubit count given at preparation.
struct KernelSet {
  const char* name;
  int vector_bytes;
  void* (*prepare_f32)(const KernelGate* gates, int count, int n);
  void (*run_f32)(const void* prepared, float* amps, int threads);
  void (*release_f32)(void* prepared);
  void* (*prepare_f64)(const KernelGate* gates, int count, int n);
  void (*run_f64)(const void* prepared, double* amps, int threads);
  void (*release_f64)(void* prepared);
  // The adjoint method's step at a measured gate G, fused into one pass over both
  // states: out = P = (M - M^dagger) / 2, the anti-Hermitian part of M_ab = sum
  // conj(bra_a) ket_b over G's targets (controls set) as the states are on entry
  // (dim x dim interleaved, at most kMaxAdjointDim^2 entries); then, with
  // write_back, ket = G ket and bra = G bra (without it neither state changes).
  // `prepared` holds G alone. Applies to dense one-target gates, dense
  // two-target gates (with lane controls only when a target is a lane qubit),
  // and diagonal gates of up to 8 targets, at most 6 of them above the lanes
  // (only the diagonal of P is formed, and out holds its dim entries); false,
  // with nothing done, for others (and for states smaller than a vector).
  // Serial; the sums depend only on the states and the gate. With real_part
  // only the real parts of P are formed where that saves work (the imaginary
  // parts then read 0): for a gate whose derivatives dG G^dagger are real
  // (RY), whose gradient 2 Re sum (dG G^dagger)_ab P_ab reads no more.
  bool (*adjoint_step_f32)(const void* prepared, float* bra, float* ket, double* out,
                           bool write_back, bool real_part);
  bool (*adjoint_step_f64)(const void* prepared, double* bra, double* ket, double* out,
                           bool write_back, bool real_part);
  // Two adjoint steps in one pass: A's and B's sums (out_a, out_b, each 2 x 2 as
  // above) from the states on entry, then, with write_back, both states
  // multiplied by A and by B. For dense one-target gates A and B on different
  // qubits above the SIMD lanes, without controls (a layer of one-qubit gates;
  // B's sums do not change under A, which acts on another qubit of both
  // states); false, with nothing done, for others. real_part: as for
  // adjoint_step, for both gates.
  bool (*adjoint_pair_f32)(const void* prepared_a, const void* prepared_b, float* bra, float* ket,
                           double* out_a, double* out_b, bool write_back, bool real_part);
  bool (*adjoint_pair_f64)(const void* prepared_a, const void* prepared_b, double* bra, double* ket,
                           double* out_a, double* out_b, bool write_back, bool real_part);
  // A run of adjoint steps at diagonal gates G_1..G_count (each a list of one
  // gate, without controls, taken by adjoint_step) in one pass: out[g] = G_g's
  // diagonal of P as adjoint_step forms it, all from the states on entry (a
  // diagonal unitary applied to both states leaves each conj(bra_i) ket_i as
  // it is, so every gate's sums are the same before and after the others);
  // then, with write_back, both states multiplied by every G_g. false, with
  // nothing done, for other gates or more than kMaxDiagonalRun of them.
  bool (*adjoint_diagonal_run_f32)(const void* const* prepared, int count, float* bra, float* ket,
                                   double* const* out, bool write_back);
  bool (*adjoint_diagonal_run_f64)(const void* const* prepared, int count, double* bra, double* ket,
                                   double* const* out, bool write_back);
  // Multiplies a and b (2^n amplitudes each; b may be null) by the sign
  // diagonal d in one serial pass: the adjoint sweep undoes a layer of CZ gates
  // on both of its states at once.
  void (*apply_signs_f32)(const SignDiagonal& d, float* a, float* b, int n);
  void (*apply_signs_f64)(const SignDiagonal& d, double* a, double* b, int n);
  // The kernel form of a prepared list's first gate (form_name of its class),
  // or null where its class has a single form.
  const char* (*form_f32)(const void* prepared);
  const char* (*form_f64)(const void* prepared);
};
inline constexpr int kMaxAdjointDim = 16;
inline constexpr int kMaxDiagonalRun = 32;

// Owns prepared gates of one kernel set and precision R (float or double).
template <class R>
class PreparedGates {
 public:
  PreparedGates(const KernelSet& k, const KernelGate* gates, int count, int n) : k_(&k) {
    if constexpr (sizeof(R) == 4)
      p_ = k.prepare_f32(gates, count, n);
    else
      p_ = k.prepare_f64(gates, count, n);
  }
  PreparedGates(const PreparedGates&) = delete;
  PreparedGates& operator=(const PreparedGates&) = delete;
  ~PreparedGates() {
    if constexpr (sizeof(R) == 4)
      k_->release_f32(p_);
    else
      k_->release_f64(p_);
  }
  // Applies the gates in order to amps (2^n interleaved amplitudes).
  void run(R* amps, int threads) const {
    if constexpr (sizeof(R) == 4)
      k_->run_f32(p_, amps, threads);
    else
      k_->run_f64(p_, amps, threads);
  }
  // KernelSet::adjoint_pair: this list's gate is A, other's B.
  bool adjoint_pair(const PreparedGates& other, R* bra, R* ket, double* out_a, double* out_b,
                    bool write_back = true, bool real_part = false) const {
    if constexpr (sizeof(R) == 4)
      return k_->adjoint_pair_f32(p_, other.p_, bra, ket, out_a, out_b, write_back, real_part);
    else
      return k_->adjoint_pair_f64(p_, other.p_, bra, ket, out_a, out_b, write_back, real_part);
  }
  // KernelSet::adjoint_diagonal_run: gates[g] each a list of one gate, all of
  // this kernel set.
  static bool adjoint_diagonal_run(const PreparedGates* const* gates, int count, R* bra, R* ket,
                                   double* const* out, bool write_back = true) {
    if (count < 1 || count > kMaxDiagonalRun) return false;
    const void* p[kMaxDiagonalRun];
    for (int g = 0; g < count; ++g) p[g] = gates[g]->p_;
    const KernelSet& k = *gates[0]->k_;
    if constexpr (sizeof(R) == 4)
      return k.adjoint_diagonal_run_f32(p, count, bra, ket, out, write_back);
    else
      return k.adjoint_diagonal_run_f64(p, count, bra, ket, out, write_back);
  }
  // KernelSet::form_f32/f64.
  const char* form() const {
    if constexpr (sizeof(R) == 4)
      return k_->form_f32(p_);
    else
      return k_->form_f64(p_);
  }
  // KernelSet::adjoint_step for a list of one gate.
  bool adjoint_step(R* bra, R* ket, double* out, bool write_back = true,
                    bool real_part = false) const {
    if constexpr (sizeof(R) == 4)
      return k_->adjoint_step_f32(p_, bra, ket, out, write_back, real_part);
    else
      return k_->adjoint_step_f64(p_, bra, ket, out, write_back, real_part);
  }

 private:
  const KernelSet* k_;
  void* p_;
};

// The fastest set this CPU runs (AVX-512, else AVX2+FMA, else portable 16-byte),
// unless QMLSIM_KERNELS names another available set.
const KernelSet& best_kernels();

// Every set this CPU can run, for tests and benchmarks.
std::vector<const KernelSet*> available_kernel_sets();

// Per-ISA entry points (defined in kernels_*.cc).
namespace portable {
const KernelSet& kernels16();
const KernelSet& kernels32();
const KernelSet& kernels64();
}  // namespace portable
namespace avx2 {
const KernelSet& kernels();
}
namespace avx512 {
const KernelSet& kernels();
}

}  // namespace qmlsim::cpu
