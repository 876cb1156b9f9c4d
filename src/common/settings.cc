// The settings table and the one parser every COHORT_* value goes through.
#include "common/settings.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "common/allreduce_algorithms.h"

namespace cohort {
namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();

using T = SettingType;
using S = SettingScope;

// clang-format off
const std::vector<SettingSpec> kSettings = {
  {"COHORT_TIMEOUT", "--timeout", T::kSeconds, "300", 0, kNone, true, nullptr,
   "seconds any one rendezvous or collective wait may take", S::kRuntime},
  {"COHORT_TRANSPORT", "--transport", T::kChoice, "auto", 0, 0, false, "auto,shm,tcp",
   "auto, shm or tcp", S::kRuntime},
  {"COHORT_ALLREDUCE_ALGORITHM", "--allreduce-algorithm", T::kChoice, "auto", 0, 0, false,
   AllreduceAlgorithmChoices(), AllreduceAlgorithmList(), S::kRuntime},
  {"COHORT_SMALL_MESSAGE_BYTES", "--small-message-bytes", T::kBytes, "64K", 1, kNone, false,
   nullptr, "size up to which latency-optimal algorithms run", S::kRuntime},
  {"COHORT_CHUNK_BYTES", "--chunk-bytes", T::kBytes, "256K", 1, kNone, false, nullptr,
   "pipelining chunk of the link-based algorithms", S::kRuntime},
  {"COHORT_TCP_STREAMS", "--tcp-streams", T::kCount, "1", 1, 16, false, nullptr,
   "TCP connections per pair of ranks, bytes striped over them", S::kRuntime},
  {"COHORT_SHM_SLOT_BYTES", "--shm-slot-bytes", T::kBytes, "1M", 1, kNone, false, nullptr,
   "chunk of the shared-memory allreduce", S::kRuntime},
  {"COHORT_SHM_SINGLE_COPY", "--shm-single-copy", T::kChoice, "auto", 0, 0, false, "auto,off",
   "auto: large one-host collectives copy straight between ranks where the kernel allows",
   S::kRuntime},
  {"COHORT_SHM_SINGLE_COPY_BYTES", "--shm-single-copy-bytes", T::kBytes, "1M", 1, kNone, false,
   nullptr, "size from which one-host collectives copy once (single-copy path)", S::kRuntime},
  {"COHORT_FUSION_THRESHOLD", "--fusion-threshold", T::kBytes, "64M", 0, kNone, false, nullptr,
   "bytes of small allreduces fused into one (0: off)", S::kRuntime},
  {"COHORT_FUSION_MAX_TENSOR", "--fusion-max-tensor", T::kBytes, "64K", 0, kNone, false, nullptr,
   "largest tensor copied into the fusion buffer", S::kRuntime},
  {"COHORT_CACHE_CAPACITY", "--cache-capacity", T::kCount, "1024", 0, kNone, false, nullptr,
   "response-cache slots for repeated steps (0: off)", S::kRuntime},
  {"COHORT_CYCLE_TIME", "--cycle-time", T::kMilliseconds, "1", 0, kNone, false, nullptr,
   "ms an idle engine waits before negotiating again", S::kRuntime},
  {"COHORT_STALL_CHECK_TIME", "--stall-check-time", T::kSeconds, "60", 0, kNone, true, nullptr,
   "s before tensors missing on some ranks are reported", S::kRuntime},
  {"COHORT_STALL_SHUTDOWN_TIME", "--stall-shutdown-time", T::kSeconds, "0", 0, kNone, false,
   nullptr, "s before they fail on every rank (0: never)", S::kRuntime},
  {"COHORT_DEADLOCK_TIME", "--deadlock-time", T::kSeconds, "10", 0, kNone, false, nullptr,
   "s ranks may all wait for each other before the job stops (0: never)", S::kRuntime},
  {"COHORT_ELASTIC_TIMEOUT", "--elastic-timeout", T::kSeconds, "600", 0, kNone, true, nullptr,
   "elastic jobs: s a worker may take to join a new round", S::kLauncher},
  {"COHORT_GRACE", "--grace", T::kSeconds, "2", 0, kNone, false, nullptr,
   "s cohort run waits after SIGTERM before SIGKILL (a queued job: the queue's --grace)",
   S::kLauncher},
  {"COHORT_TIMELINE", nullptr, T::kText, "", 0, 0, false, nullptr,
   "Chrome-trace timeline path ({rank} for every rank)", S::kRuntime},
  // The engine's autotuner (src/engine/autotuner.h, docs/performance.md).
  {"COHORT_AUTOTUNE", "--autotune", T::kChoice, "0", 0, 0, false, "0,1",
   "1: tune fusion, cycle time and algorithm cut-overs over the first steps", S::kRuntime},
  {"COHORT_AUTOTUNE_LOG", "--autotune-log", T::kText, "", 0, 0, false, nullptr,
   "CSV of the autotuner's samples and choice ({rank} for every rank)", S::kRuntime},
  {"COHORT_AUTOTUNE_WARMUP_SAMPLES", "--autotune-warmup-samples", T::kCount, "3", 0, 1000, false,
   nullptr, "autotune: samples run on the start values before scoring", S::kRuntime},
  {"COHORT_AUTOTUNE_STEPS_PER_SAMPLE", "--autotune-steps-per-sample", T::kCount, "10", 1, 100000,
   false, nullptr, "autotune: training steps measured per sample", S::kRuntime},
  {"COHORT_AUTOTUNE_MAX_SAMPLES", "--autotune-max-samples", T::kCount, "20", 1, 1000, false,
   nullptr, "autotune: values tried (the start values included) before choosing", S::kRuntime},
  {"COHORT_AUTOTUNE_SEED", "--autotune-seed", T::kCount, "0", 0, 4294967295.0, false, nullptr,
   "autotune: seed of the search's random samples", S::kRuntime},
  // The GPU stack (src/gpu, docs/gpu.md).
  {"COHORT_GPU_TRANSPORT", "--gpu-transport", T::kChoice, "auto", 0, 0, false,
   "auto,ipc,nccl,staged", "auto, ipc, nccl or staged: how GPU tensors travel", S::kRuntime},
  {"COHORT_GPU_BUFFER_BYTES", "--gpu-buffer-bytes", T::kBytes, "64M", 0, kNone, true, nullptr,
   "device memory per rank shared with the ranks of its host (CUDA IPC)", S::kRuntime},
  {"COHORT_CUDA_LIBRARY_PATH", "--cuda-library-path", T::kText, "", 0, 0, false, nullptr,
   "folders searched first for libcuda, libnvrtc and libnccl (colon-separated)", S::kRuntime},
  {"COHORT_KERNEL_CACHE_DIR", nullptr, T::kText, "", 0, 0, false, nullptr,
   "compiled GPU kernels (default ~/.cache/cohort/kernels; 'off': memory only)", S::kRuntime},
  // The loader and dataset settings' bounds are checked where they are used
  // (data::Loader's options, StorageOptionsFromEnv), for arguments too.
  {"COHORT_LOADER_THREADS", "--loader-threads", T::kCount, "2", -kNone, kNone, false, nullptr,
   "data loader decode/batch threads per rank", S::kLoader},
  {"COHORT_LOADER_PREFETCH", "--loader-prefetch", T::kCount, "4", -kNone, kNone, false, nullptr,
   "batches the data loader builds ahead", S::kLoader},
  {"COHORT_SHUFFLE_WINDOW", "--shuffle-window", T::kCount, "8", -kNone, kNone, false, nullptr,
   "chunks whose samples the loader mixes together", S::kLoader},
  {"COHORT_LOG_LEVEL", "--log-level", T::kChoice, "warning", 0, 0, false,
   "debug,info,warning,error", "debug, info, warning or error", S::kRuntime},
  {"COHORT_TEST_HOSTS", nullptr, T::kText, "", 0, 0, false, nullptr,
   "testing: emulated host of each rank, e.g. 0,0,1,1", S::kTesting},
  {"COHORT_TESTING_PIPELINE_EXIT_AT", nullptr, T::kChoice, "", 0, 0, false, "output-committed",
   "testing: the pipeline controller exits with status 99 at this point", S::kTesting},
  {"COHORT_ALLOW_INSECURE", nullptr, T::kChoice, "0", 0, 0, false, "0,1",
   "1: a job under srun/mpirun/torchrun without a secret may listen beyond loopback", S::kRuntime},
  {"COHORT_DATA_CACHE_DIR", "--data-cache-dir", T::kText, "", 0, 0, false, nullptr,
   "local cache of remote dataset chunks", S::kLoader},
  {"COHORT_DATA_CACHE_SIZE", "--data-cache-size", T::kBytes, "10G", 1, kNone, false, nullptr,
   "size limit of that cache (LRU eviction)", S::kLoader},
  {"COHORT_DATA_RETRIES", "--data-retries", T::kCount, "4", 0, 100, false, nullptr,
   "retries of a failed dataset request", S::kLoader},
  {"COHORT_DATA_REQUEST_TIMEOUT", "--data-request-timeout", T::kSeconds, "120", 0, kNone, true,
   nullptr, "s one dataset request may take", S::kLoader},
  {"COHORT_DATA_IN_FLIGHT", "--data-in-flight", T::kCount, "16", 1, 1024, false, nullptr,
   "dataset requests in flight per batch", S::kLoader},
  // Tracking clients (docs/tracking.md). The MLflow variables mean what they
  // mean to MLflow's client; cohort's own win where both are set.
  {"COHORT_TRACKING_URI", nullptr, T::kText, "", 0, 0, false, nullptr,
   "where runs go: http(s)://host:port or sqlite:PATH; COHORT_SERVER's alias, first for tracking",
   S::kTracking},
  {"COHORT_TRACKING_SPOOL", nullptr, T::kText, "", 0, 0, false, nullptr,
   "where batches wait while the server is unreachable (default ~/.cohort/spool)", S::kTracking},
  {"COHORT_TRACKING_SPOOL_BYTES", nullptr, T::kBytes, "4G", 0, kNone, false, nullptr,
   "most bytes of artifacts kept in the spool while the server is unreachable", S::kTracking},
  {"COHORT_TRACKING_HEARTBEAT", nullptr, T::kSeconds, "10", 0, kNone, false, nullptr,
   "s between a run's heartbeats; 3 missed end it as KILLED (0: none)", S::kTracking},
  {"MLFLOW_TRACKING_URI", nullptr, T::kText, "", 0, 0, false, nullptr,
   "MLflow's: where runs go, when COHORT_TRACKING_URI is unset; COHORT_SERVER's alias",
   S::kTracking},
  {"MLFLOW_EXPERIMENT_NAME", nullptr, T::kText, "", 0, 0, false, nullptr,
   "MLflow's: the experiment of a run started without a project", S::kTracking},
  {"MLFLOW_RUN_ID", nullptr, T::kText, "", 0, 0, false, nullptr,
   "MLflow's: the run to go on with instead of starting one", S::kTracking},
  // The job queue's clients (docs/queue.md, docs/security.md).
  {"COHORT_QUEUE_TOKEN", nullptr, T::kText, "", 0, 0, false, nullptr,
   "the token of a job queue without --auth (found on the server's host)", S::kQueue, true},
  {"COHORT_AGENT_CREDENTIAL", nullptr, T::kText, "", 0, 0, false, nullptr,
   "cohort agent: its credential under --auth (cohort agent-credential add)", S::kQueue, true},
  // The server's clients (http/server_address.h): one address (with the two
  // tracking URIs above as its aliases), one token.
  {"COHORT_SERVER", nullptr, T::kText, "http://127.0.0.1:5000", 0, 0, false, nullptr,
   "the cohort server of the queue, agents, pipelines, sweeps and (unless a tracking URI "
   "is set) tracking",
   S::kQueue},
  {"COHORT_TRACKING_TOKEN", nullptr, T::kText, "", 0, 0, false, nullptr,
   "a user's token for a cohort server under --auth (cohort token create)",
   S::kTracking, true},
  {"MLFLOW_TRACKING_TOKEN", nullptr, T::kText, "", 0, 0, false, nullptr,
   "MLflow's: the token, when COHORT_TRACKING_TOKEN is unset", S::kTracking, true},
  // The variables cohort run gives each worker, and those a worker started by
  // another launcher reads to find its store (docs/configuration.md).
  {"COHORT_RANK", nullptr, T::kCount, "", 0, kNone, false, nullptr,
   "set by cohort run: the worker's rank", S::kLauncher},
  {"COHORT_SIZE", nullptr, T::kCount, "", 1, kNone, false, nullptr,
   "set by cohort run: the number of ranks", S::kLauncher},
  {"COHORT_LOCAL_RANK", nullptr, T::kCount, "", 0, kNone, false, nullptr,
   "set by cohort run: the rank among the ranks of its host", S::kLauncher},
  {"COHORT_LOCAL_SIZE", nullptr, T::kCount, "", 1, kNone, false, nullptr,
   "set by cohort run: the ranks on its host", S::kLauncher},
  {"COHORT_CROSS_RANK", nullptr, T::kCount, "", 0, kNone, false, nullptr,
   "set by cohort run: the index of its host", S::kLauncher},
  {"COHORT_CROSS_SIZE", nullptr, T::kCount, "", 1, kNone, false, nullptr,
   "set by cohort run: the number of hosts", S::kLauncher},
  {"COHORT_ELASTIC_WORKER", nullptr, T::kText, "", 0, 0, false, nullptr,
   "set by cohort run in an elastic job: the worker's id", S::kLauncher},
  {"COHORT_STORE_ADDR", nullptr, T::kText, "", 0, 0, false, nullptr,
   "host:port of the rendezvous store (set by cohort run)", S::kLauncher},
  {"COHORT_STORE_PORT", nullptr, T::kCount, "", 1, 65535, false, nullptr,
   "other launchers: port of the store rank 0 hosts", S::kLauncher},
  {"COHORT_SECRET", nullptr, T::kText, "", 0, 0, false, nullptr,
   "the job's secret for the connection handshake (cohort run generates one)", S::kLauncher, true},
  {"COHORT_SECRET_FILE", nullptr, T::kText, "", 0, 0, false, nullptr,
   "other launchers without COHORT_SECRET: the file the secret is derived from", S::kLauncher},
  // cohort run's hosts. Its own code parses them (ApplyHostSettings), so
  // that errors name the flag; `cohort run --help` lists them with the hosts.
  {"COHORT_HOSTS", "--host", T::kText, "", 0, 0, false, nullptr,
   "hosts of a multi-host job, host1:2,host2:2", S::kLauncher},
  {"COHORT_HOSTFILE", "--hostfile", T::kText, "", 0, 0, false, nullptr,
   "the hosts as a file of lines 'host slots=N'", S::kLauncher},
  {"COHORT_SSH_PORT", "--ssh-port", T::kText, "", 0, 0, false, nullptr,
   "port of every host's sshd", S::kLauncher},
  {"COHORT_SSH_IDENTITY_FILE", "--ssh-identity-file", T::kText, "", 0, 0, false, nullptr,
   "private key passed to ssh -i", S::kLauncher},
  {"COHORT_SSH_COMMAND", "--ssh-command", T::kText, "ssh", 0, 0, false, nullptr,
   "the ssh client and its options", S::kLauncher},
  {"COHORT_SSH_CONNECT_TIMEOUT", "--ssh-connect-timeout", T::kSeconds, "10", 0, kNone, true,
   nullptr, "s ssh may take to connect", S::kLauncher},
  {"COHORT_NETWORK_INTERFACE", "--network-interface", T::kText, "", 0, 0, false, nullptr,
   "interface(s) whose address the store and the mesh use", S::kLauncher},
  // The Python package (python/cohort).
  {"COHORT_BUILD_DIR", nullptr, T::kText, "", 0, 0, false, nullptr,
   "Python: the build whose extension modules the cohort package uses", S::kRuntime},
  {"COHORT_CHECKPOINT_DIR", nullptr, T::kText, "", 0, 0, false, nullptr,
   "cohort.checkpoint: where save() and load() keep checkpoints", S::kRuntime},
  {"COHORT_CHECKPOINT_KEEP", nullptr, T::kCount, "3", -kNone, kNone, false, nullptr,
   "cohort.checkpoint: how many of the newest checkpoints save() keeps", S::kRuntime},
  // What the job queue gives each job (docs/queue.md).
  {"COHORT_JOB_ID", nullptr, T::kCount, "", 0, kNone, false, nullptr,
   "set by the queue: the job's id", S::kQueue},
  {"COHORT_JOB_SLOTS", nullptr, T::kCount, "", 0, kNone, false, nullptr,
   "set by the queue: the slots the job was given", S::kQueue},
  {"COHORT_JOB_RESTARTS", nullptr, T::kCount, "", 0, kNone, false, nullptr,
   "set by the queue: how often the job was preempted or requeued", S::kQueue},
  // What cohort pipeline gives each step's queue job (docs/pipelines.md).
  // COHORT_INPUT_ and COHORT_PARAM_ name families: COHORT_INPUT_<NAME> (and
  // ..._COMMIT) per input, COHORT_PARAM_<NAME> per parameter.
  {"COHORT_PIPELINE", nullptr, T::kText, "", 0, 0, false, nullptr,
   "set by cohort pipeline: the pipeline's name", S::kQueue},
  {"COHORT_PIPELINE_STEP", nullptr, T::kText, "", 0, 0, false, nullptr,
   "set by cohort pipeline: the step's name", S::kQueue},
  {"COHORT_PIPELINE_RUN", nullptr, T::kText, "", 0, 0, false, nullptr,
   "set by cohort pipeline: the pipeline run's id", S::kQueue},
  {"COHORT_PIPELINE_DATUMS", nullptr, T::kText, "", 0, 0, false, nullptr,
   "set by cohort pipeline: the file of the job's datums (split inputs)", S::kQueue},
  {"COHORT_PIPELINE_OUTPUT", nullptr, T::kText, "", 0, 0, false, nullptr,
   "set by cohort pipeline: where the job writes its results", S::kQueue},
  {"COHORT_INPUT_", nullptr, T::kText, "", 0, 0, false, nullptr,
   "set by cohort pipeline: COHORT_INPUT_<NAME> an input's location, ..._COMMIT its commit",
   S::kQueue},
  {"COHORT_PARAM_", nullptr, T::kText, "", 0, 0, false, nullptr,
   "set by cohort pipeline: COHORT_PARAM_<NAME> a step's parameter", S::kQueue},
  // What cohort sweep gives each trial, and the trial's and the sweep's own
  // knobs (docs/sweeps.md).
  {setting::kSweepTrial, nullptr, T::kCount, "", 0, kNone, false, nullptr,
   "set by cohort sweep: the trial's number", S::kSweep},
  {setting::kSweepParams, nullptr, T::kText, "", 0, 0, false, nullptr,
   "set by cohort sweep: the trial's parameters (JSON)", S::kSweep},
  {setting::kSweepResource, nullptr, T::kCount, "", 0, kNone, false, nullptr,
   "set by cohort sweep: the trial's budget (steps or epochs)", S::kSweep},
  {setting::kSweepCheckpointDir, nullptr, T::kText, "", 0, 0, false, nullptr,
   "set by cohort sweep: the trial's checkpoint folder", S::kSweep},
  {setting::kSweepResumed, nullptr, T::kChoice, "", 0, 0, false, "0,1",
   "set by cohort sweep: 1 when the trial goes on from its checkpoint", S::kSweep},
  {setting::kSweepCloneFrom, nullptr, T::kText, "", 0, 0, false, nullptr,
   "set by cohort sweep: the checkpoint folder a cloned trial starts from", S::kSweep},
  {setting::kSweepStartStep, nullptr, T::kCount, "", 0, kNone, false, nullptr,
   "set by cohort sweep: the step the trial starts at", S::kSweep},
  {setting::kSweepSocket, nullptr, T::kText, "", 0, 0, false, nullptr,
   "set by cohort sweep: the controller's socket the trial reports to", S::kSweep},
  {setting::kSweepReconnectSeconds, nullptr, T::kSeconds, "60", 0, kNone, false, nullptr,
   "a trial: s cohort.sweep.report keeps trying to reach a controller that is gone",
   S::kSweep},
  {setting::kSweepJournalDeadlineSeconds, nullptr, T::kSeconds, "60", 0, kNone, false, nullptr,
   "cohort sweep: s an append to a server's journal may take", S::kSweep},
};
// clang-format on

// "COHORT_X='v'" for a variable, "--x 'v'" for a flag.
std::string Quoted(const std::string& who, const std::string& text) {
  return who + (who.rfind("--", 0) == 0 ? " '" : "='") + text + "'";
}

std::string NumberText(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

Status CheckBounds(const SettingSpec& spec, double v, const std::string& who) {
  const bool low = spec.min_exclusive ? !(v > spec.min) : !(v >= spec.min);
  if (!low && v <= spec.max) return Status::OK();
  if (spec.max != kNone) {
    return Status::InvalidArgument(who + " must be between " + NumberText(spec.min) + " and " +
                                   NumberText(spec.max) + ", not " + NumberText(v));
  }
  if (spec.min == 0) {
    return Status::InvalidArgument(
        who + (spec.min_exclusive ? " must be positive, not " : " must not be negative, not ") +
        NumberText(v));
  }
  if (spec.min == 1 && spec.type != T::kSeconds && spec.type != T::kMilliseconds) {
    return Status::InvalidArgument(who + " must be positive, not " + NumberText(v));
  }
  return Status::InvalidArgument(who + " must be at least " + NumberText(spec.min) + ", not " +
                                 NumberText(v));
}

Result<double> ParseNumeric(const SettingSpec& spec, const std::string& text,
                            const std::string& who) {
  char* end = nullptr;
  errno = 0;
  if (spec.type == T::kBytes) {
    Result<uint64_t> bytes = ParseByteSize(text);
    if (!bytes.ok()) return bytes.status().WithContext(who);
    return static_cast<double>(*bytes);
  }
  if (spec.type == T::kCount) {
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno != 0 || end == text.c_str() || *end != '\0') {
      return Status::InvalidArgument(Quoted(who, text) + " is not an integer");
    }
    return static_cast<double>(v);
  }
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || *end != '\0' || std::isnan(v)) {
    return Status::InvalidArgument(Quoted(who, text) + " is not a number");
  }
  return v;
}

}  // namespace

