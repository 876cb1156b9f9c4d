// What the PostgreSQL store does to text before the server sees it: '?'
// placeholders rewritten to $N, and URIs shown without their password; the
// advisory lock key docs/tracking.md gives is the one the store takes.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "track/postgres_db.h"
#include "track/postgres_store.h"
#include "track/store.h"

namespace cohort::track {
namespace {

TEST(PostgresPlaceholders, NumberedInOrderAndLeftAloneInsideQuotes) {
  EXPECT_EQ(DollarPlaceholders("SELECT a FROM t WHERE b = ? AND c IN (?,?) LIMIT ?"),
            "SELECT a FROM t WHERE b = $1 AND c IN ($2,$3) LIMIT $4");
  EXPECT_EQ(DollarPlaceholders("INSERT INTO t VALUES (?1, ?2) ON CONFLICT DO UPDATE SET x = ?2"),
            "INSERT INTO t VALUES ($1, $2) ON CONFLICT DO UPDATE SET x = $2");
  EXPECT_EQ(DollarPlaceholders("SELECT '?', \"a?\" FROM t WHERE v = ?10"),
            "SELECT '?', \"a?\" FROM t WHERE v = $10");
}

TEST(StoreUri, PasswordIsLeftOut) {
  EXPECT_EQ(RedactStoreUri("postgresql://alice:s3cret@127.0.0.1:5432/track"),
            "postgresql://alice@127.0.0.1:5432/track");
  EXPECT_EQ(RedactStoreUri("postgresql://alice@db/track?sslmode=disable&password=s3cret&a=b"),
            "postgresql://alice@db/track?sslmode=disable&a=b");
  EXPECT_EQ(RedactStoreUri("postgres://a:p@w@[::1]:5/x"), "postgres://a@[::1]:5/x");
  EXPECT_EQ(RedactStoreUri("postgresql://h"), "postgresql://h");
  EXPECT_EQ(RedactStoreUri("sqlite:/tmp/a:b@c.db"), "sqlite:/tmp/a:b@c.db");
}

// Operators look the key up in pg_locks; every number the page gives for it
// is the store's.
TEST(PostgresStoreLock, DocsGiveTheKeyTheStoreTakes) {
  EXPECT_EQ(PostgresStoreLockKey(), 0x636f686f7274);  // "cohort" in ASCII
  std::ifstream in(std::string(COHORT_SOURCE_DIR) + "/docs/tracking.md");
  ASSERT_TRUE(in) << "docs/tracking.md not found";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const int64_t key = PostgresStoreLockKey();
  const std::map<std::string, int64_t> expected = {{"advisory lock", key},
                                                   {"key", key},
                                                   {"classid =", key >> 32},
                                                   {"objid =", key & 0xffffffff}};
  static const std::regex number(R"((advisory lock|key|classid =|objid =) `?(\d{5,}))");
  std::set<std::string> seen;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), number); it != std::sregex_iterator();
       ++it) {
    EXPECT_EQ((*it)[2].str(), std::to_string(expected.at((*it)[1].str()))) << (*it)[0].str();
    seen.insert((*it)[1].str());
  }
  EXPECT_EQ(seen.size(), expected.size());  // the page gives each form
}

}  // namespace
}  // namespace cohort::track
