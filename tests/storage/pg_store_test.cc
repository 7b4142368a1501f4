// The PostgreSQL store against a real PostgreSQL 15 started for this test
// binary: the Store contract (tests/support/store_conformance.h), then what
// only a shared database has: leader election, fencing, reconnection,
// concurrent migration. One process runs every case (tests/CMakeLists.txt), so
// one server serves them all, each case on a database of its own.
#include "storage/pg_store.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/base/status_macros.h"
#include "core/commit/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/pg_connection.h"
#include "storage/pg_leader_election.h"
#include "storage/pg_schema.h"
#include "tests/support/postgres_instance.h"
#include "tests/support/status_matchers.h"
#include "tests/support/store_conformance.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The server every case shares, started on first use and stopped at exit.
class SharedPostgres : public testing::Environment {
 public:
  static PostgresInstance& Get() {
    EXPECT_NE(instance_, nullptr) << "PostgreSQL did not start";
    return *instance_;
  }
  void SetUp() override {
    dir_ = std::filesystem::path(testing::TempDir()) /
           absl::StrCat("accelsched-pg-store-test-", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    absl::StatusOr<std::unique_ptr<PostgresInstance>> pg =
        PostgresInstance::Start(dir_.string());
    ASSERT_OK(pg);
    instance_ = pg->release();
  }
  void TearDown() override {
    delete instance_;
    instance_ = nullptr;
    std::filesystem::remove_all(dir_);
  }

 private:
  static PostgresInstance* instance_;
  std::filesystem::path dir_;
};
PostgresInstance* SharedPostgres::instance_ = nullptr;
const auto* const kEnvironment =
    testing::AddGlobalTestEnvironment(new SharedPostgres);

// A database of its own per test.
std::string FreshDatabase() {
  static std::atomic<int> next{0};
  absl::StatusOr<std::string> uri =
      SharedPostgres::Get().CreateDatabase(absl::StrCat("t", next++));
  EXPECT_OK(uri);
  return uri.ok() ? *uri : "";
}

PgLeaderElection::Options ElectionOptions(const std::string& address,
                                          absl::Duration lease) {
  PgLeaderElection::Options options;
  options.address = address;
  options.lease = lease;
  // A killed holder is replaced this long after its last renewal.
  options.renew_deadline = std::min(lease / 2, absl::Milliseconds(200));
  return options;
}

// Opens a PgStore on a fresh database and makes it leader, as a server does:
// the conformance suite's writes are a leader's writes.
class PgFactory {
 public:
  PgFactory() {
    absl::StatusOr<std::unique_ptr<PgLeaderElection>> election =
        PgLeaderElection::Open(uri_, ElectionOptions("test", absl::Hours(1)));
    EXPECT_OK(election);
    if (!election.ok()) return;
    election_ = std::move(*election);
    absl::StatusOr<int64_t> epoch = election_->TryAcquire();
    EXPECT_OK(epoch);
    epoch_ = epoch.ok() ? *epoch : 0;
    EXPECT_GT(epoch_, 0);
    absl::StatusOr<std::unique_ptr<Store>> first = OpenStore();
    EXPECT_OK(first);
    if (first.ok()) first_ = std::move(*first);
  }

  std::unique_ptr<Store> Open() {
    if (first_ != nullptr) return std::move(first_);
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore();
    EXPECT_OK(store);
    return store.ok() ? std::move(*store) : nullptr;
  }
  // Runs `sql` on a connection of its own, beside the open store.
  absl::Status RunSql(const std::string& sql) {
    ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> db,
                     PgConnection::Open(uri_, PgConnection::Options()));
    return db->Exec(sql);
  }

 private:
  absl::StatusOr<std::unique_ptr<Store>> OpenStore() {
    ASSIGN_OR_RETURN(std::unique_ptr<PgStore> store,
                     PgStore::Open(uri_, PgStore::Options()));
    store->set_epoch(epoch_);
    return std::unique_ptr<Store>(std::move(store));
  }

  std::string uri_ = FreshDatabase();
  std::unique_ptr<Store> first_;
  std::unique_ptr<PgLeaderElection> election_;
  int64_t epoch_ = 0;
};

class PgFactoryName {
 public:
  template <typename T>
  static std::string GetName(int) {
    return "Postgres";
  }
};

INSTANTIATE_TYPED_TEST_SUITE_P(All, StoreConformanceTest,
                               ::testing::Types<PgFactory>, PgFactoryName);
INSTANTIATE_TYPED_TEST_SUITE_P(All, SqlStoreConformanceTest,
                               ::testing::Types<PgFactory>, PgFactoryName);

Node OneNode(const std::string& name) {
  Node n;
  n.name = name;
  n.schedulable = true;
  n.last_heartbeat = absl::FromUnixSeconds(1700000000);
  Device d;
  d.id = name + "-gpu0";
  d.model = "nvidia-tesla-t4";
  d.healthy = true;
  n.devices.push_back(d);
  return n;
}

