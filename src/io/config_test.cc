#include "io/config.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"

namespace qmlsim::io {
namespace {

std::string defaults(const std::string& kind) {
  if (kind != "toy") throw Error("unknown job kind '" + kind + "'");
  return "[job]\nkind = \"toy\"\nseed = 1\n[data]\npath = \"\"\nlabels = [\"a\"]\n[train]\n"
         "rate = 0.5\nname = \"adam\"\nshuffle = true\n";
}

Config parse(const std::string& text, const std::vector<std::string>& sets = {}) {
  return Config::parse(text, "job.toml", "/base", sets, defaults, {"data.path"});
}

std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    parse(text, sets);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Config, DefaultsFileAndOverrides) {
  const Config c = parse("[job]\nkind = \"toy\"\n\n[train]\nrate = 2\n", {"job.seed=7"});
  EXPECT_EQ(c.kind(), "toy");
  EXPECT_EQ(c.get_int("job.seed", 0, 100), 7);
  EXPECT_DOUBLE_EQ(c.get_double("train.rate", 0, 10), 2.0);  // an integer is a valid float
  EXPECT_EQ(c.get_string("train.name"), "adam");
  EXPECT_TRUE(c.get_bool("train.shuffle"));
  EXPECT_EQ(c.origin("train.rate"), "job.toml:5");
  EXPECT_EQ(c.origin("job.seed"), "--set job.seed=7");
  EXPECT_EQ(c.origin("train.name"), "default");
  // The resolved config parses back to the same values.
  const Config again = parse(c.to_toml());
  EXPECT_EQ(again.get_int("job.seed", 0, 100), 7);
  EXPECT_EQ(again.to_toml(), c.to_toml());
}

TEST(Config, ListsAreSetAsTomlArraysOrCommaSeparated) {
  const std::string kToy = "[job]\nkind = \"toy\"\n";
  const std::vector<std::string> two = {"x", "y z"};
  EXPECT_EQ(parse(kToy, {"data.labels=[\"x\", 'y z']"}).get_string_list("data.labels"), two);
  EXPECT_EQ(parse(kToy, {"data.labels=x,y z"}).get_string_list("data.labels"), two);
  EXPECT_TRUE(parse(kToy, {"data.labels=[]"}).get_string_list("data.labels").empty());
  EXPECT_EQ(error_of(kToy, {"data.labels=[\"x\", 1]"}),
            "--set data.labels=[\"x\", 1]: data.labels must be a list of strings, as [\"a\", "
            "\"b\"]");
  EXPECT_NE(error_of(kToy, {"data.labels=[\"x\""}).find("must be a list of strings"),
            std::string::npos);
  // The resolved config without execution-only keys.
  EXPECT_EQ(parse(kToy).to_toml({"train.rate", "job.seed"}).find("rate"), std::string::npos);
  EXPECT_NE(parse(kToy).to_toml().find("rate = 0.5"), std::string::npos);
  // Only what differs from the defaults.
  const std::string changed = parse(kToy, {"train.rate=0.25"}).to_toml({}, true);
  EXPECT_NE(changed.find("rate = 0.25"), std::string::npos) << changed;
  EXPECT_EQ(changed.find("name"), std::string::npos) << changed;
  EXPECT_EQ(parse(kToy, {"train.rate=0.5"}).to_toml({}, true), parse(kToy).to_toml({}, true));
}

TEST(Config, PathsAreAnchoredAtTheConfigFile) {
  const Config c = parse("[job]\nkind = \"toy\"\n[data]\npath = \"data/x.csv\"\n");
  EXPECT_EQ(c.get_string("data.path"), "/base/data/x.csv");
}

TEST(Config, ErrorsNameTheLineAndKey) {
  EXPECT_EQ(error_of("[job]\nkind = \"toy\"\n[train]\nrat = 1.0\n"),
            "job.toml:4: unknown key train.rat (known keys in [train]: name, rate, shuffle)");
  EXPECT_EQ(error_of("[job]\nkind = \"toy\"\n[train]\nrate = \"fast\"\n"),
            "job.toml:4: train.rate must be a number, got a string");
  EXPECT_EQ(error_of("[job]\nkind = \"toy\"\n[model]\nx = 1\n"),
            "job.toml:3: unknown section [model] (known sections: data, job, train)");
  EXPECT_EQ(error_of("[job]\nkind = \"toy\"\n", {"train.rate=abc"}),
            "--set train.rate=abc: train.rate must be a number");
  EXPECT_EQ(error_of("[job]\nkind = \"toy\"\n", {"train.nope=1"}),
            "--set train.nope=1: unknown key train.nope (known keys in [train]: name, rate, "
            "shuffle)");
  EXPECT_EQ(error_of("[job]\nkind = \"toy\"\n", {"rate"}),
            "--set rate: expected section.key=value");
  EXPECT_EQ(error_of("[job]\nseed = 1\n"),
            "job.toml: missing key job.kind (qaoa, qcnn, sonar or hybrid)");
  EXPECT_EQ(error_of("[job]\nkind = \"big\"\n"), "job.toml:2: job.kind: unknown job kind 'big'");
  EXPECT_EQ(error_of("[job\n").substr(0, 11), "job.toml:1:");
  const Config c = parse("[job]\nkind = \"toy\"\nseed = 500\n");
  try {
    c.get_int("job.seed", 0, 100);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "job.toml:3: job.seed: must be in [0, 100], got 500");
  }
}

TEST(Config, LoadRefusesDirectoriesAndEndlessFiles) {
  const Config::Defaults defaults = [](const std::string&) { return std::string("[job]\n"); };
  auto load_error = [&](const std::string& path) {
    try {
      Config::load(path, {}, defaults, {});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string dir = std::filesystem::temp_directory_path().string();
  EXPECT_EQ(load_error(dir), dir + ": is a directory, not a config file");
  EXPECT_EQ(load_error("/dev/zero"),
            "/dev/zero: larger than the limit of 16 MiB for a config file");
}

}  // namespace
}  // namespace qmlsim::io
