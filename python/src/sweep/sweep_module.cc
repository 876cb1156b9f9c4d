// cohort._sweep: the C++ Study (include/cohort/sweep.h) for cohort.sweep.
// Parameters cross as dicts ({"type": "float", "low": ..., "when": {...}}),
// values as int, float or str; a failed Status becomes ValueError.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "cohort/sweep.h"

namespace py = pybind11;

namespace cohort::sweep {
namespace {

const char* kParamKeys[] = {"type", "low", "high", "log", "values", "when"};

py::object ToPython(const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return py::int_(*i);
  if (const auto* d = std::get_if<double>(&v)) return py::float_(*d);
  return py::str(std::get<std::string>(v));
}

Value FromPython(const std::string& where, const py::handle& h) {
  if (py::isinstance<py::bool_>(h)) return std::string(py::cast<bool>(h) ? "true" : "false");
  if (py::isinstance<py::int_>(h)) return py::cast<int64_t>(h);
  if (py::isinstance<py::float_>(h)) return py::cast<double>(h);
  if (py::isinstance<py::str>(h)) return py::cast<std::string>(h);
  throw py::value_error(where + ": values must be int, float or str, got " +
                        std::string(py::str(py::type::handle_of(h).attr("__name__"))));
}

double Number(const std::string& where, const py::dict& d, const char* key) {
  if (!d.contains(key)) throw py::value_error(where + ": missing '" + key + "'");
  py::handle h = d[key];
  if (!py::isinstance<py::int_>(h) && !py::isinstance<py::float_>(h)) {
    throw py::value_error(where + "." + key + ": expected a number");
  }
  return py::cast<double>(h);
}

ParamSpec ParamFromDict(const std::string& name, const py::handle& spec) {
  const std::string where = "parameters['" + name + "']";
  if (!py::isinstance<py::dict>(spec)) throw py::value_error(where + ": expected a dict");
  py::dict d = py::reinterpret_borrow<py::dict>(spec);
  for (auto item : d) {
    std::string key = py::cast<std::string>(item.first);
    bool known = false;
    for (const char* k : kParamKeys) known |= key == k;
    if (!known) {
      throw py::value_error(where + ": unknown key '" + key +
                            "' (type, low, high, log, values, when)");
    }
  }
  ParamSpec p;
  p.name = name;
  std::string type = d.contains("type") ? py::cast<std::string>(d["type"]) : "";
  if (type == "float" || type == "int") {
    p.type = type == "int" ? ParamSpec::Type::kInt : ParamSpec::Type::kFloat;
    p.low = Number(where, d, "low");
    p.high = Number(where, d, "high");
    p.log = d.contains("log") && py::cast<bool>(d["log"]);
  } else if (type == "categorical") {
    p.type = ParamSpec::Type::kCategorical;
    if (d.contains("values")) {
      for (py::handle v : d["values"]) p.values.push_back(FromPython(where + ".values", v));
    }
  } else {
    throw py::value_error(where + ": type must be 'float', 'int' or 'categorical', got '" + type +
                          "'");
  }
  if (d.contains("when")) {
    for (auto item : py::cast<py::dict>(d["when"])) {
      std::vector<std::string> wanted;
      if (py::isinstance<py::list>(item.second) || py::isinstance<py::tuple>(item.second)) {
        for (py::handle v : item.second)
          wanted.push_back(ValueToString(FromPython(where + ".when", v)));
      } else {
        wanted.push_back(ValueToString(FromPython(where + ".when", item.second)));
      }
      p.when[py::cast<std::string>(item.first)] = std::move(wanted);
    }
  }
  return p;
}

Budget BudgetFromDict(const py::dict& d) {
  Budget b;
  for (auto item : d) {
    std::string key = py::cast<std::string>(item.first);
    if (key == "resource") {
      b.resource = py::cast<std::string>(item.second);
      continue;
    }
    if (!py::isinstance<py::int_>(item.second))
      throw py::value_error("budget['" + key + "']: expected an int");
    int64_t v = py::cast<int64_t>(item.second);
    if (key == "trials")
      b.trials = v;
    else if (key == "concurrent")
      b.concurrent = static_cast<int>(v);
    else if (key == "min_resource")
      b.min_resource = v;
    else if (key == "max_resource")
      b.max_resource = v;
    else if (key == "reduction")
      b.reduction = v;
    else
      throw py::value_error(
          "budget: unknown key '" + key +
          "' (trials, concurrent, resource, min_resource, max_resource, reduction)");
  }
  return b;
}

py::dict TrialToDict(const Trial& t) {
  py::dict params;
  for (const auto& [k, v] : t.params) params[py::str(k)] = ToPython(v);
  py::dict d;
  d["id"] = t.id;
  d["params"] = params;
  d["resource"] = t.resource;
  d["resumed"] = t.resumed;
  d["clone_of"] = t.clone_of ? py::object(py::int_(*t.clone_of)) : py::object(py::none());
  d["start_step"] = t.start_step;
  return d;
}

py::dict RecordToDict(const TrialRecord& r) {
  py::dict d = TrialToDict(r.trial);
  d["state"] = TrialStateName(r.state);
  d["value"] = r.value ? py::object(py::float_(*r.value)) : py::object(py::none());
  d["last_step"] = r.last_step;
  d["error"] = r.error;
  return d;
}

void Check(const Status& s) {
  if (!s.ok()) throw py::value_error(s.message());
}

class PyStudy {
 public:
  PyStudy(const py::dict& parameters, const std::string& algorithm, const std::string& mode,
          uint64_t seed, const py::dict& budget, bool sobol, const std::string& sampler,
          int grid_points) {
    StudyOptions o;
    for (auto item : parameters) {
      o.space.params.push_back(ParamFromDict(py::cast<std::string>(item.first), item.second));
    }
    if (mode != "min" && mode != "max")
      throw py::value_error("mode must be 'min' or 'max', got '" + mode + "'");
    o.algorithm = algorithm;
    o.maximize = mode == "max";
    o.seed = seed;
    o.budget = BudgetFromDict(budget);
    o.sobol = sobol;
    o.sampler = sampler;
    o.grid_points = grid_points;
    auto study = Study::Create(o);
    Check(study.status());
    study_ = std::move(*study);
  }

