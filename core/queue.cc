#include "core/queue.h"

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
  return absl::StrCat(static_cast<int>(p.device_class), "|",
                      absl::StrJoin(p.requested_models, ","), "|", p.partition,
                      "|", p.count, "x", p.replicas, "|", p.topology_key, "|",
                      absl::ToInt64Nanoseconds(p.lease), "|", selector);
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
  struct Cursor {
    double share;
    const std::string* head;
    const std::string* tenant;
    Group::const_iterator pos, end;
  };
  // Lowest share first, then the oldest head.
  auto later = [](const Cursor& a, const Cursor& b) {
    return std::tie(a.share, *a.head) > std::tie(b.share, *b.head);
  };
  for (const auto& [priority, tenants] : levels_) {
    std::priority_queue<Cursor, std::vector<Cursor>, decltype(later)> heap(
        later);
    for (const auto& [tenant, groups] : tenants) {
      const double s = share(tenant);
      for (const auto& [shape, ids] : groups) {
        heap.push(Cursor{s, &*ids.begin(), &tenant, ids.begin(), ids.end()});
      }
    }
    while (!heap.empty()) {
      Cursor c = heap.top();
      heap.pop();
      // Another group of the tenant may have been taken from since this one
      // was filed: file it again under the share now.
      if (const double now = share(*c.tenant); now != c.share) {
        c.share = now;
        heap.push(c);
        continue;
      }
      if (visit(*c.pos) == Verdict::kSkipGroup) continue;
      if (++c.pos == c.end) continue;
      c.head = &*c.pos;
      c.share = share(*c.tenant);
      heap.push(c);
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

void Queue::SetReason(const std::string& id, std::string reason) {
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.reason = std::move(reason);
}

const std::string& Queue::Reason(absl::string_view id) const {
  static const std::string* const kNone = new std::string();
  auto it = entries_.find(id);
  return it == entries_.end() ? *kNone : it->second.reason;
}

std::map<std::string, int64_t> Queue::CountByTenant() const {
  std::map<std::string, int64_t> out;
  for (const auto& [id, e] : entries_) ++out[e.tenant];
  return out;
}

}  // namespace accelsched
