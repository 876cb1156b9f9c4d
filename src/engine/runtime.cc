// Runtime start-up: environment -> store -> mesh -> communicator.
#include "engine/runtime.h"

#include <algorithm>
#include <map>

#include "common/logging.h"
#include "common/settings.h"
#include "net/auth.h"
#include "rendezvous/elastic_round.h"
#include "rendezvous/foreign_job.h"
#include "rendezvous/local_address.h"
#include "rendezvous/mesh_builder.h"
#include "rendezvous/prefixed_store.h"
#include "rendezvous/store_client.h"

namespace cohort {
Result<RuntimeSettings> ReadRuntimeSettings(const EnvLookup& env) {
  // Every value, default and bound comes from the settings table
  // (common/settings.h); this only moves the parsed values into place.
  std::map<std::string, SettingValue> v;
  for (const char* name :
       {"COHORT_TIMEOUT", "COHORT_TRANSPORT", "COHORT_ALLREDUCE_ALGORITHM",
        "COHORT_SMALL_MESSAGE_BYTES", "COHORT_CHUNK_BYTES", "COHORT_SHM_SLOT_BYTES",
        "COHORT_SHM_SINGLE_COPY", "COHORT_SHM_SINGLE_COPY_BYTES", "COHORT_FUSION_THRESHOLD",
        "COHORT_FUSION_MAX_TENSOR", "COHORT_CYCLE_TIME", "COHORT_STALL_CHECK_TIME",
        "COHORT_STALL_SHUTDOWN_TIME", "COHORT_DEADLOCK_TIME", "COHORT_TIMELINE",
        "COHORT_TCP_STREAMS", "COHORT_TEST_HOSTS", "COHORT_CACHE_CAPACITY",
        "COHORT_ELASTIC_TIMEOUT",
        // The autotuner's (engine/autotuner.h).
        "COHORT_AUTOTUNE", "COHORT_AUTOTUNE_LOG", "COHORT_AUTOTUNE_SEED",
        "COHORT_AUTOTUNE_WARMUP_SAMPLES", "COHORT_AUTOTUNE_STEPS_PER_SAMPLE",
        "COHORT_AUTOTUNE_MAX_SAMPLES"}) {
    Result<SettingValue> value = ReadSetting(env, name);
    if (!value.ok()) return value.status();
    v[name] = std::move(value).value();
  }
  RuntimeSettings s;
  s.timeout_seconds = v["COHORT_TIMEOUT"].number;
  s.force_tcp = v["COHORT_TRANSPORT"].text == "tcp";
  Result<AllreduceAlgorithm> algorithm =
      ParseAllreduceAlgorithm(v["COHORT_ALLREDUCE_ALGORITHM"].text);
  if (!algorithm.ok()) return algorithm.status().WithContext("COHORT_ALLREDUCE_ALGORITHM");
  s.allreduce_algorithm = *algorithm;
  s.small_message_bytes = static_cast<size_t>(v["COHORT_SMALL_MESSAGE_BYTES"].number);
  s.chunk_bytes = static_cast<size_t>(v["COHORT_CHUNK_BYTES"].number);
  const size_t slot = static_cast<size_t>(v["COHORT_SHM_SLOT_BYTES"].number);
  s.shm_slot_bytes = (slot + 4095) / 4096 * 4096;
  s.shm_single_copy = v["COHORT_SHM_SINGLE_COPY"].text != "off";
  s.shm_single_copy_bytes = static_cast<size_t>(v["COHORT_SHM_SINGLE_COPY_BYTES"].number);
  s.engine.fusion_threshold_bytes = static_cast<uint64_t>(v["COHORT_FUSION_THRESHOLD"].number);
  s.engine.fusion_max_tensor_bytes = static_cast<uint64_t>(v["COHORT_FUSION_MAX_TENSOR"].number);
  s.engine.cycle_time_ms = v["COHORT_CYCLE_TIME"].number;
  s.engine.stall_check_seconds = v["COHORT_STALL_CHECK_TIME"].number;
  s.engine.stall_shutdown_seconds = v["COHORT_STALL_SHUTDOWN_TIME"].number;
  s.engine.deadlock_seconds = v["COHORT_DEADLOCK_TIME"].number;
  s.engine.timeline_path = v["COHORT_TIMELINE"].text;
  s.tcp_streams = static_cast<int>(v["COHORT_TCP_STREAMS"].number);
  s.test_hosts = v["COHORT_TEST_HOSTS"].text;
  s.engine.cache_capacity = static_cast<size_t>(v["COHORT_CACHE_CAPACITY"].number);
  // The autotuner starts from the cut-overs the communicator is given.
  s.engine.small_message_bytes = s.small_message_bytes;
  s.engine.single_copy_bytes = s.shm_single_copy_bytes;
  AutotuneOptions& at = s.engine.autotune;
  at.enabled = v["COHORT_AUTOTUNE"].text == "1";
  at.log_path = v["COHORT_AUTOTUNE_LOG"].text;
  at.warmup_samples = static_cast<int>(v["COHORT_AUTOTUNE_WARMUP_SAMPLES"].number);
  at.steps_per_sample = static_cast<int>(v["COHORT_AUTOTUNE_STEPS_PER_SAMPLE"].number);
  at.max_samples = static_cast<int>(v["COHORT_AUTOTUNE_MAX_SAMPLES"].number);
  at.seed = static_cast<uint64_t>(v["COHORT_AUTOTUNE_SEED"].number);
  // Set by cohort run for elastic workers only; not a user setting.
  s.elastic_worker = EnvString(env, "COHORT_ELASTIC_WORKER").value_or("");
  s.elastic_timeout_seconds = v["COHORT_ELASTIC_TIMEOUT"].number;
  return s;
}

Result<std::unique_ptr<Runtime>> Runtime::Start(const EnvLookup& env) {
  std::unique_ptr<Runtime> rt(new Runtime());
  Result<JobEnvironment> job = ParseJobEnvironment(env);
  if (!job.ok()) return job.status();
  rt->job_ = *job;
  Result<RuntimeSettings> settings = ReadRuntimeSettings(env);
  if (!settings.ok()) return settings.status();
  rt->settings_ = *settings;
  // GPU settings are checked now; the stack loads at the first GPU tensor.
  Result<gpu::GpuStackOptions> gpu_options = gpu::GpuStackOptionsFromEnv(env);
  if (!gpu_options.ok()) return gpu_options.status();
  rt->gpu_provider_ = LoadingGpuProvider(std::move(*gpu_options));
  JobEnvironment& j = rt->job_;
  if (j.private_store) {
    j.secret = GenerateSecret();
  } else {
    // Foreign launchers hand out no secret: derive one (rendezvous/foreign_job.h).
    COHORT_RETURN_IF_ERROR(ProtectForeignJob(env, &j));
  }
  if (j.rank0_hosts_store && j.rank == 0) {
    Result<std::unique_ptr<StoreServer>> server = StoreServer::Start(
        j.private_store ? j.store_host : StoreBindAddress(j), j.store_port, j.secret);
    if (!server.ok()) return server.status();
    rt->hosted_store_ = std::move(server).value();
    if (j.private_store) j.store_port = rt->hosted_store_->port();
  }
  const Deadline deadline = Deadline::AfterSeconds(rt->settings_.timeout_seconds);
  Result<std::unique_ptr<StoreClient>> store =
      StoreClient::Connect(j.store_host, j.store_port, j.secret, deadline);
  if (!store.ok()) return store.status().WithContext("rank " + std::to_string(j.rank) + " joining");
  if (rt->settings_.elastic_worker.empty()) {
    store = ScopeToThisJoin(std::move(store).value(), j.rank, &rt->store_scope_);
  } else {
    store = rt->JoinElasticRound(std::move(store).value());
  }
  if (!store.ok()) return store.status();
  // A rank's host is one of several when the launcher says so.
  const bool multi_host = j.cross_size > 1 || (j.local_size > 0 && j.local_size < j.size);
  Result<std::string> listen_host = SelectAdvertiseAddress(
      j.store_host, EnvString(env, "COHORT_NETWORK_INTERFACE").value_or(""), multi_host);
  if (!listen_host.ok()) return listen_host.status();

  MeshOptions mo;
  mo.rank = j.rank;
  mo.size = j.size;
  mo.secret = j.secret;
  mo.force_tcp = rt->settings_.force_tcp;
  mo.listen_host = *listen_host;
  mo.timeout_seconds = rt->settings_.timeout_seconds;
  mo.shm_slot_bytes = rt->settings_.shm_slot_bytes;
  mo.single_copy = rt->settings_.shm_single_copy;
  mo.tcp_streams = rt->settings_.tcp_streams;
  mo.test_hosts = rt->settings_.test_hosts;
  rt->mesh_options_ = mo;
  Result<Mesh> mesh = BuildMesh(**store, mo);
  if (!mesh.ok())
    return mesh.status().WithContext("rank " + std::to_string(j.rank) + " building the mesh");

  CommunicatorOptions co;
  co.timeout_seconds = rt->settings_.timeout_seconds;
  co.small_message_bytes = rt->settings_.small_message_bytes;
  co.chunk_bytes = rt->settings_.chunk_bytes;
  co.single_copy_bytes = rt->settings_.shm_single_copy_bytes;
  rt->comm_ = std::make_unique<Communicator>(std::move(mesh).value(), std::move(store).value(), co);
  return rt;
}

// An elastic worker's rank, size and hosts come from the round it joins, not
// from its environment; its mesh lives under "round<N>/". The plain
// connection stays open for NewestElasticRound().
Result<std::unique_ptr<StoreClient>> Runtime::JoinElasticRound(std::unique_ptr<StoreClient> store) {
  // The driver settles a round within the elastic timeout (or the start-up
  // allowance of newcomers); the margin covers its ticks.
  constexpr double kMarginSeconds = 10;
  const double round_seconds =
      std::max(settings_.elastic_timeout_seconds, kElasticStartupSeconds) + kMarginSeconds;
  Result<ElasticPlacement> p =
      cohort::JoinElasticRound(*store, settings_.elastic_worker, round_seconds);
  if (!p.ok()) return p.status();
  job_.rank = p->rank;
  job_.size = p->size;
  job_.local_rank = p->local_rank;
  job_.local_size = p->local_size;
  job_.cross_rank = p->cross_rank;
  job_.cross_size = p->cross_size;
  elastic_round_ = p->round;
  Result<std::unique_ptr<StoreClient>> control = StoreClient::Connect(
      job_.store_host, job_.store_port, job_.secret, Deadline::AfterSeconds(round_seconds));
  if (!control.ok()) return control.status();
  elastic_store_ = std::move(control).value();
  store_scope_ = "round" + std::to_string(p->round) + "/";
  return std::unique_ptr<StoreClient>(new PrefixedStore(std::move(store), store_scope_));
}

Result<int64_t> Runtime::NewestElasticRound() {
  if (elastic_store_ == nullptr) {
    return Status::InvalidArgument("this process is not an elastic worker (cohort run --min-np)");
  }
  std::lock_guard<std::mutex> lock(elastic_mu_);
  return cohort::NewestElasticRound(*elastic_store_);
}

Engine& Runtime::StartEngine() {
  std::lock_guard<std::mutex> lock(engine_mu_);  // submitting threads race to start it
  if (engine_ == nullptr) {
    engine_ = std::make_unique<Engine>(*comm_, settings_.engine, gpu_provider_.get());
  }
  return *engine_;
}

Status Runtime::SetGpuProvider(std::unique_ptr<GpuProvider> provider) {
  std::lock_guard<std::mutex> lock(engine_mu_);
  if (engine_ != nullptr) {
    return Status::InvalidArgument("the GPU provider can only change before the engine starts");
  }
  gpu_provider_ = std::move(provider);
  return Status::OK();
}

Result<PointToPoint*> Runtime::OpenPointToPoint() {
  Engine& engine = StartEngine();  // its handle table tracks the messages
  std::lock_guard<std::mutex> lock(p2p_mu_);
  if (p2p_ != nullptr) return p2p_.get();
  // A connection of its own: the collectives' store client belongs to the
  // engine thread. Its keys live under this join's scope, in "p2p/".
  const Deadline deadline = Deadline::AfterSeconds(settings_.timeout_seconds);
  Result<std::unique_ptr<StoreClient>> store =
      StoreClient::Connect(job_.store_host, job_.store_port, job_.secret, deadline);
  if (!store.ok()) return store.status().WithContext("point-to-point mesh");
  auto scoped = std::make_unique<PrefixedStore>(std::move(store).value(), store_scope_ + "p2p/");
  MeshOptions p2p_options = mesh_options_;
  p2p_options.single_copy = false;  // messages go over the links only
  Result<Mesh> mesh = BuildMesh(*scoped, p2p_options);
  if (!mesh.ok()) {
    return mesh.status().WithContext("rank " + std::to_string(job_.rank) +
                                     " building the point-to-point mesh");
  }
  CommunicatorOptions co = comm_->options();
  p2p_ = std::make_unique<PointToPoint>(
      std::make_unique<Communicator>(std::move(mesh).value(), std::move(scoped), co),
      engine.handles());
  return p2p_.get();
}

void Runtime::Abort(const Status& reason) {
  aborted_ = true;
  // Messages first: a peer waiting for one from this rank learns the reason
  // now, not when this process exits or its wait times out.
  if (PointToPoint* p2p = point_to_point()) p2p->Abort(reason);
  if (Engine* e = engine()) {
    e->Abort(reason);
  } else {
    (void)comm_->Fail(reason);
  }
}

Runtime::~Runtime() {
  p2p_.reset();  // completes its pending handles while the engine's table exists
  if (engine_) (void)engine_->Shutdown();
  engine_.reset();
  comm_.reset();
  if (hosted_store_) {
    // Other ranks may still need the store to learn why a peer failed.
    const double patience = aborted_ ? 2.0 : 30.0;
    hosted_store_->WaitUntilIdle(
        Deadline::AfterSeconds(std::min(settings_.timeout_seconds, patience)));
    hosted_store_->Stop();
  }
}

}  // namespace cohort
