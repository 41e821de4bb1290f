// Runs the qmlsim binary as a user would: results on stdout, and for every kind
// of bad input a one-line located error on stderr with exit status 2.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
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

// Results that cannot be written to standard output are an error (exit 2),
// never a silent success.
TEST(Cli, StandardOutputThatCannotBeWrittenIsAnError) {
  const std::string bell = write("full_bell.qasm", kBell);
  const std::string err = (temp_dir() / "full_err").string();
  const std::string cmd =
      std::string(QMLSIM_BINARY) + " run " + bell + " --observable Z0 --json >/dev/full 2>" + err;
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  EXPECT_NE(read_file(err).find("standard output: cannot write"), std::string::npos)
      << read_file(err);
}

// `cmd` under an address-space limit of `kib` KiB (ulimit -v), with its status
// and standard error.
Result run_limited(long kib, const std::string& args) {
  const std::string err = (temp_dir() / "limited_err").string();
  const std::string cmd = "bash -c \"ulimit -v " + std::to_string(kib) + "; exec " +
                          std::string(QMLSIM_BINARY) + " " + args + "\" >/dev/null 2>" + err;
  const int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc), "", read_file(err)};
}

// Too little memory is one line and exit 2, never a crash: checked up front
// against the smallest limit (here ulimit -v), and where an allocation fails
// anyway (the binary's own mappings), in any thread.
TEST(Cli, TooLittleMemoryIsOneLineNotACrash) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers need more address space than the limits tried here";
#endif
  Result r = run_limited(2000000, "train " + std::string(QMLSIM_EXAMPLES) +
                                      "/qaoa_maxcut.toml --set data.nodes=26 --run-dir " +
                                      (temp_dir() / "too_big").string());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("train: 2 state vector(s) of 26 qubits (c128) per rank"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("address-space limit (ulimit -v) is 1.91 GiB"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(temp_dir() / "too_big"));
  std::string h = "OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[24];\n";
  for (int i = 0; i < 24; ++i) h += "h q[" + std::to_string(i) + "];\n";
  const std::string circuit = write("h24.qasm", h);
  for (long kib = 300000; kib <= 420000; kib += 6000) {
    r = run_limited(kib, "run " + circuit + " --observable Z0 --threads 2");
    EXPECT_TRUE(r.status == 0 || r.status == 2) << kib << " KiB: status " << r.status << r.err;
    if (r.status == 0) continue;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(" memory"), std::string::npos) << r.err;  // up front, or on failure
  }
}

// A reader that closes the pipe early does not kill training: the run
// finishes, and the lost output is an error at the end.
TEST(Cli, TrainingOutlivesAClosedPipe) {
  const std::string dir = (temp_dir() / "piped_run").string();
  const std::string cmd = "bash -c \"" + std::string(QMLSIM_BINARY) + " train " +
                          std::string(QMLSIM_EXAMPLES) +
                          "/qcnn.toml --set data.qubits=4 --set train.epochs=3 --run-dir " + dir +
                          " | head -c 1 >/dev/null; exit \\${PIPESTATUS[0]}\" 2>/dev/null";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_TRUE(WEXITSTATUS(rc) == 0 || WEXITSTATUS(rc) == 2) << WEXITSTATUS(rc);
  EXPECT_TRUE(std::filesystem::exists(dir + "/result.json"));
}

TEST(Cli, NoisyCircuitsRunOnADensityMatrix) {
  const std::string noisy =
      write("noisy.qasm", std::string(kBell) + "#pragma braket noise bit_flip(0.25) q[1]\n");
  const Result r = run("run " + noisy + " --observable \"Z0 Z1\" --gradient --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::size_t at = r.out.find("\"expval\":[");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_NEAR(std::strtod(r.out.c_str() + at + 10, nullptr), 0.5, 1e-12) << r.out;
  EXPECT_NE(r.out.find("\"method\":\"density_matrix\""), std::string::npos) << r.out;
  for (const auto& [flags, says] : std::vector<std::pair<std::string, std::string>>{
           {"--method statevector",
            "--method statevector: " + noisy + ": the circuit has noise channels"},
           {"--method dm", "--method"},
           {"--trajectories 10", "--trajectories: " + noisy + " does not run by trajectories"},
           {"--method trajectories --trajectories 0", "--trajectories: 0 is out of range"},
           {"--method trajectories --state-out " + (temp_dir() / "s.h5").string(),
            "--state-out: a noisy circuit run by trajectories"}}) {
    const Result bad = run("run " + noisy + " --observable Z1 " + flags);
    EXPECT_EQ(bad.status, 2) << flags;
    EXPECT_NE(bad.err.find(says), std::string::npos) << flags << ": " << bad.err;
  }
  // --distributed with trajectories: alone, the same result as without it
  // (over several processes: mpi.distributed_trajectories)
  const std::string t = " --observable Z1 --method trajectories --trajectories 50 --json";
  const Result one = run("run " + noisy + t), shared = run("run " + noisy + t + " --distributed");
  ASSERT_EQ(shared.status, 0) << shared.err;
  EXPECT_EQ(one.out.substr(one.out.find("\"expval\"")).substr(0, 60),
            shared.out.substr(shared.out.find("\"expval\"")).substr(0, 60));
  const std::string big = write(
      "big_noisy.qasm", "OPENQASM 3.0;\nqubit[30] q;\n#pragma braket noise bit_flip(0.1) q[0]\n");
  const Result huge = run("run " + big + " --observable Z0 --method density_matrix");
  EXPECT_EQ(huge.status, 2);
  EXPECT_NE(huge.err.find("a density matrix of 30 qubits"), std::string::npos) << huge.err;
  // auto: beyond memory, trajectories of state vectors (here too large as well).
  const std::string bigger =
      write("bigger_noisy.qasm",
            "OPENQASM 3.0;\nqubit[36] q;\n#pragma braket noise bit_flip(0.1) q[0]\n");
  const Result auto_huge = run("run " + bigger + " --observable Z0");
  EXPECT_EQ(auto_huge.status, 2);
  EXPECT_NE(auto_huge.err.find("36-qubit c128 state"), std::string::npos) << auto_huge.err;
}

