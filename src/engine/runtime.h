// Runtime: the one object per process that holds a running cohort job: the
// settings read at init, the rendezvous store (served here when rank 0 must
// host it), and the communicator over the peer mesh.
#ifndef COHORT_ENGINE_RUNTIME_H_
#define COHORT_ENGINE_RUNTIME_H_

#include <memory>
#include <mutex>
#include <string>

#include "cohort/status.h"
#include "collectives/collectives.h"
#include "collectives/communicator.h"
#include "common/env_config.h"
#include "engine/engine.h"
#include "engine/gpu_provider.h"
#include "p2p/point_to_point.h"
#include "rendezvous/launcher_env.h"
#include "rendezvous/mesh_builder.h"
#include "rendezvous/store_client.h"
#include "rendezvous/store_server.h"

namespace cohort {

// Settings that come from COHORT_* variables. Their defaults and bounds are
// the settings table's (common/settings.h); the initializers below equal
// them (RuntimeSettings.DefaultsAreTheTables checks).
struct RuntimeSettings {
  double timeout_seconds = 300;                                        // COHORT_TIMEOUT
  bool force_tcp = false;                                              // COHORT_TRANSPORT=tcp
  AllreduceAlgorithm allreduce_algorithm = AllreduceAlgorithm::kAuto;  // COHORT_ALLREDUCE_ALGORITHM
  size_t small_message_bytes = 64 << 10;                               // COHORT_SMALL_MESSAGE_BYTES
  size_t chunk_bytes = 256 << 10;                                      // COHORT_CHUNK_BYTES
  size_t shm_slot_bytes = 1 << 20;                                     // COHORT_SHM_SLOT_BYTES
  bool shm_single_copy = true;                                         // COHORT_SHM_SINGLE_COPY
  size_t shm_single_copy_bytes = 1 << 20;  // COHORT_SHM_SINGLE_COPY_BYTES
  int tcp_streams = 1;                     // COHORT_TCP_STREAMS
  std::string test_hosts;                  // COHORT_TEST_HOSTS (testing knob)
  EngineOptions engine;                    // COHORT_FUSION_THRESHOLD, COHORT_CYCLE_TIME
  std::string elastic_worker;              // COHORT_ELASTIC_WORKER (set by cohort run)
  double elastic_timeout_seconds = 600;    // COHORT_ELASTIC_TIMEOUT
};

Result<RuntimeSettings> ReadRuntimeSettings(const EnvLookup& env);

class Runtime {
 public:
  // Reads the environment, joins the job and builds the mesh.
  static Result<std::unique_ptr<Runtime>> Start(const EnvLookup& env);
  ~Runtime();

  Communicator& comm() { return *comm_; }
  // The engine, started on first use; null before then.
  Engine* engine() {
    std::lock_guard<std::mutex> lock(engine_mu_);
    return engine_.get();
  }
  Engine& StartEngine();
  // Where GPU tensors find the GPU stack (loaded at the first one).
  GpuProvider& gpu_provider() { return *gpu_provider_; }
  // Replaces the provider (tests: a fake CUDA API). Only before the engine
  // starts: the engine keeps the provider it started with.
  Status SetGpuProvider(std::unique_ptr<GpuProvider> provider);
  // Whether the engine has stopped for good (engine.h, Engine::Stopped).
  bool EngineStopped() {
    Engine* e = engine();
    return e != nullptr && e->Stopped();
  }
  // Point-to-point messages (p2p/point_to_point.h): the first call builds
  // their mesh, which every rank must do (collective); later calls return it.
  Result<PointToPoint*> OpenPointToPoint();
  // Null until OpenPointToPoint.
  PointToPoint* point_to_point() {
    std::lock_guard<std::mutex> lock(p2p_mu_);
    return p2p_.get();
  }
  // Breaks the job for `reason` on this rank (see cohort::Abort); the
  // destructor then waits only briefly for peers to read the reason.
  void Abort(const Status& reason);
  // Names for blocking calls routed through the engine: the same sequence on
  // every rank because ranks make blocking calls in the same order.
  std::string NextSyncName(const char* kind) {
    return std::string("cohort.sync.") + kind + "." + std::to_string(sync_calls_++);
  }
  uint64_t NextGroupId() { return ++groups_; }
  const RuntimeSettings& settings() const { return settings_; }
  const JobEnvironment& job() const { return job_; }
  // Elastic workers (rendezvous/elastic_round.h): the round this runtime
  // joined (-1 otherwise) and the newest one the launcher has published.
  int64_t elastic_round() const { return elastic_round_; }
  Result<int64_t> NewestElasticRound();

 private:
  Runtime() = default;
  Result<std::unique_ptr<StoreClient>> JoinElasticRound(std::unique_ptr<StoreClient> store);

  JobEnvironment job_;
  RuntimeSettings settings_;
  std::unique_ptr<StoreServer> hosted_store_;  // rank 0 under foreign launchers
  std::string store_scope_;                    // this join's store prefix (prefixed_store.h)
  MeshOptions mesh_options_;                   // how the mesh was built, for the p2p mesh
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<GpuProvider> gpu_provider_;  // outlives engine_, which uses it
  std::mutex engine_mu_;
  std::unique_ptr<Engine> engine_;  // guarded by engine_mu_; destroyed before comm_, which it uses
  std::mutex p2p_mu_;
  std::unique_ptr<PointToPoint> p2p_;  // guarded by p2p_mu_; destroyed before engine_ (its handles)
  bool aborted_ = false;
  uint64_t sync_calls_ = 0;
  uint64_t groups_ = 0;
  int64_t elastic_round_ = -1;
  std::mutex elastic_mu_;
  std::unique_ptr<StoreClient> elastic_store_;  // guarded by elastic_mu_
};

// The process's running Runtime (include/cohort/cohort.h's Init), null when
// none: for tests that give it parts (SetGpuProvider) before its engine starts.
Runtime* RunningRuntime();

}  // namespace cohort

#endif  // COHORT_ENGINE_RUNTIME_H_
