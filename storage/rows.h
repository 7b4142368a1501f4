// The rows of core's Store, for SQLite and PostgreSQL alike: one description
// of each table's columns (in rows.cc), from which the statements of each
// dialect are generated, and how a record writes to its rows and reads back
// from them, the order of every load included. SqliteStore and PgStore differ
// only in how they reach their database (storage/row_io.h) and run a
// transaction. The schemas are the migrations' (storage/migrations.cc,
// storage/pg_schema.cc); the values stored are the same in both: times and
// durations as Unix nanoseconds, enums as their numbers, flags as each
// dialect's boolean, lists of names joined by ",", an absent optional value
// as NULL in each of its columns.
#ifndef ACCELSCHED_STORAGE_ROWS_H_
#define ACCELSCHED_STORAGE_ROWS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/commit/store.h"
#include "storage/row_io.h"

namespace accelsched {

// Store::LoadNodes: every node in name order, each with its labels, its
// devices in the order written, and each device's MIG slices in the order
// written (slices of one position, as SQLite's schema 3 left those written
// before it, in start slot order). Errors are `db`'s.
absl::StatusOr<std::vector<Node>> LoadNodeRows(RowSource& db);

// Store::LoadAllocations: every allocation in id order, its devices, targets,
// device spellings and units in the order written (units of one position in the
// order inserted, on SQLite). Errors are `db`'s.
absl::StatusOr<std::vector<StoredAllocation>> LoadAllocationRows(RowSource& db);

// The last event sequence number recorded; nullopt when the database has no
// event sequence row. Errors are `db`'s.
absl::StatusOr<std::optional<uint64_t>> LoadEventSequenceRow(RowSource& db);

// Writes `mutation`'s rows through `db`: the statements of Store's contract
// for it, each with the error Store names for it should it change no row
// (NOT_FOUND, FAILED_PRECONDITION). Returns the first error `db` returns, and
// writes nothing after it. Transactions are the caller's.
absl::Status WriteMutationRows(const Mutation& mutation, RowWriter& db);

}  // namespace accelsched

#endif  // ACCELSCHED_STORAGE_ROWS_H_
