// qmlsim: the command-line entry point.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/statevector.h"
#include "cli/commands.h"
#include "comm/comm.h"
#include "core/env.h"
#include "core/error.h"
#include "train/progress.h"

#ifdef QMLSIM_MIMALLOC
#include <mimalloc.h>
#endif

namespace {

constexpr const char* kUsage =
    R"(qmlsim: state-vector simulation for hybrid quantum-classical machine learning

usage: qmlsim COMMAND [options]

commands:
  run CIRCUIT.qasm   simulate an OpenQASM 2.0 or 3 circuit: expectation values, samples
  bench              kernel timings as ratios to the measured memory-bandwidth bound
  train CONFIG.toml  train a job (qaoa, qcnn, sonar, or hybrid: your own OpenQASM 3 model)
  infer RUN_DIR      predictions (or the QAOA cut) of a trained run's weights
  plan CONFIG.toml   memory and time of a training run, calibrated on this machine

Run 'qmlsim COMMAND --help' for a command's options, and 'qmlsim --version'.
Guides: docs/ in the qmlsim source tree (README.md lists them).
)";

// Prints the error; in a job of several ranks names the rank and ends every
// rank (no rank is left waiting in a collective).
int fail(const std::string& command, const char* kind, const std::string& what, int status) {
  std::fflush(stdout);
  const qmlsim::comm::Comm* world = qmlsim::comm::Comm::existing();
  const bool parallel = world && world->size() > 1;
  std::cerr << "qmlsim " << command << ": "
            << (parallel ? "rank " + std::to_string(world->rank()) + ": " : std::string()) << kind
            << qmlsim::printable(what) << "\n";
  if (parallel) world->abort(status);
  return status;
}

// Standard output is checked like every other write: results that could not
// be written (a full disk under `> file`, /dev/full) are an error, exit 2.
int checked(const std::string& command, int status) {
  std::cout.flush();
  if (!std::cout)
    return fail(command,
                "error: ", "standard output: cannot write (a full disk, or a pipe closed early?)",
                2);
  return status;
}

// The command, for the out-of-memory line (written without allocating).
char g_command[32] = "";

// A failed allocation anywhere, worker threads included: one line, exit 2.
// mimalloc's operator new calls this handler and, without one, aborts (it
// cannot throw from C); with the system allocator it replaces a bad_alloc
// that a worker thread could not pass on. Sizes are checked before the large
// allocations (core/memory.h), so this is the rare remainder.
[[noreturn]] void out_of_memory() {
  const char* parts[] = {"qmlsim ", g_command,
                         ": error: out of memory (an allocation failed; `qmlsim plan` shows what a "
                         "job needs, `ulimit -v` and a container's limit what it may use)\n"};
  for (const char* p : parts)
    if (::write(STDERR_FILENO, p, std::strlen(p)) < 0) break;
  ::_exit(2);
}

// The environment's QMLSIM_* settings and OMP_NUM_THREADS, checked before any
// work: a value qmlsim does not take is one line naming the variable (exit 2).
void check_environment() {
  for (const char* name : {"QMLSIM_HUGEPAGES", "QMLSIM_BUFFER_CACHE", "QMLSIM_STREAMING_STORES",
                           "QMLSIM_SHARED_PREFIXES"})
    qmlsim::env_switch(name);
  qmlsim::check_omp_num_threads(4096);              // the default --threads; the flag's own cap
  qmlsim::train::stdout_is_terminal();              // QMLSIM_PROGRESS
  qmlsim::cpu::StateVector<double>::chunk_bytes();  // QMLSIM_CHUNK_KIB
  qmlsim::cpu::best_kernels();                      // QMLSIM_KERNELS
  qmlsim::cpu::kernel_form_forced();                // QMLSIM_KERNEL_FORM
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
#ifdef QMLSIM_MIMALLOC
    const int v = mi_version();  // also keeps the library linked
    std::cout << "qmlsim 0.1.0 (malloc: mimalloc " << v / 100 << "." << v / 10 % 10 << "." << v % 10
              << ")\n";
#else
    std::cout << "qmlsim 0.1.0 (malloc: system)\n";
#endif
    return 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  std::snprintf(g_command, sizeof g_command, "%s", command.c_str());
  std::set_new_handler(out_of_memory);
  // A reader that goes away (`qmlsim train ... | head`) must not kill a run:
  // writes to it fail instead, and standard output is checked at the end.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    check_environment();
    // OpenMP's threads start now, while memory is plentiful: libgomp ends the
    // process (exit 1) when it cannot start one later under a tight limit.
    int started = 0;
#pragma omp parallel reduction(+ : started)
    started += 1;
    if (started < 1) return 3;  // uses the result: the region is not optimised away
    if (command == "run") return checked(command, qmlsim::cli::run_command(args));
    if (command == "bench") return checked(command, qmlsim::cli::bench_command(args));
    if (command == "train") return checked(command, qmlsim::cli::train_command(args));
    if (command == "infer") return checked(command, qmlsim::cli::infer_command(args));
    if (command == "plan") return checked(command, qmlsim::cli::plan_command(args));
    throw qmlsim::Error("unknown command '" + command +
                        "' (commands: run, bench, train, infer, plan; see --help)");
  } catch (const qmlsim::Error& e) {
    return fail(command, "error: ", e.what(), 2);
  } catch (const std::bad_alloc&) {
    return fail(command, "error: ", "out of memory", 2);
  } catch (const std::exception& e) {
    return fail(command, "internal error: ", e.what(), 3);
  }
}
