#include "core/book/allocation_book.h"

#include <algorithm>

namespace accelsched {

void AllocationBook::Load(std::vector<StoredAllocation> allocations) {
  allocations_.clear();
  holdings_->Clear();
  tallies_.Clear();
  by_request_.clear();
  expiry_.clear();
  ended_.clear();
  live_by_pool_.clear();
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

const AllocationBook::Record* AllocationBook::Find(absl::string_view id) const {
  auto it = allocations_.find(id);
  return it == allocations_.end() ? nullptr : &it->second;
}

const AllocationBook::Record* AllocationBook::Find(
    const AllocationKey& key) const {
  std::string id = key.allocation_id;
  if (id.empty()) {
    auto it = by_request_.find(key.request_id);
    if (it == by_request_.end()) return nullptr;
    id = it->second;
  }
  return Find(id);
}

void AllocationBook::Hold(const Record& record, bool mark_index) {
  const Allocation& a = record.allocation;
  holdings_->Hold(a, record.units, mark_index);
  tallies_.Hold(a, record.units.size());
  live_by_pool_[PoolOf(a)].insert(&record);
}

void AllocationBook::Free(const Record& record) {
  const Allocation& a = record.allocation;
  holdings_->Free(a, record.units);
  tallies_.Free(a, record.units.size());
  auto live = live_by_pool_.find(PoolOf(a));
  live->second.erase(&record);
  if (live->second.empty()) live_by_pool_.erase(live);
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
  a.state = AllocationState::kPreempted;
  a.preempted_by = preemptor;
  tallies_.Preempt(a, record.units.size());
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

}  // namespace accelsched
