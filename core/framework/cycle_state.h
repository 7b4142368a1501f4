// The per-request state of one scheduling cycle (Kubernetes' CycleState):
// the request and its spec, computed once when it was accepted; what its
// PreFilter plugins decided (a narrowed spec, the filters that apply and the
// least room a node must have); what its steps note for the later ones (and,
// in Explain, the record of every step); data one plugin leaves for another.
// Not thread-safe: one cycle, one thread.
#ifndef ACCELSCHED_CORE_FRAMEWORK_CYCLE_STATE_H_
#define ACCELSCHED_CORE_FRAMEWORK_CYCLE_STATE_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/framework/cycle_record.h"
#include "core/framework/holds.h"
#include "core/framework/plugin.h"
#include "core/framework/snapshot.h"
#include "core/matching/match_spec.h"
#include "core/model/allocation_model.h"
#include "core/packing/expected_duration.h"

namespace accelsched {

enum class CycleMode {
  // Allocate now: placed, or refused (RESOURCE_EXHAUSTED, or entered in the
  // queue when the request queues); only the PostFilter checks of new
  // requests run.
  kAllocate,
  // A pending request in an admission pass: placed, or waiting with what the
  // PostFilter actions did for it.
  kAdmit,
  // Explain: the cycle of kAllocate, and of kAdmit for a request that
  // queues, changing nothing (the statement records, the holds are a
  // scratch copy) and recording every step.
  kExplain,
};

// Up to kCapacity filters, in the order added: FilterChain's lists, fixed
// in size so that a cycle's Prepare and end allocate and free nothing.
class FilterList {
 public:
  static constexpr int kCapacity = 16;
  FilterList() = default;
  // Copies the filters held only (a copy of a chain is a saved state:
  // diagnosis.cc's WhyRefused).
  FilterList(const FilterList& other) { *this = other; }
  FilterList& operator=(const FilterList& other) {
    size_ = other.size_;
    std::copy(other.begin(), other.end(), filters_);
    return *this;
  }
  // `filter` last; at most kCapacity (PluginSet::Add refuses a profile with
  // more Filter plugins).
  void push_back(const FilterPlugin* filter) { filters_[size_++] = filter; }
  void clear() { size_ = 0; }
  bool empty() const { return size_ == 0; }
  const FilterPlugin* const* begin() const { return filters_; }
  const FilterPlugin* const* end() const { return filters_ + size_; }

 private:
  const FilterPlugin* filters_[kCapacity];
  int size_ = 0;
};

// The Filter plugins that apply to one request (those whose Prepare said so),
// by kind, in profile order.
class FilterChain {
 public:
  // The most Filter plugins a profile may name.
  static constexpr int kMaxFilters = FilterList::kCapacity;

  void Add(const FilterEntry& filter);
  void Clear();

  // Whether node `name` passes every kGate filter, as a unit's home; `node`
  // is the node of that name (nullptr: none registered), when the caller has
  // it.
  bool Gates(const CycleState& cycle, absl::string_view name) const;
  bool Gates(const CycleState& cycle, absl::string_view name,
             const Node* node) const;
  // Whether node `host` passes the kGate filters that weigh every host of a
  // unit (all but the home_only ones).
  bool HostGates(const CycleState& cycle, absl::string_view host) const;
  // Whether node `name` passes every kRoom filter, with `freed` coming free
  // there.
  bool Room(const CycleState& cycle, absl::string_view name,
            const NodeResources& freed = NodeResources{}) const;
  // Whether `pool`'s units on `home` are not held for another request (every
  // kHeld filter).
  bool Held(const CycleState& cycle, const PoolKey& pool,
            absl::string_view home) const;
  // Gates and Room: what a unit's home must pass, whatever its pool.
  bool NodePasses(const CycleState& cycle, absl::string_view name) const {
    return Gates(cycle, name) && Room(cycle, name);
  }
  // HostGates and Room: what every other node a unit spans must pass.
  bool HostPasses(const CycleState& cycle, absl::string_view host) const {
    return HostGates(cycle, host) && Room(cycle, host);
  }
  // NodePasses and Held: what a unit's home must pass.
  bool HomePasses(const CycleState& cycle, const PoolKey& pool,
                  absl::string_view home) const {
    return NodePasses(cycle, home) && Held(cycle, pool, home);
  }
  bool HomePasses(const CycleState& cycle, const PoolKey& pool,
                  absl::string_view home, const Node* node) const {
    return Gates(cycle, home, node) && Room(cycle, home) &&
           Held(cycle, pool, home);
  }

  // Every filter that applies, in profile order (Explain's account).
  const FilterList& all() const { return all_; }

  // The least available CPU and memory a node must have to pass the
  // filters, stated by them in Prepare: the index's order skips nodes below
  // (lowest int64_t: no bound). Where several state one, the larger holds.
  // Clear drops it.
  struct MinimumRoom {
    int64_t cpu = std::numeric_limits<int64_t>::min();
    int64_t memory = std::numeric_limits<int64_t>::min();
  };
  const MinimumRoom& min_room() const { return min_room_; }
  void SetMinimumRoom(int64_t cpu, int64_t memory) {
    min_room_ = MinimumRoom{std::max(min_room_.cpu, cpu),
                            std::max(min_room_.memory, memory)};
  }

