#include "core/catalog/home_tree.h"

#include <algorithm>
#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>
#include <iterator>
#include <limits>

namespace accelsched {
namespace {

// Keeps, in each node of the tree, the largest memory of its subtree
// (libstdc++'s pb_ds node-update protocol: operator() recomputes a node's
// metadata from its children after every change below it).
template <class NodeCItr, class NodeItr, class CmpFn, class Alloc>
struct MaxMemoryUpdate {
  using metadata_type = int64_t;

  void operator()(NodeItr it, NodeCItr end) {
    int64_t most = (*it)->memory;
    NodeItr left = it.get_l_child();
    NodeItr right = it.get_r_child();
    if (left != end) most = std::max(most, left.get_metadata());
    if (right != end) most = std::max(most, right.get_metadata());
    const_cast<int64_t&>(it.get_metadata()) = most;
  }

  virtual NodeCItr node_begin() const = 0;
  virtual NodeCItr node_end() const = 0;
  virtual ~MaxMemoryUpdate() = default;
};

using PbdsTree = __gnu_pbds::tree<HomeTree::Entry, __gnu_pbds::null_type,
                                  std::less<HomeTree::Entry>,
                                  __gnu_pbds::rb_tree_tag, MaxMemoryUpdate>;
using NodeIt = PbdsTree::node_const_iterator;

// The first entry (in order) not before `from` with memory >= min_memory in
// the subtree at `n`, or nullptr. `inside`: every key of the subtree is not
// before `from`, so its largest memory alone decides whether to enter it.
// Enters at most one subtree per level whose largest memory suffices and
// which is wholly not before `from`, and always finds the entry there: the
// cost is O(height).
const HomeTree::Entry* FirstFrom(NodeIt n, NodeIt end,
                                 const HomeTree::Entry& from,
                                 int64_t min_memory, bool inside) {
  while (n != end) {
    if (inside && n.get_metadata() < min_memory) return nullptr;
    const HomeTree::Entry& e = **n;
    if (!inside && e < from) {
      n = n.get_r_child();
      continue;
    }
    // e is not before `from`: neither is anything to its right.
    if (const HomeTree::Entry* found =
            FirstFrom(n.get_l_child(), end, from, min_memory, inside)) {
      return found;
    }
    if (e.memory >= min_memory) return &e;
    n = n.get_r_child();
    inside = true;
  }
  return nullptr;
}

}  // namespace

struct HomeTree::Tree {
  PbdsTree entries;
};

HomeTree::HomeTree() : tree_(std::make_unique<Tree>()) {}
HomeTree::~HomeTree() = default;
HomeTree::HomeTree(HomeTree&&) noexcept = default;
HomeTree& HomeTree::operator=(HomeTree&&) noexcept = default;

void HomeTree::Insert(const Entry& e) { tree_->entries.insert(e); }

void HomeTree::Erase(const Entry& e) { tree_->entries.erase(e); }

size_t HomeTree::size() const { return tree_ ? tree_->entries.size() : 0; }

void HomeTree::ForEachFrom(const Entry& from, int64_t min_memory,
                           absl::FunctionRef<bool(const Entry&)> visit) const {
  const PbdsTree& t = tree_->entries;
  if (min_memory == std::numeric_limits<int64_t>::min()) {
    // Nothing is short: a plain walk, O(1) a step.
    for (auto it = t.lower_bound(from); it != t.end(); ++it) {
      if (!visit(*it)) return;
    }
    return;
  }
  Entry next = from;
  while (const Entry* e = FirstFrom(t.node_begin(), t.node_end(), next,
                                    min_memory, /*inside=*/false)) {
    if (!visit(*e)) return;
    // The smallest key after e's: the same (free, cpu), the name followed by
    // the least character.
    next = Entry{e->free, e->cpu, e->home + '\0'};
  }
}

const HomeTree::Entry* HomeTree::Last() const {
  const PbdsTree& t = tree_->entries;
  return t.empty() ? nullptr : &*std::prev(t.end());
}

int64_t HomeTree::MaxMemory() const {
  const PbdsTree& t = tree_->entries;
  return t.empty() ? std::numeric_limits<int64_t>::min()
                   : t.node_begin().get_metadata();
}

void HomeTree::ForEach(absl::FunctionRef<bool(const Entry&)> visit) const {
  for (const Entry& e : tree_->entries) {
    if (!visit(e)) return;
  }
}

}  // namespace accelsched
