// The settings table (common/settings.h): its parser's messages, the
// runtime's defaults against it, and docs/configuration.md against it.
#include "common/settings.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "engine/runtime.h"
#include "support/fake_env.h"

namespace cohort {
namespace {

EnvLookup Env(std::map<std::string, std::string> values) {
  return testing::FakeEnv(std::move(values));
}

std::string ErrorOf(const char* variable, const std::string& text) {
  return ParseSetting(*FindSetting(variable), text, variable).status().message();
}

TEST(Settings, ParseNamesTheSettingAndTheValue) {
  EXPECT_EQ(ErrorOf("COHORT_TCP_STREAMS", "99"),
            "COHORT_TCP_STREAMS must be between 1 and 16, not 99");
  EXPECT_EQ(ErrorOf("COHORT_TCP_STREAMS", "2x"), "COHORT_TCP_STREAMS='2x' is not an integer");
  EXPECT_EQ(ErrorOf("COHORT_CHUNK_BYTES", "0"), "COHORT_CHUNK_BYTES must be positive, not 0");
  EXPECT_EQ(ErrorOf("COHORT_TIMEOUT", "0"), "COHORT_TIMEOUT must be positive, not 0");
  EXPECT_EQ(ErrorOf("COHORT_TIMEOUT", "soon"), "COHORT_TIMEOUT='soon' is not a number");
  EXPECT_EQ(ErrorOf("COHORT_CYCLE_TIME", "-1"), "COHORT_CYCLE_TIME must not be negative, not -1");
  EXPECT_EQ(ErrorOf("COHORT_TRANSPORT", "ib"), "COHORT_TRANSPORT='ib' is not auto, shm or tcp");
  EXPECT_EQ(ErrorOf("COHORT_FUSION_THRESHOLD", "-1"),
            "COHORT_FUSION_THRESHOLD: '-1' is not a byte size (e.g. 4096, 64K, 16M, 1G)");
  // On the command line the flag is named instead.
  EXPECT_EQ(ParseSetting(*FindSettingByFlag("--transport"), "ib", "--transport").status().message(),
            "--transport 'ib' is not auto, shm or tcp");
  Result<SettingValue> ok = ParseSetting(*FindSetting("COHORT_FUSION_THRESHOLD"), "16M", "x");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->number, 16 << 20);
  EXPECT_EQ(FindSetting("COHORT_NOT_A_SETTING"), nullptr);
  EXPECT_EQ(ReadSetting(Env({}), "COHORT_NOT_A_SETTING").status().code(), Status::Code::kInternal);
}

TEST(Settings, EveryDefaultParsesAndEveryFlagIsUnique) {
  std::map<std::string, std::string> flags;
  for (const SettingSpec& s : AllSettings()) {
    EXPECT_TRUE(ReadSetting(Env({}), s.variable).ok()) << s.variable;
    if (s.flag == nullptr) continue;
    EXPECT_TRUE(flags.emplace(s.flag, s.variable).second) << s.flag << " is used twice";
    EXPECT_EQ(FindSettingByFlag(s.flag), &s);
  }
}

TEST(RuntimeSettings, DefaultsAreTheTables) {
  Result<RuntimeSettings> read = ReadRuntimeSettings(Env({}));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  const RuntimeSettings initial;
  EXPECT_EQ(read->timeout_seconds, initial.timeout_seconds);
  EXPECT_EQ(read->force_tcp, initial.force_tcp);
  EXPECT_EQ(read->allreduce_algorithm, initial.allreduce_algorithm);
  EXPECT_EQ(read->small_message_bytes, initial.small_message_bytes);
  EXPECT_EQ(read->chunk_bytes, initial.chunk_bytes);
  EXPECT_EQ(read->shm_slot_bytes, initial.shm_slot_bytes);
  EXPECT_EQ(read->shm_single_copy, initial.shm_single_copy);
  EXPECT_EQ(read->shm_single_copy_bytes, initial.shm_single_copy_bytes);
  EXPECT_EQ(read->tcp_streams, initial.tcp_streams);
  EXPECT_EQ(read->test_hosts, initial.test_hosts);
  EXPECT_EQ(read->engine.fusion_threshold_bytes, initial.engine.fusion_threshold_bytes);
  EXPECT_EQ(read->engine.fusion_max_tensor_bytes, initial.engine.fusion_max_tensor_bytes);
  EXPECT_EQ(read->engine.cycle_time_ms, initial.engine.cycle_time_ms);
  EXPECT_EQ(read->engine.stall_check_seconds, initial.engine.stall_check_seconds);
  EXPECT_EQ(read->engine.stall_shutdown_seconds, initial.engine.stall_shutdown_seconds);
  EXPECT_EQ(read->engine.deadlock_seconds, initial.engine.deadlock_seconds);
  EXPECT_EQ(read->engine.timeline_path, initial.engine.timeline_path);
  EXPECT_EQ(read->engine.cache_capacity, initial.engine.cache_capacity);

  Result<RuntimeSettings> set = ReadRuntimeSettings(Env({{"COHORT_TCP_STREAMS", "4"},
                                                         {"COHORT_SHM_SLOT_BYTES", "5000"},
                                                         {"COHORT_TRANSPORT", "tcp"},
                                                         {"COHORT_FUSION_THRESHOLD", "0"}}));
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->tcp_streams, 4);
  EXPECT_EQ(set->shm_slot_bytes, 8192u) << "rounded up to whole pages";
  EXPECT_TRUE(set->force_tcp);
  EXPECT_EQ(set->engine.fusion_threshold_bytes, 0u);
}

