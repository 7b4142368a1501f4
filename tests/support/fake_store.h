// An in-memory Store for core tests that keeps the Store contract exactly as
// SqliteStore does: tests/storage/store_conformance_test.cc runs the same cases
// on both. It adds what a test needs: injectable write failures, a commit
// delay, and a Disk that outlives the store, so that a test can reopen it (or
// restart a scheduler on it) and see only what was committed. Thread-safe, so
// that a test may inspect while the scheduler commits.
#ifndef ACCELSCHED_TESTS_SUPPORT_FAKE_STORE_H_
#define ACCELSCHED_TESTS_SUPPORT_FAKE_STORE_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "core/base/status_macros.h"
#include "core/commit/store.h"

namespace accelsched {

class FakeStore final : public Store {
 public:
  // What a reopened store sees: the committed state, as the rows of
  // storage/migrations.cc would hold it.
  class Disk {
   private:
    friend class FakeStore;
    struct StoredUnit {
      std::string key;
      bool live = false;
    };
    struct AllocationRow {
      Allocation allocation;
      std::vector<StoredUnit> units;
    };
    struct State {
      std::map<std::string, Node> nodes;  // canonical_model not kept
      std::map<std::string, std::string> tpu_topology;  // by slice id
      std::map<std::string, AllocationRow> allocations;
      // The unique keys the schema enforces: device id and MIG slice id ->
      // node; unit -> the allocation it is live in.
      std::map<std::string, std::string> device_owner;
      std::map<std::string, std::string> mig_owner;
      std::map<std::string, std::string> live_unit_owner;
      uint64_t event_sequence = 0;
    };
    mutable absl::Mutex mu_;
    State state_ ABSL_GUARDED_BY(mu_);
  };

  FakeStore() : disk_(std::make_shared<Disk>()) {}
  // Reopens what another store committed to `disk`.
  explicit FakeStore(std::shared_ptr<Disk> disk) : disk_(std::move(disk)) {}

  const std::shared_ptr<Disk>& disk() const { return disk_; }

  absl::StatusOr<std::vector<Node>> LoadNodes() override {
    RETURN_IF_ERROR(LoadFailure());
    absl::MutexLock lock(&disk_->mu_);
    std::vector<Node> out;
    for (const auto& [name, node] : disk_->state_.nodes) {
      out.push_back(AsLoaded(disk_->state_, node));
    }
    return out;
  }
  absl::StatusOr<std::vector<StoredAllocation>> LoadAllocations() override {
    RETURN_IF_ERROR(LoadFailure());
    absl::MutexLock lock(&disk_->mu_);
    std::vector<StoredAllocation> out;
    for (const auto& [id, row] : disk_->state_.allocations) {
      out.push_back(AsLoaded(row));
    }
    return out;
  }
  absl::StatusOr<uint64_t> LoadEventSequence() override {
    RETURN_IF_ERROR(LoadFailure());
    absl::MutexLock lock(&disk_->mu_);
    return disk_->state_.event_sequence;
  }