TEST(Cli, NoisyCircuitsRunByTrajectories) {
  const std::string noisy =
      write("noisy_t.qasm", std::string(kBell) + "#pragma braket noise bit_flip(0.25) q[1]\n" +
                                "#pragma braket noise amplitude_damping(0.3) q[0]\n");
  const Result dm = run("run " + noisy + " --observable \"Z0 Z1\" --json");
  const Result t = run("run " + noisy +
                       " --observable \"Z0 Z1\" --method trajectories --trajectories 4000 "
                       "--seed 5 --shots 100 --json");
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("\"method\":\"trajectories\",\"trajectories\":4000"), std::string::npos)
      << t.out;
  const double exact = std::strtod(dm.out.c_str() + dm.out.find("\"expval\":[") + 10, nullptr);
  const double mean = std::strtod(t.out.c_str() + t.out.find("\"expval\":[") + 10, nullptr);
  const double error = std::strtod(t.out.c_str() + t.out.find("\"expval_error\":[") + 16, nullptr);
  EXPECT_GT(error, 0);
  EXPECT_LT(std::abs(mean - exact), 5 * error) << t.out;
  const Result grad = run("run " + noisy + " --observable Z0 --method trajectories --gradient");
  EXPECT_EQ(grad.status, 2);
  EXPECT_NE(grad.err.find("need every channel to be a mixture of unitaries"), std::string::npos)
      << grad.err;
}

