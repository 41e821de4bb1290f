// The qmlsim subcommands. Each returns the process exit status and throws
// qmlsim::Error for bad input (main prints it and exits with status 2).
#pragma once

#include <string>
#include <vector>

namespace qmlsim::cli {

int run_command(const std::vector<std::string>& args);
int bench_command(const std::vector<std::string>& args);
int train_command(const std::vector<std::string>& args);
int infer_command(const std::vector<std::string>& args);
int plan_command(const std::vector<std::string>& args);

}  // namespace qmlsim::cli
