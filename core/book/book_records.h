// What is read off every record of the allocation book at once: a page of
// allocations, the pending ones at load, the resources the live ones hold,
// and when each live one's units come free (the book as a LeaseView).
#ifndef ACCELSCHED_CORE_BOOK_BOOK_RECORDS_H_
#define ACCELSCHED_CORE_BOOK_BOOK_RECORDS_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/book/allocation_book.h"
#include "core/book/unit_holdings.h"
#include "core/model/allocation_model.h"
#include "core/packing/duration_learner.h"
#include "core/packing/placement_score.h"

namespace accelsched {

struct AllocationFilter {
  AllocationState state = AllocationState::kUnspecified;  // unspecified: any
  std::string node;                                       // empty: any
  std::string tenant;                                     // empty: any
};

struct AllocationPage {
  std::vector<Allocation> allocations;
  std::string next_page_token;  // empty on the last page
};

// The allocations of `book` that `filter` matches, in id order after
// `after`, at most `page_size` (`page_size` and `after` as ParsePageRequest
// gives them).
AllocationPage AllocationsPage(const AllocationBook& book,
                               const AllocationFilter& filter, int page_size,
                               absl::string_view after);

// Every PENDING allocation of `book`, in id order.
std::vector<const AllocationBook::Record*> PendingRecords(
    const AllocationBook& book);

// Enters in `holdings`' index every live allocation's pod_resources on its
// nodes; once, after the catalog has loaded (it resets the index).
void MarkHeldResources(const AllocationBook& book, UnitHoldings& holdings);

// When the book's live allocations are expected to come free, for the
// placements that weigh it (the lease term): an ACTIVE allocation whose
// runtime is known (its expected_duration, else the one learned for its
// tenant and shape when it was admitted) at admitted_at + that runtime,
// whatever its lease (a Flyte task's lease is a renewal period, not its
// runtime); any other live one at its expiry (the lease end, a PREEMPTED
// one's grace end); InfinitePast when the allocation is not live. It also
// keeps what the finished allocations teach (DurationLearner). Not
// thread-safe: the book's owner's lock guards it, exclusively for the
// methods that are not const.
class BookLeases : public LeaseView {
 public:
  // `book` is not owned and must outlive it.
  explicit BookLeases(const AllocationBook* book) : book_(book) {}
  // An ACTIVE allocation that has outlived its expected end is expected to
  // end any moment (`now`): bench/packing_bench measured that better than
  // expecting it at its lease end (bench/README.md, "Durations given,
  // estimated, unknown and learned").
  absl::Time FreeAt(absl::string_view allocation,
                    absl::Time now) const override;

  // After the book's Load: forgets what it knew, then replays the book in
  // time order, learning from each finished allocation as it ended and
  // noting each ACTIVE one as Admitted when it was admitted. Runs the store
  // no longer keeps (past --retention) are not replayed: an allocation whose
  // estimate used them is estimated from the rest, or by its lease.
  void Rebuild();
  // `record` has just become ACTIVE (an Allocate, an admission): its
  // expected end is fixed from now on.
  void Admitted(const AllocationBook::Record& record);
  // `record` has just ended (the book's End): a RELEASED allocation that was
  // ACTIVE teaches the learner its runtime, admitted_at to ended_at.
  void Ended(const AllocationBook::Record& record);

  const DurationLearner& learned() const { return learned_; }

 private:
  const AllocationBook* const book_;
  DurationLearner learned_;
  // ACTIVE allocations whose runtime is known -> admitted_at + it.
  absl::flat_hash_map<std::string, absl::Time> expected_end_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_BOOK_BOOK_RECORDS_H_
