// Runtime start-up: environment -> store -> mesh -> communicator.
#include "engine/runtime.h"

#include <algorithm>

#include "common/logging.h"
#include "net/auth.h"
#include "rendezvous/elastic_round.h"
#include "rendezvous/foreign_job.h"
#include "rendezvous/local_address.h"
#include "rendezvous/mesh_builder.h"
#include "rendezvous/prefixed_store.h"
#include "rendezvous/store_client.h"

namespace cohort {
namespace {

// Each stream is one connection (and descriptor) per pair of ranks, so the
// count multiplies a rank's open sockets; more than 16 only costs.
constexpr int kMaxTcpStreams = 16;

Result<size_t> EnvBytes(const EnvLookup& env, const char* name, size_t fallback) {
  std::optional<std::string> text = EnvString(env, name);
  if (!text) return fallback;
  Result<uint64_t> bytes = ParseByteSize(*text);
  if (!bytes.ok()) return bytes.status().WithContext(name);
  if (*bytes == 0) return Status::InvalidArgument(std::string(name) + " must be positive");
  return static_cast<size_t>(*bytes);
}

}  // namespace

Result<RuntimeSettings> ReadRuntimeSettings(const EnvLookup& env) {
  RuntimeSettings s;
  Result<double> timeout = EnvDouble(env, "COHORT_TIMEOUT", s.timeout_seconds);
  if (!timeout.ok()) return timeout.status();
  if (*timeout <= 0) return Status::InvalidArgument("COHORT_TIMEOUT must be positive seconds");
  s.timeout_seconds = *timeout;
  std::string transport = EnvString(env, "COHORT_TRANSPORT").value_or("auto");
  if (transport != "auto" && transport != "shm" && transport != "tcp") {
    return Status::InvalidArgument("COHORT_TRANSPORT='" + transport +
                                   "' (expected auto, shm or tcp)");
  }
  s.force_tcp = transport == "tcp";
  Result<AllreduceAlgorithm> algorithm =
      ParseAllreduceAlgorithm(EnvString(env, "COHORT_ALLREDUCE_ALGORITHM").value_or("auto"));
  if (!algorithm.ok()) return algorithm.status().WithContext("COHORT_ALLREDUCE_ALGORITHM");
  s.allreduce_algorithm = *algorithm;
  Result<size_t> small = EnvBytes(env, "COHORT_SMALL_MESSAGE_BYTES", s.small_message_bytes);
  Result<size_t> chunk = EnvBytes(env, "COHORT_CHUNK_BYTES", s.chunk_bytes);
  Result<size_t> slot = EnvBytes(env, "COHORT_SHM_SLOT_BYTES", s.shm_slot_bytes);
  for (const Status& st : {small.status(), chunk.status(), slot.status()}) {
    if (!st.ok()) return st;
  }
  s.small_message_bytes = *small;
  s.chunk_bytes = *chunk;
  s.shm_slot_bytes = (*slot + 4095) / 4096 * 4096;
  for (auto [name, field] :
       {std::pair{"COHORT_FUSION_THRESHOLD", &s.engine.fusion_threshold_bytes},
        std::pair{"COHORT_FUSION_MAX_TENSOR", &s.engine.fusion_max_tensor_bytes}}) {
    std::optional<std::string> text = EnvString(env, name);
    if (!text) continue;
    Result<uint64_t> bytes = ParseByteSize(*text);
    if (!bytes.ok()) return bytes.status().WithContext(name);
    *field = *bytes;
  }
  Result<double> cycle = EnvDouble(env, "COHORT_CYCLE_TIME", s.engine.cycle_time_ms);
  if (!cycle.ok()) return cycle.status();
  if (*cycle < 0) return Status::InvalidArgument("COHORT_CYCLE_TIME must not be negative (ms)");
  s.engine.cycle_time_ms = *cycle;
  Result<double> check = EnvDouble(env, "COHORT_STALL_CHECK_TIME", s.engine.stall_check_seconds);
  Result<double> stop =
      EnvDouble(env, "COHORT_STALL_SHUTDOWN_TIME", s.engine.stall_shutdown_seconds);
  if (!check.ok()) return check.status();
  if (!stop.ok()) return stop.status();
  if (*check <= 0)
    return Status::InvalidArgument("COHORT_STALL_CHECK_TIME must be positive seconds");
  s.engine.stall_check_seconds = *check;
  s.engine.stall_shutdown_seconds = *stop;
  s.engine.timeline_path = EnvString(env, "COHORT_TIMELINE").value_or("");
  Result<int64_t> streams = EnvInt(env, "COHORT_TCP_STREAMS", s.tcp_streams);
  if (!streams.ok()) return streams.status();
  if (*streams < 1 || *streams > kMaxTcpStreams) {
    return Status::InvalidArgument("COHORT_TCP_STREAMS must be between 1 and " +
                                   std::to_string(kMaxTcpStreams) + ", not " +
                                   std::to_string(*streams));
  }
  s.tcp_streams = static_cast<int>(*streams);
  s.test_hosts = EnvString(env, "COHORT_TEST_HOSTS").value_or("");
  Result<int64_t> cache =
      EnvInt(env, "COHORT_CACHE_CAPACITY", static_cast<int64_t>(s.engine.cache_capacity));
  if (!cache.ok()) return cache.status();
  if (*cache < 0) return Status::InvalidArgument("COHORT_CACHE_CAPACITY must not be negative");
  s.engine.cache_capacity = static_cast<size_t>(*cache);
  s.elastic_worker = EnvString(env, "COHORT_ELASTIC_WORKER").value_or("");
  Result<double> elastic = EnvDouble(env, "COHORT_ELASTIC_TIMEOUT", s.elastic_timeout_seconds);
  if (!elastic.ok()) return elastic.status();
  if (*elastic <= 0)
    return Status::InvalidArgument("COHORT_ELASTIC_TIMEOUT must be positive seconds");
  s.elastic_timeout_seconds = *elastic;
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
    store = ScopeToThisJoin(std::move(store).value(), j.rank);
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
  mo.tcp_streams = rt->settings_.tcp_streams;
  mo.test_hosts = rt->settings_.test_hosts;
  Result<Mesh> mesh = BuildMesh(**store, mo);
  if (!mesh.ok())
    return mesh.status().WithContext("rank " + std::to_string(j.rank) + " building the mesh");

  CommunicatorOptions co;
  co.timeout_seconds = rt->settings_.timeout_seconds;
  co.small_message_bytes = rt->settings_.small_message_bytes;
  co.chunk_bytes = rt->settings_.chunk_bytes;
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
  return std::unique_ptr<StoreClient>(
      new PrefixedStore(std::move(store), "round" + std::to_string(p->round) + "/"));
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
  if (engine_ == nullptr) engine_ = std::make_unique<Engine>(*comm_, settings_.engine);
  return *engine_;
}

void Runtime::Abort(const Status& reason) {
  aborted_ = true;
  if (Engine* e = engine()) {
    e->Abort(reason);
  } else {
    (void)comm_->Fail(reason);
  }
}

Runtime::~Runtime() {
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
