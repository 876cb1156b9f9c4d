// ASHA, Hyperband and PBT: promotion, pause, resume, exploit.
#include <gtest/gtest.h>

#include <cmath>

#include "cohort/sweep.h"

namespace cohort::sweep {
namespace {

StudyOptions Options(const std::string& algorithm, int64_t min_r, int64_t max_r) {
  StudyOptions o;
  o.algorithm = algorithm;
  ParamSpec x;
  x.name = "x";
  o.space.params.push_back(x);
  o.budget.trials = 100;
  o.budget.min_resource = min_r;
  o.budget.max_resource = max_r;
  o.budget.reduction = 3;
  return o;
}

std::unique_ptr<Study> Make(const StudyOptions& o) {
  auto study = Study::Create(o);
  EXPECT_TRUE(study.ok()) << study.status().ToString();
  return std::move(*study);
}

Decision MustReport(Study& s, int64_t id, double value, int64_t step) {
  auto d = s.Report(id, value, step);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? *d : Decision::kStop;
}

// Rungs 1, 3, 9 (eta 3). Nine trials reach rung 0 (step 1) with losses
// 5 3 1 4 0 2 6 7 8, worked by hand: a trial is promoted at once when it is
// in the best floor(n/3) of the n results so far, else paused.
TEST(Asha, PromotesOrPausesAsWorkedByHand) {
  auto study = Make(Options("asha", 1, 9));
  const double losses[] = {5, 3, 1, 4, 0, 2, 6, 7, 8};
  const Decision expected[] = {
      Decision::kPause,     // n=1, top 0
      Decision::kPause,     // n=2, top 0
      Decision::kContinue,  // n=3, top 1: {1} -> trial 2 promoted
      Decision::kPause,     // n=4, top 1: {1}
      Decision::kContinue,  // n=5, top 1: {0} -> trial 4 promoted
      Decision::kPause,     // n=6, top 2: {0, 1} both promoted already
      Decision::kPause,     // n=7, top 2
      Decision::kPause,     // n=8, top 2
      Decision::kPause,     // n=9, top 3: {0, 1, 2}: trial 5 (loss 2) is paused and now qualifies
  };
  for (int i = 0; i < 9; ++i) {
    auto t = study->Ask();
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->id, i);
    EXPECT_EQ(t->resource, 1);
    EXPECT_FALSE(t->resumed);
    EXPECT_EQ(MustReport(*study, i, losses[i], 1), expected[i]) << "trial " << i;
  }
  EXPECT_EQ(study->Trials()[2].trial.resource, 3);  // promoted at once: now heading for rung 3
  EXPECT_EQ(study->Trials()[5].state, TrialState::kPaused);
  // The next ask resumes trial 5 to resource 3, not a new trial.
  auto resumed = study->Ask();
  ASSERT_TRUE(resumed.has_value());
  EXPECT_EQ(resumed->id, 5);
  EXPECT_TRUE(resumed->resumed);
  EXPECT_EQ(resumed->resource, 3);
  EXPECT_EQ(study->Trials()[5].state, TrialState::kRunning);
  // Then a new trial again.
  auto fresh = study->Ask();
  EXPECT_EQ(fresh->id, 9);
  EXPECT_FALSE(fresh->resumed);
}

TEST(Asha, StepsBetweenRungsContinueAndTheLastRungCompletes) {
  auto study = Make(Options("asha", 1, 9));
  // Three trials: the best is promoted through rungs 3 and 9.
  for (int i = 0; i < 3; ++i) study->Ask();
  EXPECT_EQ(MustReport(*study, 0, 2.0, 1), Decision::kPause);
  EXPECT_EQ(MustReport(*study, 1, 3.0, 1), Decision::kPause);
  EXPECT_EQ(MustReport(*study, 2, 1.0, 1), Decision::kContinue);
  EXPECT_EQ(MustReport(*study, 2, 0.9, 2), Decision::kContinue);  // between rungs
  EXPECT_EQ(MustReport(*study, 2, 0.8, 3), Decision::kPause);     // alone at rung 3: top 0
  EXPECT_FALSE(study->Best().has_value());
  auto report_paused = study->Report(2, 0.7, 4);
  ASSERT_FALSE(report_paused.ok());
  EXPECT_EQ(report_paused.status().message(), "cannot report on trial 2: it is paused");
}

TEST(Asha, MaximizeModePromotesTheHighest) {
  StudyOptions o = Options("asha", 1, 3);
  o.maximize = true;
  auto study = Make(o);
  for (int i = 0; i < 3; ++i) study->Ask();
  EXPECT_EQ(MustReport(*study, 0, 0.9, 1), Decision::kPause);
  EXPECT_EQ(MustReport(*study, 1, 0.1, 1), Decision::kPause);
  EXPECT_EQ(MustReport(*study, 2, 0.5, 1), Decision::kPause);  // top 1 is trial 0
  auto t = study->Ask();
  EXPECT_EQ(t->id, 0);
  EXPECT_EQ(t->resource, 3);
  EXPECT_EQ(MustReport(*study, 0, 0.95, 3), Decision::kStop);
  EXPECT_EQ(study->Trials()[0].state, TrialState::kCompleted);
  EXPECT_EQ(study->Best()->trial.id, 0);
  EXPECT_DOUBLE_EQ(*study->Best()->value, 0.95);
  EXPECT_TRUE(study->Tell(0, 0.95).ok());  // a tell after the last rung changes nothing
}

TEST(Asha, FinishedWhenBudgetSpentAndNothingPromotable) {
  StudyOptions o = Options("asha", 1, 3);
  o.budget.trials = 2;
  auto study = Make(o);
  study->Ask();
  study->Ask();
  EXPECT_FALSE(study->Ask().has_value());
  EXPECT_FALSE(study->Finished());
  EXPECT_EQ(MustReport(*study, 0, 1.0, 1), Decision::kPause);
  EXPECT_EQ(MustReport(*study, 1, 2.0, 1), Decision::kPause);
  EXPECT_TRUE(study->Finished());  // floor(2/3) = 0: no one is promoted
}

TEST(Hyperband, SpreadsNewTrialsOverBracketsByHyperbandsCounts) {
  // min 1, max 9, eta 3: brackets start at 1, 3, 9 with weights 9, 5, 3.
  auto study = Make(Options("hyperband", 1, 9));
  std::vector<int64_t> first;
  for (int i = 0; i < 6; ++i) first.push_back(study->Ask()->resource);
  EXPECT_EQ(first, (std::vector<int64_t>{1, 3, 9, 1, 3, 1}));
  // The bracket that starts at 9 has one rung: reaching it completes the trial.
  EXPECT_EQ(MustReport(*study, 2, 4.0, 9), Decision::kStop);
  EXPECT_EQ(study->Trials()[2].state, TrialState::kCompleted);
}

TEST(Pbt, ReplacesTheWorstWithAPerturbedCopyOfTheBest) {
  StudyOptions o = Options("pbt", 2, 10);
  o.budget.concurrent = 4;
  o.budget.trials = 10;
  auto study = Make(o);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(study->Ask().has_value());
  EXPECT_FALSE(study->Ask().has_value());                         // the population is complete
  EXPECT_EQ(MustReport(*study, 0, 1.0, 1), Decision::kContinue);  // not at an interval
  EXPECT_EQ(MustReport(*study, 0, 1.0, 2), Decision::kContinue);  // others have no result yet
  EXPECT_EQ(MustReport(*study, 1, 2.0, 2), Decision::kContinue);
  EXPECT_EQ(MustReport(*study, 2, 3.0, 2), Decision::kContinue);
  EXPECT_EQ(MustReport(*study, 3, 4.0, 2), Decision::kStop);  // bottom quarter: exploit
  EXPECT_EQ(study->Trials()[3].state, TrialState::kStopped);
  auto clone = study->Ask();
  ASSERT_TRUE(clone.has_value());
  EXPECT_EQ(clone->id, 4);
  ASSERT_TRUE(clone->clone_of.has_value());
  EXPECT_EQ(*clone->clone_of, 0);  // the top quarter is trial 0
  EXPECT_EQ(clone->start_step, 2);
  double from = std::get<double>(study->Trials()[0].trial.params.at("x"));
  double to = std::get<double>(clone->params.at("x"));
  EXPECT_TRUE(std::abs(to - std::min(1.0, from * 0.8)) < 1e-12 ||
              std::abs(to - std::min(1.0, from * 1.2)) < 1e-12)
      << from << " -> " << to;
  // The end of the resource completes a member.
  EXPECT_EQ(MustReport(*study, 0, 0.5, 10), Decision::kStop);
  EXPECT_EQ(study->Trials()[0].state, TrialState::kCompleted);
}

TEST(Study, RejectsBadOptionsAndCalls) {
  StudyOptions o = Options("bayes", 1, 1);
  auto bad = Study::Create(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "unknown algorithm 'bayes' (grid, random, sobol, tpe, asha, hyperband or pbt)");
  o = Options("asha", 4, 2);
  EXPECT_EQ(Study::Create(o).status().message(),
            "budget.max_resource (2) < budget.min_resource (4)");
  o = Options("random", 1, 1);
  o.space.params[0].low = 2;
  EXPECT_EQ(Study::Create(o).status().message(), "parameter 'x': low (2) > high (1)");
  auto study = Make(Options("random", 1, 1));
  EXPECT_EQ(study->Tell(3, 1.0).message(), "unknown trial 3 (the study has 0 trials)");
  auto t = study->Ask();
  EXPECT_EQ(study->Report(t->id, std::nan(""), 1).status().message(),
            "trial 0: reported value is not finite");
  ASSERT_TRUE(study->Fail(t->id, "exit 1").ok());
  EXPECT_EQ(study->Tell(t->id, 1.0).message(), "trial 0 has failed; it cannot be told a value");
  EXPECT_EQ(study->Trials()[0].error, "exit 1");
}

}  // namespace
}  // namespace cohort::sweep
