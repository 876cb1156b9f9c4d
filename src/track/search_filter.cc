// MLflow's search grammar: a small lexer and a clause parser.
#include "track/search_filter.h"

#include <cctype>
#include <cstdlib>
#include <set>

namespace cohort::track {
namespace {

enum class TokenKind {
  kIdentifier,
  kString,
  kNumber,
  kComparator,
  kLeftParen,
  kRightParen,
  kComma
};

struct Token {
  TokenKind kind;
  std::string text;
};

bool IsIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
         c == '/' || c == ':';
}

Status FilterError(const std::string& filter, const std::string& what) {
  return Status::InvalidArgument("Invalid filter '" + filter + "': " + what);
}

// Reads a quoted run starting at text[*pos] (the quote); appends its content.
Status ReadQuoted(const std::string& text, size_t* pos, std::string* out) {
  char quote = text[*pos];
  size_t end = text.find(quote, *pos + 1);
  if (end == std::string::npos) {
    return FilterError(
        text, std::string("unterminated ") + quote + " at position " + std::to_string(*pos));
  }
  out->append(text, *pos + 1, end - *pos - 1);
  *pos = end + 1;
  return Status::OK();
}

Result<std::vector<Token>> Lex(const std::string& text) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '(' || c == ')' || c == ',') {
      tokens.push_back({c == '('   ? TokenKind::kLeftParen
                        : c == ')' ? TokenKind::kRightParen
                                   : TokenKind::kComma,
                        std::string(1, c)});
      ++i;
    } else if (c == '\'' || c == '"') {
      Token t{TokenKind::kString, ""};
      COHORT_RETURN_IF_ERROR(ReadQuoted(text, &i, &t.text));
      tokens.push_back(std::move(t));
    } else if (c == '=' || c == '!' || c == '<' || c == '>') {
      size_t n = 1;
      if (i + 1 < text.size() && (text[i + 1] == '=' || (c == '<' && text[i + 1] == '>'))) n = 2;
      std::string op = text.substr(i, n);
      i += n;
      if (op == "!") return FilterError(text, "'!' must be followed by '='");
      if (op == "==") op = "=";
      if (op == "<>") op = "!=";
      tokens.push_back({TokenKind::kComparator, op});
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.') {
      char* end = nullptr;
      std::strtod(text.c_str() + i, &end);
      size_t len = static_cast<size_t>(end - (text.c_str() + i));
      if (len == 0) return FilterError(text, "unexpected '" + std::string(1, c) + "'");
      tokens.push_back({TokenKind::kNumber, text.substr(i, len)});
      i += len;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      Token t{TokenKind::kIdentifier, ""};
      while (i < text.size() && IsIdentifierChar(text[i])) t.text += text[i++];
      // entity.`key with spaces` or entity."key"
      if (!t.text.empty() && t.text.back() == '.' && i < text.size() &&
          (text[i] == '`' || text[i] == '"' || text[i] == '\'')) {
        COHORT_RETURN_IF_ERROR(ReadQuoted(text, &i, &t.text));
      }
      tokens.push_back(std::move(t));
    } else if (c == '`') {
      return FilterError(text, "a backtick-quoted key needs an entity prefix (metrics.`key`)");
    } else {
      return FilterError(text, "unexpected character '" + std::string(1, c) + "' at position " +
                                   std::to_string(i));
    }
  }
  return tokens;
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

const std::set<std::string> kRunStringAttributes = {"run_id",  "run_name",     "status",
                                                    "user_id", "artifact_uri", "lifecycle_stage"};
const std::set<std::string> kRunNumericAttributes = {"start_time", "end_time"};
const std::set<std::string> kExperimentStringAttributes = {"name", "experiment_id"};
const std::set<std::string> kExperimentNumericAttributes = {"creation_time", "last_update_time"};

struct Grammar {
  bool runs;  // run search (metrics, params allowed) or experiment search
  const std::set<std::string>& string_attributes;
  const std::set<std::string>& numeric_attributes;
};