absl::Status PutNode(Store& store, const std::string& name) {
  const Mutation m = PutNodeMutation{OneNode(name)};
  return store.Apply(absl::MakeConstSpan(&m, 1));
}

std::vector<std::string> NodeNames(Store& store) {
  std::vector<std::string> names;
  absl::StatusOr<std::vector<Node>> nodes = store.LoadNodes();
  EXPECT_OK(nodes);
  if (nodes.ok()) {
    for (const Node& n : *nodes) names.push_back(n.name);
  }
  return names;
}

class PgLeaderTest : public testing::Test {
 protected:
  std::unique_ptr<PgStore> OpenStore(std::function<void()> on_fenced = {}) {
    PgStore::Options options;
    options.on_fenced = std::move(on_fenced);
    absl::StatusOr<std::unique_ptr<PgStore>> store =
        PgStore::Open(uri_, std::move(options));
    EXPECT_OK(store);
    return store.ok() ? std::move(*store) : nullptr;
  }
  std::unique_ptr<PgLeaderElection> OpenElection(const std::string& address,
                                                 absl::Duration lease) {
    absl::StatusOr<std::unique_ptr<PgLeaderElection>> e =
        PgLeaderElection::Open(uri_, ElectionOptions(address, lease));
    EXPECT_OK(e);
    return e.ok() ? std::move(*e) : nullptr;
  }
  // `election`'s takeover once the holder's session has ended: PostgreSQL
  // removes an ended session from pg_stat_activity asynchronously, so this
  // tries until it succeeds, for at most 10 s (the holders' leases here run
  // an hour: a takeover within the bound is the session rule's, not the
  // lease's). Its epoch, or 0 when none came in time.
  int64_t TakeOverFromEndedSession(PgLeaderElection& election) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (true) {
      absl::StatusOr<int64_t> epoch = election.TryAcquire();
      EXPECT_OK(epoch);
      if (!epoch.ok()) return 0;
      if (*epoch != 0 || absl::Now() >= deadline) return *epoch;
      absl::SleepFor(absl::Milliseconds(20));
    }
  }

  std::string uri_ = FreshDatabase();
};

TEST_F(PgLeaderTest, OneLeaderAtATimeAndANewOneWhenItsSessionEnds) {
  PgLeaderElection::Options holder = ElectionOptions("a:1", absl::Hours(1));
  holder.renew_deadline = absl::Seconds(2);
  holder.connection.application_name = "holder-a";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgLeaderElection> a,
                       PgLeaderElection::Open(uri_, holder));
  auto b = OpenElection("b:1", absl::Hours(1));
  ASSERT_OK_AND_ASSIGN(const int64_t first, a->TryAcquire());
  EXPECT_EQ(first, 1);
  // Held, with an hour's lease and a live session: nobody else gets it.
  EXPECT_THAT(b->TryAcquire(), IsOkAndHolds(0));
  EXPECT_THAT(a->TryAcquire(), IsOkAndHolds(0));
  ASSERT_OK_AND_ASSIGN(PgLeaderElection::Leader leader, b->Current());
  EXPECT_EQ(leader.epoch, 1);
  EXPECT_EQ(leader.address, "a:1");
  ASSERT_OK(a->Renew(first));
  const absl::Time renewed = absl::Now();
  // The holder's session ends (its process killed, or only its session:
  // then it still serves up to its own renew deadline after its last
  // renewal, 2 s here, though b's is 200 ms).
  a.reset();
  // PostgreSQL removes the ended session asynchronously (bounded wait).
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    absl::StatusOr<std::string> left = SharedPostgres::Get().Psql(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
        "'holder-a'",
        uri_.substr(uri_.rfind('/') + 1));
    ASSERT_OK(left);
    if (*left == "0") break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  // Gone, but not taken over before its deadline...
  EXPECT_THAT(b->TryAcquire(), IsOkAndHolds(0));
  if (absl::Now() - renewed < absl::Milliseconds(1500)) {
    EXPECT_GT(b->next_attempt(), absl::ZeroDuration());
    EXPECT_LE(b->next_attempt(), absl::Seconds(2));
  }
  // ...and taken over once it has passed, long before the hour's lease.
  absl::SleepFor(std::min(b->next_attempt(), absl::Seconds(2)));
  const int64_t second = TakeOverFromEndedSession(*b);
  EXPECT_EQ(second, 2);
  ASSERT_OK_AND_ASSIGN(leader, b->Current());
  EXPECT_EQ(leader.address, "b:1");
}

