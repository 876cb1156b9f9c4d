// Parsing of MLflow's search grammar: filter strings ("metrics.loss < 0.5 AND
// params.lr = '0.1'") and order_by clauses ("metrics.loss DESC"). The result
// is a list of typed clauses that a store turns into its own query with bound
// values, so no filter text ever reaches SQL.
#ifndef COHORT_TRACK_SEARCH_FILTER_H_
#define COHORT_TRACK_SEARCH_FILTER_H_

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

// Run search: metrics/params/tags/attributes (run_id, run_name, status,
// user_id, artifact_uri, start_time, end_time). Fails with a message that
// quotes the offending part of `filter`.
Result<std::vector<FilterClause>> ParseRunFilter(const std::string& filter);
Result<OrderClause> ParseRunOrderBy(const std::string& order_by);

// Experiment search: attributes name, creation_time, last_update_time and tags.
Result<std::vector<FilterClause>> ParseExperimentFilter(const std::string& filter);
Result<OrderClause> ParseExperimentOrderBy(const std::string& order_by);

// True for an attribute compared as a number (start_time, end_time, ...).
bool IsNumericAttribute(const std::string& key);

}  // namespace cohort::track

#endif  // COHORT_TRACK_SEARCH_FILTER_H_
