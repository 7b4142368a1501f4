// An in-memory Store for core tests, with injectable write failures.
// Thread-safe, since the scheduler's commit thread writes while the test thread
// inspects.
#ifndef ACCELSCHED_TESTS_FAKE_STORE_H_
#define ACCELSCHED_TESTS_FAKE_STORE_H_

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "core/store.h"

namespace accelsched {

class FakeStore final : public Store {
 public:
  absl::StatusOr<std::vector<Node>> LoadNodes() override {
    absl::MutexLock lock(&mu_);
    std::vector<Node> out;
    for (const auto& [name, node] : nodes_) out.push_back(node);
    return out;
  }
  absl::StatusOr<std::vector<StoredAllocation>> LoadAllocations() override {
    absl::MutexLock lock(&mu_);
    std::vector<StoredAllocation> out;
    for (const auto& [id, a] : allocations_) out.push_back(a);
    return out;
  }
  // All or nothing, like a transaction.
  absl::Status Apply(absl::Span<const Mutation> mutations) override {
    absl::SleepFor(commit_delay_);  // as an fsync would, outside the lock
    absl::MutexLock lock(&mu_);
    if (!fail_writes_.ok()) return fail_writes_;
    auto nodes = nodes_;
    auto allocations = allocations_;
    for (const Mutation& m : mutations) {
      if (auto* put = std::get_if<PutNodeMutation>(&m)) {
        nodes[put->node.name] = put->node;
      } else if (auto* status = std::get_if<PutNodeStatusMutation>(&m)) {
        nodes[status->node.name] = status->node;
      } else if (auto* del = std::get_if<DeleteNodeMutation>(&m)) {
        if (nodes.erase(del->name) == 0) {
          return absl::NotFoundError(absl::StrCat("node ", del->name));
        }
      } else if (auto* alloc = std::get_if<PutAllocationMutation>(&m)) {
        allocations[alloc->allocation.id] =
            StoredAllocation{alloc->allocation, alloc->units};
      } else if (auto* forget = std::get_if<DeleteAllocationMutation>(&m)) {
        allocations.erase(forget->id);
      }
    }
    nodes_ = std::move(nodes);
    allocations_ = std::move(allocations);
    ++transactions_;
    return absl::OkStatus();
  }

  // Each Apply takes this long, like a disk's fsync. Set before the scheduler
  // runs.
  void set_commit_delay(absl::Duration d) { commit_delay_ = d; }

  // Every later write fails with `s` (OK restores writes).
  void FailWrites(absl::Status s) {
    absl::MutexLock lock(&mu_);
    fail_writes_ = std::move(s);
  }
  std::map<std::string, Node> nodes() const {
    absl::MutexLock lock(&mu_);
    return nodes_;
  }
  std::map<std::string, StoredAllocation> allocations() const {
    absl::MutexLock lock(&mu_);
    return allocations_;
  }
  int transactions() const {
    absl::MutexLock lock(&mu_);
    return transactions_;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, Node> nodes_;
  std::map<std::string, StoredAllocation> allocations_;
  absl::Status fail_writes_;
  int transactions_ = 0;
  absl::Duration commit_delay_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_FAKE_STORE_H_
