// qmlsim plan: memory, fit, and a calibrated step time for the jobs. How close
// that time is to a real run's is a timing comparison, so it is measured by
// scripts/bench_plan.py, not asserted here (a busy machine would fail it).
#include "train/plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "train/jobs.h"

namespace qmlsim::train {
namespace {

TEST(Plan, CalibratesEveryJobThatFits) {
  for (const auto& [example, sets] : std::vector<std::pair<const char*, std::vector<std::string>>>{
           {"qcnn.toml", {"train.epochs=4"}},
           {"sonar_dressed.toml", {"model.wires=12", "train.batch_size=16"}},
           {"qaoa_maxcut.toml", {"train.steps=6"}}}) {
    const io::Config c = load_job_config(std::string(QMLSIM_EXAMPLES) + "/" + example, sets);
    const Plan plan = make_plan(c, PlanOptions{});
    EXPECT_TRUE(plan.fits) << example;
    EXPECT_EQ(plan.state_bytes,
              (std::uint64_t{1} << plan.qubits) * (plan.precision == "c64" ? 8u : 16u));
    // Calibrated by running the job's circuit: a positive, finite time per step,
    // and the epoch and run times follow from it.
    EXPECT_GT(plan.step_s, 0.0) << example;
    EXPECT_TRUE(std::isfinite(plan.step_s)) << example;
    EXPECT_GE(plan.epoch_s, plan.step_s * plan.steps_per_epoch) << example;
    EXPECT_GE(plan.run_s, plan.epoch_s) << example;
  }
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

TEST(Plan, StatesOverSeveralRanksNeedTheirSlices) {
  // 34 qubits over 64 ranks: a rank holds 2 slices of 2^28 amplitudes and the exchange
  // buffer (32 MiB), and the groups of 64 do not divide 96 ranks.
  const io::Config c = load_job_config(std::string(QMLSIM_EXAMPLES) + "/qaoa_maxcut.toml",
                                       {"data.nodes=34", "train.steps=1", "job.state_ranks=64"});
  PlanOptions o;
  o.ranks = 128;
  const Plan p = make_plan(c, o);
  EXPECT_EQ(p.state_ranks, 64);
  EXPECT_EQ(p.state_bytes, std::uint64_t{16} << 28);
  EXPECT_EQ(p.rank_bytes, 2 * (std::uint64_t{16} << 28) + (std::uint64_t{32} << 20));
  EXPECT_EQ(p.step_s, 0.0);  // whole states (256 GiB) do not fit here: no calibration
  o.ranks = 96;
  EXPECT_THROW(make_plan(c, o), Error);
}

}  // namespace
}  // namespace qmlsim::train
