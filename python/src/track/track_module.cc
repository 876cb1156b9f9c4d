// cohort._track: the C++ tracking client (include/cohort/track.h) for
// python/cohort/track.py. Log() only queues, so it keeps the GIL; calls that
// wait on the network or the disk release it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../data/convert.h"
#include "cohort/track.h"
#include "common/settings.h"

namespace py = pybind11;

namespace cohort {
namespace {

using data::Check;

std::unique_ptr<TrackingRun> StartRun(const std::string& uri, const std::string& project,
                                      const std::string& run_name,
                                      const std::map<std::string, std::string>& params,
                                      const std::map<std::string, std::string>& tags,
                                      const std::string& spool_dir, int flush_interval_ms,
                                      const std::string& run_id) {
  TrackingOptions options;
  options.uri = uri;
  options.project = project;
  options.run_name = run_name;
  options.params = params;
  options.tags = tags;
  options.spool_dir = spool_dir;
  options.flush_interval_ms = flush_interval_ms;
  // MLflow's fluent API goes on with $MLFLOW_RUN_ID; so does cohort.track.init.
  options.run_id = run_id;
  if (options.run_id.empty())
    options.run_id = Check(ReadSetting(ProcessEnv(), "MLFLOW_RUN_ID")).text;
  py::gil_scoped_release release;
  return Check(TrackingRun::Start(options));
}

void Log(TrackingRun& run, const py::dict& values, int64_t step) {
  std::vector<std::pair<std::string, double>> points;
  points.reserve(values.size());
  for (const auto& [key, value] : values) {
    if (!py::isinstance<py::str>(key)) {
      throw py::type_error("log: metric names must be str, got " +
                           std::string(py::str(py::type::of(key))));
    }
    try {
      points.emplace_back(key.cast<std::string>(), value.cast<double>());
    } catch (const py::cast_error&) {
      throw py::type_error("log: the value of '" + key.cast<std::string>() +
                           "' must be a number, got " + std::string(py::str(py::type::of(value))));
    }
  }
  run.Log(points, step);
}

}  // namespace

PYBIND11_MODULE(_track, m) {
  m.doc() = "cohort's tracking client (see cohort.track)";
  py::class_<TrackingRun>(m, "TrackingRun")
      .def(py::init(&StartRun), py::arg("uri"), py::arg("project"), py::arg("run_name"),
           py::arg("params"), py::arg("tags"), py::arg("spool_dir"), py::arg("flush_interval_ms"),
           py::arg("run_id") = "")
      .def_property_readonly("run_id", &TrackingRun::run_id)
      .def_property_readonly("experiment_id", &TrackingRun::experiment_id)
      .def("log", &Log, py::arg("values"), py::arg("step"))
      .def("set_tag", &TrackingRun::SetTag, py::arg("key"), py::arg("value"))
      .def("log_input", &TrackingRun::LogInput, py::arg("name"), py::arg("digest"),
           py::arg("source_type"), py::arg("source"), py::arg("context") = "")
      .def(
          "log_artifact",
          [](TrackingRun& run, const std::string& path, const std::string& name) {
            py::gil_scoped_release release;
            Check(run.LogArtifact(path, name));
          },
          py::arg("path"), py::arg("artifact_path") = "")
      .def("flush",
           [](TrackingRun& run) {
             Status s;
             {
               py::gil_scoped_release release;
               s = run.Flush();
             }
             Check(s);
           })
      .def(
          "finish",
          [](TrackingRun& run, const std::string& status) {
            Status s;
            {
              py::gil_scoped_release release;
              s = run.Finish(status);
            }
            Check(s);
          },
          py::arg("status") = "FINISHED")
      .def("spooled_batches", &TrackingRun::SpooledBatches);
}

}  // namespace cohort
