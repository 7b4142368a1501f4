// The PostgreSQL implementation of core's Store, for several servers sharing
// one database (docs/operations/ha-postgresql.md). Each Apply is one
// transaction that first takes a share lock on the leader row and commits only
// if the epoch there is still this store's: so once another server has taken
// over (pg_leader_election.h), which must wait for that lock, nothing this one
// sends commits. A batch is three round trips whatever its size: BEGIN, every
// statement at once (libpq's pipeline mode), COMMIT. Not thread-safe, as the
// Store contract allows, except set_epoch.
#ifndef ACCELSCHED_STORAGE_PG_STORE_H_
#define ACCELSCHED_STORAGE_PG_STORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/commit/store.h"
#include "storage/pg_connection.h"

namespace accelsched {

class PgStore final : public Store {
 public:
  struct Options {
    PgConnection::Options connection;
    // Called (from Apply) when a write is refused because another server
    // holds a later epoch.
    std::function<void()> on_fenced;
  };

  // Connects to `uri` and migrates the database to the current schema. The
  // session commits synchronously whatever the database's default. Errors as
  // PgConnection::Open and PgMigrate.
  static absl::StatusOr<std::unique_ptr<PgStore>> Open(const std::string& uri,
                                                       Options options);

  // The epoch Apply's transactions must find in the leader row; set once this
  // server is elected. Until then (0) every Apply is UNAVAILABLE.
  void set_epoch(int64_t epoch) { epoch_.store(epoch); }
  int64_t epoch() const { return epoch_.load(); }

  // A broken connection is reconnected first; UNAVAILABLE when it cannot be.
  absl::StatusOr<std::vector<Node>> LoadNodes() override;
  absl::StatusOr<std::vector<StoredAllocation>> LoadAllocations() override;
  absl::StatusOr<uint64_t> LoadEventSequence() override;
  // The three in one read-only REPEATABLE READ transaction: one snapshot.
  absl::StatusOr<StoredState> Load() override;
  // As Store::Apply, and UNAVAILABLE naming the current epoch when this
  // store's epoch is not it (nothing is written), or when the connection is
  // lost (the transaction may then have committed or not: the caller reloads).
  absl::Status Apply(absl::Span<const Mutation> mutations) override;

  // The write session, for tests that read its settings.
  PgConnection& connection_for_testing() { return *db_; }

 private:
  PgStore(std::unique_ptr<PgConnection> db, Options options)
      : db_(std::move(db)), options_(std::move(options)) {}
  // LoadEventSequence's result from the open session.
  absl::StatusOr<uint64_t> ReadEventSequence();
  // Load's reads, inside its transaction.
  absl::StatusOr<StoredState> ReadState();

  // Queues the fence, the batch's first statement; each mutation's rows
  // (storage/rows.h) follow it.
  void CheckEpoch();

  std::unique_ptr<PgConnection> db_;
  Options options_;
  std::atomic<int64_t> epoch_{0};
  PgBatch batch_;  // Apply's, reused
};

}  // namespace accelsched

#endif  // ACCELSCHED_STORAGE_PG_STORE_H_
