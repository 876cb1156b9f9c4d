// RequestFields: the fields of one MLflow API request, whether they came as a
// JSON body (POST, PATCH, DELETE) or as query parameters (GET), read with
// proto3 JSON's leniency (an int64 may be a string) and errors that name the
// field in MLflow's words.
#ifndef COHORT_TRACK_REQUEST_FIELDS_H_
#define COHORT_TRACK_REQUEST_FIELDS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cohort/status.h"
#include "http/server/http_message.h"

namespace cohort::track {

class RequestFields {
 public:
  // A GET's fields come from its query, any other's from its JSON body
  // (which must be an object).
  static Result<RequestFields> FromRequest(const http::ServerRequest& request);
  explicit RequestFields(nlohmann::json fields)
      : root_(std::make_shared<const nlohmann::json>(std::move(fields))), fields_(root_.get()) {}
  // Reads `fields` where it is, without a copy (a caller's batch of
  // thousands of metrics): it must outlive the RequestFields and its items.
  static RequestFields View(const nlohmann::json& fields) {
    return RequestFields(std::shared_ptr<const nlohmann::json>(), &fields);
  }

  bool Has(const std::string& name) const;
  Result<std::string> RequiredString(const std::string& name) const;
  Result<std::optional<std::string>> OptionalString(const std::string& name) const;
  Result<std::optional<int64_t>> OptionalInt(const std::string& name) const;
  Result<int64_t> RequiredInt(const std::string& name) const;
  // Numbers, or "NaN", "Infinity", "-Infinity" as proto3 JSON writes them.
  Result<double> RequiredDouble(const std::string& name) const;
  // A list of strings (one string is a list of one: repeated query keys).
  Result<std::vector<std::string>> StringList(const std::string& name) const;
  // A list of objects, each a RequestFields; `name` labels errors ("metrics[2].key").
  Result<std::vector<RequestFields>> ObjectList(const std::string& name) const;
  // A required object field, as RequestFields ("datasets[0].dataset.name").
  Result<RequestFields> RequiredObject(const std::string& name) const;
  const nlohmann::json& json() const { return *fields_; }

  // The field's name as errors show it: "metrics[2]." + name.
  void set_prefix(std::string prefix) { prefix_ = std::move(prefix); }

 private:
  std::string Name(const std::string& name) const { return prefix_ + name; }
  Status Missing(const std::string& name) const;
  Status Invalid(const std::string& name, const nlohmann::json& value,
                 const std::string& expected) const;

  // Items of a list share the request's JSON: no copies of big batches.
  RequestFields(std::shared_ptr<const nlohmann::json> root, const nlohmann::json* fields)
      : root_(std::move(root)), fields_(fields) {}

  std::shared_ptr<const nlohmann::json> root_;
  const nlohmann::json* fields_;
  std::string prefix_;
};

}  // namespace cohort::track

#endif  // COHORT_TRACK_REQUEST_FIELDS_H_
