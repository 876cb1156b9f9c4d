// Exception-free JSON parsing of request bodies (json_body.h).
#include "http/server/json_body.h"

#include <cstddef>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace cohort::http {
namespace {

using nlohmann::json;

// A pointer into the body that counts how far the parser has read, so
// errors the SAX callbacks find (nesting) can say at which byte.
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* p, size_t* count) : p_(p), count_(count) {}
  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    ++p_;
    ++*count_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator before = *this;
    ++*this;
    return before;
  }
  bool operator==(const CountingIterator& other) const { return p_ == other.p_; }
  bool operator!=(const CountingIterator& other) const { return p_ != other.p_; }

 private:
  const char* p_;
  size_t* count_;
};

// Builds the document from SAX events, keeping the path to the value being
// read for error messages, and refusing nesting past the limit.
class DocumentBuilder {
 public:
  DocumentBuilder(int max_depth, const size_t* read) : max_depth_(max_depth), read_(read) {}

  bool null() { return Value(nullptr); }
  bool boolean(bool v) { return Value(v); }
  bool number_integer(json::number_integer_t v) { return Value(v); }
  bool number_unsigned(json::number_unsigned_t v) { return Value(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return Value(v); }
  bool string(json::string_t& v) { return Value(std::move(v)); }
  bool binary(json::binary_t&) { return false; }  // JSON text has none
  bool start_object(std::size_t) { return Open(json::object()); }
  bool key(json::string_t& k) {
    frames_.back().key = std::move(k);
    return true;
  }
  bool end_object() {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) { return Open(json::array()); }
  bool end_array() {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const json::exception& e) {
    std::string what = e.what();
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos) {
      what = what.substr(what.find("] ") + 2);
    }
    Fail(what, position);
    return false;
  }

  json TakeDocument() { return std::move(root_); }
  const std::string& error() const { return error_; }

 private:
  struct Frame {
    json* container;
    std::string key;  // the member being read, in an object
  };

  bool Value(json&& v) {
    Insert(std::move(v));
    return true;
  }

  bool Open(json&& container) {
    if (static_cast<int>(frames_.size()) >= max_depth_) {
      Fail("nested deeper than " + std::to_string(max_depth_) + " levels", *read_);
      return false;
    }
    frames_.push_back({Insert(std::move(container)), ""});
    return true;
  }

  // Members of objects are nodes of a map, and an array's earlier elements
  // are closed before it grows: the pointers in frames_ stay valid.
  json* Insert(json&& v) {
    if (frames_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& parent = frames_.back();
    if (parent.container->is_array()) {
      parent.container->push_back(std::move(v));
      return &parent.container->back();
    }
    json& slot = (*parent.container)[parent.key];
    slot = std::move(v);
    return &slot;
  }

  // "metrics[2].value": the value being read when the error came.
  std::string Where() const {
    std::string where;
    for (size_t i = 0; i < frames_.size(); ++i) {
      const json& c = *frames_[i].container;
      if (c.is_array()) {
        // Outer arrays hold the open element already; the innermost not yet.
        size_t index = i + 1 < frames_.size() ? c.size() - 1 : c.size();
        where += "[" + std::to_string(index) + "]";
      } else if (!frames_[i].key.empty() || i + 1 < frames_.size()) {
        where += (where.empty() ? "" : ".") + frames_[i].key;
      }
    }
    return where;
  }

  void Fail(const std::string& what, size_t byte) {
    std::string where = Where();
    error_ = what + " (" + (where.empty() ? "" : "field '" + where + "', ") + "byte " +
             std::to_string(byte) + ")";
  }

  const int max_depth_;
  const size_t* read_;
  json root_;
  std::vector<Frame> frames_;
  std::string error_;
};

}  // namespace

Result<json> ParseJsonBody(std::string_view text, int max_depth) {
  size_t read = 0;
  DocumentBuilder builder(max_depth, &read);
  CountingIterator begin(text.data(), &read);
  CountingIterator end(text.data() + text.size(), &read);
  if (!json::sax_parse(begin, end, &builder) || !builder.error().empty()) {
    return Status::InvalidArgument("Malformed JSON request body: " + builder.error());
  }
  return builder.TakeDocument();
}

}  // namespace cohort::http