TEST_F(PgLeaderTest, AnExpiredLeaseIsTakenOverAndItsHolderCannotRenew) {
  auto a = OpenElection("a:1", absl::Milliseconds(300));
  auto b = OpenElection("b:1", absl::Milliseconds(300));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_OK_AND_ASSIGN(const int64_t first, a->TryAcquire());
  // `a` stays connected (frozen, say) and stops renewing.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  int64_t second = 0;
  while (second == 0 && absl::Now() < deadline) {
    ASSERT_OK_AND_ASSIGN(second, b->TryAcquire());
    if (second == 0) absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(second, first + 1);
  EXPECT_THAT(a->Renew(first),
              StatusIs(absl::StatusCode::kFailedPrecondition, testing::_));
  EXPECT_OK(b->Renew(second));
}

TEST_F(PgLeaderTest, AResignedLeaseIsTakenOverAtOnce) {
  auto a = OpenElection("a:1", absl::Hours(1));
  auto b = OpenElection("b:1", absl::Hours(1));
  ASSERT_OK_AND_ASSIGN(const int64_t first, a->TryAcquire());
  EXPECT_OK(a->Resign(first));
  EXPECT_THAT(b->TryAcquire(), IsOkAndHolds(first + 1));
  // Resigning an epoch that is no longer current changes nothing.
  EXPECT_OK(a->Resign(first));
  EXPECT_THAT(a->TryAcquire(), IsOkAndHolds(0));
}

TEST_F(PgLeaderTest, AWriteOfAnOldEpochNeverCommits) {
  auto a = OpenElection("a:1", absl::Hours(1));
  auto b = OpenElection("b:1", absl::Hours(1));
  std::atomic<int> fenced{0};
  auto old_store = OpenStore([&fenced] { ++fenced; });
  auto new_store = OpenStore();
  ASSERT_OK_AND_ASSIGN(const int64_t first, a->TryAcquire());
  old_store->set_epoch(first);
  ASSERT_OK(PutNode(*old_store, "before"));
  a.reset();
  const int64_t second = TakeOverFromEndedSession(*b);
  ASSERT_GT(second, first);
  new_store->set_epoch(second);

  absl::Status s = PutNode(*old_store, "after");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kUnavailable, testing::_));
  EXPECT_THAT(s.message(), HasSubstr("the leader is at b:1"));
  EXPECT_EQ(fenced.load(), 1);
  EXPECT_OK(PutNode(*new_store, "by-new"));
  EXPECT_THAT(NodeNames(*new_store), testing::ElementsAre("before", "by-new"));
  // A store no server was elected with writes nothing either.
  auto unelected = OpenStore();
  EXPECT_THAT(PutNode(*unelected, "x"),
              StatusIs(absl::StatusCode::kUnavailable, testing::_));
  EXPECT_THAT(NodeNames(*new_store), testing::ElementsAre("before", "by-new"));
}

// Load reads one snapshot: an allocation another session commits while Load
// runs, after its SELECT of allocations and before its SELECT of their
// devices, comes back whole or not at all (never as devices without their
// allocation).
TEST_F(PgLeaderTest, LoadReadsOneSnapshot) {
  auto election = OpenElection("a:1", absl::Hours(1));
  auto store = OpenStore();
  ASSERT_OK_AND_ASSIGN(const int64_t epoch, election->TryAcquire());
  store->set_epoch(epoch);
  ASSERT_OK(PutNode(*store, "n0"));

  // Holds Load at its SELECT of allocation_devices until this commits.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgConnection> other,
                       PgConnection::Open(uri_, PgConnection::Options()));
  ASSERT_OK(other->Exec("BEGIN"));
  ASSERT_OK(
      other->Exec("LOCK TABLE allocation_devices IN ACCESS EXCLUSIVE MODE"));
  absl::StatusOr<StoredState> loaded;
  std::thread loading([&] { loaded = store->Load(); });
  // On every way out, a failed assertion's too: the lock goes, Load ends.
  absl::Cleanup finish = [&] {
    other->RollbackIfOpen();
    if (loading.joinable()) loading.join();
  };
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgConnection> watcher,
                       PgConnection::Open(uri_, PgConnection::Options()));
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  bool waiting = false;
  while (!waiting && absl::Now() < deadline) {
    ASSERT_OK_AND_ASSIGN(
        PgResult r, watcher->Run("SELECT count(*) FROM pg_stat_activity WHERE "
                                 "wait_event_type = 'Lock' AND query LIKE "
                                 "'%FROM allocation_devices%'",
                                 {}));
    waiting = r.Text(0, 0) == "1";
    if (!waiting) absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_TRUE(waiting) << "Load never reached allocation_devices";
  ASSERT_OK(other->Exec(
      "INSERT INTO allocations VALUES ('a-new', 'r-new', 1, 'n0', '', 0, 0, "
      "0, 0, '', 0, 'nvidia-tesla-t4', '', 1, '', false, '', '', 0, 1, '', 0, "
      "'')"));
  ASSERT_OK(
      other->Exec("INSERT INTO allocation_devices VALUES ('a-new', 0, "
                  "'n0', 'n0-gpu0', '', '')"));
  ASSERT_OK(other->Exec("COMMIT"));
  std::move(finish).Invoke();
  ASSERT_OK(loaded);
  EXPECT_THAT(loaded->allocations, testing::IsEmpty());
  ASSERT_EQ(loaded->nodes.size(), 1u);
  // The next Load sees it whole.
  ASSERT_OK_AND_ASSIGN(const StoredState after, store->Load());
  ASSERT_EQ(after.allocations.size(), 1u);
  EXPECT_EQ(after.allocations[0].allocation.id, "a-new");
  EXPECT_EQ(after.allocations[0].allocation.devices.size(), 1u);
}

