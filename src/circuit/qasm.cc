// The OpenQASM reader's entry points (qasm.h): files read under their limit,
// programs parsed (qasm_parser.h), input-dependent angles bound and differentiated.
#include "circuit/qasm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "circuit/qasm_expr.h"
#include "circuit/qasm_parser.h"
#include "core/error.h"

namespace qmlsim {

int QasmProgram::num_input_values() const {
  int n = 0;
  for (const QasmInput& in : inputs) n += in.size;
  return n;
}

std::vector<double> QasmProgram::input_values(
    const std::map<std::string, std::vector<double>>& by_name) const {
  std::vector<double> x(static_cast<std::size_t>(num_input_values()), 0.0);
  for (const auto& entry : by_name) {  // (a lambda may not capture a structured binding)
    const std::string& name = entry.first;
    const std::vector<double>& values = entry.second;
    const auto it = std::find_if(inputs.begin(), inputs.end(),
                                 [&](const QasmInput& in) { return in.name == name; });
    if (it == inputs.end()) throw Error("inputs: the program declares no input '" + name + "'");
    if (static_cast<int>(values.size()) != it->size)
      throw Error("inputs: input '" + name + "' takes " + std::to_string(it->size) +
                  " value(s), got " + std::to_string(values.size()));
    std::copy(values.begin(), values.end(), x.begin() + it->offset);
  }
  for (const QasmInput& in : inputs)
    if (!by_name.count(in.name)) throw Error("inputs: input '" + in.name + "' needs a value");
  return x;
}

void QasmProgram::bind_inputs(std::span<const double> x) {
  angles = angles_at(x);
  global_phase = global_phase_at(x);
}

double QasmProgram::global_phase_at(std::span<const double> x) const {
  if (!input_angles) return global_phase;
  double phase = input_angles->constant_phase;
  for (const Expr& e : input_angles->phases) phase += qasm::eval(e, {}, x, input_angles->source);
  return phase;
}

std::vector<double> QasmProgram::angles_at(std::span<const double> x) const {
  if (x.size() != static_cast<std::size_t>(num_input_values()))
    throw Error("input values: " + std::to_string(x.size()) + " given, the program has " +
                std::to_string(num_input_values()));
  std::vector<double> out = angles;
  if (!input_angles) return out;
  for (const auto& [slot, e] : input_angles->slots) {
    out[static_cast<std::size_t>(slot)] = qasm::eval(e, {}, x, input_angles->source);
  }
  return out;
}

std::vector<double> QasmProgram::input_gradient(std::span<const double> x,
                                                std::span<const double> d_angles) const {
  std::vector<double> grad(static_cast<std::size_t>(num_input_values()), 0.0);
  if (!input_angles) return grad;
  for (const auto& [slot, e] : input_angles->slots) {
    const double seed = d_angles[static_cast<std::size_t>(slot)];
    if (seed != 0) qasm::accumulate_gradient(e, x, seed, input_angles->source, grad);
  }
  return grad;
}

QasmProgram parse_qasm(std::string_view text, const std::string& source, const QasmLimits& limits) {
  return qasm::QasmParser(text, source, limits).parse();
}

QasmProgram read_qasm_file(const std::string& path, const QasmLimits& limits) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(path + ": is a directory, not an OpenQASM file");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot read file");
  // Read at most one byte past the limit, so /dev/zero or a huge file is refused, not consumed.
  std::string text;
  std::array<char, 1 << 16> buf;
  while (f) {
    const std::size_t room = static_cast<std::size_t>(limits.max_file_bytes) + 1 - text.size();
    f.read(buf.data(), static_cast<std::streamsize>(std::min(buf.size(), room)));
    text.append(buf.data(), static_cast<std::size_t>(f.gcount()));
    if (static_cast<std::int64_t>(text.size()) > limits.max_file_bytes) {
      throw Error(path + ": larger than the limit of " + std::to_string(limits.max_file_bytes) +
                  " bytes; raise it with --max-file-mib");
    }
  }
  if (f.bad()) throw Error(path + ": cannot read file");
  return parse_qasm(text, path, limits);
}

}  // namespace qmlsim
