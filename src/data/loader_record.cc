// In-place record parsing for the loader.
#include "data/loader_record.h"

#include "data/bytes.h"

namespace cohort::data {

Status ParseRecordView(const Schema& schema, std::string_view record, std::vector<ValueView>* out) {
  out->resize(schema.size());
  ByteReader r(record, "record");
  for (size_t c = 0; c < schema.size(); ++c) {
    ValueView& v = (*out)[c];
    const DataType dtype = schema[c].kind == ColumnKind::kArray   ? schema[c].dtype
                           : schema[c].kind == ColumnKind::kLabel ? DataType::kInt64
                                                                  : DataType::kUInt8;
    uint8_t ndim = 0;
    COHORT_RETURN_IF_ERROR(r.U8(&ndim));
    v.shape.resize(ndim);
    uint64_t elements = 1;
    for (uint64_t& d : v.shape) {
      COHORT_RETURN_IF_ERROR(r.U64(&d));
      if (d != 0 && elements > r.left() / d)
        elements = UINT64_MAX;  // overruns; caught below
      else
        elements *= d;
    }
    if (elements > r.left() / DataTypeSize(dtype)) {
      return Status::IoError("record value of column '" + schema[c].name + "' overruns the record");
    }
    COHORT_RETURN_IF_ERROR(r.Raw(elements * DataTypeSize(dtype), &v.bytes));
  }
  if (r.left() != 0)
    return Status::IoError("record has " + std::to_string(r.left()) + " stray bytes");
  return Status::OK();
}

}  // namespace cohort::data