// An old leader frozen in the middle of its write transaction, its lease run
// out: `busy` frozen while it sends a batch (its session active, which no idle
// timeout ends), else between two statements.
void TakeOverFromAFrozenWrite(const std::string& uri, bool busy,
                              PgLeaderElection& a, PgLeaderElection& b) {
  ASSERT_OK_AND_ASSIGN(const int64_t first, a.TryAcquire());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgConnection> writer,
                       PgConnection::Open(uri, PgConnection::Options()));
  ASSERT_OK(writer->Exec("BEGIN"));
  // The share lock a store's Apply takes on the leader row.
  ASSERT_OK_AND_ASSIGN(
      PgResult locked,
      writer->Run("SELECT epoch FROM leader WHERE id = 1 FOR SHARE", {}));
  ASSERT_OK(writer
                ->Run("INSERT INTO nodes (name, schedulable, "
                      "last_heartbeat_unix_ns) VALUES ('in-flight', true, 0)",
                      {})
                .status());
  absl::Status busy_result;
  std::thread sending;
  if (busy) {
    sending = std::thread(
        [&] { busy_result = writer->Run("SELECT pg_sleep(60)", {}).status(); });
  }
  absl::SleepFor(absl::Milliseconds(300));  // the lease runs out
  // The takeover ends the frozen session instead of waiting for it.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  int64_t second = 0;
  while (second == 0 && absl::Now() < deadline) {
    absl::StatusOr<int64_t> epoch = b.TryAcquire();
    if (epoch.ok()) second = *epoch;
  }
  EXPECT_EQ(second, first + 1);
  if (busy) {
    sending.join();
    EXPECT_THAT(busy_result,
                StatusIs(absl::StatusCode::kUnavailable, testing::_));
  }
  // Its write never commits.
  EXPECT_THAT(writer->Exec("COMMIT"),
              StatusIs(absl::StatusCode::kUnavailable, testing::_));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgConnection> reader,
                       PgConnection::Open(uri, PgConnection::Options()));
  ASSERT_OK_AND_ASSIGN(PgResult nodes,
                       reader->Run("SELECT count(*) FROM nodes", {}));
  EXPECT_EQ(nodes.Text(0, 0), "0");
}

TEST_F(PgLeaderTest, ATakeoverEndsAnOldLeaderFrozenBetweenStatements) {
  auto a = OpenElection("a:1", absl::Milliseconds(200));
  auto b = OpenElection("b:1", absl::Milliseconds(200));
  TakeOverFromAFrozenWrite(uri_, /*busy=*/false, *a, *b);
}

TEST_F(PgLeaderTest, ATakeoverEndsAnOldLeaderFrozenWhileSendingABatch) {
  auto a = OpenElection("a:1", absl::Milliseconds(200));
  auto b = OpenElection("b:1", absl::Milliseconds(200));
  TakeOverFromAFrozenWrite(uri_, /*busy=*/true, *a, *b);
}

TEST_F(PgLeaderTest, AFollowerFrozenInsideItsTakeoverHoldsTheLeaseBriefly) {
  PgLeaderElection::Options options = ElectionOptions("a:1", absl::Seconds(10));
  options.renew_deadline = absl::Seconds(2);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgLeaderElection> a,
                       PgLeaderElection::Open(uri_, options));
  ASSERT_OK_AND_ASSIGN(const int64_t epoch, a->TryAcquire());
  // A follower's election session, as PgLeaderElection opens it, frozen
  // after locking the lease row and after raising the epoch (SIGSTOP).
  options.address = "b:1";
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<PgConnection> frozen,
      PgConnection::Open(uri_, PgLeaderElection::ConnectionOptions(options)));
  ASSERT_OK(frozen->Exec("BEGIN"));
  ASSERT_OK(frozen->Exec("SELECT * FROM leader_lease WHERE id = 1 FOR UPDATE"));
  ASSERT_OK(frozen->Exec("UPDATE leader SET epoch = epoch + 1 WHERE id = 1"));
  // The database ends that session within the renew deadline: the leader
  // renews (a renewal waits a second for the lock, then tries again), and
  // its writes are not blocked by the frozen UPDATE.
  const absl::Time start = absl::Now();
  absl::Status renewed = a->Renew(epoch);
  while (!renewed.ok() && absl::Now() - start < absl::Seconds(5)) {
    renewed = a->Renew(epoch);
  }
  EXPECT_OK(renewed);
  EXPECT_LT(absl::Now() - start, options.renew_deadline);
  auto store = OpenStore();
  store->set_epoch(epoch);
  EXPECT_OK(PutNode(*store, "after"));
  EXPECT_THAT(frozen->Exec("COMMIT"),
              StatusIs(absl::StatusCode::kUnavailable, testing::_));
}

