// Fuzz target: the OpenQASM 2.0 / 3 reader, with fusion as a consumer.
// Contract checked on every input:
//  - the reader returns a program or throws Error with a one-line message
//    located in the file ("fuzz.qasm:line:col: ..."), free of control bytes;
//  - inputs bind (fixed values) to finite angles or give such an Error, and
//    the chain rule runs on them;
//  - every angle it returns, and the global phase, is finite;
//  - on programs of at most 6 qubits, the fused gates give the same state as
//    the gates one by one, and that state has norm 1 (for noisy and dynamic
//    programs: their unconditioned gates);
//  - every channel's Kraus set, at its bound parameters, is finite and trace
//    preserving, and every measurement, reset and condition names a qubit and
//    classical bits of the program;
//  - on noisy programs of at most 4 qubits without measurements, the dense
//    density matrix has trace 1 and is Hermitian.
// Anything else (a crash, a sanitizer report, another exception) is a finding.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "circuit/bound.h"
#include "circuit/channels.h"
#include "circuit/qasm.h"
#include "core/error.h"
#include "passes/fusion.h"
#include "testing/dense_oracle.h"

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "qasm_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

std::vector<qmlsim::cplx> run(const std::vector<qmlsim::BoundGate>& gates, int n) {
  std::vector<qmlsim::cplx> v(std::size_t{1} << n, 0.0);
  v[0] = 1;
  for (const qmlsim::BoundGate& g : gates) qmlsim::apply_reference(g, v.data(), n);
  return v;
}

// The program's unconditioned gates (channels, measurements, resets and
// conditioned operations left out).
qmlsim::Circuit gates_only(const qmlsim::Circuit& c) {
  qmlsim::Circuit out(c.num_qubits());
  for (const qmlsim::Operation& op : c.ops())
    if (!op.is_channel() && !op.is_dynamic()) out.add(op);
  return out;
}

// The channels' Kraus sets and the dynamic operations' bits, as the engine
// will read them.
void check_noise_and_dynamic(const qmlsim::Circuit& c, const std::vector<double>& angles) {
  for (const qmlsim::Operation& op : c.ops()) {
    if (op.is_instruction() && (op.wires.size() != 1 || op.wires[0] < 0 ||
                                op.wires[0] >= c.num_qubits() || op.clbit >= c.num_clbits()))
      finding("measurement or reset out of range", std::to_string(op.clbit));
    for (int bit : op.condition.bits)
      if (bit < 0 || bit >= c.num_clbits()) finding("condition bit out of range", "");
    if (!op.is_channel()) continue;
    std::vector<double> p;
    for (const qmlsim::ParamExpr& e : op.params) p.push_back(e.value(angles));
    const std::vector<qmlsim::Matrix> kraus =
        op.channel == qmlsim::ChannelId::kraus ? *op.kraus : qmlsim::kraus_operators(op.channel, p);
    for (const qmlsim::Matrix& k : kraus)
      for (const qmlsim::cplx& v : k)
        if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) finding("non-finite Kraus", "");
    try {
      qmlsim::check_kraus_set(kraus, 1e-6);
    } catch (const qmlsim::Error& e) {
      finding("channel not trace preserving", e.what());
    }
  }
  const int n = c.num_qubits();
  if (!c.has_channels() || c.has_dynamic() || n > 4) return;
  const qmlsim::Matrix rho = qmlsim::testing::run_dense_density(c, angles);
  const std::size_t d = std::size_t{1} << n;
  qmlsim::cplx trace = 0;
  double asymmetry = 0;
  for (std::size_t i = 0; i < d; ++i) {
    trace += rho[i * d + i];
    for (std::size_t j = 0; j < d; ++j)
      asymmetry = std::max(asymmetry, std::abs(rho[i * d + j] - std::conj(rho[j * d + i])));
  }
  if (!(std::abs(trace - 1.0) < 1e-6))
    finding("density matrix trace", std::to_string(trace.real()));
  if (!(asymmetry < 1e-6)) finding("density matrix not Hermitian", std::to_string(asymmetry));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  qmlsim::QasmLimits limits;
  // Keeps each execution short (loops and calls may read 16 tokens per gate
  // of it again); the caps themselves are under test.
  limits.max_gates = 2000;
  qmlsim::QasmProgram p;
  try {
    p = qmlsim::parse_qasm(text, "fuzz.qasm", limits);
  } catch (const qmlsim::Error& e) {
    const std::string msg = e.what();
    if (msg.rfind("fuzz.qasm:", 0) != 0) finding("error without a location", msg);
    if (qmlsim::printable(msg) != msg) finding("control byte in an error", msg);
    return 0;
  }
  if (p.num_input_values() > 0) {
    std::vector<double> x(static_cast<std::size_t>(p.num_input_values()));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.37 + 0.11 * static_cast<double>(i);
    try {
      p.bind_inputs(x);
    } catch (const qmlsim::Error& e) {
      const std::string msg = e.what();
      if (msg.rfind("fuzz.qasm:", 0) != 0) finding("input error without a location", msg);
      return 0;
    }
    const std::vector<double> ones(p.angles.size(), 1.0);
    if (p.input_gradient(x, ones).size() != x.size()) finding("input gradient size", "");
  }
  for (double a : p.angles)
    if (!std::isfinite(a)) finding("non-finite angle accepted", std::to_string(a));
  if (!std::isfinite(p.global_phase))
    finding("non-finite global phase", std::to_string(p.global_phase));
  check_noise_and_dynamic(p.circuit, p.angles);
  const int n = p.circuit.num_qubits();
  if (n == 0 || n > 6) return 0;
  const bool mixed = p.circuit.has_channels() || p.circuit.has_dynamic();
  const std::vector<qmlsim::BoundGate> gates =
      qmlsim::bind_params(mixed ? gates_only(p.circuit) : p.circuit, p.angles);
  const auto plain = run(gates, n);
  const auto fused = run(qmlsim::fuse(gates, {3, 10, 1.0}), n);
  double norm = 0, diff = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    norm += std::norm(plain[i]);
    diff = std::max(diff, std::abs(plain[i] - fused[i]));
  }
  if (!(std::abs(norm - 1) < 1e-6)) finding("state not normalised", std::to_string(norm));
  if (!(diff < 1e-6)) finding("fused state differs", std::to_string(diff));
  return 0;
}
