#include "io/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace qmlsim::io {
namespace fs = std::filesystem;

struct Config::Impl {
  toml::table table;
  toml::table defaults;  // the kind's defaults, for to_toml's non_default_only
  std::map<std::string, std::string> origin;
};

namespace {

std::string type_name(const toml::node& n) {
  if (n.is_integer()) return "an integer";
  if (n.is_floating_point()) return "a number";
  if (n.is_boolean()) return "true or false";
  if (n.is_string()) return "a string";
  if (n.is_table()) return "a table";
  if (n.is_array()) return "an array";
  return "a value";
}

// Splits "section.key"; both parts non-empty.
bool split_key(const std::string& key, std::string& section, std::string& name) {
  const auto dot = key.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == key.size() ||
      key.find('.', dot + 1) != std::string::npos)
    return false;
  section = key.substr(0, dot);
  name = key.substr(dot + 1);
  return true;
}

std::string known_keys(const toml::table& defaults, const std::string& section) {
  std::string out;
  const toml::table* t = defaults[section].as_table();
  if (!t) {
    for (auto&& [k, v] : defaults) out += (out.empty() ? "" : ", ") + std::string(k.str());
    return "known sections: " + out;
  }
  for (auto&& [k, v] : *t) out += (out.empty() ? "" : ", ") + std::string(k.str());
  return "known keys in [" + section + "]: " + out;
}

std::string absolute_path(const std::string& p, const std::string& base) {
  if (p.empty() || p.rfind("s3://", 0) == 0) return p;
  fs::path path(p);
  if (path.is_relative()) path = fs::path(base) / path;
  return fs::absolute(path).lexically_normal().string();
}

// Parses an override value with the type of the default.
void set_value(toml::table& t, const std::string& section, const std::string& name,
               const toml::node& like, const std::string& text, const std::string& where) {
  toml::table& sec = *t[section].as_table();
  auto bad = [&](const std::string& what) {
    throw Error(where + ": " + section + "." + name + " must be " + what);
  };
  if (like.is_integer()) {
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size()) bad("an integer");
    sec.insert_or_assign(name, v);
  } else if (like.is_floating_point()) {
    double v = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v)) bad("a number");
    sec.insert_or_assign(name, v);
  } else if (like.is_boolean()) {
    if (text != "true" && text != "false") bad("true or false");
    sec.insert_or_assign(name, text == "true");
  } else if (like.is_array()) {  // a list of strings: ["a", "b"] as in TOML, or a,b,c
    toml::array items;
    if (!text.empty() && text.front() == '[') {
      try {
        const toml::table parsed = toml::parse("v = " + text);
        const toml::array* a = parsed["v"].as_array();
        if (!a) bad("a list of strings");
        for (const toml::node& item : *a) {
          if (!item.is_string()) bad("a list of strings, as [\"a\", \"b\"]");
          items.push_back(*item.value<std::string>());
        }
      } catch (const toml::parse_error&) {
        bad("a list of strings, as [\"a\", \"b\"] or a,b");
      }
    } else {
      std::stringstream list(text);
      for (std::string item; std::getline(list, item, ',');) items.push_back(item);
    }
    sec.insert_or_assign(name, std::move(items));
  } else {
    std::string s = text;
    if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
      s = s.substr(1, s.size() - 2);
    sec.insert_or_assign(name, s);
  }
}

}  // namespace

Config::Config(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Config::Config(const Config& o) : impl_(std::make_unique<Impl>(*o.impl_)), kind_(o.kind_) {}
Config& Config::operator=(const Config& o) {
  impl_ = std::make_unique<Impl>(*o.impl_);
  kind_ = o.kind_;
  return *this;
}
Config::Config(Config&&) noexcept = default;
Config& Config::operator=(Config&&) noexcept = default;
Config::~Config() = default;

Config Config::load(const std::string& path, const std::vector<std::string>& sets,
                    const Defaults& defaults, const std::vector<std::string>& path_keys) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(path + ": is a directory, not a config file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open config file");
  // Read in pieces up to the limit: a device or a pipe (/dev/zero) is refused,
  // not read until memory runs out.
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes)
      throw Error(path + ": larger than the limit of " + std::to_string(kMaxConfigBytes >> 20) +
                  " MiB for a config file");
  }
  const std::string dir = fs::absolute(fs::path(path)).parent_path().string();
  return parse(text, path, dir, sets, defaults, path_keys);
}

