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
  return r->allocation.expires_at;
}

}  // namespace accelsched