const char* SettingScopeName(SettingScope scope) {
  switch (scope) {
    case S::kRuntime:
      return "runtime";
    case S::kLauncher:
      return "launcher";
    case S::kLoader:
      return "loader";
    case S::kTracking:
      return "tracking";
    case S::kQueue:
      return "queue";
    case S::kSweep:
      return "sweep";
    case S::kTesting:
      return "testing";
  }
  return "?";
}

const char* SettingSourceName(SettingSource source) {
  switch (source) {
    case SettingSource::kDefault:
      return "default";
    case SettingSource::kEnvironment:
      return "environment";
    case SettingSource::kFlag:
      return "flag";
  }
  return "?";
}

// The one reader of the process environment (docs/configuration.md): every
// other reader goes through an EnvLookup, and tools/check_settings.py keeps
// getenv out of the rest of the tree.
EnvLookup ProcessEnv() {
  return [](const char* name) { return static_cast<const char*>(std::getenv(name)); };
}

const std::vector<SettingSpec>& AllSettings() { return kSettings; }

const SettingSpec* FindSetting(std::string_view variable) {
  for (const SettingSpec& s : kSettings) {
    if (variable == s.variable) return &s;
  }
  return nullptr;
}

const SettingSpec* FindSettingByFlag(std::string_view flag) {
  for (const SettingSpec& s : kSettings) {
    if (s.flag != nullptr && flag == s.flag) return &s;
  }
  return nullptr;
}

