// Runs the qmlsim binary as a user would: results on stdout, and for every kind
// of bad input a one-line located error on stderr with exit status 2.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct Result {
  int status;
  std::string out, err;
};

std::string read_file(const std::string& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::filesystem::path temp_dir() {
  static const std::filesystem::path d = [] {
    auto p =
        std::filesystem::temp_directory_path() / ("qmlsim_cli_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(p);
    return p;
  }();
  return d;
}

Result run(const std::string& args) {
  const std::string out = (temp_dir() / "out").string(), err = (temp_dir() / "err").string();
  const std::string cmd = std::string(QMLSIM_BINARY) + " " + args + " >" + out + " 2>" + err;
  const int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, read_file(out), read_file(err)};
}

std::string write(const std::string& name, const std::string& text) {
  const std::string p = (temp_dir() / name).string();
  std::ofstream(p) << text;
  return p;
}

const char* kBell = "OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[2];\nh q[0];\ncx q[0], q[1];\n";

TEST(Cli, RunPrintsOneJsonObject) {
  const std::string f = write("bell.qasm", kBell);
  for (const char* prec : {"c64", "c128"}) {
    const Result r = run("run " + f + " --observable 'Z0 Z1' --observable '0.5*X0*X1 + 0.25' " +
                         "--observable Z0 --precision " + prec + " --json --shots 64 --seed 3");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.front(), '{');
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1);  // one line, one object
    const auto at = r.out.find("\"expval\":[");
    ASSERT_NE(at, std::string::npos);
    char* end = nullptr;
    const double e0 = std::strtod(r.out.c_str() + at + 10, &end);
    const double e1 = std::strtod(end + 1, &end);
    const double e2 = std::strtod(end + 1, &end);
    EXPECT_NEAR(e0, 1.0, 1e-6);
    EXPECT_NEAR(e1, 0.75, 1e-6);
    EXPECT_NEAR(e2, 0.0, 1e-6);
    EXPECT_NE(r.out.find("\"counts\":{\"00\":"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("\"01\""), std::string::npos);
    EXPECT_NE(r.out.find("\"num_qubits\":2"), std::string::npos);
    EXPECT_NE(r.out.find(std::string("\"precision\":\"") + prec + "\""), std::string::npos);
    for (const char* k : {"\"parse\":", "\"simulate\":", "\"total\":"}) {
      EXPECT_NE(r.out.find(k), std::string::npos) << k;
    }
  }
}

TEST(Cli, GradientMatchesTheAnalyticValue) {
  // <Z0> after RX(a) is cos(a): d/da = -sin(a).
  const std::string f =
      write("rx.qasm", "OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[1];\nrx(0.7) q[0];\n");
  const Result r = run("run " + f + " --observable Z0 --gradient --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto at = r.out.find("\"gradient\":[[");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_NEAR(std::strtod(r.out.c_str() + at + 13, nullptr), -std::sin(0.7), 1e-12);
}

TEST(Cli, HelpAndHumanOutput) {
  EXPECT_EQ(run("--help").status, 0);
  EXPECT_EQ(run("run --help").status, 0);
  EXPECT_EQ(run("bench --help").status, 0);
  const Result r = run("run " + write("b.qasm", kBell) + " --observable Z1 --fusion 0 --threads 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("> = 0"), std::string::npos) << r.out;
}

struct Bad {
  const char* args;    // {f} is replaced by a valid circuit, {g} by an invalid one
  const char* qasm;    // contents of {g}
  const char* expect;  // in the one-line error
};

TEST(Cli, BadInputGivesOneLocatedLineAndStatus2) {
  const std::string good = write("good.qasm", kBell);
  const Bad cases[] = {
      {"run {g} --observable Z0", "OPENQASM 2.0;\nqreg q[1];\nh q[0];\n",
       "g.qasm:3:1: unknown gate 'h'"},
      {"run {g} --observable Z0", "OPENQASM 2.0;\nqreg q[2];\nCX q[0], q[0];\n", "g.qasm:3:1:"},
      {"run {g} --observable Z0", "OPENQASM 2.0;\nqreg q[40];\n", "needs 16384 GiB"},
      {"run {g} --observable Z0 --gradient --precision c64", "OPENQASM 2.0;\nqreg q[33];\n",
       "3 33-qubit c64 state(s): needs 192 GiB"},
      {"run {f} --gradient --shots 3", "", "--gradient: needs an --observable"},
      {"run {g} --observable Z0", "OPENQASM 2.0;\n", "declares no qubits"},
      {"run {f} --observable 'Z0 +'", "", "--observable 1:1:5:"},
      {"run {f} --observable Z0 --observable 'Z7'", "", "--observable 2: names qubit 7"},
      {"run {f} --observable Z0 --precision c32", "", "--precision: 'c32' is not one of"},
      {"run {f} --observable Z0 --threads 0", "", "--threads: 0 is out of range"},
      {"run {f} --observable Z0 --threads x", "", "--threads: expected an integer"},
      {"run {f} --observable Z0 --fusion", "", "--fusion: missing value"},
      {"run {f} --observable Z0 --bogus", "", "--bogus: unknown option"},
      {"run {f} --seed 3 --observable Z0", "", "--seed: needs --shots"},
      {"run {f}", "", "nothing to compute"},
      {"run /nonexistent.qasm --observable Z0", "", "/nonexistent.qasm: cannot read file"},
      {"run --observable Z0", "", "expected exactly one circuit file"},
      {"frobnicate", "", "unknown command 'frobnicate'"},
      {"bench --qubits 3", "", "--qubits: 3 is out of range"},
      {"bench --precision c16", "", "--precision: expected c64, c128"},
  };
  for (const Bad& c : cases) {
    std::string args = c.args;
    if (auto p = args.find("{f}"); p != std::string::npos) args.replace(p, 3, good);
    if (auto p = args.find("{g}"); p != std::string::npos)
      args.replace(p, 3, write("g.qasm", c.qasm));
    const Result r = run(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  }
}

}  // namespace
