// Decayed usage, fair-share score and Jain's index (see fair_share.h).
#include "sched/fair_share.h"

#include <cmath>

namespace cohort::sched {

namespace {

double Weight(const std::map<std::string, double>& weights, const std::string& name) {
  auto it = weights.find(name);
  return it == weights.end() || it->second <= 0 ? 1.0 : it->second;
}

double Lookup(const std::map<std::string, double>& values, const std::string& name) {
  auto it = values.find(name);
  return it == values.end() ? 0.0 : it->second;
}

}  // namespace

void AdvanceUsage(const std::vector<RunningJob>& running, double elapsed, double half_life,
                  Usage* usage) {
  if (elapsed <= 0) return;
  // half_life <= 0: usage never decays.
  const bool decays = half_life > 0;
  const double rate = decays ? std::log(2.0) / half_life : 0;
  const double decay = decays ? std::exp(-rate * elapsed) : 1;
  // Integral of exp(-rate (elapsed - t)) dt over [0, elapsed]: the decayed
  // weight of one slot busy for the whole interval.
  const double gained = decays ? (1 - decay) / rate : elapsed;
  for (auto& [name, value] : usage->user) value *= decay;
  for (auto& [name, value] : usage->project) value *= decay;
  for (const RunningJob& job : running) {
    usage->user[job.spec.user] += job.spec.slots * gained;
    usage->project[job.spec.project] += job.spec.slots * gained;
  }
}

double FairShareScore(const Usage& usage, const Shares& shares, const std::string& user,
                      const std::string& project) {
  return Lookup(usage.user, user) / Weight(shares.user, user) +
         Lookup(usage.project, project) / Weight(shares.project, project);
}

double JainIndex(const std::vector<double>& x) {
  double sum = 0, squares = 0;
  for (double v : x) {
    sum += v;
    squares += v * v;
  }
  if (x.empty() || squares == 0) return 1.0;
  return sum * sum / (static_cast<double>(x.size()) * squares);
}

}  // namespace cohort::sched
