// cohort._checkpoint: CheckpointStore (include/cohort/checkpoint.h) for
// python/cohort/checkpoint.py. States cross as bytes; the GIL is released
// while they are written and read.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../data/convert.h"
#include "cohort/checkpoint.h"

namespace py = pybind11;

namespace cohort {
namespace {

using data::Check;

// f() with the GIL released: reading and writing states takes a while.
template <typename F>
auto Unlocked(F f) {
  py::gil_scoped_release release;
  return f();
}

py::dict InfoDict(const CheckpointInfo& info) {
  py::dict d;
  d["step"] = info.step;
  d["bytes"] = info.bytes;
  d["metric"] = info.metric ? py::object(py::float_(*info.metric)) : py::object(py::none());
  d["sha256"] = info.sha256;
  return d;
}

class PyStore {
 public:
  PyStore(const std::string& location, int keep_last, bool higher_is_better) {
    CheckpointOptions options;
    options.keep_last = keep_last;
    options.higher_is_better = higher_is_better;
    // Kept for cohort/checkpoint.py to raise as Python warnings, with the GIL.
    options.on_warning = [this](const std::string& message) {
      std::lock_guard<std::mutex> lock(warnings_mu_);
      warnings_.push_back(message);
    };
    store_ = Check(CheckpointStore::Open(location, options));
  }

  // The reports of skipped checkpoints since the last call, oldest first.
  std::vector<std::string> TakeWarnings() {
    std::lock_guard<std::mutex> lock(warnings_mu_);
    return std::exchange(warnings_, {});
  }

  void Save(int64_t step, const py::bytes& state, std::optional<double> metric) {
    std::string_view bytes = state;  // the bytes object outlives the call
    Check(Unlocked([&] { return store_->Save(step, bytes, metric); }));
  }

  // (step, bytes) of the newest checkpoint, or None.
  py::object LoadLatest() {
    Result<std::optional<Checkpoint>> loaded = Unlocked([&] { return store_->LoadLatest(); });
    std::optional<Checkpoint> c = Check(std::move(loaded));
    if (!c) return py::none();
    return py::make_tuple(c->info.step, py::bytes(c->state));
  }

  py::object Load(int64_t step) {
    Result<std::optional<Checkpoint>> loaded = Unlocked([&] { return store_->Load(step); });
    std::optional<Checkpoint> c = Check(std::move(loaded));
    if (!c) return py::none();
    return py::bytes(c->state);
  }

  py::list List() {
    py::list out;
    for (const CheckpointInfo& info : Check(store_->List())) out.append(InfoDict(info));
    return out;
  }

  py::object Best() {
    std::optional<CheckpointInfo> best = Check(store_->Best());
    return best ? py::object(InfoDict(*best)) : py::object(py::none());
  }

  const std::string& location() const { return store_->location(); }

 private:
  std::unique_ptr<CheckpointStore> store_;
  std::mutex warnings_mu_;  // calls release the GIL: two threads may save at once
  std::vector<std::string> warnings_;
};

}  // namespace
}  // namespace cohort

PYBIND11_MODULE(_checkpoint, m) {
  using cohort::PyStore;
  m.doc() = "Atomic checkpoints on a directory or S3 (cohort/checkpoint.h)";
  py::class_<PyStore>(m, "Store")
      .def(py::init<const std::string&, int, bool>(), py::arg("location"), py::arg("keep_last") = 3,
           py::arg("higher_is_better") = false)
      .def("save", &PyStore::Save, py::arg("step"), py::arg("state"),
           py::arg("metric") = std::nullopt)
      .def("load_latest", &PyStore::LoadLatest)
      .def("load", &PyStore::Load, py::arg("step"))
      .def("list", &PyStore::List)
      .def("best", &PyStore::Best)
      .def("take_warnings", &PyStore::TakeWarnings)
      .def_property_readonly("location", &PyStore::location);
}
