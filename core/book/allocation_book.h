// The allocation book: every allocation kept (live, pending and ended until
// retention forgets it), which live allocation holds each unit, the units
// each tenant holds per pool, request ids, preemptions in their grace, and
// the lease and retention timelines. Not thread-safe: it relies on its
// owner's lock, as the catalog does.
//
// Unit ownership is kept here only. The capacity index carries a copy of it
// for matching; the book is that copy's only writer, and the catalog reads
// the truth (UnitHolders) when it re-derives units.
#ifndef ACCELSCHED_CORE_BOOK_ALLOCATION_BOOK_H_
#define ACCELSCHED_CORE_BOOK_ALLOCATION_BOOK_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/catalog/capacity_index.h"
#include "core/catalog/catalog.h"
#include "core/commit/group_committer.h"
#include "core/commit/store.h"
#include "core/model/allocation_model.h"
#include "core/packing/placement_score.h"

namespace accelsched {

// An allocation named by its id or by its request id (exactly one set).
struct AllocationKey {
  std::string allocation_id;
  std::string request_id;
};

struct AllocationFilter {
  AllocationState state = AllocationState::kUnspecified;  // unspecified: any
  std::string node;                                       // empty: any
  std::string tenant;                                     // empty: any
};

struct AllocationPage {
  std::vector<Allocation> allocations;
  std::string next_page_token;
};

// The pool an allocation's units are of.
PoolKey PoolOf(const Allocation& a);
// What a live allocation holding `units` units holds of its pool in
// thousandths of a unit: kGpuMilli per unit, or its share's compute_milli
// (a share holds no unit): what quotas and dominant shares count.
int64_t UsageMilliOf(const Allocation& a, size_t units);
// The unit key of the GPU an allocation holds a share of (a sharing GPU's
// unit is its whole device's: its device id); nullptr when it holds no share.
const std::string* SharedUnitOf(const Allocation& a);
// The nodes an allocation's devices are on (where its pod_resources are held).
std::set<std::string> NodesOf(const Allocation& a);

class AllocationBook : public UnitHolders, public LeaseView {
 public:
  struct Record {
    Allocation allocation;
    std::vector<std::string> units;  // held while ACTIVE
    // The last write of it; null once durable at load.
    std::shared_ptr<GroupCommitter::Ticket> ticket;
  };

  // `index` is not owned and must outlive the book; the book marks in it the
  // units it holds and frees.
  explicit AllocationBook(CapacityIndex* index) : index_(index) {}
  AllocationBook(const AllocationBook&) = delete;
  AllocationBook& operator=(const AllocationBook&) = delete;

  // Replaces everything with `allocations` as the store returned them. Marks
  // nothing in the index: the catalog, loaded after, asks HolderOf, and
  // MarkHeldResources then enters what they hold of their nodes.
  void Load(std::vector<StoredAllocation> allocations);
  // Enters in the index every live allocation's pod_resources on its nodes;
  // once, after the catalog has loaded (it resets the index).
  void MarkHeldResources();

  // nullptr when unknown; by request id, the newest allocation of it.
  const Record* Find(const AllocationKey& key) const;
  Record* Find(const AllocationKey& key) {
    return const_cast<Record*>(std::as_const(*this).Find(key));
  }
  Record* FindMutable(absl::string_view id);
  // A new id: time first, so that ids sort by creation.
  std::string NewId(absl::Time now);

  // Enters a new live or pending `record` as the newest of its request id; a
  // live one holds its units from now on.
  Record& Add(Record record);
  // Makes a pending allocation `admitted` (ACTIVE, with devices), holding
  // `units`.
  void Admit(Record& record, Allocation admitted,
             std::vector<std::string> units);
  // Marks a live allocation PREEMPTED for `preemptor`: it keeps its units
  // until `grace_end` (its new expiry) or until it ends.
  void Preempt(Record& record, const std::string& preemptor,
               absl::Time grace_end);
  // Ends a live or pending allocation: frees its units, records `state`,
  // `reason` and `now`.
  void End(Record& record, AllocationState state, absl::string_view reason,
           absl::Time now);
  void SetExpiry(Record& record, absl::Time expires_at);
  // LeaseView: when a live allocation's units come free (its expiry: the
  // lease end, a PREEMPTED one's grace end); InfinitePast when `allocation`
  // is not live.
  absl::Time FreeAt(absl::string_view allocation) const override;

