#include "core/book/unit_holdings.h"

#include "core/book/allocation_holds.h"

namespace accelsched {

void UnitHoldings::Clear() {
  unit_holder_.clear();
  unit_shares_.clear();
}

void UnitHoldings::Hold(const Allocation& a,
                        const std::vector<std::string>& units,
                        bool mark_index) {
  for (const std::string& key : units) {
    unit_holder_[key] = a.id;
    if (mark_index) index_->SetHolder(key, a.id);
  }
  HoldShare(a, +1, mark_index);
  if (mark_index) HoldResources(a, +1);
}

void UnitHoldings::Free(const Allocation& a,
                        const std::vector<std::string>& units) {
  for (const std::string& key : units) {
    unit_holder_.erase(key);
    index_->SetHolder(key, "");
  }
  HoldShare(a, -1, /*mark_index=*/true);
  HoldResources(a, -1);
}

void UnitHoldings::MarkResources(const Allocation& a) { HoldResources(a, +1); }

void UnitHoldings::HoldResources(const Allocation& a, int sign) {
  if (!a.pod_resources.has_value()) return;
  for (const std::string& node : NodesOf(a)) {
    index_->AddHeld(node, *a.pod_resources, sign);
  }
}

void UnitHoldings::HoldShare(const Allocation& a, int sign, bool mark_index) {
  const GpuShare* share = a.held_share();
  if (share == nullptr) return;
  const std::string& key = *SharedUnitOf(a);
  UnitShares& on = unit_shares_[key];
  on.sum.compute_milli += sign * share->compute_milli;
  on.sum.memory_bytes += sign * share->memory_bytes;
  on.sum.group = share->group;  // every share on one GPU has one group
  if (sign > 0) {
    on.holders.insert(a.id);
  } else {
    on.holders.erase(a.id);
  }
  if (on.holders.empty()) unit_shares_.erase(key);
  if (mark_index) index_->AddShare(key, *share, sign);
}

absl::string_view UnitHoldings::HolderOf(absl::string_view key) const {
  auto it = unit_holder_.find(key);
  return it == unit_holder_.end() ? absl::string_view() : it->second;
}

GpuShare UnitHoldings::SharedOf(absl::string_view key) const {
  auto it = unit_shares_.find(key);
  return it == unit_shares_.end() ? GpuShare{} : it->second.sum;
}

std::vector<std::string> UnitHoldings::ShareHoldersOf(
    absl::string_view key) const {
  auto it = unit_shares_.find(key);
  if (it == unit_shares_.end()) return {};
  return {it->second.holders.begin(), it->second.holders.end()};
}

size_t UnitHoldings::ShareHolderCount(absl::string_view key) const {
  auto it = unit_shares_.find(key);
  return it == unit_shares_.end() ? 0 : it->second.holders.size();
}

}  // namespace accelsched
