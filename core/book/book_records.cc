#include "core/book/book_records.h"

#include "core/base/page_token.h"

namespace accelsched {

AllocationPage AllocationsPage(const AllocationBook& book,
                               const AllocationFilter& filter, int page_size,
                               absl::string_view after) {
  const AllocationBook::Records& records = book.records();
  AllocationPage page;
  auto it = after.empty() ? records.begin() : records.upper_bound(after);
  for (; it != records.end(); ++it) {
    const Allocation& a = it->second.allocation;
    if (filter.state != AllocationState::kUnspecified &&
        a.state != filter.state) {
      continue;
    }
    if (!filter.tenant.empty() && a.tenant != filter.tenant) continue;
    if (!filter.node.empty() && !a.touches(filter.node)) continue;
    if (static_cast<int>(page.allocations.size()) == page_size) {
      page.next_page_token = EncodePageToken(page.allocations.back().id);
      break;
    }
    page.allocations.push_back(a);
  }
  return page;
}

std::vector<const AllocationBook::Record*> PendingRecords(
    const AllocationBook& book) {
  std::vector<const AllocationBook::Record*> out;
  for (const auto& [id, record] : book.records()) {
    if (record.allocation.pending()) out.push_back(&record);
  }
  return out;
}

void MarkHeldResources(const AllocationBook& book, UnitHoldings& holdings) {
  for (const auto& [id, record] : book.records()) {
    if (record.allocation.live()) holdings.MarkResources(record.allocation);
  }
}

absl::Time BookLeases::FreeAt(absl::string_view allocation) const {
  const AllocationBook::Record* r = book_->Find(allocation);
  if (r == nullptr || !r->allocation.live()) return absl::InfinitePast();
  if (r->allocation.state == AllocationState::kActive) {
    auto it = expected_end_.find(allocation);
    if (it != expected_end_.end()) return it->second;
  }
  return r->allocation.expires_at;
}

void BookLeases::Rebuild() {
  learned_ = DurationLearner();
  expected_end_.clear();
  // Ids sort by creation time: the learner sees them about in the order they
  // ended, and keeps the newest of each key.
  for (const auto& [id, r] : book_->records()) Ended(r);
  for (const auto& [id, r] : book_->records()) {
    if (r.allocation.state == AllocationState::kActive) {
      // The default lease does not matter: only a known runtime is noted.
      Admitted(r, absl::ZeroDuration());
    }
  }
}

void BookLeases::Admitted(const AllocationBook::Record& record,
                          absl::Duration default_lease) {
  const Allocation& a = record.allocation;
  const DurationEstimate e =
      ExpectedDurationOf(a.tenant, a, &learned_, default_lease, a.admitted_at);
  if (e.source == DurationSource::kLease) {
    expected_end_.erase(a.id);
  } else {
    expected_end_[a.id] = a.admitted_at + e.duration;
  }
}

void BookLeases::Ended(const AllocationBook::Record& record) {
  const Allocation& a = record.allocation;
  expected_end_.erase(a.id);
  // A released allocation that was admitted ran from admitted_at; a pending
  // one withdrawn never ran, and an expired or preempted one was stopped.
  if (a.state != AllocationState::kReleased ||
      a.end_reason != kReasonReleased) {
    return;
  }
  learned_.Observe(DurationLearner::KeyOf(a.tenant, a),
                   a.ended_at - a.admitted_at, a.ended_at);
}

}  // namespace accelsched
