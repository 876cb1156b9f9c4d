// Binds the job's lifetime and shape: init/shutdown, rank and size queries,
// process sets and the timeline.
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings.h"
#include "cohort/c_api.h"
#include "errors.h"

namespace py = pybind11;

namespace cohort_python {
namespace {

// Calls a c_api.h function taking a trailing cohort_error* and raises on failure.
template <typename F>
void Call(F f) {
  cohort_error err{};
  const int code = f(&err);
  Check(code, err);
}

std::vector<int> ProcessSetRanks(int process_set) {
  std::vector<int> ranks(static_cast<size_t>(std::max(cohort_size(), 1)));
  int n = 0;
  Call([&](cohort_error* e) {
    return cohort_process_set_ranks(process_set, ranks.data(), static_cast<int>(ranks.size()), &n,
                                    e);
  });
  ranks.resize(static_cast<size_t>(n));
  return ranks;
}

std::vector<int> ProcessSetIds() {
  std::vector<int> ids(8);
  int n = cohort_process_set_ids(ids.data(), static_cast<int>(ids.size()));
  if (n > static_cast<int>(ids.size())) {
    ids.resize(static_cast<size_t>(n));
    n = cohort_process_set_ids(ids.data(), n);
  }
  ids.resize(static_cast<size_t>(std::min<int>(n, static_cast<int>(ids.size()))));
  return ids;
}

}  // namespace

void BindJob(py::module_& m) {
  // Init builds the mesh (waits for every peer): other Python threads run meanwhile.
  m.def(
      "init", [] { Call(cohort_init); }, py::call_guard<py::gil_scoped_release>());
  m.def(
      "shutdown", [] { Call(cohort_shutdown); }, py::call_guard<py::gil_scoped_release>());
  m.def(
      "abort",
      [](const std::string& reason) {
        Call([&](cohort_error* e) { return cohort_abort(reason.c_str(), e); });
      },
      py::arg("reason"), py::call_guard<py::gil_scoped_release>());
  m.def("is_initialized", [] { return cohort_is_initialized() != 0; });
  m.def("is_running", [] { return cohort_is_running() != 0; });
  m.def(
      "elastic_rounds",
      [] {
        int64_t joined = 0, newest = 0;
        Call([&](cohort_error* e) { return cohort_elastic_rounds(&joined, &newest, e); });
        return std::make_pair(joined, newest);
      },
      py::call_guard<py::gil_scoped_release>());
  m.def("rank", cohort_rank);
  m.def("size", cohort_size);
  m.def("local_rank", cohort_local_rank);
  m.def("local_size", cohort_local_size);
  m.def("cross_rank", cohort_cross_rank);
  m.def("cross_size", cohort_cross_size);
  m.def("shm_single_copy", cohort_shm_single_copy);
  m.def(
      "alloc_shared",
      [](uint64_t bytes) {
        void* p = nullptr;
        Call([&](cohort_error* e) { return cohort_alloc_shared(bytes, &p, e); });
        return reinterpret_cast<uintptr_t>(p);
      },
      "Allocates `bytes` the ranks of this host can map; returns the address.");
  m.def(
      "free_shared",
      [](uintptr_t address) {
        Call([&](cohort_error* e) {
          return cohort_free_shared(reinterpret_cast<void*>(address), e);
        });
      },
      "Frees an address from alloc_shared.");
  m.def(
      "peer_host",
      [](int rank) {
        char host[256];
        Call([&](cohort_error* e) { return cohort_peer_host(rank, host, sizeof(host), e); });
        return std::string(host);
      },
      py::arg("rank"), "The host address at which rank `rank` is reached by its peers.");

  m.def(
      "add_process_set",
      [](const std::vector<int>& ranks) {
        int id = -1;
        Call([&](cohort_error* e) {
          return cohort_add_process_set(ranks.data(), static_cast<int>(ranks.size()), &id, e);
        });
        return id;
      },
      py::arg("ranks"));
  m.def(
      "remove_process_set",
      [](int id) { Call([&](cohort_error* e) { return cohort_remove_process_set(id, e); }); },
      py::arg("process_set"));
  m.def("process_set_ranks", ProcessSetRanks, py::arg("process_set"));
  m.def(
      "process_set_rank",
      [](int id) {
        int rank = -1;
        Call([&](cohort_error* e) { return cohort_process_set_rank(id, &rank, e); });
        return rank;
      },
      py::arg("process_set"));
  m.def("process_set_ids", ProcessSetIds);

  m.def(
      "start_timeline",
      [](const std::string& path) {
        Call([&](cohort_error* e) { return cohort_start_timeline(path.c_str(), e); });
      },
      py::arg("path"));
  m.def("stop_timeline", [] { Call(cohort_stop_timeline); });
  m.def("engine_stats", [] {
    cohort_engine_stats s{};
    cohort_get_engine_stats(&s);
    py::dict out;
    out["cycles"] = s.cycles;
    out["allreduces"] = s.allreduces;
    out["allreduced_tensors"] = s.allreduced_tensors;
    out["fused_allreduces"] = s.fused_allreduces;
    out["fused_tensors"] = s.fused_tensors;
    out["fused_bytes"] = s.fused_bytes;
    return out;
  });
}

}  // namespace cohort_python
