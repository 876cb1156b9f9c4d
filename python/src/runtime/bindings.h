// The parts of the cohort._cohort extension module, each binding one area of
// c_api.h. Tensors cross as (address, shape, dtype code): the module never
// sees a framework type, so one build serves every torch and numpy version.
#ifndef COHORT_PYTHON_RUNTIME_BINDINGS_H_
#define COHORT_PYTHON_RUNTIME_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace cohort_python {

void BindJob(pybind11::module_& m);           // init, shutdown, topology, process sets, timeline
void BindOperations(pybind11::module_& m);    // asynchronous collectives
void BindHandles(pybind11::module_& m);       // poll, wait, results, release
void BindPointToPoint(pybind11::module_& m);  // tagged messages between two ranks
void BindSettings(pybind11::module_& m);      // the settings table (common/settings.h)
void BindCompression(pybind11::module_& m);   // PowerSGD's passes over a float32 matrix

}  // namespace cohort_python

#endif  // COHORT_PYTHON_RUNTIME_BINDINGS_H_