  py::object Ask() {
    std::optional<Trial> t = study_->Ask();
    if (!t) return py::none();
    return TrialToDict(*t);
  }
  std::string Report(int64_t id, double value, int64_t step) {
    auto d = study_->Report(id, value, step);
    Check(d.status());
    return DecisionName(*d);
  }
  void Tell(int64_t id, double value) { Check(study_->Tell(id, value)); }
  void Fail(int64_t id, const std::string& error) { Check(study_->Fail(id, error)); }
  bool Finished() const { return study_->Finished(); }
  py::list Trials() const {
    py::list out;
    for (const TrialRecord& r : study_->Trials()) out.append(RecordToDict(r));
    return out;
  }
  py::object Best() const {
    auto best = study_->Best();
    return best ? py::object(RecordToDict(*best)) : py::object(py::none());
  }

 private:
  std::unique_ptr<Study> study_;
};

}  // namespace
}  // namespace cohort::sweep

PYBIND11_MODULE(_sweep, m) {
  using cohort::sweep::PyStudy;
  m.doc() = "cohort's hyperparameter search (the C++ Study); use cohort.sweep";
  py::class_<PyStudy>(m, "Study")
      .def(py::init<const py::dict&, const std::string&, const std::string&, uint64_t,
                    const py::dict&, bool, const std::string&, int>(),
           py::arg("parameters"), py::arg("algorithm"), py::arg("mode"), py::arg("seed"),
           py::arg("budget"), py::arg("sobol"), py::arg("sampler"), py::arg("grid_points"))
      .def("ask", &PyStudy::Ask)
      .def("report", &PyStudy::Report)
      .def("tell", &PyStudy::Tell)
      .def("fail", &PyStudy::Fail)
      .def_property_readonly("finished", &PyStudy::Finished)
      .def("trials", &PyStudy::Trials)
      .def("best", &PyStudy::Best);
}
