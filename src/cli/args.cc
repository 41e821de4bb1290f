#include "cli/args.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "backends/cuda/statevector.h"
#include "core/error.h"

namespace qmlsim::cli {

Args::Args(const std::vector<std::string>& argv, const std::vector<OptionSpec>& specs) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string a = argv[i];
    if (a.size() < 2 || a.rfind("--", 0) != 0) {
      if (a.size() > 1 && a[0] == '-' && !(a[1] >= '0' && a[1] <= '9')) {
        throw Error(a + ": unknown option (options are spelled --name; see --help)");
      }
      positionals_.push_back(a);
      continue;
    }
    std::optional<std::string> inline_value;
    if (auto eq = a.find('='); eq != std::string::npos) {
      inline_value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    auto spec =
        std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& s) { return s.name == a; });
    if (spec == specs.end()) throw Error(a + ": unknown option (see --help)");
    std::string value;
    if (spec->value_name.empty()) {
      if (inline_value) throw Error(a + ": takes no value");
    } else if (inline_value) {
      value = *inline_value;
    } else {
      if (i + 1 >= argv.size()) throw Error(a + ": missing value " + spec->value_name);
      value = argv[++i];
    }
    auto& slot = values_[a];
    if (!slot.empty() && !spec->repeatable) throw Error(a + ": given more than once");
    slot.push_back(value);
  }
}

const std::vector<std::string>& Args::all(const std::string& name) const {
  static const std::vector<std::string> empty;
  auto it = values_.find(name);
  return it == values_.end() ? empty : it->second;
}

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second.back();
}

std::int64_t parse_int_value(const std::string& what, const std::string& text, std::int64_t min,
                             std::int64_t max) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    throw Error(what + ": expected an integer, got '" + text + "'");
  }
  if (v < min || v > max) {
    throw Error(what + ": " + text + " is out of range [" + std::to_string(min) + ", " +
                std::to_string(max) + "]");
  }
  return v;
}

std::int64_t Args::get_int(const std::string& name, std::int64_t def, std::int64_t min,
                           std::int64_t max) const {
  const auto v = get(name);
  return v ? parse_int_value(name, *v, min, max) : def;
}

std::uint64_t Args::get_u64(const std::string& name, std::uint64_t def) const {
  const auto v = get(name);
  if (!v) return def;
  errno = 0;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno == ERANGE || (*v)[0] == '-') {
    throw Error(name + ": expected a non-negative integer, got '" + *v + "'");
  }
  return x;
}

std::string Args::get_choice(const std::string& name, const std::string& def,
                             const std::vector<std::string>& choices) const {
  const auto v = get(name);
  if (!v) return def;
  if (std::find(choices.begin(), choices.end(), *v) != choices.end()) return *v;
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  throw Error(name + ": '" + *v + "' is not one of " + list);
}

std::vector<int> Args::get_int_list(const std::string& name, const std::vector<int>& def, int min,
                                    int max) const {
  const auto v = get(name);
  if (!v) return def;
  std::vector<int> out;
  if (v->find(':') != std::string::npos) {
    std::vector<std::string> parts;
    std::stringstream ss(*v);
    for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
    if (parts.size() < 2 || parts.size() > 3) {
      throw Error(name + ": expected a range a:b or a:b:step, got '" + *v + "'");
    }
    const int a = static_cast<int>(parse_int_value(name, parts[0], min, max));
    const int b = static_cast<int>(parse_int_value(name, parts[1], min, max));
    const int s = parts.size() == 3 ? static_cast<int>(parse_int_value(name, parts[2], 1, max)) : 1;
    if (b < a) throw Error(name + ": empty range '" + *v + "'");
    for (int x = a; x <= b; x += s) out.push_back(x);
    return out;
  }
  std::stringstream ss(*v);
  for (std::string p; std::getline(ss, p, ',');) {
    out.push_back(static_cast<int>(parse_int_value(name, p, min, max)));
  }
  if (out.empty()) throw Error(name + ": empty list");
  return out;
}

std::string format_help(const std::string& usage, const std::vector<OptionSpec>& specs,
                        const std::string& guide) {
  std::ostringstream s;
  s << "usage: " << usage << "\n\noptions:\n";
  for (const OptionSpec& o : specs) {
    std::string left = "  " + o.name + (o.value_name.empty() ? "" : " " + o.value_name);
    if (left.size() < 28)
      left.resize(28, ' ');
    else
      left += "  ";
    s << left << o.help << (o.repeatable ? " (repeatable)" : "") << "\n";
  }
  s << "\nGuide: " << guide << " in the qmlsim source tree (README.md lists every guide).\n";
  return s.str();
}

Backend select_backend(const Args& args) {
  if (args.get_choice("--backend", "cpu", {"cpu", "cuda"}) == "cpu") return Backend::cpu;
  cuda::select_device(cuda::local_rank_from_env());
  return Backend::cuda;
}

}  // namespace qmlsim::cli