Result<SettingValue> ParseSetting(const SettingSpec& spec, const std::string& text,
                                  const std::string& who) {
  SettingValue value;
  value.text = text;
  if (spec.type == T::kText) return value;
  if (spec.type == T::kChoice) {
    std::string choices = spec.choices;
    std::string listed;  // "auto, shm or tcp"
    size_t start = 0;
    bool found = false;
    while (start <= choices.size()) {
      size_t comma = choices.find(',', start);
      if (comma == std::string::npos) comma = choices.size();
      const std::string choice = choices.substr(start, comma - start);
      found = found || choice == text;
      listed += (start == 0 ? "" : comma == choices.size() ? " or " : ", ") + choice;
      start = comma + 1;
    }
    if (!found) return Status::InvalidArgument(Quoted(who, text) + " is not " + listed);
    return value;
  }
  Result<double> number = ParseNumeric(spec, text, who);
  if (!number.ok()) return number.status();
  COHORT_RETURN_IF_ERROR(CheckBounds(spec, *number, who));
  value.number = *number;
  return value;
}

Result<SettingValue> ReadSetting(const EnvLookup& env, const char* variable) {
  const SettingSpec* spec = FindSetting(variable);
  if (spec == nullptr)
    return Status::Internal(std::string(variable) + " is not in the settings table");
  const std::optional<std::string> text = EnvString(env, variable);
  // Unset with no default (a worker's COHORT_RANK outside a job): an empty
  // text, whatever the type.
  if (!text && spec->default_text[0] == '\0') return SettingValue{};
  return ParseSetting(*spec, text ? *text : spec->default_text, variable);
}

