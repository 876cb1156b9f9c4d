// The elastic driver of `cohort run --min-np N --max-np M
// --host-discovery-script S` (horovodrun's elastic mode). It runs the
// discovery script every second, starts a worker per free slot, keeps the job
// going when a worker exits, and publishes each new membership as a round in
// the rendezvous store (rendezvous/elastic_round.h), where the survivors and
// newcomers find their new ranks without restarting. A round's members must
// all join within --elastic-timeout; one that does not (hung, SIGSTOPped) is
// killed and the job goes on without it. A slot whose worker failed is not
// used again. The job fails when fewer than --min-np workers are left for
// --elastic-timeout, or when its membership changed more than --reset-limit
// times; it ends when every worker has exited.
#ifndef COHORT_LAUNCH_ELASTIC_DRIVER_H_
#define COHORT_LAUNCH_ELASTIC_DRIVER_H_

#include <string>
#include <vector>

#include "cohort/status.h"
#include "launch/host_list.h"
#include "launch/local_launcher.h"

namespace cohort {

struct ElasticOptions {
  int min_np = 1;
  int max_np = kMaxRanks;
  std::string discovery_script;  // prints "host[:slots]" lines
  double elastic_timeout_seconds = 600;
  int reset_limit = -1;  // -1: no limit
  double discovery_interval_seconds = 1.0;
};

// The hosts a discovery script printed: one "host" or "host:slots" per line;
// blank lines are skipped. Errors name the line.
Result<std::vector<HostSlots>> ParseDiscoveredHosts(const std::string& output);

// Runs an elastic job to its end; the exit status as RunJob gives it.
Result<int> RunElasticJob(const LaunchOptions& options, const ElasticOptions& elastic);

}  // namespace cohort

#endif  // COHORT_LAUNCH_ELASTIC_DRIVER_H_
