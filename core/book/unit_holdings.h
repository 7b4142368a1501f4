// Which live allocation holds each unit, and what the live shares on each GPU
// hold together: the truth that the capacity index's copy is kept from. Not
// thread-safe: it relies on its owner's lock, as the catalog does.
//
// The allocation book is its only writer; the catalog reads it (as its
// UnitHolders) when it re-derives a node's units.
#ifndef ACCELSCHED_CORE_BOOK_UNIT_HOLDINGS_H_
#define ACCELSCHED_CORE_BOOK_UNIT_HOLDINGS_H_

#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "core/catalog/capacity_index.h"
#include "core/catalog/catalog.h"
#include "core/model/allocation_model.h"

namespace accelsched {

class UnitHoldings : public UnitHolders {
 public:
  // `index` is not owned and must outlive this; what is held and freed is
  // marked in it.
  explicit UnitHoldings(CapacityIndex* index) : index_(index) {}
  UnitHoldings(const UnitHoldings&) = delete;
  UnitHoldings& operator=(const UnitHoldings&) = delete;

  // Forgets every holding; marks nothing in the index.
  void Clear();
  // Live allocation `a` holds `units` and its share, if it holds one. With
  // `mark_index`, the index is marked too, its pod_resources on its nodes
  // included; without (at load), the catalog fills the index after, asking
  // HolderOf, and MarkResources enters the resources.
  void Hold(const Allocation& a, const std::vector<std::string>& units,
            bool mark_index);
  // Undoes Hold(a, units, true).
  void Free(const Allocation& a, const std::vector<std::string>& units);
  // Enters live allocation `a`'s pod_resources on each of its nodes in the
  // index (once per allocation, after the catalog has loaded).
  void MarkResources(const Allocation& a);

  absl::string_view HolderOf(absl::string_view key) const override;
  GpuShare SharedOf(absl::string_view key) const override;
  std::vector<std::string> ShareHoldersOf(absl::string_view key) const override;
  // How many live allocations hold a share of the GPU whose unit key is
  // `key` (ShareHoldersOf's size, without the copy).
  size_t ShareHolderCount(absl::string_view key) const;

 private:
  // Adds (+1) or removes (-1) `a`'s share, if it holds one, on its unit.
  void HoldShare(const Allocation& a, int sign, bool mark_index);
  // Adds (+1) or removes (-1) `a`'s pod_resources on each of its nodes.
  void HoldResources(const Allocation& a, int sign);

  CapacityIndex* const index_;
  // Unit key -> the live allocation holding it.
  absl::flat_hash_map<std::string, std::string> unit_holder_;
  // The live shares on one unit: what they hold together, and whose.
  struct UnitShares {
    GpuShare sum;
    std::set<std::string> holders;  // allocation ids
  };
  // Unit key -> its live shares (units with shares only).
  absl::flat_hash_map<std::string, UnitShares> unit_shares_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_BOOK_UNIT_HOLDINGS_H_
