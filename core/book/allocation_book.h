// The allocation book: every allocation kept (live, pending and ended until
// retention forgets it), request ids, and the lease and retention timelines.
// As allocations are held and end it keeps the unit holdings (who holds each
// unit: unit_holdings.h, not owned) and the live tallies (what each tenant
// holds per pool, preemptions in their grace: live_tallies.h). Not
// thread-safe: it relies on its owner's lock, as the catalog does.
#ifndef ACCELSCHED_CORE_BOOK_ALLOCATION_BOOK_H_
#define ACCELSCHED_CORE_BOOK_ALLOCATION_BOOK_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/book/allocation_holds.h"
#include "core/book/live_tallies.h"
#include "core/book/unit_holdings.h"
#include "core/catalog/capacity_index.h"
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

class AllocationBook {
 public:
  struct Record {
    Allocation allocation;
    std::vector<std::string> units;  // held while ACTIVE
    // The last write of it; null once durable at load.
    std::shared_ptr<GroupCommitter::Ticket> ticket;
  };
  // Every allocation kept, by id (ids sort by creation time).
  using Records = std::map<std::string, Record, std::less<>>;

  // `holdings` is not owned and must outlive the book; the book is its only
  // writer.
  explicit AllocationBook(UnitHoldings* holdings) : holdings_(holdings) {}
  AllocationBook(const AllocationBook&) = delete;
  AllocationBook& operator=(const AllocationBook&) = delete;

  // Replaces everything with `allocations` as the store returned them, the
  // holdings and tallies included. Marks nothing in the index: the catalog,
  // loaded after, asks the holdings' HolderOf, and MarkHeldResources
  // (book_records.h) then enters what they hold of their nodes.
  void Load(std::vector<StoredAllocation> allocations);

  // nullptr when unknown; by request id, the newest allocation of it.
  const Record* Find(const AllocationKey& key) const;
  Record* Find(const AllocationKey& key) {
    return const_cast<Record*>(std::as_const(*this).Find(key));
  }
  // nullptr when unknown; by allocation id.
  const Record* Find(absl::string_view id) const;
  Record* Find(absl::string_view id) {
    return const_cast<Record*>(std::as_const(*this).Find(id));
  }

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

  // The live and pending allocations whose leases (for PREEMPTED ones, their
  // grace) end at or before `now`, in expiry order.
  std::vector<Record*> Due(absl::Time now);
  // Visits the live allocations holding units of `pool` in the order their
  // units come free (lease end; a PREEMPTED one's grace end) until `visit`
  // returns false.
  void ForEachLiveByExpiry(
      const PoolKey& pool,
      absl::FunctionRef<bool(const Record& record)> visit) const;
  // Forgets ended allocations that ended before `cutoff`; returns their ids.
  std::vector<std::string> ForgetEnded(absl::Time cutoff);

  // Every allocation kept; book_records.h walks them.
  const Records& records() const { return allocations_; }
  const UnitHoldings& holdings() const { return *holdings_; }
  const LiveTallies& tallies() const { return tallies_; }

 private:
  // `mark_index`: also mark the units held in the index (not at load).
  void Hold(const Record& record, bool mark_index);
  void Free(const Record& record);

  UnitHoldings* const holdings_;
  LiveTallies tallies_;
  Records allocations_;
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
  std::set<std::pair<absl::Time, std::string>> ended_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_BOOK_ALLOCATION_BOOK_H_