// "metrics.loss" -> (kMetric, "loss").
Status SplitIdentifier(const std::string& source, const std::string& identifier, const Grammar& g,
                       Entity* entity, std::string* key) {
  size_t dot = identifier.find('.');
  if (dot == std::string::npos) {
    // A bare name is an attribute, as in MLflow ("name = 'x'", "status = 'FINISHED'").
    return SplitIdentifier(source, "attributes." + identifier, g, entity, key);
  }
  if (dot + 1 == identifier.size()) {
    return FilterError(source, "'" + identifier +
                                   "' is not an identifier: expected metrics.<key>, "
                                   "params.<key>, tags.<key> or attributes.<name>");
  }
  std::string prefix = identifier.substr(0, dot);
  for (char& c : prefix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  *key = identifier.substr(dot + 1);
  if (g.runs && (prefix == "metric" || prefix == "metrics")) {
    *entity = Entity::kMetric;
  } else if (g.runs && (prefix == "param" || prefix == "params" || prefix == "parameter" ||
                        prefix == "parameters")) {
    *entity = Entity::kParam;
  } else if (prefix == "tag" || prefix == "tags") {
    *entity = Entity::kTag;
  } else if (prefix == "attribute" || prefix == "attributes" || prefix == "attr" ||
             prefix == "run") {
    *entity = Entity::kAttribute;
    if (*key == "run_uuid") *key = "run_id";
    if (*key == "created" || *key == "Created") *key = g.runs ? "start_time" : "creation_time";
    if (!g.string_attributes.count(*key) && !g.numeric_attributes.count(*key)) {
      return FilterError(source, "unknown attribute '" + *key + "'");
    }
  } else {
    return FilterError(
        source, "unknown entity '" + identifier.substr(0, dot) + "' in '" + identifier + "'");
  }
  return Status::OK();
}

bool NumericEntity(const Grammar& g, Entity entity, const std::string& key) {
  return entity == Entity::kMetric ||
         (entity == Entity::kAttribute && g.numeric_attributes.count(key) > 0);
}

// A limit of the search limits (search_filter.h) passed: not quoting the
// filter, which may be long.
Status FilterLimit(const std::string& what) {
  return Status::InvalidArgument("Invalid filter: " + what);
}

Result<std::vector<FilterClause>> ParseFilter(const std::string& filter, const Grammar& g) {
  std::vector<FilterClause> clauses;
  auto lexed = Lex(filter);
  if (!lexed.ok()) return lexed.status();
  const std::vector<Token>& t = *lexed;
  size_t i = 0, values = 0;
  while (i < t.size()) {
    if (clauses.size() == kMaxFilterClauses) {
      return FilterLimit("more than " + std::to_string(kMaxFilterClauses) + " clauses (the limit)");
    }
    if (!clauses.empty()) {
      if (t[i].kind != TokenKind::kIdentifier || Upper(t[i].text) != "AND") {
        return FilterError(filter,
                           "expected AND before '" + t[i].text + "' (only AND joins clauses)");
      }
      if (++i == t.size()) return FilterError(filter, "nothing after AND");
    }
    FilterClause c;
    if (t[i].kind != TokenKind::kIdentifier) {
      return FilterError(filter, "expected an identifier, found '" + t[i].text + "'");
    }
    COHORT_RETURN_IF_ERROR(SplitIdentifier(filter, t[i].text, g, &c.entity, &c.key));
    std::string identifier = t[i++].text;
    if (i == t.size()) return FilterError(filter, "no comparator after '" + identifier + "'");
    if (t[i].kind == TokenKind::kComparator) {
      c.comparator = t[i++].text;
    } else if (t[i].kind == TokenKind::kIdentifier) {
      std::string word = Upper(t[i++].text);
      if (word == "NOT" && i < t.size() && Upper(t[i].text) == "IN") {
        ++i;
        word = "NOT IN";
      }
      if (word != "LIKE" && word != "ILIKE" && word != "IN" && word != "NOT IN") {
        return FilterError(filter, "unknown comparator '" + word + "' after '" + identifier + "'");
      }
      c.comparator = word;
    } else {
      return FilterError(
          filter, "expected a comparator after '" + identifier + "', found '" + t[i].text + "'");
    }
    c.numeric = NumericEntity(g, c.entity, c.key);
    bool is_list = c.comparator == "IN" || c.comparator == "NOT IN";
    bool is_like = c.comparator == "LIKE" || c.comparator == "ILIKE";
    bool is_order =
        c.comparator == "<" || c.comparator == "<=" || c.comparator == ">" || c.comparator == ">=";
    if ((c.numeric && (is_like || is_list)) || (!c.numeric && is_order) ||
        (is_list && c.entity != Entity::kAttribute)) {
      return FilterError(
          filter, "comparator '" + c.comparator + "' is not supported for '" + identifier + "'");
    }
    if (i == t.size())
      return FilterError(filter, "no value after '" + identifier + " " + c.comparator + "'");
    if (is_list) {
      if (t[i++].kind != TokenKind::kLeftParen) {
        return FilterError(filter, c.comparator + " needs a parenthesised list of strings");
      }
      while (i < t.size() && t[i].kind == TokenKind::kString) {
        if (++values > kMaxFilterValues) {
          return FilterLimit("more than " + std::to_string(kMaxFilterValues) +
                             " values in IN lists (the limit)");
        }
        c.list.push_back(t[i++].text);
        if (i < t.size() && t[i].kind == TokenKind::kComma) ++i;
      }
      if (i == t.size() || t[i].kind != TokenKind::kRightParen || c.list.empty()) {
        return FilterError(filter, c.comparator + " needs a parenthesised list of strings");
      }
      ++i;
    } else if (c.numeric) {
      if (t[i].kind != TokenKind::kNumber) {
        return FilterError(
            filter, "'" + identifier + "' is compared with a number, found '" + t[i].text + "'");
      }
      c.number = std::strtod(t[i++].text.c_str(), nullptr);
    } else {
      if (t[i].kind != TokenKind::kString) {
        return FilterError(
            filter,
            "'" + identifier + "' is compared with a quoted string, found '" + t[i].text + "'");
      }
      c.text = t[i++].text;
      if (is_like && c.text.size() > kMaxLikePatternBytes) {
        return FilterLimit("a LIKE pattern of " + std::to_string(c.text.size()) +
                           " bytes, more than the limit of " +
                           std::to_string(kMaxLikePatternBytes));
      }
    }
    clauses.push_back(std::move(c));
  }
  return clauses;
}

Result<OrderClause> ParseOrder(const std::string& order_by, const Grammar& g) {
  auto lexed = Lex(order_by);
  if (!lexed.ok()) {
    return Status::InvalidArgument("Invalid order_by clause '" + order_by + "'");
  }
  const std::vector<Token>& t = *lexed;
  OrderClause o;
  if (t.empty() || t.size() > 2 || t[0].kind != TokenKind::kIdentifier) {
    return Status::InvalidArgument("Invalid order_by clause '" + order_by +
                                   "': expected '<identifier> [ASC|DESC]'");
  }
  std::string identifier = t[0].text;
  if (identifier.find('.') == std::string::npos) identifier = "attributes." + identifier;
  Status s = SplitIdentifier(order_by, identifier, g, &o.entity, &o.key);
  if (!s.ok()) return Status::InvalidArgument("Invalid order_by clause '" + order_by + "'");
  if (t.size() == 2) {
    std::string dir = Upper(t[1].text);
    if (t[1].kind != TokenKind::kIdentifier || (dir != "ASC" && dir != "DESC")) {
      return Status::InvalidArgument("Invalid order_by clause '" + order_by +
                                     "': the direction must be ASC or DESC");
    }
    o.ascending = dir == "ASC";
  }
  return o;
}

const Grammar kRunGrammar{true, kRunStringAttributes, kRunNumericAttributes};
const Grammar kExperimentGrammar{false, kExperimentStringAttributes, kExperimentNumericAttributes};

}  // namespace

