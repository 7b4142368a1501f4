// The SQLite implementation of core's Store. Owns its connection. Not
// thread-safe: the catalog serialises calls.
#ifndef ACCELSCHED_STORAGE_SQLITE_STORE_H_
#define ACCELSCHED_STORAGE_SQLITE_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/store.h"
#include "storage/sqlite_db.h"

namespace accelsched {

class SqliteStore final : public Store {
 public:
  // Opens or creates `path` and migrates it to the current schema.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(
      const std::string& path);

  absl::StatusOr<std::vector<Node>> LoadNodes() override;
  absl::Status PutNode(const Node& node) override;
  absl::Status PutNodeStatus(const Node& node) override;
  absl::Status DeleteNode(absl::string_view name) override;

 private:
  explicit SqliteStore(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}

  absl::Status WriteNodeRow(const Node& node);
  absl::Status WriteDevices(const Node& node);
  absl::Status DeleteOrphanTpuSlices();

  std::unique_ptr<SqliteDb> db_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_STORAGE_SQLITE_STORE_H_
