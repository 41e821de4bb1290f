// Fuzz target: the Pauli-sum observable parser. Contract checked on every
// input: a PauliSum whose coefficients are finite and sum in absolute value to
// at most kMaxObservableNorm, or an Error located at line 1 of the source
// ("obs:1:col: ...") and free of control bytes. Anything else is a finding.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "circuit/observable.h"
#include "core/error.h"

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "observable_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const qmlsim::PauliSum h = qmlsim::parse_pauli_sum(text, "obs");
    double total = 0;
    for (const qmlsim::PauliTerm& t : h.terms) {
      if (!std::isfinite(t.coeff)) finding("non-finite coefficient", std::to_string(t.coeff));
      total += std::abs(t.coeff);
    }
    if (!(total <= qmlsim::kMaxObservableNorm))
      finding("sum over the limit", std::to_string(total));
    if (h.min_qubits() > 64) finding("qubit beyond 63", std::to_string(h.min_qubits()));
  } catch (const qmlsim::Error& e) {
    const std::string msg = e.what();
    if (msg.rfind("obs:1:", 0) != 0) finding("error without a location", msg);
    if (qmlsim::printable(msg) != msg) finding("control byte in an error", msg);
  }
  return 0;
}
