// The SQL tracking store's dataset inputs (runs/log-inputs): datasets kept
// once per experiment by (name, digest), and which run used which.
#include "track/sql_store.h"
#include "track/validation.h"

namespace cohort::track {

Status SqlStore::LogInputs(const std::string& run_id, const std::vector<DatasetInput>& inputs) {
  COHORT_RETURN_IF_ERROR(ValidateDatasetInputs(inputs));
  std::lock_guard<std::mutex> lock(mu_);
  SqlTransaction tx(db_.get());
  COHORT_RETURN_IF_ERROR(tx.Begin());
  COHORT_RETURN_IF_ERROR(RequireActiveRun(run_id));
  auto experiment = QueryIds("SELECT experiment_id FROM runs WHERE run_uuid = ?", {run_id});
  if (!experiment.ok()) return experiment.status();
  SqlValue experiment_id = ExperimentKey(experiment->front());
  for (const DatasetInput& input : inputs) {
    const Dataset& d = input.dataset;
    COHORT_RETURN_IF_ERROR(
        db_->Run("INSERT INTO datasets VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                 {experiment_id, d.name, d.digest, d.source_type, d.source, d.schema, d.profile}));
    COHORT_RETURN_IF_ERROR(db_->Run("INSERT INTO inputs VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                                    {run_id, d.name, d.digest}));
    if (db_->Changes() == 0) continue;  // the run has this input already
    for (const Tag& t : input.tags) {
      COHORT_RETURN_IF_ERROR(db_->Run(
          "INSERT INTO input_tags VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_uuid, name, digest, key)"
          " DO UPDATE SET value = excluded.value",
          {run_id, d.name, d.digest, t.key, t.value}));
    }
  }
  return tx.Commit();
}

Status SqlStore::LoadInputs(const std::string& in, const std::vector<SqlValue>& values,
                            std::map<std::string, Run>* found) {
  auto datasets = db_->Prepare(
      "SELECT i.run_uuid, d.name, d.digest, d.source_type, d.source, d.dataset_schema,"
      " d.dataset_profile FROM inputs i JOIN runs r ON r.run_uuid = i.run_uuid JOIN datasets d"
      " ON d.experiment_id = r.experiment_id AND d.name = i.name AND d.digest = i.digest"
      " WHERE i.run_uuid IN " +
      in + " ORDER BY i.run_uuid, i.name, i.digest");
  if (!datasets.ok()) return datasets.status();
  COHORT_RETURN_IF_ERROR((*datasets)->BindAll(values));
  COHORT_RETURN_IF_ERROR((*datasets)->ForEachRow([&](const SqlStatement& s) {
    auto it = found->find(s.Text(0));
    if (it == found->end()) return;
    it->second.inputs.push_back(
        {{s.Text(1), s.Text(2), s.Text(3), s.Text(4), s.Text(5), s.Text(6)}, {}});
  }));
  auto tags = db_->Prepare(
      "SELECT run_uuid, name, digest, key, value FROM input_tags"
      " WHERE run_uuid IN " +
      in + " ORDER BY run_uuid, name, digest, key");
  if (!tags.ok()) return tags.status();
  COHORT_RETURN_IF_ERROR((*tags)->BindAll(values));
  return (*tags)->ForEachRow([&](const SqlStatement& s) {
    auto it = found->find(s.Text(0));
    if (it == found->end()) return;
    for (DatasetInput& input : it->second.inputs) {
      if (input.dataset.name == s.Text(1) && input.dataset.digest == s.Text(2)) {
        input.tags.push_back({s.Text(3), s.Text(4)});
      }
    }
  });
}

}  // namespace cohort::track
