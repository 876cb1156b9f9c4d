// The SQL tracking store's batches and metric histories: one transaction
// per batch, latest values and per-bucket extremes kept as points arrive,
// histories downsampled from rows or buckets.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "track/downsample.h"
#include "track/sql_store.h"
#include "track/validation.h"

namespace cohort::track {
namespace {

// Steps per metric_buckets row (as a shift), and the series length from
// which histories are downsampled from buckets instead of rows.
constexpr int kBucketShift = 10;
constexpr int64_t kRowsDownsampleLimit = 100000;

}  // namespace

// SQLite would store a NaN as NULL, which a primary-key column refuses: a
// NaN is stored as 0 with is_nan set (as MLflow does).
SqlValue MetricValue(double v) { return std::isnan(v) ? SqlValue(0.0) : SqlValue(v); }
double ReadMetricValue(const SqlStatement& s, int value_col, int nan_col) {
  return s.Int(nan_col) ? std::nan("") : s.Double(value_col);
}

// The points a batch adds to one metric_buckets row.
struct SqlStore::BucketUpdate {
  int64_t count = 0;
  const Metric* min = nullptr;  // NaN points count but are never min or max
  const Metric* max = nullptr;
  void Add(const Metric& m) {
    ++count;
    if (std::isnan(m.value)) return;
    if (min == nullptr || m.value < min->value) min = &m;
    if (max == nullptr || m.value > max->value) max = &m;
  }
};

Status SqlStore::LogBatch(const std::string& run_id, const Batch& batch) {
  COHORT_RETURN_IF_ERROR(ValidateBatch(batch));
  std::lock_guard<std::mutex> lock(mu_);
  SqlTransaction tx(db_.get());
  COHORT_RETURN_IF_ERROR(tx.Begin());
  COHORT_RETURN_IF_ERROR(RequireActiveRun(run_id));
  if (!batch.batch_id.empty()) {
    COHORT_RETURN_IF_ERROR(
        db_->Run("INSERT INTO applied_batches VALUES (?, ?) ON CONFLICT DO NOTHING",
                 {batch.batch_id, run_id}));
    if (db_->Changes() == 0) return Status::OK();  // applied before: a replay
  }
  COHORT_RETURN_IF_ERROR(WriteParams(run_id, batch.params));
  for (const Tag& t : batch.tags) {
    COHORT_RETURN_IF_ERROR(db_->Run(kUpsertTag, {run_id, t.key, t.value}));
  }
  COHORT_RETURN_IF_ERROR(WriteMetrics(run_id, batch.metrics));
  return tx.Commit();
}

Result<std::vector<Metric>> SqlStore::GetMetricHistory(const std::string& run_id,
                                                       const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(RequireRun(run_id));
  return ReadSeries(run_id, key, INT64_MIN, INT64_MAX, 0);
}

Result<std::vector<HistoryPoint>> SqlStore::GetMetricHistoryBulkInterval(
    const std::vector<std::string>& run_ids, const std::string& key, int max_results,
    std::optional<int64_t> start_step, std::optional<int64_t> end_step) {
  std::vector<HistoryPoint> out;
  int64_t first = start_step.value_or(INT64_MIN), last = end_step.value_or(INT64_MAX);
  for (const std::string& run_id : run_ids) {
    std::lock_guard<std::mutex> lock(mu_);
    COHORT_RETURN_IF_ERROR(RequireRun(run_id));
    auto stmt = db_->Prepare(
        "SELECT coalesce(sum(count), 0), count(*) FROM metric_buckets WHERE run_uuid = ?"
        " AND key = ? AND bucket BETWEEN ? AND ?");
    if (!stmt.ok()) return stmt.status();
    COHORT_RETURN_IF_ERROR(
        (*stmt)->BindAll({run_id, key, first >> kBucketShift, last >> kBucketShift}));
    auto row = (*stmt)->Step();
    if (!row.ok()) return row.status();
    int64_t points = (*stmt)->Int(0), buckets = (*stmt)->Int(1);
    // Buckets when the series is long and they still give at least half
    // the asked resolution (two points each); rows otherwise.
    bool from_buckets = points > kRowsDownsampleLimit && buckets * 2 >= max_results / 2;
    auto series = from_buckets ? ReadSeriesFromBuckets(run_id, key, first, last)
                               : ReadSeries(run_id, key, first, last, 0);
    if (!series.ok()) return series.status();
    for (Metric& m : DownsampleMinMax(std::move(*series), static_cast<size_t>(max_results))) {
      out.push_back({run_id, std::move(m)});
    }
  }
  return out;
}

// Points of a series with steps in [first, last], in order; `limit` > 0
// keeps that many (from the end when `from_end`).
Result<std::vector<Metric>> SqlStore::ReadSeries(const std::string& run_id, const std::string& key,
                                                 int64_t first, int64_t last, int64_t limit,
                                                 bool from_end) {
  const char* order =
      from_end ? " ORDER BY step DESC, timestamp DESC" : " ORDER BY step, timestamp";
  auto stmt = db_->Prepare(
      std::string("SELECT step, timestamp, value, is_nan FROM metrics WHERE run_uuid = ? AND"
                  " key = ? AND step >= ? AND step <= ?") +
      order + " LIMIT ?");
  if (!stmt.ok()) return stmt.status();
  COHORT_RETURN_IF_ERROR(
      (*stmt)->BindAll({run_id, key, first, last, limit > 0 ? limit : INT64_MAX}));
  std::vector<Metric> series;
  COHORT_RETURN_IF_ERROR((*stmt)->ForEachRow([&](const SqlStatement& r) {
    series.push_back({key, ReadMetricValue(r, 2, 3), r.Int(1), r.Int(0)});
  }));
  return series;
}

// A long series as its first and last points, the raw points of the
// buckets [first, last] cuts, and the lowest and highest point of every
// bucket inside: what min/max downsampling needs, from ~1/500 of the rows.
Result<std::vector<Metric>> SqlStore::ReadSeriesFromBuckets(const std::string& run_id,
                                                            const std::string& key, int64_t first,
                                                            int64_t last) {
  int64_t lo = first >> kBucketShift, hi = last >> kBucketShift;
  // Buckets only partly inside [first, last] are read row by row.
  int64_t inner_lo = first == INT64_MIN || (lo << kBucketShift) == first ? lo : lo + 1;
  int64_t inner_hi = last == INT64_MAX || ((hi + 1) << kBucketShift) - 1 == last ? hi : hi - 1;
  auto head = ReadSeries(run_id, key, first, last, 1);
  if (!head.ok()) return head.status();
  std::vector<Metric> series = std::move(*head);
  if (inner_lo > lo) {
    auto edge = ReadSeries(run_id, key, first, (inner_lo << kBucketShift) - 1, 0);
    if (!edge.ok()) return edge.status();
    series.insert(series.end(), edge->begin(), edge->end());
  }
  auto stmt = db_->Prepare(
      "SELECT min_step, min_timestamp, min_value, max_step, max_timestamp, max_value"
      " FROM metric_buckets WHERE run_uuid = ? AND key = ? AND bucket BETWEEN ? AND ?"
      " AND min_step IS NOT NULL ORDER BY bucket");
  if (!stmt.ok()) return stmt.status();
  COHORT_RETURN_IF_ERROR((*stmt)->BindAll({run_id, key, inner_lo, inner_hi}));
  while (true) {
    auto row = (*stmt)->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    SqlStatement& b = **stmt;
    Metric low{key, b.Double(2), b.Int(1), b.Int(0)};
    Metric high{key, b.Double(5), b.Int(4), b.Int(3)};
    if (high.step < low.step) std::swap(low, high);
    series.push_back(low);
    if (high.step != low.step || high.timestamp != low.timestamp) series.push_back(high);
  }
  if (inner_hi < hi) {
    auto edge = ReadSeries(run_id, key, (inner_hi + 1) << kBucketShift, last, 0);
    if (!edge.ok()) return edge.status();
    series.insert(series.end(), edge->begin(), edge->end());
  }
  auto tail = ReadSeries(run_id, key, first, last, 1, /*from_end=*/true);
  if (!tail.ok()) return tail.status();
  series.insert(series.end(), tail->begin(), tail->end());
  // The first and last points may also be a bucket's extreme or an edge row.
  auto same = [](const Metric& a, const Metric& b) {
    return a.step == b.step && a.timestamp == b.timestamp &&
           (a.value == b.value || (std::isnan(a.value) && std::isnan(b.value)));
  };
  series.erase(std::unique(series.begin(), series.end(), same), series.end());
  return series;
}

// Params are immutable: the same value again is fine, a different one
// fails the batch naming every changed key.
Status SqlStore::WriteParams(const std::string& run_id, const std::vector<Param>& params) {
  std::string changed;
  for (const Param& p : params) {
    auto old = QueryIds("SELECT value FROM params WHERE run_uuid = ? AND key = ?", {run_id, p.key});
    if (!old.ok()) return old.status();
    if (old->empty()) {
      COHORT_RETURN_IF_ERROR(
          db_->Run("INSERT INTO params VALUES (?, ?, ?)", {run_id, p.key, p.value}));
    } else if (old->front() != p.value) {
      changed += (changed.empty() ? "" : ", ") + std::string("{key: '") + p.key +
                 "', old_value: '" + old->front() + "', new_value: '" + p.value + "'}";
    }
  }
  if (!changed.empty()) {
    return Status::InvalidArgument(
        "Changing param values is not allowed. Params were already logged='[" + changed +
        "]' for run ID='" + run_id + "'.");
  }
  return Status::OK();
}

Status SqlStore::WriteMetrics(const std::string& run_id, const std::vector<Metric>& metrics) {
  if (metrics.empty()) return Status::OK();
  // The newest point of each key in this batch, by (step, timestamp, value).
  std::map<std::string, const Metric*> latest;
  for (const Metric& m : metrics) {
    const Metric*& best = latest[m.key];
    if (best == nullptr || std::tie(m.step, m.timestamp) > std::tie(best->step, best->timestamp) ||
        (m.step == best->step && m.timestamp == best->timestamp && m.value > best->value)) {
      best = &m;
    }
  }
  // Only points that were new count in their buckets. Rows per INSERT: as
  // many as the connection likes. PostgreSQL: hundreds, one round trip each,
  // RETURNING the new ones. SQLite: one, a prepared statement reused, its
  // change count telling (RETURNING costs SQLite ~50% more CPU per point).
  std::vector<Metric> inserted;
  inserted.reserve(metrics.size());  // BucketUpdate keeps pointers into it
  const size_t per_insert = db_->RowsPerInsert();
  const bool returning = per_insert > 1;
  std::unique_ptr<SqlStatement> insert;
  size_t prepared_rows = 0;
  std::vector<SqlValue> values;
  for (size_t first = 0; first < metrics.size(); first += per_insert) {
    size_t n = std::min(per_insert, metrics.size() - first);
    if (n != prepared_rows) {
      std::string sql = "INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?)";
      for (size_t i = 1; i < n; ++i) sql += ", (?, ?, ?, ?, ?, ?)";
      sql += " ON CONFLICT DO NOTHING";
      if (returning) sql += " RETURNING key, step, timestamp, value, is_nan";
      auto prepared = db_->Prepare(sql);
      if (!prepared.ok()) return prepared.status();
      insert = std::move(*prepared);
      prepared_rows = n;
    }
    values.clear();
    for (size_t i = first; i < first + n; ++i) {
      const Metric& m = metrics[i];
      values.insert(values.end(), {run_id, m.key, m.step, m.timestamp, MetricValue(m.value),
                                   int64_t{std::isnan(m.value)}});
    }
    COHORT_RETURN_IF_ERROR(insert->BindAll(values));
    COHORT_RETURN_IF_ERROR(insert->ForEachRow([&](const SqlStatement& r) {
      inserted.push_back({r.Text(0), ReadMetricValue(r, 3, 4), r.Int(2), r.Int(1)});
    }));
    if (!returning && db_->Changes() > 0) inserted.push_back(metrics[first]);
    insert->Reset();
  }
  std::map<std::pair<std::string, int64_t>, BucketUpdate> buckets;
  for (const Metric& m : inserted) buckets[{m.key, m.step >> kBucketShift}].Add(m);
  auto upsert = db_->Prepare(
      "INSERT INTO latest_metrics AS l VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (run_uuid, key)"
      " DO UPDATE SET step = ?3, timestamp = ?4, value = ?5, is_nan = ?6"
      " WHERE (?3, ?4, coalesce(?5, 0)) > (l.step, l.timestamp, coalesce(l.value, 0))");
  if (!upsert.ok()) return upsert.status();
  for (const auto& [key, m] : latest) {
    COHORT_RETURN_IF_ERROR(
        (*upsert)->BindAll({run_id, key, m->step, m->timestamp, MetricValue(m->value),
                            int64_t{std::isnan(m->value)}}));
    COHORT_RETURN_IF_ERROR((*upsert)->Run());
    (*upsert)->Reset();
  }
  return WriteBuckets(run_id, buckets);
}

// Folds each bucket's new points into its metric_buckets row. SET
// expressions see the row's old values, so each CASE compares with them.
Status SqlStore::WriteBuckets(
    const std::string& run_id,
    const std::map<std::pair<std::string, int64_t>, BucketUpdate>& buckets) {
  auto upsert = db_->Prepare(
      "INSERT INTO metric_buckets AS b VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
      " ON CONFLICT (run_uuid, key, bucket) DO UPDATE SET count = b.count + ?4,"
      " min_step = CASE WHEN ?7 < b.min_value OR b.min_value IS NULL THEN ?5 ELSE b.min_step END,"
      " min_timestamp = CASE WHEN ?7 < b.min_value OR b.min_value IS NULL THEN ?6"
      "   ELSE b.min_timestamp END,"
      " min_value = CASE WHEN ?7 < b.min_value OR b.min_value IS NULL THEN ?7 ELSE b.min_value END,"
      " max_step = CASE WHEN ?10 > b.max_value OR b.max_value IS NULL THEN ?8 ELSE b.max_step END,"
      " max_timestamp = CASE WHEN ?10 > b.max_value OR b.max_value IS NULL THEN ?9"
      "   ELSE b.max_timestamp END,"
      " max_value = CASE WHEN ?10 > b.max_value OR b.max_value IS NULL THEN ?10"
      "   ELSE b.max_value END");
  if (!upsert.ok()) return upsert.status();
  for (const auto& [where, b] : buckets) {
    auto point = [](const Metric* m, auto field) -> SqlValue {
      return m ? SqlValue(field(*m)) : SqlValue(nullptr);
    };
    auto step = [](const Metric& m) { return m.step; };
    auto ts = [](const Metric& m) { return m.timestamp; };
    auto value = [](const Metric& m) { return m.value; };
    COHORT_RETURN_IF_ERROR((*upsert)->BindAll(
        {run_id, where.first, where.second, b.count, point(b.min, step), point(b.min, ts),
         point(b.min, value), point(b.max, step), point(b.max, ts), point(b.max, value)}));
    COHORT_RETURN_IF_ERROR((*upsert)->Run());
    (*upsert)->Reset();
  }
  return Status::OK();
}

}  // namespace cohort::track