TEST_F(PgLeaderTest, ReplicasOfAnotherRoleAreRefused) {
  PostgresInstance& pg = SharedPostgres::Get();
  const std::string db = uri_.substr(uri_.rfind('/') + 1);
  auto a = OpenElection("a:1", absl::Hours(1));
  ASSERT_OK_AND_ASSIGN(const int64_t epoch, a->TryAcquire());
  ASSERT_OK(pg.Psql("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE "
                    "rolname = 'other_role') THEN CREATE ROLE other_role LOGIN "
                    "PASSWORD 'other-pw'; END IF; END $$; GRANT ALL ON ALL "
                    "TABLES IN SCHEMA public TO other_role; GRANT ALL ON "
                    "SCHEMA public TO other_role;",
                    db)
                .status());
  const std::string other = absl::StrCat(
      "postgresql://other_role:other-pw@127.0.0.1:", pg.port(), "/", db);
  absl::StatusOr<std::unique_ptr<PgLeaderElection>> b =
      PgLeaderElection::Open(other, ElectionOptions("b:1", absl::Hours(1)));
  ASSERT_THAT(b.status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, testing::_));
  EXPECT_THAT(b.status().message(), HasSubstr("role accelsched"));
  EXPECT_THAT(b.status().message(), HasSubstr("role other_role"));
  EXPECT_THAT(b.status().message(), HasSubstr("same role"));
  // Nothing was taken over.
  EXPECT_OK(a->Renew(epoch));
}

TEST_F(PgLeaderTest, TheWriteSessionCommitsSynchronouslyAndTimesOutTheNetwork) {
  const std::string db = uri_.substr(uri_.rfind('/') + 1);
  ASSERT_OK(SharedPostgres::Get()
                .Psql(absl::StrCat("ALTER DATABASE ", db,
                                   " SET synchronous_commit = off"))
                .status());
  auto store = OpenStore();
  PgConnection& session = store->connection_for_testing();
  EXPECT_THAT(session.Run("SHOW synchronous_commit", {}).value().Text(0, 0),
              "on");
  EXPECT_THAT(session.Run("SHOW tcp_user_timeout", {}).value().Text(0, 0),
              "10000");  // milliseconds
  EXPECT_THAT(session.Run("SHOW tcp_keepalives_idle", {}).value().Text(0, 0),
              "5");  // seconds
}

TEST_F(PgLeaderTest, AMalformedUriIsRefusedWithoutThePassword) {
  for (const std::string uri :
       {"postgresql://u:s3cret%zz@127.0.0.1/db", "host=x password='s3cret"}) {
    absl::Status s = PgStore::Open(uri, PgStore::Options()).status();
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, testing::_))
        << uri;
    EXPECT_THAT(s.message(), Not(HasSubstr("s3cret"))) << uri;
    EXPECT_THAT(s.message(), HasSubstr("not a PostgreSQL connection URI"));
  }
}

TEST_F(PgLeaderTest, TwoServersOpeningANewDatabaseMigrateItOnce) {
  const std::string uri = FreshDatabase();
  std::vector<absl::Status> results(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = PgStore::Open(uri, PgStore::Options()).status();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : results) EXPECT_OK(s);
  ASSERT_OK_AND_ASSIGN(
      std::string version,
      SharedPostgres::Get().Psql("SELECT string_agg(version::text, ',') FROM "
                                 "schema_version",
                                 uri.substr(uri.rfind('/') + 1)));
  EXPECT_EQ(version, absl::StrCat(PgSchemaVersion()));
}

TEST_F(PgLeaderTest, ANewerSchemaIsRefusedAndUntouched) {
  ASSERT_NE(OpenStore(), nullptr);
  const std::string db = uri_.substr(uri_.rfind('/') + 1);
  ASSERT_OK(SharedPostgres::Get()
                .Psql("UPDATE schema_version SET version = 99", db)
                .status());
  absl::StatusOr<std::unique_ptr<PgStore>> store =
      PgStore::Open(uri_, PgStore::Options());
  EXPECT_THAT(store.status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, testing::_));
  EXPECT_THAT(store.status().message(), HasSubstr("schema version 99"));
  EXPECT_THAT(
      SharedPostgres::Get().Psql("SELECT version FROM schema_version", db),
      IsOkAndHolds("99"));
}

