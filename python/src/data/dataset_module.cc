// cohort._data's dataset API: Writer (append, update, delete, commit),
// Dataset (read samples of one commit) and the history functions (log, diff,
// checkout, branches, tags). A sample crosses as a dict column -> value:
// numpy arrays for array columns, bytes for image, str for text and json,
// int for label. Values are checked here against the schema so a wrong
// column or dtype is reported with the column's name before the library sees it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "cohort/data.h"
#include "convert.h"

namespace py = pybind11;

namespace cohort::data {
namespace {

// Raised by Writer.commit when another writer moved the branch first.
struct CommitConflict : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string ColumnList(const Schema& schema) {
  std::string out;
  for (const Column& c : schema) out += (out.empty() ? "" : ", ") + c.name;
  return out;
}

std::string TypeName(const py::handle& value) {
  return py::str(py::type::handle_of(value).attr("__name__"));
}

[[noreturn]] void WrongType(const Column& column, const char* want, const py::handle& value) {
  throw py::value_error("column '" + column.name + "' (" + ColumnKindName(column.kind) +
                        ") takes " + want + ", got " + TypeName(value));
}

Value ArrayValue(const Column& column, const py::handle& value) {
  // A numpy scalar (it has a dtype and a shape) counts as a 0-d array; lists do not.
  const bool scalar = py::hasattr(value, "dtype") && py::hasattr(value, "shape");
  if (!py::isinstance<py::array>(value) && !scalar) WrongType(column, "a numpy array", value);
  py::array array = py::array::ensure(value);
  if (!array) WrongType(column, "a numpy array", value);
  const std::string dtype = py::str(array.dtype());
  if (dtype != NumpyTypeName(column.dtype)) {
    throw py::value_error("column '" + column.name + "' holds " + DataTypeName(column.dtype) +
                          " (numpy " + NumpyTypeName(column.dtype) + "), got an array of " + dtype);
  }
  auto contiguous = py::array::ensure(array, py::array::c_style);
  std::vector<uint64_t> shape(contiguous.shape(), contiguous.shape() + contiguous.ndim());
  return Value::Array(column.dtype, std::move(shape), contiguous.data());
}

Value ToValue(const Column& column, const py::handle& value) {
  switch (column.kind) {
    case ColumnKind::kArray:
      return ArrayValue(column, value);
    case ColumnKind::kImage:
      if (!py::isinstance<py::bytes>(value)) WrongType(column, "bytes", value);
      return Value::Image(value.cast<std::string>());
    case ColumnKind::kText:
    case ColumnKind::kJson:
      if (!py::isinstance<py::str>(value)) WrongType(column, "str", value);
      return column.kind == ColumnKind::kText ? Value::Text(value.cast<std::string>())
                                              : Value::Json(value.cast<std::string>());
    case ColumnKind::kLabel: {
      // Python and numpy integers (anything with __index__), but not bool or float.
      if (py::isinstance<py::bool_>(value) || !PyIndex_Check(value.ptr())) {
        WrongType(column, "an int", value);
      }
      return Value::Label(
          py::reinterpret_steal<py::int_>(PyNumber_Index(value.ptr())).cast<int64_t>());
    }
  }
  throw py::value_error("column '" + column.name + "' has an unknown kind");
}

Sample ToSample(const Schema& schema, const py::dict& sample) {
  for (auto [key, _] : sample) {
    const std::string name = py::str(key);
    bool known = false;
    for (const Column& c : schema) known = known || c.name == name;
    if (!known) {
      throw py::value_error("sample has a column '" + name +
                            "' the schema lacks (columns: " + ColumnList(schema) + ")");
    }
  }
  Sample out;
  for (const Column& c : schema) {
    if (!sample.contains(c.name)) throw py::value_error("sample lacks column '" + c.name + "'");
    out.push_back(ToValue(c, sample[py::str(c.name)]));
  }
  return out;
}

py::object FromValue(const Column& column, const Value& v) {
  switch (column.kind) {
    case ColumnKind::kArray: {
      std::vector<py::ssize_t> shape(v.shape.begin(), v.shape.end());
      py::array out(NumpyType(v.dtype), shape);
      std::copy(v.bytes.begin(), v.bytes.end(), static_cast<char*>(out.mutable_data()));
      return out;
    }
    case ColumnKind::kImage:
      return py::bytes(v.bytes);
    case ColumnKind::kText:
    case ColumnKind::kJson:
      return py::str(v.bytes);
    case ColumnKind::kLabel:
      return py::int_(v.label());
  }
  return py::none();
}

// "shape:4,3" (cohort.data's spelling of a fixed shape (4, 3); "shape:" is ()).
std::vector<uint64_t> ParseShapeEntry(const std::string& column, const std::string& text) {
  const std::string prefix = "shape:";
  if (text.compare(0, prefix.size(), prefix) != 0)
    throw py::value_error("column '" + column + "': the fourth part of an entry is a shape tuple");
  std::vector<uint64_t> shape;
  size_t at = prefix.size();
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(at, end - at);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos)
      throw py::value_error("column '" + column + "': shape sizes are non-negative ints");
    shape.push_back(std::stoull(part));
    at = end + 1;
  }
  return shape;
}

