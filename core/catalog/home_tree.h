// Nodes of one pool ordered by (a count, CPU, name), with each node's memory
// kept as the largest per subtree, so that a walk skips in O(log n) the nodes
// short of memory as the order itself skips those short of CPU. The capacity
// index keeps three per pool: the homes with free units in best-fit order
// (count = free units; CPU and memory available), every accounted home by
// what it offers (count 0; CPU and memory allocatable), and the GPUs that
// take shares (count = free compute milli; CPU 0; "home" = the unit's key;
// memory = free GPU memory). The tree is libstdc++'s
// policy-based red-black tree (__gnu_pbds::tree with a node update), kept
// out of this header: it is heavy and only home_tree.cc needs it. Not
// thread-safe.
#ifndef ACCELSCHED_CORE_CATALOG_HOME_TREE_H_
#define ACCELSCHED_CORE_CATALOG_HOME_TREE_H_

#include <compare>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <tuple>

#include "absl/functional/function_ref.h"

namespace accelsched {

// The CPU and memory keys of a node that is not accounted: after every
// accounted node of the same free count, and never short.
inline constexpr int64_t kUnaccountedCpu = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kUnaccountedMemory =
    std::numeric_limits<int64_t>::max();

class HomeTree {
 public:
  struct Entry {
    int free = 0;  // the count: free units, 0, or free compute milli
    int64_t cpu = kUnaccountedCpu;
    std::string home;
    // Not part of the order: Insert and Erase treat entries with the same
    // (free, cpu, home) as one entry (operator== compares memory too).
    int64_t memory = kUnaccountedMemory;

    bool operator<(const Entry& o) const {
      return std::tie(free, cpu, home) < std::tie(o.free, o.cpu, o.home);
    }
    bool operator==(const Entry& o) const = default;
  };

  HomeTree();
  ~HomeTree();
  // A moved-from tree may only be destroyed or assigned to.
  HomeTree(HomeTree&&) noexcept;
  HomeTree& operator=(HomeTree&&) noexcept;

  // Adds `e`; replaces nothing (Erase the old key first).
  void Insert(const Entry& e);
  // Removes the entry with e's (free, cpu, home); no-op when there is none.
  void Erase(const Entry& e);
  size_t size() const;
  bool empty() const { return size() == 0; }

  // Calls `visit` on each entry not before `from` in the order whose memory
  // is at least `min_memory`, in order, until it returns false. (A default
  // Entry's cpu is kUnaccountedCpu: start a whole walk of a count at
  // {count, lowest int64_t, ""}.) Entries short
  // of memory cost nothing: each call to `visit` costs O(log n) to reach.
  void ForEachFrom(const Entry& from, int64_t min_memory,
                   absl::FunctionRef<bool(const Entry&)> visit) const;
  // The last entry in the order (the most CPU of the largest count), or
  // nullptr when empty.
  const Entry* Last() const;
  // The largest memory of any entry; the lowest int64_t when empty.
  int64_t MaxMemory() const;
  // Every entry, in order, until `visit` returns false.
  void ForEach(absl::FunctionRef<bool(const Entry&)> visit) const;

 private:
  struct Tree;
  std::unique_ptr<Tree> tree_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_CATALOG_HOME_TREE_H_
