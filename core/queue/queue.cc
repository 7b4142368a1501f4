#include "core/queue/queue.h"

#include <algorithm>
#include <bit>
#include <queue>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace accelsched {
namespace {

constexpr uint32_t kNoShape = ~uint32_t{0};

}  // namespace

std::string ShapeOf(const Allocation& p) {
  return p.KeyFor(RequestSpec::kShape);
}

void Queue::Add(const Allocation& pending) {
  Remove(pending.id);  // entered again: filed anew
  std::string shape = ShapeOf(pending);
  auto [interned, fresh] = shape_ids_.try_emplace(shape, 0);
  if (fresh) {
    if (free_shape_ids_.empty()) {
      interned->second = static_cast<uint32_t>(shape_refs_.size());
      shape_refs_.push_back(0);
    } else {
      interned->second = free_shape_ids_.back();
      free_shape_ids_.pop_back();
    }
  }
  const uint32_t shape_id = interned->second;
  ++shape_refs_[shape_id];
  Entry entry{pending.priority, pending.tenant, std::move(shape), shape_id, "",
              MatchSpec::Of(pending)};
  levels_[entry.priority][entry.tenant][shape_id].insert(pending.id);
  entries_.emplace(pending.id, std::move(entry));
}

void Queue::Remove(const std::string& id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  const Entry& e = it->second;
  auto level = levels_.find(e.priority);
  auto tenant = level->second.find(e.tenant);
  auto group = tenant->second.find(e.shape_id);
  group->second.erase(id);
  if (group->second.empty()) tenant->second.erase(group);
  if (tenant->second.empty()) level->second.erase(tenant);
  if (level->second.empty()) levels_.erase(level);
  if (--shape_refs_[e.shape_id] == 0) {
    shape_ids_.erase(e.shape);
    free_shape_ids_.push_back(e.shape_id);
  }
  entries_.erase(it);
}

void Queue::Clear() {
  levels_.clear();
  entries_.clear();
  shape_ids_.clear();
  shape_refs_.clear();
  free_shape_ids_.clear();
}