// --readout-error: expectation values as read (a s + b per noisy qubit of a
// word, a = 1 - p01 - p10, b = p10 - p01) and their gradients; a qubit's own
// flag over the one for every qubit; samples flipped as read.
TEST(Cli, ReadoutErrorsReadExpectationValuesAndSamples) {
  const std::string bell = write("ro_bell.qasm", kBell);
  const Result r = run("run " + bell +
                       " --observable Z0 --observable \"Z0 Z1\" --observable \"X0 X1\" "
                       "--readout-error 1:0.05,0 --readout-error 0.1,0.2 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const double a0 = 0.7, b0 = 0.1, a1 = 0.95, b1 = -0.05;  // qubit 1's own flag wins
  // Bell state: <Z0> = <Z1> = 0, <Z0 Z1> = <X0 X1> = 1
  const std::size_t at = r.out.find("\"expval\":[") + 10;
  char* end = nullptr;
  const double z0 = std::strtod(r.out.c_str() + at, &end);
  const double zz = std::strtod(end + 1, &end);
  const double xx = std::strtod(end + 1, &end);
  EXPECT_NEAR(z0, b0, 1e-12) << r.out;
  EXPECT_NEAR(zz, a0 * a1 + b0 * b1, 1e-12) << r.out;
  EXPECT_NEAR(xx, a0 * a1 + b0 * b1, 1e-12) << r.out;
  const Result s = run("run " + bell + " --shots 20000 --readout-error 0.3,0 --json");
  ASSERT_EQ(s.status, 0) << s.err;
  // |00> (half) reads 01, 10 or 11 with 0.3 per bit; |11> (half) always 11
  auto count = [&](const std::string& bits) {
    const std::size_t k = s.out.find("\"" + bits + "\":");
    return k == std::string::npos ? 0.0 : std::strtod(s.out.c_str() + k + 5, nullptr);
  };
  EXPECT_NEAR(count("00") / 20000, 0.5 * 0.49, 0.02) << s.out;
  EXPECT_NEAR(count("11") / 20000, 0.5 + 0.5 * 0.09, 0.02) << s.out;
  const Result dynamic =
      run("run " +
          write("ro_dyn.qasm",
                "OPENQASM 3.0;\ninclude \"stdgates.inc\";\nqubit[1] q;\nbit[1] c;\nc[0] = "
                "measure q[0];\nif (c[0]) x q[0];\n") +
          " --shots 5 --readout-error 0.1,0.1");
  EXPECT_EQ(dynamic.status, 2);
  EXPECT_NE(dynamic.err.find("is a dynamic circuit"), std::string::npos) << dynamic.err;
}

TEST(Cli, DynamicCircuitsReportTheirRegistersAsQiskitPrintsThem) {
  // Measure q[0] (a fair coin) into c0, copy it onto q[1] by feed-forward.
  const std::string dynamic =
      write("dynamic.qasm",
            "OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[2];\ncreg c0[1];\n"
            "creg c1[1];\nh q[0];\nmeasure q[0] -> c0[0];\nif(c0==1) x q[1];\n"
            "measure q[1] -> c1[0];\nreset q[0];\n");
  const Result exact = run("run " + dynamic + " --observable Z1 --observable Z0 --json");
  ASSERT_EQ(exact.status, 0) << exact.err;
  EXPECT_NE(exact.out.find("\"registers\":[\"c1\",\"c0\"],\"register_probabilities\":{\"0 0\":0.5"
                           ",\"1 1\":0.5}"),
            std::string::npos)
      << exact.out;
  EXPECT_NE(exact.out.find("\"expval\":[0,1]"), std::string::npos) << exact.out;
  const Result shots = run("run " + dynamic + " --shots 1000 --seed 3");
  ASSERT_EQ(shots.status, 0) << shots.err;
  EXPECT_NE(shots.out.find("counts of the classical registers (c1 c0; 1000 shots"),
            std::string::npos)
      << shots.out;
  EXPECT_EQ(shots.out.find(" 0 1 "), std::string::npos) << shots.out;  // never disagree
  for (const auto& [flags, says] : std::vector<std::pair<std::string, std::string>>{
           {"--observable Z0 --gradient", "--gradient: " + dynamic + " is a dynamic circuit"},
           {"--observable Z0 --distributed", "--distributed: " + dynamic},
           {"--observable Z0 --max-branches 0", "--max-branches: 0 is out of range"}}) {
    const Result bad = run("run " + dynamic + " " + flags);
    EXPECT_EQ(bad.status, 2) << flags;
    EXPECT_NE(bad.err.find(says), std::string::npos) << flags << ": " << bad.err;
  }
  const Result not_dynamic =
      run("run " + write("bell.qasm", kBell) + " --observable Z0 --max-branches 4");
  EXPECT_EQ(not_dynamic.status, 2);
  EXPECT_NE(not_dynamic.err.find("is not a dynamic circuit"), std::string::npos) << not_dynamic.err;
}

// Settings from the environment that qmlsim does not take are one line, exit 2.
TEST(Cli, BadEnvironmentSettingsAreErrors) {
  const std::string bell = write("env_bell.qasm", kBell);
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"QMLSIM_HUGEPAGES", "yes"},
                                                        {"QMLSIM_BUFFER_CACHE", "2"},
                                                        {"QMLSIM_STREAMING_STORES", "on"},
                                                        {"QMLSIM_SHARED_PREFIXES", "no"},
                                                        {"QMLSIM_PROGRESS", "fancy"},
                                                        {"QMLSIM_CHUNK_KIB", "1"},
                                                        {"QMLSIM_KERNEL_FORM", "zigzag"},
                                                        {"OMP_NUM_THREADS", "100000"}}) {
    ::setenv(name.c_str(), value.c_str(), 1);
    const Result r = run("run " + bell + " --observable Z0");
    ::unsetenv(name.c_str());
    EXPECT_EQ(r.status, 2) << name;
    EXPECT_NE(r.err.find(name + ": expected"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  ::setenv("QMLSIM_HUGEPAGES", "0", 1);
  ::setenv("OMP_NUM_THREADS", "2,1", 1);
  EXPECT_EQ(run("run " + bell + " --observable Z0").status, 0);
  ::unsetenv("QMLSIM_HUGEPAGES");
  ::unsetenv("OMP_NUM_THREADS");
}

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
  // The expectation values and the fused gate count come with the gradient
  // (from the adjoint's forward state) as a run without it gives them, on a
  // state vector and on a density matrix.
  const std::string circuit =
      "OPENQASM 3.0;\ninclude \"stdgates.inc\";\nqubit[2] q;\nrx(0.7) q[0];\ncx q[0], q[1];\n";
  const std::string clean = write("rx_cx.qasm", circuit + "ry(0.3) q[1];\n");
  const std::string noisy = write(
      "rx_noisy.qasm", circuit + "#pragma braket noise depolarizing(0.1) q[1]\nry(0.3) q[1];\n");
  // The numbers after "key": in out, up to the first `end`.
  auto numbers = [](const std::string& out, const std::string& key, char end) {
    std::vector<double> v;
    const std::size_t a = out.find("\"" + key + "\":");
    if (a == std::string::npos) return v;
    const char* p = out.c_str() + a + key.size() + 3;
    const char* stop = out.c_str() + out.find(end, a);
    while (p < stop) {
      char* next = nullptr;
      v.push_back(std::strtod(p + (*p == '[' || *p == ','), &next));
      p = next;
    }
    return v;
  };
  for (const std::string& file : {clean, noisy}) {
    const std::string args = "run " + file + " --observable Z0 --observable \"Z0 Z1\" --json";
    const Result with = run(args + " --gradient"), without = run(args);
    ASSERT_EQ(with.status, 0) << with.err;
    ASSERT_EQ(without.status, 0) << without.err;
    const std::vector<double> a = numbers(with.out, "expval", ']'),
                              b = numbers(without.out, "expval", ']');
    ASSERT_EQ(a.size(), 2u) << with.out;
    ASSERT_EQ(b.size(), 2u) << without.out;
    for (std::size_t k = 0; k < 2; ++k) EXPECT_NEAR(a[k], b[k], 1e-12) << file;
    EXPECT_EQ(numbers(with.out, "num_gates_fused", ','),
              numbers(without.out, "num_gates_fused", ','))
        << file;
  }
}

TEST(Cli, HelpAndHumanOutput) {
  EXPECT_EQ(run("--help").status, 0);
  EXPECT_EQ(run("run --help").status, 0);
  EXPECT_EQ(run("bench --help").status, 0);
  const Result r = run("run " + write("b.qasm", kBell) + " --observable Z1 --fusion 0 --threads 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("> = 0"), std::string::npos) << r.out;
}

// Every command's --help: each flag its usage names is listed on a line of its
// own, and the guide it points to exists.
TEST(Cli, EveryHelpListsItsFlagsAndAnExistingGuide) {
  const std::filesystem::path root = std::filesystem::path(QMLSIM_EXAMPLES).parent_path();
  for (const char* command : {"run", "bench", "train", "infer", "plan"}) {
    const Result r = run(std::string(command) + " --help");
    ASSERT_EQ(r.status, 0) << command;
    const std::size_t options = r.out.find("\noptions:\n");
    ASSERT_NE(options, std::string::npos) << r.out;
    const std::string usage = r.out.substr(0, options), listed = r.out.substr(options);
    for (std::size_t at = usage.find("--"); at != std::string::npos; at = usage.find("--", at)) {
      std::size_t end = at + 2;
      while (end < usage.size() &&
             (std::isalnum(static_cast<unsigned char>(usage[end])) || usage[end] == '-'))
        ++end;
      const std::string flag = usage.substr(at, end - at);
      at = end;
      if (flag == "--") continue;
      EXPECT_NE(listed.find("\n  " + flag + " "), std::string::npos) << command << ": " << flag;
    }
    const std::size_t guide = r.out.find("Guide: ");
    ASSERT_NE(guide, std::string::npos) << r.out;
    const std::string path = r.out.substr(guide + 7, r.out.find(' ', guide + 7) - guide - 7);
    EXPECT_TRUE(std::filesystem::exists(root / path)) << command << ": " << path;
  }
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
      {"run {f} --observable Z0 --readout-error 0.1", "", "expected P01,P10 or Q:P01,P10"},
      {"run {f} --observable Z0 --readout-error 0.1,x", "", "'x' is not a finite number"},
      {"run {f} --observable Z0 --readout-error 0.1,1.5", "", "1.500000 is outside [0, 1]"},
      {"run {f} --observable Z0 --readout-error 2:0.1,0.1", "", "'2' is not a qubit of"},
      {"run {f} --seed 3 --observable Z0", "", "--seed: needs --shots"},
      {"run {f}", "", "nothing to compute"},
      {"run /nonexistent.qasm --observable Z0", "", "/nonexistent.qasm: cannot read file"},
      {"run --observable Z0", "", "expected exactly one circuit file"},
      {"frobnicate", "", "unknown command 'frobnicate'"},
      {"bench --qubits 3", "", "--qubits: 3 is out of range"},
      {"bench --precision c16", "", "--precision: expected c64, c128"},
      {"run {f} --observable Z0 --backend tpu", "", "--backend: 'tpu' is not one of"},
      // URLs other than a bucket's are refused, never written as a folder "s3:"; bad
      // bucket URLs are refused before any request.
      {"run {f} --observable Z0 --state-out s3://b/state.h5", "",
       "--state-out: s3://b/state.h5: URLs (s3://...) are not supported here"},
      {"run gs://b/c.qasm --observable Z0", "", "circuit: gs://b/c.qasm: URLs (gs://...)"},
      {"train " QMLSIM_EXAMPLES "/qcnn.toml --run-dir ''", "",
       "--run-dir: an empty path (give a directory)"},
      {"train " QMLSIM_EXAMPLES "/qcnn.toml --run-dir gs://runs/qcnn", "",
       "--run-dir: gs://runs/qcnn: URLs (gs://...) are not supported but s3://BUCKET/KEY"},
      {"train " QMLSIM_EXAMPLES "/qcnn.toml --run-dir s3://Runs/qcnn", "",
       "--run-dir: s3://Runs/qcnn: a bucket name has only a-z, 0-9, '.' and '-'"},
      {"train " QMLSIM_EXAMPLES "/sonar_dressed.toml --set data.path=s3://b/d.csv", "",
       "data.path: s3://b/d.csv: a bucket name has 3 to 63 characters"},
      {"infer s3://r/qcnn", "", "run directory: s3://r/qcnn: a bucket name has 3 to 63"},
      // Issue 20's reproducers, through the command line.
      {"run {g} --observable Z3",
       "OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg r[1];\nqreg q[1];\nqreg s[2];\nx q[0];\n"
       "cx r,s;\n",
       "g.qasm:7:1: registers of different sizes (1 and 2) cannot be combined"},
      {"run {g} --observable Z0", "OPENQASM 2.0;\nqreg q[1];\nU(1e999,0,0) q[0];\n",
       "g.qasm:3:3: number 1e999 is too large for a double"},
      {"run {g} --observable Z0", "OPENQASM 2.0;\nqreg q[1];\nU(0,0,0) q[0]; \x01\x1b[2J",
       "g.qasm:3:16: unexpected character '\\x01'"},
      {"run {f} --observable '1e308*Z0 + 1e308*Z1'", "", "--observable 1:1:1: the coefficients'"},
      {"run {f} --observable '0x10*Z0'", "", "hexadecimal numbers are not accepted"},
      {"run {f} --observable 'Z0.5'", "", "a qubit index must be a whole number"},
      {"run {f} --observable Z0 --max-gates 1", "", "more than the limit of 1 gates"},
      {"run {f} --observable Z0 --max-file-mib 0", "", "--max-file-mib: 0 is out of range"},
      {"run {f} --shots 4294967297", "", "--shots: 4294967297 is out of range"},
      {"run {d} --observable Z0", "", "is a directory, not an OpenQASM file"},
  };
  for (const Bad& c : cases) {
    std::string args = c.args;
    if (auto p = args.find("{f}"); p != std::string::npos) args.replace(p, 3, good);
    if (auto p = args.find("{g}"); p != std::string::npos)
      args.replace(p, 3, write("g.qasm", c.qasm));
    if (auto p = args.find("{d}"); p != std::string::npos) args.replace(p, 3, temp_dir().string());
    const Result r = run(args);
    for (const char ch : r.err) {
      EXPECT_FALSE(static_cast<unsigned char>(ch) < 0x20 && ch != '\n') << "raw control byte";
    }
    EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  }
}

// ---- train and infer ----

const std::string kExamples = QMLSIM_EXAMPLES;

TEST(Cli, TrainAndInferQaoa) {
  const std::string dir = (temp_dir() / "qaoa_run").string();
  std::filesystem::remove_all(dir);
  Result r = run("train " + kExamples + "/qaoa_maxcut.toml --set train.steps=2 --run-dir " + dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Initial cost: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Time to complete iteration: "), std::string::npos);
  EXPECT_NE(r.out.find("Maximum cut (exhaustive search): 21"), std::string::npos) << r.out;
  const std::string svg = read_file(dir + "/graph.svg");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  r = run("infer " + dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Approximation ratio: "), std::string::npos) << r.out;
}

TEST(Cli, WeightsAreReadableWithH5py) {
  if (std::system("/usr/bin/python3 -c 'import h5py' 2>/dev/null") != 0)
    GTEST_SKIP() << "h5py is not installed for /usr/bin/python3 (scripts/setup.sh installs it)";
  const std::string dir = (temp_dir() / "qcnn_run").string();
  std::filesystem::remove_all(dir);
  const Result r = run("train " + kExamples +
                       "/qcnn.toml --set data.qubits=4 --set data.rounds=5 --set train.epochs=1 "
                       "--run-dir " +
                       dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string py = write("read.py",
                               "import h5py, sys\n"
                               "f = h5py.File(sys.argv[1], 'r')\n"
                               "names = []\n"
                               "f.visititems(lambda n, o: names.append(f'{n}{list(o.shape)}') if "
                               "isinstance(o, h5py.Dataset) else None)\n"
                               "print(' '.join(names))\n");
  const Result p = [&] {
    const std::string out = (temp_dir() / "py_out").string();
    const int rc = std::system(
        ("/usr/bin/python3 " + py + " " + dir + "/weights.h5 >" + out + " 2>&1").c_str());
    return Result{WEXITSTATUS(rc), read_file(out), ""};
  }();
  ASSERT_EQ(p.status, 0) << p.out;
  EXPECT_EQ(p.out,
            "params/dense1/bias[8] params/dense1/weight[8, 2] params/dense2/bias[1] "
            "params/dense2/weight[1, 8] params/quantum/conv[15] params/quantum/pool[6]\n");
}

TEST(Cli, StateOutIncludesTheGlobalPhase) {
  if (std::system("/usr/bin/python3 -c 'import h5py' 2>/dev/null") != 0)
    GTEST_SKIP() << "h5py is not installed for /usr/bin/python3 (scripts/setup.sh installs it)";
  // Qiskit's exported GlobalPhaseGate and gphase, in a file without a version line.
  const std::string qasm = write("phase.qasm",
                                 "include \"stdgates.inc\";\ngate global_phase(p0) {\n}\n"
                                 "qubit[2] q;\nh q[0];\nglobal_phase(0.5) ;\ngphase(0.25);\n");
  const std::string h5 = (temp_dir() / "phase.h5").string();
  const Result r = run("run " + qasm + " --observable Z0 --state-out " + h5);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string py = write("phase.py",
                               "import cmath, h5py, sys\n"
                               "s = h5py.File(sys.argv[1], 'r')['state'][:]\n"
                               "want = [cmath.exp(0.75j) / 2 ** 0.5] * 2 + [0, 0]\n"
                               "err = max(abs(complex(*s[i]) - want[i]) for i in range(4))\n"
                               "sys.exit(0 if err < 1e-12 else 1)\n");
  EXPECT_EQ(std::system(("/usr/bin/python3 " + py + " " + h5).c_str()), 0);
}

TEST(Cli, StateOutWritesADensityMatrix) {
  if (std::system("/usr/bin/python3 -c 'import h5py' 2>/dev/null") != 0)
    GTEST_SKIP() << "h5py is not installed for /usr/bin/python3 (scripts/setup.sh installs it)";
  // (|00> + i|11>) / sqrt(2), then q[1] flipped with probability 1/4: rho is
  // 3/4 of that state's projector and 1/4 of (|10> + i|01>)'s (row-major, so
  // the imaginary coherences tell rows from columns).
  const std::string qasm = write(
      "noisy_s.qasm", std::string(kBell) + "s q[1];\n#pragma braket noise bit_flip(0.25) q[1]\n");
  const std::string py =
      write("rho.py",
            "import h5py, numpy as np, sys\n"
            "f = h5py.File(sys.argv[1], 'r')\n"
            "d = f['density_matrix'][:]\n"
            "rho = (d[:, 0] + 1j * d[:, 1]).reshape(4, 4)\n"
            "a = np.array([1, 0, 0, 1j]) / 2 ** 0.5\n"
            "b = np.array([0, 1j, 1, 0]) / 2 ** 0.5\n"
            "want = 0.75 * np.outer(a, a.conj()) + 0.25 * np.outer(b, b.conj())\n"
            "ok = f.attrs['num_qubits'] == 2 and np.abs(rho - want).max() < 1e-6\n"
            "sys.exit(0 if ok else 1)\n");
  for (const char* precision : {"c64", "c128"}) {
    const std::string h5 = (temp_dir() / (std::string("rho_") + precision + ".h5")).string();
    const Result r =
        run("run " + qasm + " --observable Z0 --precision " + precision + " --state-out " + h5);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(std::system(("/usr/bin/python3 " + py + " " + h5).c_str()), 0) << precision;
  }
}

TEST(Cli, TrainErrorsAreOneLocatedLine) {
  struct Case {
    std::string config, args, error;
  };
  const std::string bad_key = write("bad_key.toml", "[job]\nkind = \"qcnn\"\n[train]\nepoch = 3\n");
  const std::string bad_value =
      write("bad_value.toml", "[job]\nkind = \"qcnn\"\n[train]\nepochs = -1\n");
  const std::string bad_toml = write("bad_toml.toml", "[job]\nkind = \"qcnn\n");
  const std::string bad_graph = write("bad.edges", "0 1\n1 x\n");
  const std::string qaoa =
      write("qaoa.toml", "[job]\nkind = \"qaoa\"\n[data]\ngraph = \"bad.edges\"\n");
  const std::vector<Case> cases = {
      {bad_key, "", bad_key + ":4: unknown key train.epoch"},
      {bad_value, "", bad_value + ":4: train.epochs: must be in [1, 1000000], got -1"},
      {bad_toml, "", bad_toml + ":2: "},
      {bad_key, "--set job.kind=vqe", "--set job.kind=vqe: job.kind: unknown job kind 'vqe'"},
      {kExamples + "/qcnn.toml", "--set train.lr=1", "--set train.lr=1: unknown key train.lr"},
      {kExamples + "/qcnn.toml", "--set data.qubits=x",
       "--set data.qubits=x: data.qubits must be an integer"},
      {qaoa, "", bad_graph + ":2: node 'x' is not a non-negative integer"},
      {"/nonexistent.toml", "", "/nonexistent.toml: cannot open config file"},
      {kExamples + "/qcnn.toml", "--set job.backend=tpu", "--set job.backend=tpu: job.backend"},
  };
  for (const Case& c : cases) {
    const std::string dir = (temp_dir() / "err_run").string();
    std::filesystem::remove_all(dir);
    const Result r = run("train " + c.config + " " + c.args + " --run-dir " + dir);
    EXPECT_EQ(r.status, 2) << c.config << " " << c.args;
    EXPECT_EQ(r.err.find("qmlsim train: error: " + c.error), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  }
  const Result r = run("infer /nonexistent_run");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "qmlsim infer: error: /nonexistent_run/config.toml: cannot open config file\n");
}

}  // namespace

namespace {

TEST(Cli, CudaBackendRunsOrSaysWhyNot) {
  // With a GPU, --backend cuda computes what the CPU does; without one (or in a
  // build without CUDA) every command refuses with one line naming the reason.
  const std::string bell = write("bell_cuda.qasm", kBell);
  const Result cpu = run("run " + bell + " --observable 'Z0 Z1' --json");
  const Result gpu = run("run " + bell + " --observable 'Z0 Z1' --json --backend cuda");
  if (gpu.status == 0) {
    EXPECT_NE(gpu.out.find("\"backend\":\"cuda\""), std::string::npos) << gpu.out;
    EXPECT_EQ(gpu.out.substr(0, 20), cpu.out.substr(0, 20));
    return;
  }
  EXPECT_EQ(gpu.status, 2);
  EXPECT_EQ(gpu.err.find("qmlsim run: error: --backend cuda: "), 0u) << gpu.err;
  EXPECT_EQ(gpu.err.find('\n'), gpu.err.size() - 1) << gpu.err;
  const std::string dir = (temp_dir() / "cuda_run").string();
  for (const std::string& cmd :
       {"train " + kExamples + "/qcnn.toml --backend cuda --run-dir " + dir,
        "plan " + kExamples + "/qcnn.toml --backend cuda",
        std::string("bench --backend cuda --qubits 10")}) {
    const Result r = run(cmd);
    EXPECT_EQ(r.status, 2) << cmd;
    EXPECT_NE(r.err.find("error: --backend cuda: "), std::string::npos) << cmd << "\n" << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir)) << "a refused run left a run directory";
}

TEST(Cli, PlanPrintsMemoryAndTimes) {
  Result r = run("plan " + kExamples + "/qcnn.toml --ranks 4 --node-hour-price 1.5");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* line : {"qubits: 8, c64", "one state vector: 2.0 KiB", "ranks: 4",
                           "steps per epoch", "cost at 1.5 per node-hour: "})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " in:\n" << r.out;
  r = run("plan " + kExamples + "/qcnn.toml --node-hour-price cheap");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "qmlsim plan: error: --node-hour-price: 'cheap' is not a non-negative number\n");
}

// The number after "key": in a JSON text (first occurrence after `from`).
double json_number(const std::string& json, const std::string& key, std::size_t from = 0) {
  const auto at = json.find("\"" + key + "\":", from);
  EXPECT_NE(at, std::string::npos) << key << " in " << json;
  if (at == std::string::npos) return NAN;
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

TEST(Cli, RunsQiskitOpenQasm3WithInputs) {
  // Written by qiskit.qasm3.dumps (scripts/crosscheck/qasm3_qiskit.py, Qiskit 2.2.3), with
  // Parameters, a ParameterVector, a non-ASCII name and nonlinear parameter expressions.
  // Reference: Qiskit's Statevector; gradients by fourth-order central differences.
  const std::string args = "run " + kExamples +
                           "/circuits/qiskit_params.qasm --observable '0.5*Z0*Z1 - X2 + 0.3*Y1' "
                           "--input theta=0.3 --input β=-0.7 --input _w_0_=0.1 --input _w_1_=0.2 "
                           "--input _w_2_=-0.5 --input _w_3_=0.9 --gradient --json";
  const Result r = run(args);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NEAR(std::strtod(r.out.c_str() + r.out.find("[") + 1, nullptr), -0.892873468068393, 1e-12);
  const auto grads = r.out.find("input_gradient");
  ASSERT_NE(grads, std::string::npos) << r.out;
  const std::pair<const char*, double> want[] = {
      {"theta", 0.02447713645899648},  {"β", -1.7906379376508665},
      {"_w_0_", 0.10865723744563072},  {"_w_1_", -0.03870893676845751},
      {"_w_2_", -0.22876252390619892}, {"_w_3_", -0.024477136459079746}};
  for (const auto& [name, value] : want) {
    EXPECT_NEAR(json_number(r.out, name, grads), value, 1e-9) << name;
  }
  // Every input must be given, once, with the right number of finite values.
  const std::string qasm3 = write("in3.qasm",
                                  "OPENQASM 3.0;\ninclude \"stdgates.inc\";\ninput float[64] t;\n"
                                  "input array[angle[32], 2] w;\nqubit[2] q;\nrx(t * w[0]) q[0];\n"
                                  "ry(ln(w[1])) q[1];\n");
  const std::pair<std::string, std::string> bad[] = {
      {"--input t=1", "declares input 'w'; give its value with --input w=V1,V2,..."},
      {"--input t=1 --input w=1", "--input w=1: input 'w' takes 2 value(s), got 1"},
      {"--input t=1 --input w=1,x", "--input w=1,x: 'x' is not a finite number"},
      {"--input t=nan --input w=1,2", "--input t=nan: 'nan' is not a finite number"},
      {"--input t=1 --input t=2 --input w=1,2", "input 't' is given twice"},
      {"--input t=1 --input w=1,2 --input u=3", "declares no input 'u'"},
      {"--input t=1 --input w=1,-2", "in3.qasm:7:4: expression is not a finite number"},
      {"--input t1 --input w=1,2", "--input t1: expected NAME=VALUE"},
  };
  for (const auto& [flags, expect] : bad) {
    const Result e = run("run " + qasm3 + " --observable Z0 " + flags);
    EXPECT_EQ(e.status, 2) << flags;
    EXPECT_NE(e.err.find(expect), std::string::npos) << flags << "\n" << e.err;
    EXPECT_EQ(e.err.find('\n'), e.err.size() - 1) << e.err;
  }
}

// A data row that makes a circuit angle non-finite is a located error (exit 2)
// on any number of threads: an error inside the parallel loop over examples
// must not reach std::terminate.
TEST(Cli, HybridNonFiniteAngleIsALocatedErrorOnAnyThreadCount) {
  std::string csv = "a,label\n";
  for (int i = 0; i < 64; ++i)
    csv += (i == 37 ? "0" : std::to_string(0.5 + i)) + (i % 2 ? ",1\n" : ",0\n");
  write("ln_data.csv", csv);
  write("ln.qasm",
        "OPENQASM 3.0;\ninclude \"stdgates.inc\";\ninput array[float[64], 1] x;\n"
        "input array[float[64], 1] w;\nqubit[1] q;\nry(ln(x[0])) q[0];\nrz(w[0]) q[0];\n");
  const std::string job =
      write("ln.toml",
            "[job]\nkind = \"hybrid\"\n[data]\npath = \"ln_data.csv\"\nstandardize = false\n"
            "[model]\ncircuit = \"ln.qasm\"\ndata_inputs = [\"x\"]\nweights = [\"w\"]\n"
            "readouts = [\"Z0\"]\nhead = [\"1\"]\n[train]\nepochs = 1\nbatch_size = 64\n");
  for (const int threads : {1, 2}) {
    const std::string dir = (temp_dir() / ("ln_run" + std::to_string(threads))).string();
    std::filesystem::remove_all(dir);
    const Result r = run("train " + job + " --quiet --set job.threads=" + std::to_string(threads) +
                         " --run-dir " + dir);
    EXPECT_EQ(r.status, 2) << threads << " threads\n" << r.err;
    EXPECT_NE(r.err.find("ln.qasm:6:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not a finite number"), std::string::npos) << r.err;
  }
}

TEST(Cli, HybridTrainsAndInfersOnNewData) {
  const std::string dir = (temp_dir() / "hybrid_run").string();
  std::filesystem::remove_all(dir);
  Result r = run("train " + kExamples + "/hybrid_breast_cancer.toml --set train.epochs=2 --quiet " +
                 "--run-dir " + dir);
  ASSERT_EQ(r.status, 0) << r.err;
  // New rows: features only (no label column), with a header.
  std::string rows = "h1";
  for (int i = 2; i <= 30; ++i) rows += ",h" + std::to_string(i);
  rows += "\n";
  std::ifstream data(kExamples + "/data/breast_cancer.csv");
  int kept = 0;
  for (std::string line; std::getline(data, line) && kept < 4;) {
    if (line.empty() || line[0] == '#' || line[0] == 'f') continue;
    rows += line.substr(0, line.rfind(',')) + "\n";
    ++kept;
  }
  const std::string in = write("new_rows.csv", rows);
  const std::string out = (temp_dir() / "predictions.csv").string();
  r = run("infer " + dir + " --data " + in + " --out " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("4 predictions written to"), std::string::npos) << r.out;
  const std::string csv = read_file(out);
  EXPECT_EQ(csv.rfind("prediction,class\n", 0), 0u) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5) << csv;
  // A write that fails (here: a file-size limit of 0) leaves nothing under the name.
  const std::string failed = (temp_dir() / "failed_predictions.csv").string();
  const std::string limited = "bash -c \"ulimit -f 0; trap '' XFSZ; exec " +
                              std::string(QMLSIM_BINARY) + " infer " + dir + " --data " + in +
                              " --out " + failed + "\" >/dev/null 2>&1";
  const int rc = std::system(limited.c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) != 0) << rc;
  EXPECT_FALSE(std::filesystem::exists(failed));
  EXPECT_FALSE(std::filesystem::exists(failed + ".tmp"));
  r = run("infer " + dir + " --out " + out);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--out: needs --data"), std::string::npos) << r.err;
  r = run("infer " + dir + " --data " + write("short.csv", "1,2,3\n"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("short.csv:1: 3 fields; the model takes 30 features"), std::string::npos)
      << r.err;
}

}  // namespace
