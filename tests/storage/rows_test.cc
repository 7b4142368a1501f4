// The row mapping (storage/rows.h) in both dialects, without a database: the
// statements SQLite and PostgreSQL get are the same but for their parameters
// and SQLite's rowid tie-break, so the two stores cannot drift apart.
#include "storage/rows.h"

#include <algorithm>
#include <regex>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// Records the queries asked for; every query returns no rows.
class RecordingSource final : public RowSource {
 public:
  explicit RecordingSource(SqlDialect dialect) : dialect_(dialect) {}
  SqlDialect dialect() const override { return dialect_; }
  absl::Status Query(absl::string_view sql,
                     absl::FunctionRef<absl::Status(RowReader&)>) override {
    queries.emplace_back(sql);
    return absl::OkStatus();
  }
  std::vector<std::string> queries;

 private:
  SqlDialect dialect_;
};

// Records each statement written with its parameter count.
class RecordingWriter final : public RowWriter {
 public:
  explicit RecordingWriter(SqlDialect dialect) : dialect_(dialect) {}
  SqlDialect dialect() const override { return dialect_; }
  absl::Status Write(absl::string_view sql, std::vector<SqlValue> params,
                     absl::Status) override {
    statements.emplace_back(sql);
    param_counts.push_back(params.size());
    this->params.push_back(std::move(params));
    return absl::OkStatus();
  }
  std::vector<std::string> statements;
  std::vector<size_t> param_counts;
  std::vector<std::vector<SqlValue>> params;

 private:
  SqlDialect dialect_;
};

std::vector<std::string> Queries(SqlDialect dialect) {
  RecordingSource source(dialect);
  EXPECT_OK(LoadNodeRows(source).status());
  EXPECT_OK(LoadAllocationRows(source).status());
  EXPECT_OK(LoadEventSequenceRow(source).status());
  return source.queries;
}

// Every kind of mutation, with every list non-empty.
RecordingWriter Writes(SqlDialect dialect) {
  Node node;
  node.name = "n1";
  node.labels = {{"k", "v"}};
  node.allocatable = NodeResources{8000, 1 << 30, 110};
  Device d;
  d.id = "gpu";
  d.mig_slices = {{"mig", "1g.10gb", 0}};
  d.tpu_slice_id = "slice";
  node.devices = {d};
  Allocation a;
  a.id = "a";
  a.node_selector = {{"k", "v"}};
  a.targets = {{"n1", "h", "l", ""}};
  a.device_spellings = {"H100 80G"};
  a.devices = {{"n1", "gpu", "mig", "1g.10gb"}};
  a.pod_resources = NodeResources{500, 1 << 20, 1};
  const std::vector<Mutation> batch = {PutNodeMutation{node},
                                       PutNodeStatusMutation{node},
                                       DeleteNodeMutation{"n1"},
                                       PutAllocationMutation{a, {"u"}, true},
                                       PutAllocationMutation{a, {"u"}, false},
                                       DeleteAllocationMutation{"a"},
                                       PutEventSequenceMutation{1}};
  RecordingWriter writer(dialect);
  for (const Mutation& m : batch) EXPECT_OK(WriteMutationRows(m, writer));
  return writer;
}

// PostgreSQL's `$N` as SQLite's `?N`.
std::string AsSqliteParams(const std::string& sql) {
  return std::regex_replace(sql, std::regex(R"(\$(\d+))"), "?$1");
}

TEST(RowsTest, QueriesDifferOnlyInSqlitesRowidTieBreak) {
  const std::vector<std::string> sqlite = Queries(SqlDialect::kSqlite);
  const std::vector<std::string> postgres = Queries(SqlDialect::kPostgres);
  ASSERT_EQ(sqlite.size(), postgres.size());
  for (size_t i = 0; i < sqlite.size(); ++i) {
    EXPECT_EQ(absl::StrReplaceAll(sqlite[i], {{", rowid", ""}}), postgres[i]);
  }
  EXPECT_THAT(sqlite, Contains(HasSubstr(
                          "FROM allocation_units ORDER BY allocation_id, "
                          "position, rowid")));
}

TEST(RowsTest, MigSlicesLoadByDevicePositionThenStartSlotInBoth) {
  for (SqlDialect dialect : {SqlDialect::kSqlite, SqlDialect::kPostgres}) {
    EXPECT_THAT(Queries(dialect),
                Contains(HasSubstr("FROM mig_slices ORDER BY device_id, "
                                   "position, start_slot")));
  }
}

TEST(RowsTest, WritesDifferOnlyInParameters) {
  const RecordingWriter sqlite = Writes(SqlDialect::kSqlite);
  const RecordingWriter postgres = Writes(SqlDialect::kPostgres);
  ASSERT_EQ(sqlite.statements.size(), postgres.statements.size());
  for (size_t i = 0; i < sqlite.statements.size(); ++i) {
    EXPECT_EQ(sqlite.statements[i], AsSqliteParams(postgres.statements[i]));
    EXPECT_THAT(postgres.statements[i], Not(HasSubstr("?")));
  }
  EXPECT_EQ(sqlite.param_counts, postgres.param_counts);
}

