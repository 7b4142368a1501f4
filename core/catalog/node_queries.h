// What the catalog's callers ask of its nodes and units without changing
// them: a node by name, a page of nodes, the allocations on a node, whether
// a change of the accelerator types would leave a device untyped, the
// cordon counts. Free functions over the catalog's read-only views.
#ifndef ACCELSCHED_CORE_CATALOG_NODE_QUERIES_H_
#define ACCELSCHED_CORE_CATALOG_NODE_QUERIES_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/base/labels.h"
#include "core/catalog/capacity_index.h"
#include "core/catalog/catalog.h"
#include "core/model/catalog_model.h"

namespace accelsched {

struct NodePage {
  std::vector<Node> nodes;
  std::string next_page_token;  // empty on the last page
};

// NOT_FOUND naming node `name`.
absl::Status NodeNotFound(absl::string_view name);

// The node called `name`; NOT_FOUND when `nodes` has none.
absl::StatusOr<const Node*> FindNode(const NodeMap& nodes,
                                     absl::string_view name);

// Ids of the live allocations holding any unit of `index` on node `name`,
// whole (the unit's holder) or a share (`holders`).
std::set<std::string> HoldersOn(const CapacityIndex& index,
                                const UnitHolders& holders,
                                absl::string_view name);

// The nodes `selector` matches, in name order after `after`, at most
// `page_size` (`page_size` and `after` as ParsePageRequest gives them).
NodePage NodesPage(const NodeMap& nodes, const LabelSelector& selector,
                   int page_size, absl::string_view after);

// FAILED_PRECONDITION naming the node and device when `next` could not
// type a device of `nodes` that `current` types now.
absl::Status CheckAcceleratorTypes(const NodeMap& nodes,
                                   const AcceleratorTypeSet& current,
                                   const AcceleratorTypeSet& next);

// Nodes by schedulable flag: {schedulable, cordoned}.
std::pair<int64_t, int64_t> NodeCounts(const NodeMap& nodes);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_CATALOG_NODE_QUERIES_H_