// The cells of a markdown table row, split at '|' not escaped as '\|'.
std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|' && line[i - 1] != '\\') {
      cells.push_back(cell.substr(cell.find_first_not_of(' ') == std::string::npos
                                      ? cell.size()
                                      : cell.find_first_not_of(' ')));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return cells;
}

TEST(Settings, EveryRowHasAScopeNamedInTheDocs) {
  std::map<std::string, int> per_scope;
  for (const SettingSpec& s : AllSettings()) ++per_scope[SettingScopeName(s.scope)];
  EXPECT_EQ(per_scope.size(), 7u);
  for (const char* scope :
       {"runtime", "launcher", "loader", "tracking", "queue", "sweep", "testing"}) {
    EXPECT_GT(per_scope[scope], 0) << scope;
  }
  EXPECT_EQ(SettingScopeName(FindSetting("COHORT_SWEEP_TRIAL")->scope), std::string("sweep"));
  EXPECT_EQ(SettingScopeName(FindSetting("COHORT_TEST_HOSTS")->scope), std::string("testing"));
  EXPECT_EQ(SettingScopeName(FindSetting("COHORT_RANK")->scope), std::string("launcher"));
}

TEST(Settings, AnUnsetRowWithoutDefaultReadsAsEmpty) {
  Result<SettingValue> rank = ReadSetting(Env({}), "COHORT_RANK");
  ASSERT_TRUE(rank.ok()) << rank.status().ToString();
  EXPECT_EQ(rank->text, "");
  rank = ReadSetting(Env({{"COHORT_RANK", "3"}}), "COHORT_RANK");
  ASSERT_TRUE(rank.ok()) << rank.status().ToString();
  EXPECT_EQ(rank->number, 3);
  EXPECT_EQ(ReadSetting(Env({{"COHORT_RANK", "x"}}), "COHORT_RANK").status().message(),
            "COHORT_RANK='x' is not an integer");
}

TEST(Settings, ReportSaysWhereEachValueCameFrom) {
  const std::vector<SettingReport> reports =
      ReportSettings(Env({{"COHORT_TCP_STREAMS", "4"}, {"COHORT_TIMEOUT", "0"}}),
                     {{"COHORT_TRANSPORT", "tcp"}, {"COHORT_CYCLE_TIME", "-1"}});
  ASSERT_EQ(reports.size(), AllSettings().size());
  std::map<std::string, const SettingReport*> by_name;
  for (const SettingReport& r : reports) by_name[r.spec->variable] = &r;
  EXPECT_EQ(by_name["COHORT_TCP_STREAMS"]->text, "4");
  EXPECT_EQ(by_name["COHORT_TCP_STREAMS"]->source, SettingSource::kEnvironment);
  EXPECT_EQ(by_name["COHORT_TRANSPORT"]->text, "tcp");
  EXPECT_EQ(by_name["COHORT_TRANSPORT"]->source, SettingSource::kFlag);
  EXPECT_EQ(by_name["COHORT_CHUNK_BYTES"]->text, "256K");
  EXPECT_EQ(by_name["COHORT_CHUNK_BYTES"]->source, SettingSource::kDefault);
  EXPECT_EQ(by_name["COHORT_RANK"]->text, "");
  EXPECT_TRUE(by_name["COHORT_RANK"]->valid.ok());
  EXPECT_EQ(by_name["COHORT_TIMEOUT"]->valid.message(), "COHORT_TIMEOUT must be positive, not 0");
  EXPECT_EQ(by_name["COHORT_CYCLE_TIME"]->valid.message(),
            "--cycle-time must not be negative, not -1");
  EXPECT_EQ(SettingSourceName(SettingSource::kFlag), std::string("flag"));
}

TEST(Settings, ConfigurationDocAgreesWithTheTable) {
  std::ifstream doc(std::string(COHORT_SOURCE_DIR) + "/docs/configuration.md");
  ASSERT_TRUE(doc) << "docs/configuration.md not found";
  std::map<std::string, std::vector<std::string>> rows;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("| `COHORT_", 0) != 0 && line.rfind("| `MLFLOW_", 0) != 0) continue;
    std::vector<std::string> cells = Cells(line);
    const std::string variable = cells[0].substr(1, cells[0].find('`', 1) - 1);
    rows[variable] = cells;
  }
  for (const SettingSpec& s : AllSettings()) {
    SCOPED_TRACE(s.variable);
    auto it = rows.find(s.variable);
    ASSERT_NE(it, rows.end()) << "no row in docs/configuration.md";
    ASSERT_GE(it->second.size(), 4u);
    const std::string& flag = it->second[1];
    const std::string& default_cell = it->second[2];
    if (s.flag != nullptr) {
      EXPECT_EQ(flag.rfind(std::string("`") + s.flag + " ", 0), 0u) << "flag column: " << flag;
    } else {
      EXPECT_EQ(flag.find("`--"), std::string::npos) << "flag column: " << flag;
    }
    const std::string expected =
        s.default_text[0] == '\0' ? "unset" : std::string("`") + s.default_text + "`";
    EXPECT_EQ(default_cell.rfind(expected, 0), 0u) << "default column: " << default_cell;
  }
  // And no row documents a variable the table lacks.
  for (const auto& [variable, cells] : rows) {
    EXPECT_NE(FindSetting(variable), nullptr)
        << "docs/configuration.md documents " << variable << ", the settings table has no row";
  }
}

}  // namespace
}  // namespace cohort
