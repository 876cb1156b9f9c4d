// Reading a worker's place in the job from its launcher's environment.
//
// Store address under foreign launchers (COHORT_STORE_ADDR always wins):
//   torchrun: MASTER_ADDR : (COHORT_STORE_PORT or MASTER_PORT + 1), because
//             torchrun's own store already listens on MASTER_PORT;
//   slurm:    first node of the step's (else the job's) node list :
//             (COHORT_STORE_PORT or 29400 + (SLURM_JOB_ID + SLURM_STEP_ID)
//             % 1000), so that concurrent jobs, and steps of one job,
//             sharing a first node rarely collide;
//   mpirun:   only on a single host: 127.0.0.1 : (COHORT_STORE_PORT or
//             29400 + FNV-1a(OMPI_MCA_ess_base_jobid) % 1000). Across hosts
//             Open MPI names no host every rank can reach, so the user must
//             set COHORT_STORE_ADDR.
// Every rank derives the same address from the same variables, with no
// communication; that is the point of these rules.
#include "rendezvous/launcher_env.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>

#include "net/socket.h"

namespace cohort {

namespace {

constexpr int kStoreBasePort = 29400;
constexpr int kStorePortSpread = 1000;
// A node list that expands to more names than this is surely a mistake, and
// refusing it keeps a typo like "n[0-999999999]" from exhausting memory.
constexpr size_t kMaxNodeListHosts = size_t{1} << 20;

std::string Quote(const char* name, const std::string& value) {
  return std::string(name) + "='" + value + "'";
}

// The first of `names` that is set (and non-empty), or nullptr.
const char* FirstSet(const EnvLookup& env, const std::vector<const char*>& names) {
  for (const char* name : names) {
    if (EnvString(env, name)) return name;
  }
  return nullptr;
}

// An int of at least `min` (0 or more) from variable `name`; nullopt when unset.
Result<std::optional<int>> ReadInt(const EnvLookup& env, const char* name, int min) {
  std::optional<std::string> text = EnvString(env, name);
  if (!text) return std::optional<int>();
  Result<int64_t> value = EnvInt(env, name, 0);
  if (!value.ok()) return value.status();
  if (*value < min) {
    return Status::InvalidArgument(
        Quote(name, *text) +
        (min == 0 ? " must not be negative" : " must be at least " + std::to_string(min)));
  }
  if (*value > INT_MAX) return Status::InvalidArgument(Quote(name, *text) + " is too large");
  return std::optional<int>(static_cast<int>(*value));
}

Result<int> ReadRequiredInt(const EnvLookup& env, const char* name, int min,
                            const std::string& why) {
  Result<std::optional<int>> value = ReadInt(env, name, min);
  if (!value.ok()) return value.status();
  if (!value->has_value()) {
    return Status::InvalidArgument(std::string(name) + " is not set (" + why + ")");
  }
  return **value;
}

// -1 when none of `names` is set (or `names` is empty).
Result<int> ReadOptionalInt(const EnvLookup& env, const std::vector<const char*>& names, int min) {
  const char* name = FirstSet(env, names);
  if (name == nullptr) return -1;
  Result<std::optional<int>> value = ReadInt(env, name, min);
  if (!value.ok()) return value.status();
  return **value;
}

Status CheckLess(int index, const char* index_name, int count, const char* count_name) {
  if (index < 0 || count < 0 || index < count) return Status::OK();
  return Status::InvalidArgument(Quote(index_name, std::to_string(index)) + " must be less than " +
                                 Quote(count_name, std::to_string(count)));
}

Status CheckNotAbove(int part, const char* part_name, int whole, const char* whole_name) {
  if (part < 0 || part <= whole) return Status::OK();
  return Status::InvalidArgument(Quote(part_name, std::to_string(part)) + " exceeds " +
                                 Quote(whole_name, std::to_string(whole)));
}

// Names of the variables one launcher uses. Where several names are listed,
// the first that is set is read; an empty list means the launcher has none.
struct LauncherVars {
  const char* launcher;
  const char* rank;
  std::vector<const char*> size;
  std::vector<const char*> local_rank;
  std::vector<const char*> local_size;
  std::vector<const char*> cross_rank;
  std::vector<const char*> cross_size;
};

// Reads rank, size and the optional local/cross placement, and checks they agree.
Status ReadPlacement(const EnvLookup& env, const LauncherVars& vars, JobEnvironment* job) {
  const std::string why = std::string("required under ") + vars.launcher;
  const char* rank_name = vars.rank;
  const char* size_name = FirstSet(env, vars.size);
  // When none is set, name the one every version of the launcher sets.
  if (size_name == nullptr) size_name = vars.size.back();
  Result<int> rank = ReadRequiredInt(env, rank_name, 0, why);
  if (!rank.ok()) return rank.status();
  Result<int> size = ReadRequiredInt(env, size_name, 1, why);
  if (!size.ok()) return size.status();
  job->rank = *rank;
  job->size = *size;
  COHORT_RETURN_IF_ERROR(CheckLess(job->rank, rank_name, job->size, size_name));

  struct Field {
    const std::vector<const char*>& names;
    int min;
    int* out;
  };
  const Field fields[] = {{vars.local_rank, 0, &job->local_rank},
                          {vars.local_size, 1, &job->local_size},
                          {vars.cross_rank, 0, &job->cross_rank},
                          {vars.cross_size, 1, &job->cross_size}};
  for (const Field& field : fields) {
    Result<int> value = ReadOptionalInt(env, field.names, field.min);
    if (!value.ok()) return value.status();
    *field.out = *value;
  }
  auto name_of = [&](const std::vector<const char*>& names) {
    const char* name = FirstSet(env, names);
    return name != nullptr ? name : "";
  };
  const char* local_rank_name = name_of(vars.local_rank);
  const char* local_size_name = name_of(vars.local_size);
  const char* cross_rank_name = name_of(vars.cross_rank);
  const char* cross_size_name = name_of(vars.cross_size);
  COHORT_RETURN_IF_ERROR(
      CheckLess(job->local_rank, local_rank_name, job->local_size, local_size_name));
  COHORT_RETURN_IF_ERROR(
      CheckLess(job->cross_rank, cross_rank_name, job->cross_size, cross_size_name));
  COHORT_RETURN_IF_ERROR(CheckNotAbove(job->local_size, local_size_name, job->size, size_name));
  COHORT_RETURN_IF_ERROR(CheckNotAbove(job->cross_size, cross_size_name, job->size, size_name));
  return Status::OK();
}

// COHORT_STORE_PORT when set (1..65535), else `fallback`.
Result<int> StorePortOr(const EnvLookup& env, int fallback) {
  Result<std::optional<int>> port = ReadInt(env, "COHORT_STORE_PORT", 1);
  if (!port.ok()) return port.status();
  if (!port->has_value()) return fallback;
  if (**port > 65535) {
    return Status::InvalidArgument(Quote("COHORT_STORE_PORT", std::to_string(**port)) +
                                   " is outside 1..65535");
  }
  return **port;
}

// One bracket group's alternatives, e.g. "01-03,07" -> 01 02 03 07. `pos`
// starts just after '[' and ends just after ']'.
Result<std::vector<std::string>> ExpandBrackets(const std::string& list, size_t* pos,
                                                const std::string& where) {
  auto bad = [&](const std::string& what, size_t at) {
    return Status::InvalidArgument(where + ": " + what + " at position " + std::to_string(at));
  };
  const size_t open = *pos - 1;
  std::vector<std::string> out;
  auto read_number = [&](std::string* digits) -> Status {
    size_t start = *pos;
    while (*pos < list.size() && list[*pos] >= '0' && list[*pos] <= '9') ++*pos;
    if (*pos == start) {
      if (*pos >= list.size()) return bad("unclosed '['", open);
      return bad(std::string("expected a number, found '") + list[*pos] + "'", *pos);
    }
    if (*pos - start > 18) return bad("number too long", start);
    *digits = list.substr(start, *pos - start);
    return Status::OK();
  };
  while (true) {
    size_t range_start = *pos;
    std::string lo_text, hi_text;
    COHORT_RETURN_IF_ERROR(read_number(&lo_text));
    hi_text = lo_text;
    if (*pos < list.size() && list[*pos] == '-') {
      ++*pos;
      COHORT_RETURN_IF_ERROR(read_number(&hi_text));
    }
    const uint64_t lo = std::stoull(lo_text), hi = std::stoull(hi_text);
    if (lo > hi) return bad("range " + lo_text + "-" + hi_text + " is descending", range_start);
    if (hi - lo >= kMaxNodeListHosts || out.size() + (hi - lo) >= kMaxNodeListHosts) {
      return bad("range " + lo_text + "-" + hi_text + " is too large", range_start);
    }
    for (uint64_t n = lo; n <= hi; ++n) {
      std::string number = std::to_string(n);
      if (number.size() < lo_text.size()) number.insert(0, lo_text.size() - number.size(), '0');
      out.push_back(std::move(number));
    }
    if (*pos >= list.size()) return bad("unclosed '['", open);
    char c = list[*pos];
    ++*pos;
    if (c == ']') return out;
    if (c != ',') return bad(std::string("expected ',' or ']', found '") + c + "'", *pos - 1);
  }
}

// Expands one host expression of `list` starting at *pos, up to the next
// top-level ',' or the end; appends the names to `out`.
Status ExpandHost(const std::string& list, size_t* pos, const std::string& where,
                  std::vector<std::string>* out) {
  auto bad = [&](const std::string& what, size_t at) {
    return Status::InvalidArgument(where + ": " + what + " at position " + std::to_string(at));
  };
  const size_t start = *pos;
  std::vector<std::string> names = {""};
  while (*pos < list.size() && list[*pos] != ',') {
    char c = list[*pos];
    if (c == ']') return bad("unexpected ']'", *pos);
    if (c == ' ' || c == '\t' || c == '\n') return bad("unexpected whitespace", *pos);
    if (c != '[') {
      for (std::string& name : names) name += c;
      ++*pos;
      continue;
    }
    const size_t open = (*pos)++;
    Result<std::vector<std::string>> alternatives = ExpandBrackets(list, pos, where);
    if (!alternatives.ok()) return alternatives.status();
    if (names.size() * alternatives->size() + out->size() > kMaxNodeListHosts) {
      return bad("host list expands to too many names", open);
    }
    std::vector<std::string> product;
    product.reserve(names.size() * alternatives->size());
    for (const std::string& prefix : names) {
      for (const std::string& alternative : *alternatives) product.push_back(prefix + alternative);
    }
    names = std::move(product);
  }
  if (*pos == start) return bad("empty host name", start);
  out->insert(out->end(), names.begin(), names.end());
  return Status::OK();
}

// Errors read "<label>='<list>': <problem> at position <n>".
Result<std::vector<std::string>> ExpandNodeList(const std::string& list, const std::string& label) {
  const std::string where = label + "='" + list + "'";
  std::vector<std::string> hosts;
  size_t pos = 0;
  while (true) {
    COHORT_RETURN_IF_ERROR(ExpandHost(list, &pos, where, &hosts));
    if (pos >= list.size()) return hosts;
    ++pos;  // the ',' between hosts; a trailing one yields "empty host name"
  }
}

// A stable string hash (FNV-1a): every rank, whatever binary it runs, must
// derive the same port, which std::hash does not promise.
uint64_t Fnv1a(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

Status TorchrunStore(const EnvLookup& env, JobEnvironment* job) {
  std::optional<std::string> addr = EnvString(env, "MASTER_ADDR");
  if (!addr) {
    return Status::InvalidArgument(
        "MASTER_ADDR is not set (required under torchrun unless COHORT_STORE_ADDR is set)");
  }
  job->store_host = *addr;
  if (EnvString(env, "COHORT_STORE_PORT")) {
    Result<int> port = StorePortOr(env, 0);
    if (!port.ok()) return port.status();
    job->store_port = *port;
    return Status::OK();
  }
  Result<int> master_port = ReadRequiredInt(
      env, "MASTER_PORT", 1, "required under torchrun unless COHORT_STORE_PORT is set");
  if (!master_port.ok()) return master_port.status();
  if (*master_port >= 65535) {
    return Status::InvalidArgument(Quote("MASTER_PORT", std::to_string(*master_port)) +
                                   " leaves no port for the cohort store at MASTER_PORT+1; "
                                   "set COHORT_STORE_PORT");
  }
  job->store_port = *master_port + 1;
  return Status::OK();
}

Status SlurmStore(const EnvLookup& env, JobEnvironment* job) {
  const char* list_name = FirstSet(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"});
  if (list_name == nullptr) {
    return Status::InvalidArgument(
        "neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set (one is required under "
        "slurm unless COHORT_STORE_ADDR is set)");
  }
  std::string list = *EnvString(env, list_name);
  Result<std::vector<std::string>> nodes = ExpandNodeList(list, list_name);
  if (!nodes.ok()) return nodes.status();
  int fallback = 0;
  if (!EnvString(env, "COHORT_STORE_PORT")) {
    const std::string why = "required under slurm unless COHORT_STORE_PORT is set";
    Result<int> job_id = ReadRequiredInt(env, "SLURM_JOB_ID", 0, why);
    if (!job_id.ok()) return job_id.status();
    // The step too: two steps of one allocation may run at once.
    Result<int> step_id = ReadRequiredInt(env, "SLURM_STEP_ID", 0, why);
    if (!step_id.ok()) return step_id.status();
    fallback = kStoreBasePort + static_cast<int>((int64_t{*job_id} + *step_id) % kStorePortSpread);
  }
  Result<int> port = StorePortOr(env, fallback);
  if (!port.ok()) return port.status();
  job->store_host = nodes->front();
  job->store_port = *port;
  return Status::OK();
}

Status MpirunStore(const EnvLookup& env, JobEnvironment* job) {
  if (job->local_size != job->size) {
    return Status::InvalidArgument(
        "mpirun started ranks on several hosts (or did not set OMPI_COMM_WORLD_LOCAL_SIZE), and "
        "Open MPI names no host every rank can reach: set COHORT_STORE_ADDR to rank 0's host "
        "and a free port, e.g. `mpirun -x COHORT_STORE_ADDR=host0:29400 ...`");
  }
  int fallback = 0;
  if (!EnvString(env, "COHORT_STORE_PORT")) {
    std::optional<std::string> jobid = EnvString(env, "OMPI_MCA_ess_base_jobid");
    if (!jobid) {
      return Status::InvalidArgument(
          "OMPI_MCA_ess_base_jobid is not set, so ranks cannot agree on a store port: set "
          "COHORT_STORE_PORT (or COHORT_STORE_ADDR), e.g. `mpirun -x COHORT_STORE_PORT=29400 ...`");
    }
    fallback = kStoreBasePort + static_cast<int>(Fnv1a(*jobid) % kStorePortSpread);
  }
  Result<int> port = StorePortOr(env, fallback);
  if (!port.ok()) return port.status();
  job->store_host = "127.0.0.1";
  job->store_port = *port;
  return Status::OK();
}

// A count of at most 9 digits, so it cannot overflow an int.
bool ParseCount(const std::string& text, int* out) {
  if (text.empty() || text.size() > 9) return false;
  if (text.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoi(text);
  return true;
}

// `text` looks like "2(x3),1": 2 tasks on each of 3 nodes, then 1 on the
// next. Returns the count for node `node`.
Result<int> TasksOnNode(const char* name, const std::string& text, int node) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(Quote(name, text) + why);
  };
  int64_t first_node = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = std::min(text.find(',', pos), text.size());
    std::string item = text.substr(pos, end - pos);
    int count = 0, repeat = 1;
    size_t open = item.find("(x");
    bool ok = ParseCount(item.substr(0, open), &count);
    if (open != std::string::npos) {
      ok = ok && item.back() == ')' &&
           ParseCount(item.substr(open + 2, item.size() - open - 3), &repeat);
    }
    if (!ok) return bad(" is malformed (expected e.g. \"2(x3),1\")");
    if (node < first_node + repeat) return count;
    first_node += repeat;
    pos = end + 1;
  }
  return bad(" describes " + std::to_string(first_node) + " nodes but SLURM_NODEID='" +
             std::to_string(node) + "'");
}

Result<JobEnvironment> ParseCohort(const EnvLookup& env) {
  JobEnvironment job;
  job.launcher = "cohort";
  COHORT_RETURN_IF_ERROR(ReadPlacement(env,
                                       {"cohort run",
                                        "COHORT_RANK",
                                        {"COHORT_SIZE"},
                                        {"COHORT_LOCAL_RANK"},
                                        {"COHORT_LOCAL_SIZE"},
                                        {"COHORT_CROSS_RANK"},
                                        {"COHORT_CROSS_SIZE"}},
                                       &job));
  std::optional<std::string> addr = EnvString(env, "COHORT_STORE_ADDR");
  if (!addr) {
    return Status::InvalidArgument("COHORT_STORE_ADDR is not set (required when COHORT_RANK is)");
  }
  COHORT_RETURN_IF_ERROR(
      ParseHostPort(*addr, "COHORT_STORE_ADDR", &job.store_host, &job.store_port));
  std::optional<std::string> secret = EnvString(env, "COHORT_SECRET");
  if (!secret) {
    return Status::InvalidArgument("COHORT_SECRET is not set (required when COHORT_RANK is)");
  }
  job.secret = *secret;
  job.rank0_hosts_store = false;
  return job;
}

// A job of one process needs no address: its rank 0 hosts a private store
// on loopback (see JobEnvironment::private_store). Its placement is known too.
void UsePrivateStore(JobEnvironment* job) {
  job->local_rank = job->cross_rank = 0;
  job->local_size = job->cross_size = 1;
  job->rank0_hosts_store = true;
  job->private_store = true;
  job->store_host = "127.0.0.1";
  job->store_port = 0;
}

// Store address and secret under a foreign launcher, once placement is known.
Status ForeignStore(const EnvLookup& env, JobEnvironment* job) {
  job->rank0_hosts_store = true;
  job->secret = EnvString(env, "COHORT_SECRET").value_or("");
  if (std::optional<std::string> addr = EnvString(env, "COHORT_STORE_ADDR")) {
    return ParseHostPort(*addr, "COHORT_STORE_ADDR", &job->store_host, &job->store_port);
  }
  if (job->size == 1) {
    UsePrivateStore(job);
    return Status::OK();
  }
  if (job->launcher == "torchrun") return TorchrunStore(env, job);
  if (job->launcher == "slurm") return SlurmStore(env, job);
  return MpirunStore(env, job);
}

// SLURM_PROCID without a job step: the batch script itself (or an salloc
// shell) runs the worker, as rank 0 of the allocation's task count, and
// would wait for ranks that never start.
Status CheckStartedBySrun(const EnvLookup& env, const JobEnvironment& job) {
  if (job.size <= 1 || EnvString(env, "SLURM_STEP_ID")) return Status::OK();
  return Status::InvalidArgument(
      "SLURM_PROCID is set but SLURM_STEP_ID is not: this process was started by the batch "
      "script itself, not by srun, and would wait for " +
      std::to_string(job.size - 1) + " ranks that never start: run workers with srun (e.g. `srun " +
      "python3 train.py` in the batch script)");
}

Result<JobEnvironment> ParseForeign(const EnvLookup& env, const LauncherVars& vars) {
  JobEnvironment job;
  job.launcher = vars.launcher;
  COHORT_RETURN_IF_ERROR(ReadPlacement(env, vars, &job));
  if (job.launcher == "slurm") COHORT_RETURN_IF_ERROR(CheckStartedBySrun(env, job));
  // srun gives no per-node task count directly; it is this node's entry in
  // the tasks-per-node list.
  const char* tasks_name = FirstSet(env, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
  if (job.launcher == "slurm" && tasks_name != nullptr && job.cross_rank >= 0) {
    Result<int> local_size = TasksOnNode(tasks_name, *EnvString(env, tasks_name), job.cross_rank);
    if (!local_size.ok()) return local_size.status();
    job.local_size = *local_size;
    COHORT_RETURN_IF_ERROR(CheckLess(job.local_rank, "SLURM_LOCALID", job.local_size, tasks_name));
    const char* size_name = FirstSet(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
    COHORT_RETURN_IF_ERROR(CheckNotAbove(job.local_size, tasks_name, job.size, size_name));
  }
  COHORT_RETURN_IF_ERROR(ForeignStore(env, &job));
  return job;
}

Result<JobEnvironment> ParseTorchrun(const EnvLookup& env) {
  return ParseForeign(env, {"torchrun",
                            "RANK",
                            {"WORLD_SIZE"},
                            {"LOCAL_RANK"},
                            {"LOCAL_WORLD_SIZE"},
                            {"GROUP_RANK"},
                            {"GROUP_WORLD_SIZE"}});
}

}  // namespace

Result<std::vector<std::string>> ExpandSlurmNodeList(const std::string& list) {
  return ExpandNodeList(list, "node list");
}

Result<JobEnvironment> ParseJobEnvironment(const EnvLookup& env) {
  if (EnvString(env, "COHORT_RANK")) return ParseCohort(env);
  const bool has_rank = EnvString(env, "RANK").has_value();
  const bool has_world = EnvString(env, "WORLD_SIZE").has_value();
  // `srun torchrun ...` leaves srun's SLURM_PROCID (one per node) in every
  // worker; the innermost launcher, torchrun, is the one that knows the rank.
  // TORCHELASTIC_RUN_ID marks a process that torchrun started.
  if (has_rank && has_world && EnvString(env, "TORCHELASTIC_RUN_ID")) return ParseTorchrun(env);
  if (EnvString(env, "OMPI_COMM_WORLD_RANK")) {
    return ParseForeign(env, {"mpirun",
                              "OMPI_COMM_WORLD_RANK",
                              {"OMPI_COMM_WORLD_SIZE"},
                              {"OMPI_COMM_WORLD_LOCAL_RANK"},
                              {"OMPI_COMM_WORLD_LOCAL_SIZE"},
                              {"OMPI_COMM_WORLD_NODE_RANK"},
                              {}});
  }
  if (EnvString(env, "SLURM_PROCID")) {
    // srun sets the SLURM_STEP_* variables for the step it launched; the
    // plain ones may describe the whole (larger) allocation.
    return ParseForeign(env, {"slurm",
                              "SLURM_PROCID",
                              {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"},
                              {"SLURM_LOCALID"},
                              {},
                              {"SLURM_NODEID"},
                              {"SLURM_STEP_NUM_NODES", "SLURM_NNODES"}});
  }
  if (has_rank && has_world) return ParseTorchrun(env);
  if (has_rank || has_world) {
    return Status::InvalidArgument(std::string(has_rank ? "RANK" : "WORLD_SIZE") + " is set but " +
                                   (has_rank ? "WORLD_SIZE" : "RANK") +
                                   " is not (torchrun sets both)");
  }
  // No launcher: one process, rank 0 of 1, as Horovod runs a script started
  // without horovodrun.
  JobEnvironment job;
  job.launcher = "none";
  job.rank = 0;
  job.size = 1;
  UsePrivateStore(&job);
  return job;
}

}  // namespace cohort
