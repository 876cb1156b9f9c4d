// What the PostgreSQL store does to text before the server sees it: '?'
// placeholders rewritten to $N, and URIs shown without their password.
#include <gtest/gtest.h>

#include "track/postgres_db.h"
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

}  // namespace
}  // namespace cohort::track
