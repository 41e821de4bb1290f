// Fuzz target: the OpenQASM 2.0 / 3 reader, with fusion as a consumer.
// Contract checked on every input:
//  - the reader returns a program or throws Error with a one-line message
//    located in the file ("fuzz.qasm:line:col: ..."), free of control bytes;
//  - inputs bind (fixed values) to finite angles or give such an Error, and
//    the chain rule runs on them;
//  - every angle it returns, and the global phase, is finite;
//  - on programs of at most 6 qubits, the fused gates give the same state as
//    the gates one by one, and that state has norm 1.
// Anything else (a crash, a sanitizer report, another exception) is a finding.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "circuit/bound.h"
#include "circuit/qasm.h"
#include "core/error.h"
#include "passes/fusion.h"

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
  const int n = p.circuit.num_qubits();
  if (n == 0 || n > 6) return 0;
  const std::vector<qmlsim::BoundGate> gates = qmlsim::bind_params(p.circuit, p.angles);
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