Result<std::optional<SettingValue>> ReadSettingIfSet(const EnvLookup& env, const char* variable) {
  const SettingSpec* spec = FindSetting(variable);
  if (spec == nullptr)
    return Status::Internal(std::string(variable) + " is not in the settings table");
  const std::optional<std::string> text = EnvString(env, variable);
  if (!text) return std::optional<SettingValue>();
  Result<SettingValue> value = ParseSetting(*spec, *text, variable);
  if (!value.ok()) return value.status();
  return std::optional<SettingValue>(std::move(*value));
}

std::vector<SettingReport> ReportSettings(const EnvLookup& env,
                                          const std::map<std::string, std::string>& flags) {
  std::vector<SettingReport> reports;
  for (const SettingSpec& spec : kSettings) {
    SettingReport report;
    report.spec = &spec;
    const auto flag = flags.find(spec.variable);
    const std::optional<std::string> from_env = EnvString(env, spec.variable);
    std::string who = spec.variable;
    if (flag != flags.end()) {
      report.text = flag->second;
      report.source = SettingSource::kFlag;
      who = spec.flag != nullptr ? spec.flag : spec.variable;
    } else if (from_env) {
      report.text = *from_env;
      report.source = SettingSource::kEnvironment;
    } else {
      report.text = spec.default_text;
    }
    if (!report.text.empty()) report.valid = ParseSetting(spec, report.text, who).status();
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace cohort