// Before schema 4 neither a node's allocatable resources nor a pod's were
// kept: the nodes and allocations of a database an older server left keep
// every field and have none (not zeros), and ones written after the migration
// keep theirs.
TEST_F(PgLeaderTest, VersionThreeRowsHaveNoResources) {
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgConnection> db,
                         PgConnection::Open(uri_, PgConnection::Options()));
    ASSERT_OK(PgMigrateTo(*db, 3));
    ASSERT_OK(db->Exec(
        "INSERT INTO nodes VALUES ('n1', false, 5);"
        "INSERT INTO node_labels VALUES ('n1', 'pool', 'a');"
        "INSERT INTO devices (id, node, position, device_index, device_class, "
        "model, memory_bytes, healthy, mig_enabled, removed) VALUES "
        "('GPU-0', 'n1', 0, 0, 0, 'NVIDIA H100 80GB HBM3', 0, true, false, "
        "false);"
        "INSERT INTO allocations (id, request_id, state, node, tenant, "
        "priority, created_at_unix_ns, expires_at_unix_ns, ended_at_unix_ns, "
        "end_reason, device_class, model, partition, count, requested_models, "
        "unpartitioned, resource_name, container_name, admitted_at_unix_ns, "
        "replicas, topology_key, lease_ns, preempted_by) VALUES "
        "('a-1', 'r1', 1, 'n1', 't', 0, 1, 2, 0, '', 0, 'nvidia-h100', '', 1, "
        "'nvidia-h100', false, '', '', 1, 1, '', 0, '');"
        "INSERT INTO allocation_device_spellings VALUES ('a-1', 0, 'H100');"
        "INSERT INTO allocation_units (allocation_id, unit, live, position) "
        "VALUES ('a-1', 'GPU-0', true, 0);"));
  }
  const std::string db = uri_.substr(uri_.rfind('/') + 1);
  const std::string version = "SELECT version FROM schema_version";
  EXPECT_THAT(SharedPostgres::Get().Psql(version, db), IsOkAndHolds("3"));
  std::unique_ptr<PgStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(SharedPostgres::Get().Psql(version, db),
              IsOkAndHolds(absl::StrCat(PgSchemaVersion())));
  ASSERT_OK_AND_ASSIGN(std::vector<Node> nodes, store->LoadNodes());
  ASSERT_EQ(nodes.size(), 1u);
  Node node = nodes[0];
  EXPECT_FALSE(node.schedulable);
  EXPECT_EQ(node.labels, (std::map<std::string, std::string>{{"pool", "a"}}));
  ASSERT_EQ(node.devices.size(), 1u);
  EXPECT_EQ(node.devices[0].id, "GPU-0");
  EXPECT_EQ(node.allocatable, std::nullopt);
  ASSERT_OK_AND_ASSIGN(std::vector<StoredAllocation> allocations,
                       store->LoadAllocations());
  ASSERT_EQ(allocations.size(), 1u);
  const Allocation old = allocations[0].allocation;
  EXPECT_EQ(old.state, AllocationState::kActive);
  EXPECT_EQ(old.tenant, "t");
  EXPECT_EQ(old.device_spellings, std::vector<std::string>{"H100"});
  EXPECT_EQ(allocations[0].units, std::vector<std::string>{"GPU-0"});
  EXPECT_EQ(old.pod_resources, std::nullopt);

  auto election = OpenElection("a:1", absl::Hours(1));
  ASSERT_OK_AND_ASSIGN(const int64_t epoch, election->TryAcquire());
  store->set_epoch(epoch);
  node.allocatable = NodeResources{64'000, int64_t{512} << 30, 0};
  Allocation ended = old;
  ended.state = AllocationState::kReleased;
  ended.end_reason = "released";
  Allocation next = old;
  next.id = "a-2";
  next.request_id = "r2";
  next.pod_resources = NodeResources{0, 0, 1};
  const Mutation batch[] = {PutNodeMutation{node},
                            PutAllocationMutation{ended, {"GPU-0"}},
                            PutAllocationMutation{next, {"GPU-0"}, true}};
  ASSERT_OK(store->Apply(batch));
  store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->LoadNodes(), IsOkAndHolds(std::vector<Node>{node}));
  ASSERT_OK_AND_ASSIGN(allocations, store->LoadAllocations());
  ASSERT_EQ(allocations.size(), 2u);
  EXPECT_EQ(allocations[0].allocation, ended);
  EXPECT_EQ(allocations[1].allocation, next);
}

