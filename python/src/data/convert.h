// Conversions shared by the cohort._data bindings: library errors to Python
// exceptions, and cohort dtypes to numpy dtypes.
#ifndef COHORT_PYTHON_DATA_CONVERT_H_
#define COHORT_PYTHON_DATA_CONVERT_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <utility>

#include "cohort/status.h"
#include "cohort/types.h"

namespace cohort::data {

// Errors cross the binding as exceptions: a refused request (bad input, a
// name that does not exist or already does, a caller without the right) as
// ValueError, the rest as RuntimeError.
[[noreturn]] inline void Raise(const Status& status) {
  switch (status.code()) {
    case Status::Code::kInvalidArgument:
    case Status::Code::kNotFound:
    case Status::Code::kAlreadyExists:
    case Status::Code::kPermissionDenied:
    case Status::Code::kUnauthenticated:
      throw pybind11::value_error(status.message());
    default:
      break;
  }
  throw std::runtime_error(status.ToString());
}

inline void Check(const Status& status) {
  if (!status.ok()) Raise(status);
}

template <typename T>
T Check(Result<T> result) {
  if (!result.ok()) Raise(result.status());
  return std::move(*result);
}

// The numpy name of a cohort dtype; numpy has no bfloat16, so its raw bits travel as uint16.
inline const char* NumpyTypeName(DataType t) {
  return t == DataType::kBFloat16 ? "uint16" : DataTypeName(t);
}

inline pybind11::dtype NumpyType(DataType t) { return pybind11::dtype(NumpyTypeName(t)); }

// Adds the dataset reader, writer and history functions to cohort._data (dataset_module.cc).
void BindDatasets(pybind11::module_& m);

}  // namespace cohort::data

#endif  // COHORT_PYTHON_DATA_CONVERT_H_
