#include "train/stop_signals.h"

#include <csignal>

namespace qmlsim::train {
namespace {

volatile std::sig_atomic_t g_received = 0;
struct sigaction g_previous_term, g_previous_int;

extern "C" void on_stop_signal(int signal) {
  if (g_received != 0) {  // the second: the default action, now
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  g_received = signal;
}

}  // namespace

StopSignals::StopSignals() {
  g_received = 0;
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, &g_previous_term);
  sigaction(SIGINT, &action, &g_previous_int);
}

StopSignals::~StopSignals() {
  sigaction(SIGTERM, &g_previous_term, nullptr);
  sigaction(SIGINT, &g_previous_int, nullptr);
  g_received = 0;
}

int StopSignals::received() { return g_received; }

const char* StopSignals::name(int signal) { return signal == SIGINT ? "SIGINT" : "SIGTERM"; }

}  // namespace qmlsim::train
