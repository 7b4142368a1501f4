// What is read off every record of the allocation book at once: a page of
// allocations, the pending ones at load, the resources the live ones hold,
// and when each live one's units come free (the book as a LeaseView).
#ifndef ACCELSCHED_CORE_BOOK_BOOK_RECORDS_H_
#define ACCELSCHED_CORE_BOOK_BOOK_RECORDS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/book/allocation_book.h"
#include "core/book/unit_holdings.h"
#include "core/model/allocation_model.h"
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

// The book's leases, for the placements that weigh them: when a live
// allocation's units come free (its expiry: the lease end, a PREEMPTED one's
// grace end); InfinitePast when the allocation is not live.
class BookLeases : public LeaseView {
 public:
  // `book` is not owned and must outlive it.
  explicit BookLeases(const AllocationBook* book) : book_(book) {}
  absl::Time FreeAt(absl::string_view allocation) const override;

 private:
  const AllocationBook* const book_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_BOOK_BOOK_RECORDS_H_
