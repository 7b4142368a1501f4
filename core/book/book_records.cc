#include "core/book/book_records.h"

#include <algorithm>
#include <tuple>

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

absl::Time BookLeases::FreeAt(absl::string_view allocation,
                              absl::Time now) const {
  const AllocationBook::Record* r = book_->Find(allocation);
  if (r == nullptr || !r->allocation.live()) return absl::InfinitePast();
  if (r->allocation.state == AllocationState::kActive) {
    auto it = expected_end_.find(allocation);
    // Past its expected end: any moment now.
    if (it != expected_end_.end()) return std::max(it->second, now);
  }
  return r->allocation.expires_at;
}

void BookLeases::Rebuild() {
  learned_ = DurationLearner();
  expected_end_.clear();
  // What happened, in the order it happened: each finished allocation as it
  // ended, each ACTIVE one as it was admitted (ends first at one instant),
  // so that an allocation is expected what was known when it was admitted,
  // but for the runs retention has forgotten since.
  struct Step {
    absl::Time at;
    bool admitted;
    const AllocationBook::Record* record;
  };
  std::vector<Step> steps;
  for (const auto& [id, r] : book_->records()) {
    const Allocation& a = r.allocation;
    if (a.state == AllocationState::kActive) {
      steps.push_back({a.admitted_at, true, &r});
    } else if (!a.live() && !a.pending()) {
      steps.push_back({a.ended_at, false, &r});
    }
  }
  std::stable_sort(
      steps.begin(), steps.end(), [](const Step& x, const Step& y) {
        return std::tie(x.at, x.admitted) < std::tie(y.at, y.admitted);
      });
  for (const Step& step : steps) {
    if (step.admitted) {
      Admitted(*step.record);
    } else {
      Ended(*step.record);
    }
  }
}

void BookLeases::Admitted(const AllocationBook::Record& record) {
  const Allocation& a = record.allocation;
  // Only a known runtime is noted: which lease it would fall back to does
  // not matter.
  const DurationEstimate e = ExpectedDurationOf(
      a.tenant, a, &learned_, absl::ZeroDuration(), a.admitted_at);
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