// Before schema 5 no device was shared and no allocation held a share: the
// rows an older server left have none, and ones written after the migration
// keep theirs.
TEST_F(PgLeaderTest, VersionFourRowsAreNotShared) {
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgConnection> db,
                         PgConnection::Open(uri_, PgConnection::Options()));
    ASSERT_OK(PgMigrateTo(*db, 4));
    ASSERT_OK(db->Exec(
        "INSERT INTO nodes (name, schedulable, last_heartbeat_unix_ns) VALUES "
        "('n1', true, 5);"
        "INSERT INTO devices (id, node, position, device_index, device_class, "
        "model, memory_bytes, healthy, mig_enabled, removed) VALUES "
        "('GPU-0', 'n1', 0, 0, 0, 'Tesla T4', 0, true, false, false);"
        "INSERT INTO allocations (id, request_id, state, node, tenant, "
        "priority, created_at_unix_ns, expires_at_unix_ns, ended_at_unix_ns, "
        "end_reason, device_class, model, partition, count, requested_models, "
        "unpartitioned, resource_name, container_name, admitted_at_unix_ns, "
        "replicas, topology_key, lease_ns, preempted_by) VALUES "
        "('a-1', 'r1', 1, 'n1', 't', 0, 1, 2, 0, '', 0, 'nvidia-tesla-t4', "
        "'', 1, 'nvidia-tesla-t4', false, '', '', 1, 1, '', 0, '');"
        "INSERT INTO allocation_devices VALUES ('a-1', 0, 'n1', 'GPU-0', '', "
        "'');"
        "INSERT INTO allocation_units (allocation_id, unit, live, position) "
        "VALUES ('a-1', 'GPU-0', true, 0);"));
  }
  std::unique_ptr<PgStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::vector<Node> nodes, store->LoadNodes());
  ASSERT_EQ(nodes.size(), 1u);
  ASSERT_EQ(nodes[0].devices.size(), 1u);
  EXPECT_EQ(nodes[0].devices[0].sharing, GpuSharing::kNone);
  ASSERT_OK_AND_ASSIGN(std::vector<StoredAllocation> allocations,
                       store->LoadAllocations());
  ASSERT_EQ(allocations.size(), 1u);
  const Allocation old = allocations[0].allocation;
  ASSERT_EQ(old.devices.size(), 1u);
  EXPECT_EQ(old.devices[0],
            (AllocatedDevice{"n1", "GPU-0", "", "", std::nullopt}));
  EXPECT_EQ(old.share, std::nullopt);

  auto election = OpenElection("a:1", absl::Hours(1));
  ASSERT_OK_AND_ASSIGN(const int64_t epoch, election->TryAcquire());
  store->set_epoch(epoch);
  Node node = nodes[0];
  node.devices[0].sharing = GpuSharing::kTimeSlicing;
  Allocation ended = old;
  ended.state = AllocationState::kReleased;
  ended.end_reason = "released";
  Allocation next = old;
  next.id = "a-2";
  next.request_id = "r2";
  next.share = GpuShare{250, 0, "ml-team"};
  next.devices[0].share = GpuShare{250, int64_t{4} << 30, "ml-team"};
  next.devices[0].sharing = GpuSharing::kTimeSlicing;
  const Mutation batch[] = {PutNodeMutation{node},
                            PutAllocationMutation{ended, {"GPU-0"}},
                            PutAllocationMutation{next, {"GPU-0"}, true}};
  ASSERT_OK(store->Apply(batch));
  store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->LoadNodes(), IsOkAndHolds(std::vector<Node>{node}));
  ASSERT_OK_AND_ASSIGN(allocations, store->LoadAllocations());
  ASSERT_EQ(allocations.size(), 2u);
  EXPECT_EQ(allocations[0].allocation, ended);
  EXPECT_EQ(allocations[1].allocation, next);
}