Config Config::parse(const std::string& text, const std::string& source,
                     const std::string& base_dir, const std::vector<std::string>& sets,
                     const Defaults& defaults, const std::vector<std::string>& path_keys) {
  toml::table user;
  try {
    user = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw Error(source + ":" + std::to_string(e.source().begin.line) + ": " +
                std::string(e.description()));
  }
  auto line_of = [&](const toml::source_region& r) {
    return source + ":" + std::to_string(r.begin.line);
  };

  // The kind: --set job.kind=... wins over the file.
  std::string kind;
  std::string kind_origin = source;
  if (const auto v = user["job"]["kind"].value<std::string>()) {
    kind = *v;
    kind_origin = line_of(user["job"]["kind"].node()->source());
  }
  for (const std::string& s : sets)
    if (s.rfind("job.kind=", 0) == 0) {
      kind = s.substr(9);
      kind_origin = "--set " + s;
    }
  if (kind.empty()) throw Error(source + ": missing key job.kind (qaoa, qcnn, sonar or hybrid)");

  auto impl = std::make_unique<Impl>();
  try {
    impl->table = toml::parse(defaults(kind), "defaults for " + kind);
    impl->defaults = impl->table;
  } catch (const Error& e) {
    throw Error(kind_origin + ": job.kind: " + e.what());
  }
  toml::table& t = impl->table;

  // The file: every key must exist in the defaults with a compatible type.
  for (auto&& [sk, sv] : user) {
    const std::string section(sk.str());
    const toml::table* dsec = t[section].as_table();
    if (!dsec)
      throw Error(line_of(sk.source()) + ": unknown section [" + section + "] (" +
                  known_keys(t, "") + ")");
    const toml::table* usec = sv.as_table();
    if (!usec) throw Error(line_of(sk.source()) + ": " + section + " must be a table");
    for (auto&& [k, v] : *usec) {
      const std::string name(k.str());
      const std::string key = section + "." + name;
      const toml::node* like = dsec->get(name);
      if (!like)
        throw Error(line_of(k.source()) + ": unknown key " + key + " (" + known_keys(t, section) +
                    ")");
      const bool ok = v.type() == like->type() || (like->is_floating_point() && v.is_integer());
      if (!ok)
        throw Error(line_of(v.source()) + ": " + key + " must be " + type_name(*like) + ", got " +
                    type_name(v));
      toml::table& tsec = *t[section].as_table();
      if (like->is_floating_point())
        tsec.insert_or_assign(name, *v.value<double>());
      else
        tsec.insert_or_assign(name, v);
      impl->origin[key] = line_of(v.source());
      if (std::find(path_keys.begin(), path_keys.end(), key) != path_keys.end()) {
        require_file_path(*v.value<std::string>(), line_of(v.source()) + ": " + key, true);
        tsec.insert_or_assign(name, absolute_path(*v.value<std::string>(), base_dir));
      }
    }
  }

  // The overrides.
  for (const std::string& s : sets) {
    const std::string where = "--set " + s;
    const auto eq = s.find('=');
    std::string section, name;
    if (eq == std::string::npos || !split_key(s.substr(0, eq), section, name))
      throw Error(where + ": expected section.key=value");
    const std::string key = section + "." + name;
    const toml::table* dsec = t[section].as_table();
    if (!dsec)
      throw Error(where + ": unknown section [" + section + "] (" + known_keys(t, "") + ")");
    const toml::node* like = dsec->get(name);
    if (!like) throw Error(where + ": unknown key " + key + " (" + known_keys(t, section) + ")");
    set_value(t, section, name, *like, s.substr(eq + 1), where);
    impl->origin[key] = where;
    if (std::find(path_keys.begin(), path_keys.end(), key) != path_keys.end()) {
      toml::table& tsec = *t[section].as_table();
      require_file_path(*tsec[name].value<std::string>(), where, true);
      tsec.insert_or_assign(name,
                            absolute_path(*tsec[name].value<std::string>(), fs::current_path()));
    }
  }
  Config c(std::move(impl));
  c.kind_ = kind;
  return c;
}