Result<std::vector<FilterClause>> ParseRunFilter(const std::string& filter) {
  return ParseFilter(filter, kRunGrammar);
}
Result<OrderClause> ParseRunOrderBy(const std::string& order_by) {
  return ParseOrder(order_by, kRunGrammar);
}
Result<std::vector<FilterClause>> ParseExperimentFilter(const std::string& filter) {
  return ParseFilter(filter, kExperimentGrammar);
}
Result<OrderClause> ParseExperimentOrderBy(const std::string& order_by) {
  return ParseOrder(order_by, kExperimentGrammar);
}

Status CheckOrderByCount(size_t clauses) {
  if (clauses <= kMaxOrderByClauses) return Status::OK();
  return Status::InvalidArgument("Invalid order_by: " + std::to_string(clauses) +
                                 " clauses, more than the limit of " +
                                 std::to_string(kMaxOrderByClauses));
}

Status CheckExperimentIdCount(size_t ids) {
  if (ids <= kMaxSearchExperiments) return Status::OK();
  return Status::InvalidArgument("Invalid experiment_ids: " + std::to_string(ids) +
                                 " ids, more than the limit of " +
                                 std::to_string(kMaxSearchExperiments));
}

bool IsNumericAttribute(const std::string& key) {
  return kRunNumericAttributes.count(key) > 0 || kExperimentNumericAttributes.count(key) > 0;
}

}  // namespace cohort::track
