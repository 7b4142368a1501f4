#include "core/allocation_book.h"

#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "core/page_token.h"

namespace accelsched {

void AllocationBook::Load(std::vector<StoredAllocation> allocations) {
  allocations_.clear();
  unit_owner_.clear();
  by_request_.clear();
  expiry_.clear();
  ended_.clear();
  for (StoredAllocation& stored : allocations) {
    Allocation& a = stored.allocation;
    if (a.live()) {
      for (const std::string& unit : stored.units) unit_owner_[unit] = a.id;
      expiry_.insert({a.expires_at, a.id});
    } else {
      ended_.insert({a.ended_at, a.id});
    }
    // Ids sort by creation, so the last one seen per request is its newest.
    auto [it, inserted] = by_request_.try_emplace(a.request_id, a.id);
    if (!inserted && a.id > it->second) it->second = a.id;
    std::string id = a.id;
    allocations_.emplace(
        std::move(id), Record{std::move(a), std::move(stored.units), nullptr});
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

std::string AllocationBook::NewId(absl::Time now) {
  // A counter and random bits keep ids unique across restarts and within one
  // microsecond. absl::BitGen is not thread-safe, and books in one process
  // (tests) share no lock.
  thread_local absl::BitGen id_bits;
  return absl::StrFormat("a-%013x-%04x%04x", absl::ToUnixMicros(now),
                         ++id_counter_ & 0xffff,
                         absl::Uniform<uint32_t>(id_bits) & 0xffff);
}

void AllocationBook::Hold(const Record& record) {
  for (const std::string& key : record.units) {
    unit_owner_[key] = record.allocation.id;
    index_->SetAllocation(key, record.allocation.id);
  }
}

AllocationBook::Record& AllocationBook::Add(Record record) {
  const Allocation& a = record.allocation;
  expiry_.insert({a.expires_at, a.id});
  by_request_[a.request_id] = a.id;
  Hold(record);
  std::string id = a.id;
  return allocations_.emplace(std::move(id), std::move(record)).first->second;
}

void AllocationBook::End(Record& record, AllocationState state,
                         absl::string_view reason, absl::Time now) {
  Allocation& a = record.allocation;
  expiry_.erase({a.expires_at, a.id});
  a.state = state;
  a.end_reason = std::string(reason);
  a.ended_at = now;
  ended_.insert({now, a.id});
  for (const std::string& unit : record.units) {
    unit_owner_.erase(unit);
    index_->SetAllocation(unit, "");
  }
}

void AllocationBook::SetExpiry(Record& record, absl::Time expires_at) {
  Allocation& a = record.allocation;
  expiry_.erase({a.expires_at, a.id});
  a.expires_at = expires_at;
  expiry_.insert({a.expires_at, a.id});
}

std::vector<AllocationBook::Record*> AllocationBook::Due(absl::Time now) {
  std::vector<Record*> due;
  for (auto it = expiry_.begin(); it != expiry_.end() && it->first <= now;
       ++it) {
    due.push_back(&allocations_.find(it->second)->second);
  }
  return due;
}

std::vector<std::string> AllocationBook::Forget(absl::Time cutoff) {
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

absl::string_view AllocationBook::OwnerOf(absl::string_view key) const {
  auto it = unit_owner_.find(key);
  return it == unit_owner_.end() ? absl::string_view() : it->second;
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
    ++out[allocations_.find(entry.second)->second.allocation.tenant];
  }
  return out;
}

}  // namespace accelsched
