// cohort._cohort's view of the settings table (src/common/settings.h), so
// that Python reads the same rows as C++ (python/cohort/settings.py).
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "common/settings.h"

namespace py = pybind11;

namespace cohort_python {

void BindSettings(py::module_& m) {
  m.def(
      "settings_table",
      [] {
        py::list rows;
        for (const cohort::SettingSpec& s : cohort::AllSettings()) {
          py::dict row;
          row["variable"] = s.variable;
          row["flag"] = s.flag != nullptr ? py::str(s.flag) : py::str("");
          row["default"] = s.default_text;
          row["scope"] = cohort::SettingScopeName(s.scope);
          row["help"] = s.help;
          rows.append(row);
        }
        return rows;
      },
      "Every row of the settings table (src/common/settings.cc): variable, flag, default, "
      "scope and help, in the table's order.");
}

}  // namespace cohort_python