// Schema entries are (name, kind), (name, "array", dtype) or (name, "array", dtype, shape).
Schema ToSchema(const std::vector<std::vector<std::string>>& entries) {
  Schema schema;
  for (const std::vector<std::string>& e : entries) {
    if (e.size() < 2 || e.size() > 4) {
      throw py::value_error(
          "a schema entry is (name, kind), (name, 'array', dtype) or (name, 'array', dtype, "
          "shape)");
    }
    Column c{e[0], Check(ParseColumnKind(e[1]))};
    if (e.size() >= 3 && c.kind != ColumnKind::kArray) {
      throw py::value_error("column '" + c.name + "': only array columns take a dtype");
    }
    if (c.kind == ColumnKind::kArray) {
      if (e.size() < 3) throw py::value_error("array column '" + c.name + "' needs a dtype");
      c.dtype = Check(ParseDataType(e[2]));
      if (e.size() == 4) c.shape = ParseShapeEntry(c.name, e[3]);
    }
    schema.push_back(std::move(c));
  }
  return schema;
}

py::list SchemaList(const Schema& schema) {
  py::list out;
  for (const Column& c : schema) {
    if (c.kind == ColumnKind::kArray && c.shape) {
      py::tuple shape(c.shape->size());
      for (size_t i = 0; i < c.shape->size(); ++i) shape[i] = (*c.shape)[i];
      out.append(py::make_tuple(c.name, ColumnKindName(c.kind), DataTypeName(c.dtype), shape));
    } else if (c.kind == ColumnKind::kArray) {
      out.append(py::make_tuple(c.name, ColumnKindName(c.kind), DataTypeName(c.dtype)));
    } else {
      out.append(py::make_tuple(c.name, ColumnKindName(c.kind)));
    }
  }
  return out;
}

WriterOptions MakeWriterOptions(const std::string& branch, uint64_t chunk_bytes,
                                const std::string& compression, int level) {
  WriterOptions o;
  o.branch = branch;
  if (chunk_bytes != 0) o.chunk_bytes = chunk_bytes;
  o.compression = Check(ParseCompression(compression));
  o.compression_level = level;
  return o;
}

class PyWriter {
 public:
  explicit PyWriter(std::unique_ptr<Writer> writer) : writer_(std::move(writer)) {}

  void Append(const py::dict& sample) {
    Check(writer_->Append(ToSample(writer_->schema(), sample)));
  }
  void Update(int64_t i, const py::dict& sample) {
    Check(writer_->Update(Index(i), ToSample(writer_->schema(), sample)));
  }
  void Delete(int64_t i) { Check(writer_->Delete(Index(i))); }

  std::string Commit(const std::string& message, const std::string& author,
                     const std::string& command) {
    Result<std::string> id = Status::OK();
    {
      py::gil_scoped_release release;
      id = writer_->Commit({message, author, command});
    }
    if (!id.ok() && IsConflict(id.status())) throw CommitConflict(id.status().message());
    return Check(std::move(id));
  }

  uint64_t Size() const { return writer_->size(); }
  const std::string& Base() const { return writer_->base(); }
  py::list GetSchema() const { return SchemaList(writer_->schema()); }

 private:
  // Python indexing: negative counts from the end; out of range is the library's error.
  uint64_t Index(int64_t i) const {
    return i < 0 ? uint64_t(int64_t(writer_->size()) + i) : uint64_t(i);
  }

  std::unique_ptr<Writer> writer_;
};

PyWriter CreateWriter(const std::string& location,
                      const std::vector<std::vector<std::string>>& schema,
                      const std::string& branch, uint64_t chunk_bytes,
                      const std::string& compression, int level) {
  return PyWriter(Check(Writer::Create(
      location, ToSchema(schema), MakeWriterOptions(branch, chunk_bytes, compression, level))));
}

PyWriter OpenWriter(const std::string& location, const std::string& branch, uint64_t chunk_bytes,
                    const std::string& compression, int level) {
  return PyWriter(
      Check(Writer::Open(location, MakeWriterOptions(branch, chunk_bytes, compression, level))));
}