 private:
  MinimumRoom min_room_;
  FilterList gates_;
  FilterList home_gates_;
  FilterList room_;
  FilterList held_;
  FilterList all_;
};

// What one plugin leaves in a cycle for another to read (Kubernetes'
// StateData): a type with a unique `static constexpr char kKey[]`.
struct CycleData {
  virtual ~CycleData() = default;
};

// The CycleData of one cycle, by type.
class CycleDataStore {
 public:
  // The data of type T a plugin left (Emplace), or nullptr.
  template <typename T>
  const T* Find() const {
    for (const auto& [key, data] : data_) {
      if (key == T::kKey) return static_cast<const T*>(data.get());
    }
    return nullptr;
  }
  // A new T, kept until the cycle ends (once per type: Find returns the
  // first).
  template <typename T>
  T& Emplace() {
    data_.emplace_back(T::kKey, std::make_unique<T>());
    return static_cast<T&>(*data_.back().second);
  }

 private:
  absl::InlinedVector<std::pair<const char*, std::unique_ptr<CycleData>>, 1>
      data_;
};

// What the steps of a cycle, and its caller, note for the steps after.
struct CycleNotes {
  // Whether the request waits when nothing fits (a pass; Allocate or Explain
  // of a request that queues). Set by the caller.
  bool queued = false;
  // Set by a PostFilter action that expects to make room later (a MIG
  // re-layout at the next periodic pass): those after it that take room from
  // others (preemption) or hold it ahead stand back.
  bool deferred = false;
  // Explain's record of the steps; null outside Explain. Set by the caller.
  CycleRecord* record = nullptr;
};

// When a cycle's request, placed now, would end: by its lease (what
// Allocate sets its expiry to, and the bound a backfill reservation checks),
// and as expected (what the lease term weighs; never a limit).
class CycleEnds {
 public:
  // `request`'s ends over `snapshot` (neither owned; both outlive it).
  CycleEnds(const Snapshot& snapshot, const Allocation& request);
  // A request whose end the caller knows (a bare index's placements:
  // IndexPlacer): `ends_at` is both its lease end and its expected end.
  CycleEnds(absl::Time now, absl::Time ends_at);

  absl::Time lease() const { return lease_; }
  // How long it is expected to run and where that comes from
  // (ExpectedDuration), computed on first use: most of a pass's cycles place
  // by no Score.
  const DurationEstimate& expected() const;
  absl::Time expected_end() const { return now_ + expected().duration; }

 private:
  const Snapshot* const snapshot_;  // null: `expected_` is set
  const Allocation* const request_;
  const absl::Time now_;
  const absl::Time lease_;
  mutable std::optional<DurationEstimate> expected_;
};

class CycleState {
 public:
  // A cycle of `request` (who asks: its tenant, priority, lease, and id
  // when it is pending) for `spec`, over `snapshot`, reading `holds` (null:
  // none). None is owned: each must outlive the cycle.
  CycleState(CycleMode mode, const Snapshot& snapshot, const MatchSpec& spec,
             const Allocation& request, const Holds* holds);
  // The same, for a request whose lease end the caller knows (a bare
  // index's placements: IndexPlacer), which is also its expected end.
  CycleState(CycleMode mode, const Snapshot& snapshot, const MatchSpec& spec,
             const Allocation& request, const Holds* holds, absl::Time ends_at);
  CycleState(const CycleState&) = delete;
  CycleState& operator=(const CycleState&) = delete;

  CycleMode mode() const { return mode_; }
  const Snapshot& snapshot() const { return *snapshot_; }
  // Who asks: its tenant, priority, lease, and id (a pending request's; ""
  // for a new one in Allocate, "explain:<request_id>" in an Explain of one).
  const Allocation& request() const { return *request_; }
  // When it would end if it were placed now.
  const CycleEnds& ends() const { return ends_; }
  const Holds* holds() const { return holds_; }

  // What is placed: the request's spec, as a PreFilter narrowed it.
  const MatchSpec& spec() const { return narrowed_ ? *narrowed_ : *spec_; }
  // The request's spec as it asked.
  const MatchSpec& requested_spec() const { return *spec_; }
  void Narrow(MatchSpec spec) { narrowed_ = std::move(spec); }

  // The filters that apply, and the room they require (PreFilter's work;
  // Framework::Prepare).
  FilterChain& filters() { return filters_; }
  const FilterChain& filters() const { return filters_; }

  CycleNotes& notes() { return notes_; }
  const CycleNotes& notes() const { return notes_; }

  CycleDataStore& data() { return data_; }
  const CycleDataStore& data() const { return data_; }

 private:
  const CycleMode mode_;
  const Snapshot* const snapshot_;
  const MatchSpec* const spec_;
  const Allocation* const request_;
  const Holds* const holds_;
  const CycleEnds ends_;
  std::optional<MatchSpec> narrowed_;
  FilterChain filters_;
  CycleNotes notes_;
  CycleDataStore data_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_FRAMEWORK_CYCLE_STATE_H_
