// Typed, validated access to an MLflow request's fields.
#include "track/request_fields.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "http/server/json_body.h"

namespace cohort::track {
namespace {

std::string Shown(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 100)
    text = text.substr(0, 100) + "... (" + std::to_string(text.size()) + " bytes)";
  return text;
}

}  // namespace

Result<RequestFields> RequestFields::FromRequest(const http::ServerRequest& request) {
  if (request.method == "GET" || request.method == "HEAD") {
    nlohmann::json fields = nlohmann::json::object();
    for (const auto& [key, value] : http::ParseQuery(request.query)) {
      // The store keeps text as UTF-8 (PostgreSQL refuses anything else).
      if (!http::IsUtf8(key)) {
        return Status::InvalidArgument("Invalid query string: a parameter name is not UTF-8");
      }
      if (!http::IsUtf8(value)) {
        return Status::InvalidArgument("Invalid value for parameter '" + key +
                                       "' supplied: it is not UTF-8");
      }
      if (!fields.contains(key)) {
        fields[key] = value;
      } else {
        if (!fields[key].is_array()) fields[key] = nlohmann::json::array({fields[key]});
        fields[key].push_back(value);
      }
    }
    return RequestFields(std::move(fields));
  }
  if (request.body.empty()) return RequestFields(nlohmann::json::object());
  Result<nlohmann::json> parsed = http::ParseJsonBody(request.body);
  if (!parsed.ok()) return parsed.status();
  nlohmann::json body = std::move(*parsed);
  if (!body.is_object()) {
    return Status::InvalidArgument("Malformed JSON request body: expected an object, got " +
                                   std::string(body.type_name()));
  }
  return RequestFields(std::move(body));
}

bool RequestFields::Has(const std::string& name) const {
  auto it = fields_->find(name);
  return it != fields_->end() && !it->is_null();
}

Status RequestFields::Missing(const std::string& name) const {
  return Status::InvalidArgument("Missing value for required parameter '" + Name(name) +
                                 "'. See the API docs for more information about request "
                                 "parameters.");
}

Status RequestFields::Invalid(const std::string& name, const nlohmann::json& value,
                              const std::string& expected) const {
  return Status::InvalidArgument("Invalid value " + Shown(value) + " for parameter '" + Name(name) +
                                 "' supplied: expected " + expected);
}

Result<std::optional<std::string>> RequestFields::OptionalString(const std::string& name) const {
  if (!Has(name)) return std::optional<std::string>();
  const nlohmann::json& v = fields_->at(name);
  if (!v.is_string()) return Invalid(name, v, "a string");
  return std::optional<std::string>(v.get<std::string>());
}

Result<std::string> RequestFields::RequiredString(const std::string& name) const {
  auto v = OptionalString(name);
  if (!v.ok()) return v.status();
  if (!v->has_value() || (*v)->empty()) return Missing(name);
  return **v;
}

Result<std::optional<int64_t>> RequestFields::OptionalInt(const std::string& name) const {
  if (!Has(name)) return std::optional<int64_t>();
  const nlohmann::json& v = fields_->at(name);
  const std::string range = "an integer (" + std::to_string(std::numeric_limits<int64_t>::min()) +
                            " to " + std::to_string(std::numeric_limits<int64_t>::max()) + ")";
  if (v.is_number_unsigned()) {
    // A JSON integer past INT64_MAX (nlohmann reads it as unsigned).
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Invalid(name, v, range);
    }
    return std::optional<int64_t>(static_cast<int64_t>(u));
  }
  if (v.is_number_integer()) return std::optional<int64_t>(v.get<int64_t>());
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d != std::floor(d)) return Invalid(name, v, "an integer");
    // 2^63 is the first double past the range.
    if (!(std::fabs(d) < 9223372036854775808.0)) return Invalid(name, v, range);
    return std::optional<int64_t>(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    size_t start = !s.empty() && s[0] == '-' ? 1 : 0;
    if (s.size() > start && s.find_first_not_of("0123456789", start) == std::string::npos) {
      int64_t n = 0;
      auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), n);
      if (error == std::errc() && end == s.data() + s.size()) return std::optional<int64_t>(n);
      return Invalid(name, v, range);
    }
  }
  return Invalid(name, v, "an integer");
}

Result<int64_t> RequestFields::RequiredInt(const std::string& name) const {
  auto v = OptionalInt(name);
  if (!v.ok()) return v.status();
  if (!v->has_value()) return Missing(name);
  return **v;
}

Result<double> RequestFields::RequiredDouble(const std::string& name) const {
  if (!Has(name)) return Missing(name);
  const nlohmann::json& v = fields_->at(name);
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return d;
  }
  return Invalid(name, v, "a number");
}

Result<std::vector<std::string>> RequestFields::StringList(const std::string& name) const {
  std::vector<std::string> out;
  if (!Has(name)) return out;
  const nlohmann::json& v = fields_->at(name);
  if (v.is_string()) return std::vector<std::string>{v.get<std::string>()};
  if (!v.is_array()) return Invalid(name, v, "a list of strings");
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) {
      return Invalid(name + "[" + std::to_string(i) + "]", v[i], "a string");
    }
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

Result<std::vector<RequestFields>> RequestFields::ObjectList(const std::string& name) const {
  std::vector<RequestFields> out;
  if (!Has(name)) return out;
  const nlohmann::json& v = fields_->at(name);
  if (!v.is_array()) return Invalid(name, v, "a list of objects");
  for (size_t i = 0; i < v.size(); ++i) {
    std::string item = name + "[" + std::to_string(i) + "]";
    if (!v[i].is_object()) return Invalid(item, v[i], "an object");
    RequestFields f(root_, &v[i]);
    f.set_prefix(Name(item) + ".");
    out.push_back(std::move(f));
  }
  return out;
}

Result<RequestFields> RequestFields::RequiredObject(const std::string& name) const {
  if (!Has(name)) return Missing(name);
  const nlohmann::json& v = fields_->at(name);
  if (!v.is_object()) return Invalid(name, v, "an object");
  RequestFields f(root_, &v);
  f.set_prefix(Name(name) + ".");
  return f;
}

}  // namespace cohort::track
