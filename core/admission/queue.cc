#include "core/admission/queue.h"

#include <algorithm>
#include <bit>
#include <queue>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace accelsched {

std::string ShapeOf(const Allocation& p) {
  std::string selector;
  for (const auto& [key, value] : p.node_selector) {
    absl::StrAppend(&selector, key.size(), ":", key, "=", value.size(), ":",
                    value, ";");
  }
  // Leases by power of two seconds (0: the server default), so that varied
  // leases do not make a group of every request.
  const int64_t seconds = absl::ToInt64Seconds(p.lease);
  const int lease_bucket =
      seconds <= 0 ? -1 : std::bit_width(static_cast<uint64_t>(seconds));
  // Exact pod resources: a smaller need may fit where a larger one did not.
  std::string pod;
  if (p.pod_resources.has_value()) {
    pod = absl::StrCat(p.pod_resources->cpu_milli, "m",
                       p.pod_resources->memory_bytes, "b",
                       p.pod_resources->pods, "p");
  }
  // Exact shares likewise: a smaller share may fit where a larger did not,
  // and one of another group on GPUs that this one's group may not join.
  std::string share;
  if (p.share.has_value()) {
    share = absl::StrCat(p.share->compute_milli, "m", p.share->memory_bytes,
                         "b", p.share->group.size(), ":", p.share->group);
  }
  return absl::StrCat(static_cast<int>(p.device_class), "|",
                      absl::StrJoin(p.requested_models, ","), "|", p.partition,
                      "|", p.count, "x", p.replicas, "|", p.topology_key, "|",
                      lease_bucket, "|", selector, "|", pod, "|", share);
}

void Queue::Add(const Allocation& pending) {
  Entry entry{pending.priority, pending.tenant, ShapeOf(pending), ""};
  levels_[entry.priority][entry.tenant][entry.shape].insert(pending.id);
  entries_.insert_or_assign(pending.id, std::move(entry));
}

void Queue::Remove(const std::string& id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  const Entry& e = it->second;
  auto level = levels_.find(e.priority);
  auto tenant = level->second.find(e.tenant);
  auto group = tenant->second.find(e.shape);
  group->second.erase(id);
  if (group->second.empty()) tenant->second.erase(group);
  if (tenant->second.empty()) level->second.erase(tenant);
  if (level->second.empty()) levels_.erase(level);
  entries_.erase(it);
}

void Queue::Clear() {
  levels_.clear();
  entries_.clear();
}

void Queue::Walk(ShareFn share, VisitFn visit) const {
  // Two levels, so that a shape that did not fit is given up on for every
  // tenant at once: per shape, a heap of its tenants' groups (lowest share,
  // then oldest head, first); above them, a heap of shapes by their best
  // group. Shares only grow during a walk, so a group filed under an old
  // share is filed again when it comes up (lazily).
  struct Cursor {
    double share;
    const std::string* head;
    const std::string* tenant;
    Group::const_iterator pos, end;
  };
  auto later = [](const Cursor& a, const Cursor& b) {
    return std::tie(a.share, *a.head) > std::tie(b.share, *b.head);
  };
  struct Shape {
    std::vector<Cursor> heap;  // std::push_heap order under `later`
    uint64_t version = 0;      // bumped with every change of its top
    bool done = false;
  };
  struct Entry {
    double share;
    const std::string* head;
    size_t shape;
    uint64_t version;
  };
  auto entry_later = [](const Entry& a, const Entry& b) {
    return std::tie(a.share, *a.head) > std::tie(b.share, *b.head);
  };
  for (const auto& [priority, tenants] : levels_) {
    std::vector<Shape> shapes;
    absl::flat_hash_map<absl::string_view, size_t> shape_index;
    for (const auto& [tenant, groups] : tenants) {
      const double s = share(tenant);
      for (const auto& [shape, ids] : groups) {
        auto [it, fresh] = shape_index.try_emplace(shape, shapes.size());
        if (fresh) shapes.emplace_back();
        shapes[it->second].heap.push_back(
            Cursor{s, &*ids.begin(), &tenant, ids.begin(), ids.end()});
      }
    }
    std::priority_queue<Entry, std::vector<Entry>, decltype(entry_later)> top(
        entry_later);
    auto file = [&](size_t i) {
      Shape& sh = shapes[i];
      if (sh.heap.empty()) return;
      const Cursor& best = sh.heap.front();
      top.push(Entry{best.share, best.head, i, ++sh.version});
    };
    for (size_t i = 0; i < shapes.size(); ++i) {
      std::make_heap(shapes[i].heap.begin(), shapes[i].heap.end(), later);
      file(i);
    }
    while (!top.empty()) {
      const Entry e = top.top();
      top.pop();
      Shape& sh = shapes[e.shape];
      if (sh.done || e.version != sh.version) continue;
      std::pop_heap(sh.heap.begin(), sh.heap.end(), later);
      Cursor c = sh.heap.back();
      sh.heap.pop_back();
      if (const double now = share(*c.tenant); now != c.share) {
        c.share = now;
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
          if (++c.pos != c.end) {
            c.head = &*c.pos;
            c.share = share(*c.tenant);
            sh.heap.push_back(c);
            std::push_heap(sh.heap.begin(), sh.heap.end(), later);
          }
          break;
      }
      file(e.shape);
    }
  }
}

std::vector<std::string> Queue::Order(
    ShareFn share,
    absl::FunctionRef<double(const std::string& id)> demand) const {
  std::vector<std::string> order;
  order.reserve(entries_.size());
  absl::flat_hash_map<std::string, double> added;
  Walk(
      [&](const std::string& tenant) {
        auto it = added.find(tenant);
        return share(tenant) + (it == added.end() ? 0.0 : it->second);
      },
      [&](const std::string& id) {
        order.push_back(id);
        added[entries_.find(id)->second.tenant] += demand(id);
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
