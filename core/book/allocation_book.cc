#include "core/book/allocation_book.h"

#include <algorithm>

#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "core/base/page_token.h"

namespace accelsched {

void AllocationBook::Load(std::vector<StoredAllocation> allocations) {
  allocations_.clear();
  unit_holder_.clear();
  unit_shares_.clear();
  by_request_.clear();
  expiry_.clear();
  ended_.clear();
  usage_milli_.clear();
  preempted_usage_milli_.clear();
  live_by_pool_.clear();
  victims_.clear();
  active_priorities_.clear();
  for (StoredAllocation& stored : allocations) {
    Allocation& a = stored.allocation;
    if (a.live() || a.pending()) {
      expiry_.insert({a.expires_at, a.id});
    } else {
      ended_.insert({a.ended_at, a.id});
    }
    // Ids sort by creation, so the last one seen per request is its newest.
    auto [it, inserted] = by_request_.try_emplace(a.request_id, a.id);
    if (!inserted && a.id > it->second) it->second = a.id;
    std::string id = a.id;
    const Record& record =
        allocations_
            .emplace(std::move(id),
                     Record{std::move(a), std::move(stored.units), nullptr})
            .first->second;
    // The index is the catalog's to fill, after: it asks HolderOf.
    if (record.allocation.live()) Hold(record, /*mark_index=*/false);
  }
}

const AllocationBook::Record* AllocationBook::Find(
    const AllocationKey& key) const {
  std::string id = key.allocation_id;
  if (id.empty()) {
    auto it = by_request_.find(key.request_id);
    if (it == by_request_.end()) return nullptr;
    id = it->second;
  }
  auto it = allocations_.find(id);
  return it == allocations_.end() ? nullptr : &it->second;
}

AllocationBook::Record* AllocationBook::FindMutable(absl::string_view id) {
  auto it = allocations_.find(id);
  return it == allocations_.end() ? nullptr : &it->second;
}

absl::Time AllocationBook::FreeAt(absl::string_view allocation) const {
  auto it = allocations_.find(allocation);
  if (it == allocations_.end() || !it->second.allocation.live()) {
    return absl::InfinitePast();
  }
  return it->second.allocation.expires_at;
}

std::string AllocationBook::NewId(absl::Time now) {
  // A counter and random bits keep ids unique across restarts and within one
  // microsecond. absl::BitGen is not thread-safe, and books in one process
  // (tests) share no lock.
  thread_local absl::BitGen id_bits;
  return absl::StrFormat("a-%013x-%04x%04x", absl::ToUnixMicros(now),
                         ++id_counter_ & 0xffff,
                         absl::Uniform<uint32_t>(id_bits) & 0xffff);
}

PoolKey PoolOf(const Allocation& a) {
  return PoolKey{a.device_class, a.model, a.partition};
}

int64_t UsageMilliOf(const Allocation& a, size_t units) {
  const GpuShare* share = a.held_share();
  return static_cast<int64_t>(units) * kGpuMilli +
         (share == nullptr ? 0 : share->compute_milli);
}

const std::string* SharedUnitOf(const Allocation& a) {
  return a.held_share() == nullptr ? nullptr : &a.devices.front().device_id;
}

std::set<std::string> NodesOf(const Allocation& a) {
  std::set<std::string> nodes;
  for (const AllocatedDevice& d : a.devices) nodes.insert(d.node);
  return nodes;
}

namespace {

// Usage maps keep no zero entries.
void AddUsage(
    std::map<std::string, std::map<PoolKey, int64_t>, std::less<>>& usage,
    const std::string& tenant, const PoolKey& pool, int64_t n) {
  if (n != 0) usage[tenant][pool] += n;
}

void Subtract(
    std::map<std::string, std::map<PoolKey, int64_t>, std::less<>>& usage,
    const std::string& tenant, const PoolKey& pool, int64_t n) {
  if (n == 0) return;
  auto t = usage.find(tenant);
  auto p = t->second.find(pool);
  p->second -= n;
  if (p->second == 0) t->second.erase(p);
  if (t->second.empty()) usage.erase(t);
}

int64_t Lookup(
    const std::map<std::string, std::map<PoolKey, int64_t>, std::less<>>& usage,
    absl::string_view tenant, const PoolKey& pool) {
  auto t = usage.find(tenant);
  if (t == usage.end()) return 0;
  auto p = t->second.find(pool);
  return p == t->second.end() ? 0 : p->second;
}

}  // namespace

void AllocationBook::HoldResources(const Allocation& a, int sign) {
  if (!a.pod_resources.has_value()) return;
  for (const std::string& node : NodesOf(a)) {
    index_->AddHeld(node, *a.pod_resources, sign);
  }
}

void AllocationBook::MarkHeldResources() {
  for (const auto& [id, record] : allocations_) {
    if (record.allocation.live()) HoldResources(record.allocation, +1);
  }
}

void AllocationBook::HoldShare(const Allocation& a, int sign, bool mark_index) {
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

void AllocationBook::Hold(const Record& record, bool mark_index) {
  const Allocation& a = record.allocation;
  for (const std::string& key : record.units) {
    unit_holder_[key] = a.id;
    if (mark_index) index_->SetHolder(key, a.id);
  }
  HoldShare(a, +1, mark_index);
  if (mark_index) HoldResources(a, +1);
  const int64_t milli = UsageMilliOf(a, record.units.size());
  AddUsage(usage_milli_, a.tenant, PoolOf(a), milli);
  live_by_pool_[PoolOf(a)].insert(&record);
  if (a.state == AllocationState::kPreempted) {
    victims_[a.preempted_by].insert(a.id);
    AddUsage(preempted_usage_milli_, a.tenant, PoolOf(a), milli);
  } else {
    active_priorities_[PoolOf(a)].insert(a.priority);
  }
}

void AllocationBook::ForgetPriority(const Allocation& a) {
  auto pool = active_priorities_.find(PoolOf(a));
  pool->second.erase(pool->second.find(a.priority));
  if (pool->second.empty()) active_priorities_.erase(pool);
}

void AllocationBook::Free(const Record& record) {
  const Allocation& a = record.allocation;
  for (const std::string& key : record.units) {
    unit_holder_.erase(key);
    index_->SetHolder(key, "");
  }
  HoldShare(a, -1, /*mark_index=*/true);
  HoldResources(a, -1);
  auto live = live_by_pool_.find(PoolOf(a));
  live->second.erase(&record);
  if (live->second.empty()) live_by_pool_.erase(live);
  const int64_t milli = UsageMilliOf(a, record.units.size());
  Subtract(usage_milli_, a.tenant, PoolOf(a), milli);
  if (a.state == AllocationState::kPreempted) {
    auto victims = victims_.find(a.preempted_by);
    victims->second.erase(a.id);
    if (victims->second.empty()) victims_.erase(victims);
    Subtract(preempted_usage_milli_, a.tenant, PoolOf(a), milli);
  } else {
    ForgetPriority(a);
  }
}

AllocationBook::Record& AllocationBook::Add(Record record) {
  std::string id = record.allocation.id;
  Record& stored =
      allocations_.emplace(std::move(id), std::move(record)).first->second;
  const Allocation& a = stored.allocation;
  expiry_.insert({a.expires_at, a.id});
  by_request_[a.request_id] = a.id;
  // Held once stored: the book keeps pointers to its records.
  if (a.live()) Hold(stored, /*mark_index=*/true);
  return stored;
}

void AllocationBook::Admit(Record& record, Allocation admitted,
                           std::vector<std::string> units) {
  expiry_.erase({record.allocation.expires_at, record.allocation.id});
  record.allocation = std::move(admitted);
  record.units = std::move(units);
  expiry_.insert({record.allocation.expires_at, record.allocation.id});
  Hold(record, /*mark_index=*/true);
}

void AllocationBook::Preempt(Record& record, const std::string& preemptor,
                             absl::Time grace_end) {
  Allocation& a = record.allocation;
  ForgetPriority(a);
  AddUsage(preempted_usage_milli_, a.tenant, PoolOf(a),
           UsageMilliOf(a, record.units.size()));
  a.state = AllocationState::kPreempted;
  a.preempted_by = preemptor;
  victims_[preemptor].insert(a.id);
  SetExpiry(record, grace_end);
}

void AllocationBook::End(Record& record, AllocationState state,
                         absl::string_view reason, absl::Time now) {
  Allocation& a = record.allocation;
  if (a.live()) Free(record);
  expiry_.erase({a.expires_at, a.id});
  a.state = state;
  a.end_reason = std::string(reason);
  a.ended_at = now;
  ended_.insert({now, a.id});
}

void AllocationBook::SetExpiry(Record& record, absl::Time expires_at) {
  Allocation& a = record.allocation;
  // The per-pool set is keyed by the expiry: out before it changes.
  std::set<const Record*, ByExpiry>* live = nullptr;
  if (a.live()) {
    live = &live_by_pool_.find(PoolOf(a))->second;
    live->erase(&record);
  }
  expiry_.erase({a.expires_at, a.id});
  a.expires_at = expires_at;
  expiry_.insert({a.expires_at, a.id});
  if (live != nullptr) live->insert(&record);
}

std::vector<AllocationBook::Record*> AllocationBook::Due(absl::Time now) {
  std::vector<Record*> due;
  for (auto it = expiry_.begin(); it != expiry_.end() && it->first <= now;
       ++it) {
    due.push_back(&allocations_.find(it->second)->second);
  }
  return due;
}

void AllocationBook::ForEachLiveByExpiry(
    const PoolKey& pool,
    absl::FunctionRef<bool(const Record& record)> visit) const {
  auto it = live_by_pool_.find(pool);
  if (it == live_by_pool_.end()) return;
  for (const Record* record : it->second) {
    if (!visit(*record)) return;
  }
}

const std::set<std::string>& AllocationBook::VictimsOf(
    absl::string_view preemptor) const {
  static const std::set<std::string>* const kNone = new std::set<std::string>();
  auto it = victims_.find(preemptor);
  return it == victims_.end() ? *kNone : it->second;
}

std::optional<int> AllocationBook::LowestActivePriority(
    const PoolKey& pool) const {
  auto it = active_priorities_.find(pool);
  if (it == active_priorities_.end()) return std::nullopt;
  return *it->second.begin();
}

int64_t AllocationBook::UsageMilli(absl::string_view tenant,
                                   const PoolKey& pool) const {
  return Lookup(usage_milli_, tenant, pool);
}

int64_t AllocationBook::PreemptedUsageMilli(absl::string_view tenant,
                                            const PoolKey& pool) const {
  return Lookup(preempted_usage_milli_, tenant, pool);
}

std::vector<std::string> AllocationBook::ForgetEnded(absl::Time cutoff) {
  std::vector<std::string> forgotten;
  while (!ended_.empty() && ended_.begin()->first < cutoff) {
    std::string id = ended_.begin()->second;
    ended_.erase(ended_.begin());
    auto it = allocations_.find(id);
    auto req = by_request_.find(it->second.allocation.request_id);
    if (req != by_request_.end() && req->second == id) by_request_.erase(req);
    allocations_.erase(it);
    forgotten.push_back(std::move(id));
  }
  return forgotten;
}

absl::string_view AllocationBook::HolderOf(absl::string_view key) const {
  auto it = unit_holder_.find(key);
  return it == unit_holder_.end() ? absl::string_view() : it->second;
}

GpuShare AllocationBook::SharedOf(absl::string_view key) const {
  auto it = unit_shares_.find(key);
  return it == unit_shares_.end() ? GpuShare{} : it->second.sum;
}

std::vector<std::string> AllocationBook::ShareHoldersOf(
    absl::string_view key) const {
  auto it = unit_shares_.find(key);
  if (it == unit_shares_.end()) return {};
  return {it->second.holders.begin(), it->second.holders.end()};
}

size_t AllocationBook::ShareHolderCount(absl::string_view key) const {
  auto it = unit_shares_.find(key);
  return it == unit_shares_.end() ? 0 : it->second.holders.size();
}

AllocationPage AllocationBook::List(const AllocationFilter& filter,
                                    int page_size,
                                    absl::string_view after) const {
  AllocationPage page;
  auto it =
      after.empty() ? allocations_.begin() : allocations_.upper_bound(after);
  for (; it != allocations_.end(); ++it) {
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

std::map<std::string, int64_t> AllocationBook::ActiveByTenant() const {
  std::map<std::string, int64_t> out;
  for (const auto& entry : expiry_) {
    const Allocation& a = allocations_.find(entry.second)->second.allocation;
    if (a.state == AllocationState::kActive) ++out[a.tenant];
  }
  return out;
}

std::vector<const AllocationBook::Record*> AllocationBook::Pending() const {
  std::vector<const Record*> out;
  for (const auto& entry : expiry_) {
    const Record& r = allocations_.find(entry.second)->second;
    if (r.allocation.pending()) out.push_back(&r);
  }
  std::sort(out.begin(), out.end(), [](const Record* a, const Record* b) {
    return a->allocation.id < b->allocation.id;
  });
  return out;
}

}  // namespace accelsched