void Queue::Walk(RankFn rank, VisitFn visit) const {
  // Two levels, so that a shape that did not fit is given up on for every
  // tenant at once: per shape, a heap of its tenants' groups (lowest rank,
  // then oldest head, first); above them, a heap of shapes by their best
  // group. Ranks only grow during a walk, so a group filed under an old
  // rank is filed again when it comes up (lazily).
  struct Cursor {
    double rank;
    const std::string* head;
    const std::string* tenant;
    Group::const_iterator pos, end;
  };
  auto later = [](const Cursor& a, const Cursor& b) {
    return std::tie(a.rank, *a.head) > std::tie(b.rank, *b.head);
  };
  struct Shape {
    // std::push_heap order under `later` once `heaped`; before, the first
    // group lies at `best` (most shapes are given up on at their first
    // visit, and need no heap).
    std::vector<Cursor> heap;
    bool heaped = false;
    size_t best = 0;
    uint64_t version = 0;  // bumped with every change of its top
    bool done = false;
  };
  struct Entry {
    double rank;
    const std::string* head;
    size_t shape;
    uint64_t version;
  };
  auto entry_later = [](const Entry& a, const Entry& b) {
    return std::tie(a.rank, *a.head) > std::tie(b.rank, *b.head);
  };
  // A shape's place in `shapes` by its interned id (the ids are dense).
  std::vector<uint32_t> shape_index(shape_refs_.size());
  for (const auto& [priority, tenants] : levels_) {
    std::vector<Shape> shapes;
    std::fill(shape_index.begin(), shape_index.end(), kNoShape);
    for (const auto& [tenant, groups] : tenants) {
      const double s = rank(tenant);
      for (const auto& [shape_id, ids] : groups) {
        uint32_t& at = shape_index[shape_id];
        if (at == kNoShape) {
          at = static_cast<uint32_t>(shapes.size());
          shapes.emplace_back();
        }
        shapes[at].heap.push_back(
            Cursor{s, &*ids.begin(), &tenant, ids.begin(), ids.end()});
      }
    }
    std::priority_queue<Entry, std::vector<Entry>, decltype(entry_later)> top(
        entry_later);
    auto file = [&](size_t i) {
      Shape& sh = shapes[i];
      if (sh.heap.empty()) return;
      const Cursor& best = sh.heaped ? sh.heap.front() : sh.heap[sh.best];
      top.push(Entry{best.rank, best.head, i, ++sh.version});
    };
    for (size_t i = 0; i < shapes.size(); ++i) {
      Shape& sh = shapes[i];
      for (size_t j = 1; j < sh.heap.size(); ++j) {
        if (later(sh.heap[sh.best], sh.heap[j])) sh.best = j;
      }
      file(i);
    }
    while (!top.empty()) {
      const Entry e = top.top();
      top.pop();
      Shape& sh = shapes[e.shape];
      if (sh.done || e.version != sh.version) continue;
      if (sh.heaped) {
        std::pop_heap(sh.heap.begin(), sh.heap.end(), later);
      } else {
        std::swap(sh.heap[sh.best], sh.heap.back());
      }
      Cursor c = sh.heap.back();
      sh.heap.pop_back();
      // The rest of the shape's groups in heap order, once they are needed.
      auto heapify = [&sh, &later] {
        if (sh.heaped) return;
        std::make_heap(sh.heap.begin(), sh.heap.end(), later);
        sh.heaped = true;
      };
      if (const double now = rank(*c.tenant); now != c.rank) {
        c.rank = now;
        heapify();
        sh.heap.push_back(c);
        std::push_heap(sh.heap.begin(), sh.heap.end(), later);
        file(e.shape);
        continue;
      }
      switch (visit(*c.pos)) {
        case Verdict::kSkipShape:
          sh.done = true;
          continue;
        case Verdict::kSkipGroup:
          break;
        case Verdict::kTaken:
        case Verdict::kPassed:
          heapify();
          if (++c.pos != c.end) {
            c.head = &*c.pos;
            c.rank = rank(*c.tenant);
            sh.heap.push_back(c);
            std::push_heap(sh.heap.begin(), sh.heap.end(), later);
          }
          break;
      }
      heapify();
      file(e.shape);
    }
  }
}

std::vector<std::string> Queue::Order(
    RankFn rank,
    absl::FunctionRef<double(const std::string& id)> added) const {
  std::vector<std::string> order;
  order.reserve(entries_.size());
  absl::flat_hash_map<std::string, double> sum;
  Walk(
      [&](const std::string& tenant) {
        auto it = sum.find(tenant);
        return rank(tenant) + (it == sum.end() ? 0.0 : it->second);
      },
      [&](const std::string& id) {
        order.push_back(id);
        sum[entries_.find(id)->second.tenant] += added(id);
        return Verdict::kTaken;
      });
  return order;
}

void Queue::SetReason(const std::string& id, const std::string& reason) {
  auto it = entries_.find(id);
  // Most passes find the same reason again: no copy then.
  if (it != entries_.end() && it->second.reason != reason) {
    it->second.reason = reason;
  }
}

const std::string& Queue::Reason(absl::string_view id) const {
  static const std::string* const kNone = new std::string();
  auto it = entries_.find(id);
  return it == entries_.end() ? *kNone : it->second.reason;
}

const MatchSpec& Queue::Spec(absl::string_view id) const {
  return entries_.find(id)->second.spec;
}

const std::string& Queue::Shape(absl::string_view id) const {
  static const std::string* const kNone = new std::string();
  auto it = entries_.find(id);
  return it == entries_.end() ? *kNone : it->second.shape;
}

std::map<std::string, int64_t> Queue::CountByTenant() const {
  std::map<std::string, int64_t> out;
  for (const auto& [id, e] : entries_) ++out[e.tenant];
  return out;
}

}  // namespace accelsched