// Before schema 6 a held share did not record how its device was shared: a
// share an older database holds gets its device's mode, and a whole device
// stays unshared.
TEST_F(PgLeaderTest, VersionFiveSharesTakeTheirDevicesSharing) {
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgConnection> db,
                         PgConnection::Open(uri_, PgConnection::Options()));
    ASSERT_OK(PgMigrateTo(*db, 5));
    ASSERT_OK(db->Exec(
        "INSERT INTO nodes (name, schedulable, last_heartbeat_unix_ns) VALUES "
        "('n1', true, 5);"
        "INSERT INTO devices (id, node, position, device_index, device_class, "
        "model, memory_bytes, healthy, mig_enabled, removed, sharing) VALUES "
        "('GPU-0', 'n1', 0, 0, 0, 'Tesla T4', 1000, true, false, false, 2),"
        "('GPU-1', 'n1', 1, 1, 0, 'Tesla T4', 1000, true, false, false, 0);"
        "INSERT INTO allocations (id, request_id, state, node, tenant, "
        "priority, created_at_unix_ns, expires_at_unix_ns, ended_at_unix_ns, "
        "end_reason, device_class, model, partition, count, requested_models, "
        "unpartitioned, resource_name, container_name, admitted_at_unix_ns, "
        "replicas, topology_key, lease_ns, preempted_by, share_compute_milli, "
        "share_memory_bytes) VALUES "
        "('a-1', 'r1', 1, 'n1', 't', 0, 1, 2, 0, '', 0, 'nvidia-tesla-t4', "
        "'', 1, 'nvidia-tesla-t4', false, '', '', 1, 1, '', 0, '', 300, 0),"
        "('a-2', 'r2', 1, 'n1', 't', 0, 1, 2, 0, '', 0, 'nvidia-tesla-t4', "
        "'', 1, 'nvidia-tesla-t4', false, '', '', 1, 1, '', 0, '', NULL, "
        "NULL);"
        "INSERT INTO allocation_devices VALUES "
        "('a-1', 0, 'n1', 'GPU-0', '', '', 300, 300),"
        "('a-2', 0, 'n1', 'GPU-1', '', '', NULL, NULL);"
        "INSERT INTO allocation_units (allocation_id, unit, live, position) "
        "VALUES ('a-2', 'GPU-1', true, 0);"));
  }
  std::unique_ptr<PgStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::vector<StoredAllocation> allocations,
                       store->LoadAllocations());
  ASSERT_EQ(allocations.size(), 2u);
  EXPECT_EQ(
      allocations[0].allocation.devices,
      (std::vector<AllocatedDevice>{
          {"n1", "GPU-0", "", "", GpuShare{300, 300}, GpuSharing::kMps}}));
  EXPECT_EQ(allocations[1].allocation.devices,
            (std::vector<AllocatedDevice>{{"n1", "GPU-1", "", ""}}));
}

TEST_F(PgLeaderTest, WrongPasswordOrNoServerIsUnavailableWithoutThePassword) {
  PostgresInstance& pg = SharedPostgres::Get();
  absl::Status s =
      PgStore::Open(pg.UriWithWrongPassword(), PgStore::Options()).status();
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kUnavailable, testing::_));
  EXPECT_THAT(s.message(),
              HasSubstr(absl::StrCat("cannot connect to PostgreSQL at "
                                     "postgresql://accelsched@127.0.0.1:",
                                     pg.port(), "/accelsched")));
  EXPECT_THAT(s.message(), HasSubstr("password authentication failed"));
  EXPECT_THAT(s.message(), Not(HasSubstr(PostgresInstance::kPassword)));
  EXPECT_THAT(
      PgStore::Open("postgresql://u:p@127.0.0.1:1/db", PgStore::Options())
          .status(),
      StatusIs(absl::StatusCode::kUnavailable, testing::_));
  EXPECT_THAT(PgStore::Open("postgresql://[bad", PgStore::Options()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, testing::_));
}

// Last: it restarts the shared server.
TEST_F(PgLeaderTest, ZReconnectsAfterTheDatabaseRestartsAndKeepsItsLeader) {
  auto election = OpenElection("a:1", absl::Hours(1));
  auto follower = OpenElection("b:1", absl::Hours(1));
  auto store = OpenStore();
  ASSERT_OK_AND_ASSIGN(const int64_t epoch, election->TryAcquire());
  store->set_epoch(epoch);
  ASSERT_OK(PutNode(*store, "before"));
  ASSERT_OK(SharedPostgres::Get().Stop());
  EXPECT_THAT(PutNode(*store, "while-down"),
              StatusIs(absl::StatusCode::kUnavailable, testing::_));
  EXPECT_THAT(election->Renew(epoch),
              StatusIs(absl::StatusCode::kUnavailable, testing::_));
  ASSERT_OK(SharedPostgres::Get().Start());
  // Every session is new after the restart: the leader's is gone as well,
  // but for the restart, not for its process. The follower waits for the
  // lease (an hour), well past its renew deadline...
  absl::SleepFor(absl::Milliseconds(300));
  // (Its first call finds its own connection lost.)
  absl::StatusOr<int64_t> attempt = follower->TryAcquire();
  if (absl::IsUnavailable(attempt.status())) attempt = follower->TryAcquire();
  EXPECT_THAT(attempt, IsOkAndHolds(0));
  // ...and the leader's connections come back on their next call, the lease
  // with its epoch.
  EXPECT_OK(election->Renew(epoch));
  EXPECT_THAT(follower->TryAcquire(), IsOkAndHolds(0));
  EXPECT_OK(PutNode(*store, "after"));
  EXPECT_THAT(NodeNames(*store), testing::ElementsAre("after", "before"));
}

}  // namespace
}  // namespace accelsched