  // All or nothing, like a transaction: the batch is applied to a copy that
  // replaces the state only when every mutation succeeded.
  absl::Status Apply(absl::Span<const Mutation> mutations) override {
    absl::Duration delay;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](bool* held) { return !*held; }, &commits_held_));
      delay = commit_delay_;
    }
    absl::SleepFor(delay);  // as an fsync would, outside the lock, fail or not
    absl::Status lost_reply;
    {
      absl::MutexLock lock(&mu_);
      if (!fail_writes_.ok()) return fail_writes_;
      lost_reply = std::exchange(lose_next_reply_, absl::OkStatus());
    }
    absl::MutexLock lock(&disk_->mu_);
    Disk::State state = disk_->state_;
    for (const Mutation& m : mutations) {
      RETURN_IF_ERROR(
          std::visit([&](const auto& v) { return Write(state, v); }, m));
    }
    disk_->state_ = std::move(state);
    absl::MutexLock counter(&mu_);
    ++transactions_;
    return lost_reply;
  }

  // Each Apply takes this long, like a disk's fsync, and fails (FailWrites)
  // only then.
  void set_commit_delay(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    commit_delay_ = d;
  }
  // While held, every Apply waits, before its delay and its failure, like a
  // disk that has not answered yet: a test can queue writes behind one that
  // is being committed without racing it.
  void HoldCommits(bool hold) {
    absl::MutexLock lock(&mu_);
    commits_held_ = hold;
  }
  // Every later write fails with `s` (OK restores writes).
  void FailWrites(absl::Status s) {
    absl::MutexLock lock(&mu_);
    fail_writes_ = std::move(s);
  }
  // The next write commits but reports `s`, as a database does whose
  // connection is lost while COMMIT's answer is on its way.
  void LoseNextReply(absl::Status s) {
    absl::MutexLock lock(&mu_);
    lose_next_reply_ = std::move(s);
  }
  // Every later load fails with `s`, as from a database that went away (OK
  // restores loads).
  void FailLoads(absl::Status s) {
    absl::MutexLock lock(&mu_);
    fail_loads_ = std::move(s);
  }

  // What LoadNodes and LoadAllocations return, by name and id.
  std::map<std::string, Node> nodes() const {
    absl::MutexLock lock(&disk_->mu_);
    std::map<std::string, Node> out;
    for (const auto& [name, node] : disk_->state_.nodes) {
      out.emplace(name, AsLoaded(disk_->state_, node));
    }
    return out;
  }
  std::map<std::string, StoredAllocation> allocations() const {
    absl::MutexLock lock(&disk_->mu_);
    std::map<std::string, StoredAllocation> out;
    for (const auto& [id, row] : disk_->state_.allocations) {
      out.emplace(id, AsLoaded(row));
    }
    return out;
  }
  // Transactions committed by this store.
  int transactions() const {
    absl::MutexLock lock(&mu_);
    return transactions_;
  }

 private:
  absl::Status LoadFailure() {
    absl::MutexLock lock(&mu_);
    return fail_loads_;
  }

  using State = Disk::State;

  static Node AsLoaded(const State& state, Node node) {
    for (Device& d : node.devices) {
      if (!d.tpu_slice_id.empty()) {
        d.tpu_topology = state.tpu_topology.at(d.tpu_slice_id);
      }
    }
    return node;
  }
  static StoredAllocation AsLoaded(const Disk::AllocationRow& row) {
    StoredAllocation out{row.allocation, {}};
    for (const Disk::StoredUnit& u : row.units) out.units.push_back(u.key);
    return out;
  }

  // Forgets `node`'s keys (before it is replaced or deleted).
  static void Unclaim(State& state, const Node& node) {
    for (const Device& d : node.devices) {
      state.device_owner.erase(d.id);
      for (const MigSlice& s : d.mig_slices) state.mig_owner.erase(s.id);
    }
  }
  // The unique keys of devices, MIG slices and present device indices.
  static absl::Status Claim(State& state, const Node& node) {
    std::set<int> indices;
    for (const Device& d : node.devices) {
      if (!state.device_owner.emplace(d.id, node.name).second) {
        return absl::AlreadyExistsError(
            absl::StrCat("device id \"", d.id, "\" is already stored"));
      }
      for (const MigSlice& s : d.mig_slices) {
        if (!state.mig_owner.emplace(s.id, node.name).second) {
          return absl::AlreadyExistsError(
              absl::StrCat("MIG slice id \"", s.id, "\" is already stored"));
        }
      }
      if (!d.removed && !indices.insert(d.index).second) {
        return absl::AlreadyExistsError(absl::StrCat(
            "node \"", node.name, "\" has two devices at index ", d.index));
      }
    }
    return absl::OkStatus();
  }

  static absl::Status Write(State& state, const PutNodeMutation& m) {
    Node node = m.node;
    for (Device& d : node.devices) {
      d.canonical_model.clear();
      if (!d.tpu_slice_id.empty()) {
        state.tpu_topology[d.tpu_slice_id] = d.tpu_topology;
      }
    }
    if (auto it = state.nodes.find(node.name); it != state.nodes.end()) {
      Unclaim(state, it->second);
    }
    RETURN_IF_ERROR(Claim(state, node));
    state.nodes[node.name] = std::move(node);
    return absl::OkStatus();
  }
  static absl::Status Write(State& state, const PutNodeStatusMutation& m) {
    auto it = state.nodes.find(m.node.name);
    if (it == state.nodes.end()) {
      return absl::NotFoundError(
          absl::StrCat("node \"", m.node.name, "\" not found"));
    }
    Node& stored = it->second;
    stored.schedulable = m.node.schedulable;
    stored.last_heartbeat = m.node.last_heartbeat;
    for (const Device& d : m.node.devices) {
      Device* target = nullptr;
      for (Device& s : stored.devices) {
        if (s.id == d.id) target = &s;
      }
      if (target == nullptr) {
        return absl::NotFoundError(absl::StrCat(
            "device \"", d.id, "\" of node \"", m.node.name, "\" not found"));
      }
      target->healthy = d.healthy;
    }
    return absl::OkStatus();
  }
  static absl::Status Write(State& state, const DeleteNodeMutation& m) {
    auto it = state.nodes.find(m.name);
    if (it == state.nodes.end()) {
      return absl::NotFoundError(
          absl::StrCat("node \"", m.name, "\" not found"));
    }
    Unclaim(state, it->second);
    state.nodes.erase(it);
    return absl::OkStatus();
  }
  // Sets each unit's liveness, refusing a unit live in another allocation.
  static absl::Status SetUnits(State& state, Disk::AllocationRow& row,
                               const std::vector<std::string>& units) {
    const std::string& id = row.allocation.id;
    for (const std::string& key : units) {
      Disk::StoredUnit* unit = nullptr;
      for (Disk::StoredUnit& u : row.units) {
        if (u.key == key) unit = &u;
      }
      if (unit == nullptr)
        unit = &row.units.emplace_back(Disk::StoredUnit{key});
      unit->live = row.allocation.live();
      if (unit->live) {
        auto [owner, inserted] = state.live_unit_owner.emplace(key, id);
        if (!inserted && owner->second != id) {
          return absl::AlreadyExistsError(absl::StrCat(
              "unit \"", key, "\" is live in allocation ", owner->second));
        }
      } else if (auto owner = state.live_unit_owner.find(key);
                 owner != state.live_unit_owner.end() && owner->second == id) {
        state.live_unit_owner.erase(owner);
      }
    }
    return absl::OkStatus();
  }
  static absl::Status Write(State& state, const PutAllocationMutation& m) {
    const Allocation& a = m.allocation;
    auto it = state.allocations.find(a.id);
    if (m.created) {
      if (it != state.allocations.end()) {
        return absl::AlreadyExistsError(
            absl::StrCat("allocation \"", a.id, "\" is already stored"));
      }
      it = state.allocations.emplace(a.id, Disk::AllocationRow{a, {}}).first;
    } else {
      if (it == state.allocations.end()) {
        return absl::NotFoundError(
            absl::StrCat("allocation \"", a.id, "\" not found"));
      }
      Allocation& stored = it->second.allocation;
      stored.state = a.state;
      stored.expires_at = a.expires_at;
      stored.ended_at = a.ended_at;
      stored.end_reason = a.end_reason;
      stored.preempted_by = a.preempted_by;
    }
    return SetUnits(state, it->second, m.units);
  }
  static absl::Status Write(State& state, const DeleteAllocationMutation& m) {
    auto it = state.allocations.find(m.id);
    if (it == state.allocations.end()) return absl::OkStatus();
    for (const Disk::StoredUnit& u : it->second.units) {
      auto owner = state.live_unit_owner.find(u.key);
      if (owner != state.live_unit_owner.end() && owner->second == m.id) {
        state.live_unit_owner.erase(owner);
      }
    }
    state.allocations.erase(it);
    return absl::OkStatus();
  }
  static absl::Status Write(State& state, const PutEventSequenceMutation& m) {
    if (m.last < state.event_sequence) {
      return absl::FailedPreconditionError(
          absl::StrCat("event sequence ", m.last, " is below the stored one"));
    }
    state.event_sequence = m.last;
    return absl::OkStatus();
  }

  const std::shared_ptr<Disk> disk_;
  mutable absl::Mutex mu_;
  absl::Status fail_writes_ ABSL_GUARDED_BY(mu_);
  absl::Status fail_loads_ ABSL_GUARDED_BY(mu_);
  absl::Status lose_next_reply_ ABSL_GUARDED_BY(mu_);
  absl::Duration commit_delay_ ABSL_GUARDED_BY(mu_);
  bool commits_held_ ABSL_GUARDED_BY(mu_) = false;
  int transactions_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_FAKE_STORE_H_
