// Parsing of MLflow's search grammar: filter strings ("metrics.loss < 0.5 AND
// params.lr = '0.1'") and order_by clauses ("metrics.loss DESC"). The result
// is a list of typed clauses that a store turns into its own query with bound
// values, so no filter text ever reaches SQL.
#ifndef COHORT_TRACK_SEARCH_FILTER_H_
#define COHORT_TRACK_SEARCH_FILTER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "cohort/status.h"

namespace cohort::track {

enum class Entity { kMetric, kParam, kTag, kAttribute };

struct FilterClause {
  Entity entity = Entity::kAttribute;
  std::string key;         // "loss"; for attributes the column: "run_id", "start_time"
  std::string comparator;  // = != < <= > >= LIKE ILIKE IN "NOT IN"
  bool numeric = false;    // the value is `number` (metrics, numeric attributes)
  double number = 0;
  std::string text;               // string value
  std::vector<std::string> list;  // IN / NOT IN values
};

struct OrderClause {
  Entity entity = Entity::kAttribute;
  std::string key;
  bool ascending = true;
};

// Limits of one search, checked before any SQL is built, so that a search
// too big for the database is a bad request naming its limit, never a
// database error or worse. SQLite joins at most 64 tables (a sort by a
// metric, param or tag is one join); SQLite 3.40 (Debian 12) crashes with
// SIGSEGV on a query with a join and 64 or more ORDER BY terms, and a run
// search's sort key is two terms (runs without the value last, then the
// value), so 16 keys stay far below both. SQLite nests expressions at most
// 1000 deep (each AND of a filter is a level), binds at most 32766 values
// per statement (all of these together stay below it) and matches LIKE
// patterns of at most 50000 bytes. MLflow documents no limits of its own.
inline constexpr size_t kMaxOrderByClauses = 16;
inline constexpr size_t kMaxFilterClauses = 100;
inline constexpr size_t kMaxFilterValues = 10000;  // of all IN lists of a filter
inline constexpr size_t kMaxLikePatternBytes = 50000;
inline constexpr size_t kMaxSearchExperiments = 10000;  // experiment_ids of a run search

// "Invalid order_by: N clauses, more than the limit of 16" past the limit.
Status CheckOrderByCount(size_t clauses);
// The same for a run search's experiment_ids.
Status CheckExperimentIdCount(size_t ids);

// Run search: metrics/params/tags/attributes (run_id, run_name, status,
// user_id, artifact_uri, start_time, end_time). Fails with a message that
// quotes the offending part of `filter`, or names the limit passed.
Result<std::vector<FilterClause>> ParseRunFilter(const std::string& filter);
Result<OrderClause> ParseRunOrderBy(const std::string& order_by);

// Experiment search: attributes name, creation_time, last_update_time and tags.
Result<std::vector<FilterClause>> ParseExperimentFilter(const std::string& filter);
Result<OrderClause> ParseExperimentOrderBy(const std::string& order_by);

// True for an attribute compared as a number (start_time, end_time, ...).
bool IsNumericAttribute(const std::string& key);

}  // namespace cohort::track

#endif  // COHORT_TRACK_SEARCH_FILTER_H_