  // The live and pending allocations whose leases (for PREEMPTED ones, their
  // grace) end at or before `now`, in expiry order.
  std::vector<Record*> Due(absl::Time now);
  // Visits the live allocations holding units of `pool` in the order their
  // units come free (lease end; a PREEMPTED one's grace end) until `visit`
  // returns false.
  void ForEachLiveByExpiry(
      const PoolKey& pool,
      absl::FunctionRef<bool(const Record& record)> visit) const;
  // Ids of the PREEMPTED allocations still in their grace that made way for
  // `preemptor`.
  const std::set<std::string>& VictimsOf(absl::string_view preemptor) const;
  // The lowest priority among ACTIVE allocations holding units of `pool`;
  // nullopt when there are none.
  std::optional<int> LowestActivePriority(const PoolKey& pool) const;
  // What `tenant`'s live allocations hold of `pool`, in thousandths of a
  // unit (UsageMilliOf: a unit is 1000, a share its compute_milli); of
  // that, the PREEMPTED ones' (in their grace).
  int64_t UsageMilli(absl::string_view tenant, const PoolKey& pool) const;
  int64_t PreemptedUsageMilli(absl::string_view tenant,
                              const PoolKey& pool) const;
  // Every tenant's UsageMilli per pool (tenants holding none left out).
  const std::map<std::string, std::map<PoolKey, int64_t>, std::less<>>&
  usage_milli() const {
    return usage_milli_;
  }
  // Forgets ended allocations that ended before `cutoff`; returns their ids.
  std::vector<std::string> ForgetEnded(absl::Time cutoff);

  absl::string_view HolderOf(absl::string_view key) const override;
  GpuShare SharedOf(absl::string_view key) const override;
  std::vector<std::string> ShareHoldersOf(absl::string_view key) const override;
  // How many live allocations hold a share of the GPU whose unit key is
  // `key` (ShareHoldersOf's size, without the copy).
  size_t ShareHolderCount(absl::string_view key) const;
  // `page_size` and `after` as ParsePageRequest gives them; id order.
  AllocationPage List(const AllocationFilter& filter, int page_size,
                      absl::string_view after) const;
  // ACTIVE allocations per tenant.
  std::map<std::string, int64_t> ActiveByTenant() const;
  // Every PENDING allocation, in id order.
  std::vector<const Record*> Pending() const;

 private:
  // `mark_index`: also mark the units held in the index (not at load).
  void Hold(const Record& record, bool mark_index);
  // Adds (+1) or removes (-1) `a`'s share, if it holds one, on its unit.
  void HoldShare(const Allocation& a, int sign, bool mark_index);
  void Free(const Record& record);
  // Adds (+1) or removes (-1) `a`'s pod_resources on each of its nodes.
  void HoldResources(const Allocation& a, int sign);
  void ForgetPriority(const Allocation& active);

  CapacityIndex* const index_;
  // Every allocation kept, by id (ids sort by creation time).
  std::map<std::string, Record, std::less<>> allocations_;
  // Unit key -> the live allocation holding it.
  absl::flat_hash_map<std::string, std::string> unit_holder_;
  // The live shares on one unit: what they hold together, and whose.
  struct UnitShares {
    GpuShare sum;
    std::set<std::string> holders;  // allocation ids
  };
  // Unit key -> its live shares (units with shares only).
  absl::flat_hash_map<std::string, UnitShares> unit_shares_;
  // request id -> its newest allocation.
  absl::flat_hash_map<std::string, std::string> by_request_;
  // Live and pending allocations by lease end; ended ones by end.
  std::set<std::pair<absl::Time, std::string>> expiry_;
  // Live allocations by lease end, per pool (records do not move: a map's).
  struct ByExpiry {
    bool operator()(const Record* a, const Record* b) const {
      return std::tie(a->allocation.expires_at, a->allocation.id) <
             std::tie(b->allocation.expires_at, b->allocation.id);
    }
  };
  std::map<PoolKey, std::set<const Record*, ByExpiry>> live_by_pool_;
  std::map<std::string, std::map<PoolKey, int64_t>, std::less<>> usage_milli_;
  std::map<std::string, std::map<PoolKey, int64_t>, std::less<>>
      preempted_usage_milli_;
  // preemptor id -> its victims still in their grace.
  absl::flat_hash_map<std::string, std::set<std::string>> victims_;
  // Priorities of the ACTIVE allocations per pool.
  std::map<PoolKey, std::multiset<int>> active_priorities_;
  std::set<std::pair<absl::Time, std::string>> ended_;
  uint64_t id_counter_ = 0;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_BOOK_ALLOCATION_BOOK_H_