py::dict CommitDict(const CommitInfo& c) {
  py::dict d;
  d["id"] = c.id;
  d["parent"] = c.parent;
  d["message"] = c.message;
  d["author"] = c.author;
  d["command"] = c.command;
  d["time"] = c.time;
  d["num_samples"] = c.num_samples;
  d["num_chunks"] = c.num_chunks;
  d["stored_bytes"] = c.stored_bytes;
  d["schema"] = SchemaList(c.schema);
  return d;
}

class PyDataset {
 public:
  PyDataset(const std::string& location, const std::string& ref)
      : dataset_(Check(Dataset::Open(location, ref))) {}

  py::dict Get(int64_t i) {
    const uint64_t index = Index(i);
    Sample sample = Check(dataset_->Get(index));
    py::dict out;
    const Schema& schema = dataset_->schema();
    for (size_t c = 0; c < schema.size(); ++c) {
      out[py::str(schema[c].name)] = FromValue(schema[c], sample[c]);
    }
    return out;
  }
  uint64_t SampleId(int64_t i) { return Check(dataset_->SampleId(Index(i))); }
  uint64_t Size() const { return dataset_->size(); }
  py::list GetSchema() const { return SchemaList(dataset_->schema()); }
  py::dict Commit() const { return CommitDict(dataset_->commit()); }

 private:
  // Python indexing: negative counts from the end; out of range raises IndexError.
  uint64_t Index(int64_t i) const {
    const int64_t n = int64_t(dataset_->size());
    if (i < -n || i >= n) {
      throw py::index_error("sample " + std::to_string(i) + " is out of range: the dataset has " +
                            std::to_string(n));
    }
    return uint64_t(i < 0 ? n + i : i);
  }

  std::unique_ptr<Dataset> dataset_;
};

py::list LogList(const std::string& location, const std::string& ref) {
  py::list out;
  for (const CommitInfo& c : Check(Log(location, ref))) out.append(CommitDict(c));
  return out;
}

py::dict DiffDict(const std::string& location, const std::string& from, const std::string& to) {
  DiffResult r = Check(Diff(location, from, to));
  py::dict d;
  d["added"] = r.added;
  d["removed"] = r.removed;
  d["changed"] = r.changed;
  return d;
}

}  // namespace

void BindDatasets(py::module_& m) {
  py::register_exception<CommitConflict>(m, "ConflictError", PyExc_RuntimeError);
  py::class_<PyWriter>(m, "Writer")
      .def_static("create", &CreateWriter, py::arg("location"), py::arg("schema"),
                  py::arg("branch") = "", py::arg("chunk_bytes") = 0,
                  py::arg("compression") = "none", py::arg("compression_level") = 0)
      .def_static("open", &OpenWriter, py::arg("location"), py::arg("branch") = "",
                  py::arg("chunk_bytes") = 0, py::arg("compression") = "none",
                  py::arg("compression_level") = 0)
      .def("append", &PyWriter::Append, py::arg("sample"))
      .def("update", &PyWriter::Update, py::arg("index"), py::arg("sample"))
      .def("delete", &PyWriter::Delete, py::arg("index"))
      .def("commit", &PyWriter::Commit, py::arg("message"), py::arg("author") = "",
           py::arg("command") = "")
      .def("__len__", &PyWriter::Size)
      .def_property_readonly("base", &PyWriter::Base)
      .def_property_readonly("schema", &PyWriter::GetSchema);
  py::class_<PyDataset>(m, "Dataset")
      .def(py::init<const std::string&, const std::string&>(), py::arg("location"),
           py::arg("ref") = "")
      .def("__len__", &PyDataset::Size)
      .def("__getitem__", &PyDataset::Get, py::arg("index"))
      .def("sample_id", &PyDataset::SampleId, py::arg("index"))
      .def_property_readonly("schema", &PyDataset::GetSchema)
      .def_property_readonly("commit", &PyDataset::Commit);
  m.def("log", &LogList, py::arg("location"), py::arg("ref") = "");
  m.def("diff", &DiffDict, py::arg("location"), py::arg("from_ref"), py::arg("to_ref"));
  m.def(
      "checkout", [](const std::string& l, const std::string& r) { Check(Checkout(l, r)); },
      py::arg("location"), py::arg("ref"));
  m.def(
      "create_branch",
      [](const std::string& l, const std::string& n, const std::string& r) {
        Check(CreateBranch(l, n, r));
      },
      py::arg("location"), py::arg("name"), py::arg("ref") = "HEAD");
  m.def(
      "create_tag",
      [](const std::string& l, const std::string& n, const std::string& r) {
        Check(CreateTag(l, n, r));
      },
      py::arg("location"), py::arg("name"), py::arg("ref") = "HEAD");
  m.def(
      "resolve", [](const std::string& l, const std::string& r) { return Check(ResolveRef(l, r)); },
      py::arg("location"), py::arg("ref") = "HEAD");
}

}  // namespace cohort::data