// Each statement gets exactly the parameters it names: an allocation's 31
// columns, a device's 12, and so on.
TEST(RowsTest, EveryStatementGetsTheParametersItNames) {
  const RecordingWriter w = Writes(SqlDialect::kSqlite);
  for (size_t i = 0; i < w.statements.size(); ++i) {
    size_t highest = 0;
    const std::regex param(R"(\?(\d+))");
    for (auto it = std::sregex_iterator(w.statements[i].begin(),
                                        w.statements[i].end(), param);
         it != std::sregex_iterator(); ++it) {
      highest = std::max<size_t>(highest, std::stoul((*it)[1]));
    }
    EXPECT_EQ(w.param_counts[i], highest) << w.statements[i];
  }
  EXPECT_THAT(w.statements, Contains(HasSubstr("?31)")));
}

// `n` parameters of the first statement `m` writes, the last of them `after`
// from its end: a node's allocatable (3, 0), an allocation's pod_resources
// (3, 4), share (3, 1) or expected_duration (1, 0).
std::vector<SqlValue> Params(const Mutation& m, size_t n, size_t after) {
  RecordingWriter writer(SqlDialect::kSqlite);
  EXPECT_OK(WriteMutationRows(m, writer));
  if (writer.params.empty() || writer.params[0].size() < n + after) {
    ADD_FAILURE() << "no statement with " << n + after << " parameters";
    return {};
  }
  const std::vector<SqlValue>& row = writer.params[0];
  return std::vector<SqlValue>(row.end() - after - n, row.end() - after);
}
std::vector<SqlValue> ResourceParams(const Node& node) {
  return Params(PutNodeMutation{node}, 3, 0);
}
std::vector<SqlValue> ResourceParams(const Allocation& a) {
  return Params(PutAllocationMutation{a, {}, true}, 3, 4);
}

// Absent resources are NULL in each of their columns, and present ones are
// their values, zeros too: a load tells the two apart.
TEST(RowsTest, AbsentResourcesAreNullAndZerosAreValues) {
  const std::vector<SqlValue> null(3, std::monostate());
  const std::vector<SqlValue> zeros(3, int64_t{0});
  const std::vector<SqlValue> values = {int64_t{8000}, int64_t{1} << 40,
                                        int64_t{110}};
  Node node;
  node.name = "n1";
  EXPECT_EQ(ResourceParams(node), null);
  node.allocatable = NodeResources{};
  EXPECT_EQ(ResourceParams(node), zeros);
  node.allocatable = NodeResources{8000, int64_t{1} << 40, 110};
  EXPECT_EQ(ResourceParams(node), values);
  Allocation a;
  a.id = "a";
  EXPECT_EQ(ResourceParams(a), null);
  a.pod_resources = NodeResources{};
  EXPECT_EQ(ResourceParams(a), zeros);
  a.pod_resources = NodeResources{8000, int64_t{1} << 40, 110};
  EXPECT_EQ(ResourceParams(a), values);
  // A share likewise, in three columns (its group "" is a value too).
  EXPECT_EQ(Params(PutAllocationMutation{a, {}, true}, 3, 1),
            std::vector<SqlValue>(3, std::monostate()));
  a.share = GpuShare{};
  EXPECT_EQ(Params(PutAllocationMutation{a, {}, true}, 3, 1),
            (std::vector<SqlValue>{int64_t{0}, int64_t{0}, std::string()}));
  a.share = GpuShare{470, int64_t{3} << 30, "ml"};
  EXPECT_EQ(Params(PutAllocationMutation{a, {}, true}, 3, 1),
            (std::vector<SqlValue>{int64_t{470}, int64_t{3} << 30,
                                   std::string("ml")}));
  EXPECT_EQ(ResourceParams(a), values);
  // expected_duration in nanoseconds, 0 when not given.
  EXPECT_EQ(Params(PutAllocationMutation{a, {}, true}, 1, 0),
            std::vector<SqlValue>{int64_t{0}});
  a.expected_duration = absl::Minutes(90);
  EXPECT_EQ(Params(PutAllocationMutation{a, {}, true}, 1, 0),
            std::vector<SqlValue>{int64_t{5'400'000'000'000}});
}

// A node's re-registration writes its allocatable over the stored one, absent
// included; a status update leaves it alone.
TEST(RowsTest, NodeUpsertReplacesAllocatableAndStatusLeavesIt) {
  const RecordingWriter w = Writes(SqlDialect::kPostgres);
  EXPECT_THAT(
      w.statements,
      Contains(HasSubstr("ON CONFLICT (name) DO UPDATE SET schedulable = $2, "
                         "last_heartbeat_unix_ns = $3, "
                         "allocatable_cpu_milli = $4, "
                         "allocatable_memory_bytes = $5, "
                         "allocatable_pods = $6")));
  EXPECT_THAT(w.statements,
              Contains("UPDATE nodes SET schedulable = $2, "
                       "last_heartbeat_unix_ns = $3 WHERE name = $1"));
}

}  // namespace
}  // namespace accelsched
