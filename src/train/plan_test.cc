// qmlsim plan against real runs: the planned step time within 30% of the
// median measured one (a timing comparison, so ctest runs it alone).
#include "train/plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "train/jobs.h"
#include "train/trainer.h"

namespace qmlsim::train {
namespace {

double median_step_time(const std::string& run_dir) {
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::vector<double> t;
  for (std::string line; std::getline(in, line);) {
    const auto p = line.find("\"step_time_s\":");
    if (line.find("\"type\":\"step\"") != std::string::npos && p != std::string::npos)
      t.push_back(std::stod(line.substr(p + 14)));
  }
  std::sort(t.begin(), t.end());
  return t.empty() ? 0 : t[t.size() / 2];
}

TEST(Plan, PredictsTheStepTimeOfARealRun) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "timings under AddressSanitizer are not representative (the release build "
                  "runs this test)";
#endif
  struct Case {
    const char* example;
    std::vector<std::string> sets;
  };
  const auto root =
      std::filesystem::temp_directory_path() / ("qmlsim_plan_" + std::to_string(getpid()));
  for (const Case& cs : {Case{"qcnn.toml", {"train.epochs=4"}},
                         Case{"sonar_dressed.toml", {"model.wires=12", "train.batch_size=16"}},
                         Case{"qaoa_maxcut.toml", {"train.steps=6"}}}) {
    const io::Config c = load_job_config(std::string(QMLSIM_EXAMPLES) + "/" + cs.example, cs.sets);
    const Plan plan = make_plan(c, PlanOptions{});
    TrainOptions o;
    o.run_dir = (root / cs.example).string();
    o.quiet = true;
    std::ostringstream out;
    ASSERT_EQ(train(c, o, out), 0);
    const double real = median_step_time(o.run_dir);
    EXPECT_NEAR(plan.step_s, real, 0.3 * real)
        << cs.example << ": planned " << plan.step_s << " s per step, measured " << real;
    EXPECT_TRUE(plan.fits);
    EXPECT_EQ(plan.state_bytes,
              (std::uint64_t{1} << plan.qubits) * (plan.precision == "c64" ? 8u : 16u));
  }
  std::filesystem::remove_all(root);
}

TEST(Plan, StatesWhatDoesNotFit) {
  const io::Config c = load_job_config(std::string(QMLSIM_EXAMPLES) + "/qaoa_maxcut.toml",
                                       {"data.nodes=34", "train.steps=1"});
  const Plan p = make_plan(c, PlanOptions{});  // 2 x 256 GiB: no calibration attempted
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.rank_bytes, 2 * (std::uint64_t{16} << 34));
  EXPECT_EQ(p.step_s, 0.0);
  PlanOptions cuda;
  cuda.backend = "cuda";
  EXPECT_THROW(make_plan(load_job_config(std::string(QMLSIM_EXAMPLES) + "/qcnn.toml", {}), cuda),
               Error);
}

}  // namespace
}  // namespace qmlsim::train