std::string Config::origin(const std::string& key) const {
  auto it = impl_->origin.find(key);
  return it == impl_->origin.end() ? "default" : it->second;
}

void Config::fail(const std::string& key, const std::string& message) const {
  throw Error(origin(key) + ": " + key + ": " + message);
}

namespace {
const toml::node& lookup(const toml::table& t, const std::string& key) {
  std::string section, name;
  const toml::node* n = nullptr;
  if (split_key(key, section, name)) n = t[section][name].node();
  if (!n) throw Error("internal: config key " + key + " has no default");
  return *n;
}
}  // namespace

std::int64_t Config::get_int(const std::string& key, std::int64_t min, std::int64_t max) const {
  const std::int64_t v = *lookup(impl_->table, key).value<std::int64_t>();
  if (v < min || v > max)
    fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                  std::to_string(v));
  return v;
}

double Config::get_double(const std::string& key, double min, double max) const {
  const double v = *lookup(impl_->table, key).value<double>();
  if (!(v >= min && v <= max)) {
    std::ostringstream os;
    os << "must be in [" << min << ", " << max << "], got " << v;
    fail(key, os.str());
  }
  return v;
}

bool Config::get_bool(const std::string& key) const {
  return *lookup(impl_->table, key).value<bool>();
}

std::string Config::get_string(const std::string& key) const {
  return *lookup(impl_->table, key).value<std::string>();
}

std::vector<std::string> Config::get_string_list(const std::string& key) const {
  std::vector<std::string> out;
  const toml::array* a = lookup(impl_->table, key).as_array();
  for (const toml::node& n : *a) {
    const std::optional<std::string> v = n.value<std::string>();
    if (!v || !n.is_string()) fail(key, "must be a list of strings");
    out.push_back(*v);
  }
  return out;
}

std::string Config::get_choice(const std::string& key,
                               const std::vector<std::string>& choices) const {
  const std::string v = get_string(key);
  if (std::find(choices.begin(), choices.end(), v) != choices.end()) return v;
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  fail(key, "'" + v + "' is not one of: " + list);
}

std::string Config::to_toml(const std::vector<std::string>& omit, bool non_default_only) const {
  toml::table table = impl_->table;
  for (const std::string& key : omit) {
    const auto dot = key.find('.');
    if (toml::table* section = table[key.substr(0, dot)].as_table())
      section->erase(key.substr(dot + 1));
  }
  const auto text = [](const toml::node& n) {
    std::ostringstream os;
    n.visit([&](const auto& v) { os << v; });
    return os.str();
  };
  if (non_default_only) {
    for (auto& [section, sec] : table) {
      toml::table* keys = sec.as_table();
      const toml::table* defaults = impl_->defaults[section].as_table();
      if (!keys || !defaults) continue;
      std::vector<std::string> same;
      for (const auto& [key, value] : *keys)
        if (const toml::node* d = defaults->get(key); d && text(*d) == text(value))
          same.emplace_back(key.str());
      for (const std::string& key : same) keys->erase(key);
    }
  }
  std::ostringstream os;
  os << "# Resolved qmlsim configuration: defaults, then the config file, then --set.\n";
  os << toml::toml_formatter(table) << "\n";
  return os.str();
}

}  // namespace qmlsim::io
