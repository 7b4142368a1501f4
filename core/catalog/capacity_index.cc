#include "core/catalog/capacity_index.h"

#include "absl/strings/str_cat.h"

namespace accelsched {

void CapacityIndex::Count(const Unit& u, int sign) {
  Pool& pool = pools_[u.pool];
  Home& home = pool.homes[u.home];
  pool.total += sign;
  if (!u.allocation.empty()) {
    pool.allocated += sign;
  } else if (!u.healthy) {
    pool.unhealthy += sign;
  }
  if (u.free()) {
    if (home.free > 0) {
      pool.by_free.erase({home.free, home.cpu, u.home});
      --pool.homes_with_free[home.free];
    }
    home.free += sign;
    if (home.free > 0) {
      home.cpu = CpuKey(u.home);
      pool.by_free.insert({home.free, home.cpu, u.home});
      if (home.free >= static_cast<int>(pool.homes_with_free.size()))
        pool.homes_with_free.resize(home.free + 1);
      ++pool.homes_with_free[home.free];
    }
  }
}

void CapacityIndex::Put(Unit unit) {
  Remove(unit.key);
  Pool& pool = pools_[unit.pool];
  Home& home = pool.homes[unit.home];
  if (!home.units.empty())
    pool.home_sizes.erase(pool.home_sizes.find(home.units.size()));
  home.units.push_back(unit.key);
  pool.home_sizes.insert(home.units.size());
  for (const std::string& host : unit.hosts)
    units_by_node_[host].insert(unit.key);
  Count(unit, +1);
  std::string key = unit.key;
  units_.emplace(std::move(key), std::move(unit));
}

void CapacityIndex::Remove(absl::string_view key) {
  auto it = units_.find(key);
  if (it == units_.end()) return;
  const Unit& u = it->second;
  Count(u, -1);
  auto pool_it = pools_.find(u.pool);
  Pool& pool = pool_it->second;
  auto home_it = pool.homes.find(u.home);
  Home& home = home_it->second;
  pool.home_sizes.erase(pool.home_sizes.find(home.units.size()));
  std::erase(home.units, u.key);
  if (home.units.empty()) {
    pool.homes.erase(home_it);
  } else {
    pool.home_sizes.insert(home.units.size());
  }
  for (const std::string& host : u.hosts) {
    auto n = units_by_node_.find(host);
    n->second.erase(u.key);
    if (n->second.empty()) units_by_node_.erase(n);
  }
  if (pool.total == 0) pools_.erase(pool_it);
  units_.erase(it);
}

void CapacityIndex::SetAllocation(absl::string_view key,
                                  absl::string_view allocation) {
  auto it = units_.find(key);
  if (it == units_.end()) return;
  Count(it->second, -1);
  it->second.allocation = std::string(allocation);
  Count(it->second, +1);
}

int64_t CapacityIndex::CpuKey(absl::string_view node) const {
  const NodeAccount* account = Account(node);
  if (account == nullptr || !account->allocatable.has_value()) {
    return kUnaccountedCpu;
  }
  return account->available().cpu_milli;
}

void CapacityIndex::Rekey(absl::string_view node) {
  const int64_t cpu = CpuKey(node);
  auto units = units_by_node_.find(node);
  if (units == units_by_node_.end()) return;
  for (const std::string& key : units->second) {
    const Unit& u = units_.find(key)->second;
    if (u.home != node) continue;
    Pool& pool = pools_.find(u.pool)->second;
    Home& home = pool.homes.find(u.home)->second;
    if (home.cpu == cpu) continue;  // done already (another unit of it)
    if (home.free > 0) {
      pool.by_free.erase({home.free, home.cpu, u.home});
      pool.by_free.insert({home.free, cpu, u.home});
    }
    home.cpu = cpu;
  }
}

void CapacityIndex::SetAllocatable(absl::string_view node,
                                   std::optional<NodeResources> allocatable) {
  if (!allocatable.has_value()) {
    auto it = accounts_.find(node);
    if (it == accounts_.end()) return;
    it->second.allocatable.reset();
    if (it->second.held == NodeResources{}) accounts_.erase(it);
  } else {
    accounts_[node].allocatable = allocatable;
  }
  Rekey(node);
}

void CapacityIndex::AddHeld(absl::string_view node, const NodeResources& held,
                            int sign) {
  NodeAccount& account = accounts_[node];
  if (sign > 0) {
    account.held += held;
  } else {
    account.held -= held;
  }
  if (!account.allocatable.has_value() && account.held == NodeResources{}) {
    accounts_.erase(accounts_.find(node));
  }
  Rekey(node);
}

const NodeAccount* CapacityIndex::Account(absl::string_view node) const {
  auto it = accounts_.find(node);
  return it == accounts_.end() ? nullptr : &it->second;
}

const char* CapacityIndex::Shortfall(absl::string_view node,
                                     const NodeResources& need,
                                     const NodeResources& freed) const {
  const NodeAccount* account = Account(node);
  if (account == nullptr || !account->allocatable.has_value()) return nullptr;
  NodeResources room = account->available();
  room += freed;
  return FirstShortfall(room, need,
                        /*limits_pods=*/account->allocatable->pods > 0);
}

const Unit* CapacityIndex::Find(absl::string_view key) const {
  auto it = units_.find(key);
  return it == units_.end() ? nullptr : &it->second;
}

const CapacityIndex::Pool* CapacityIndex::FindPool(const PoolKey& key) const {
  auto it = pools_.find(key);
  return it == pools_.end() ? nullptr : &it->second;
}

std::vector<std::pair<const PoolKey*, const CapacityIndex::Pool*>>
CapacityIndex::PoolsOf(DeviceClass device_class,
                       absl::string_view partition) const {
  std::vector<std::pair<const PoolKey*, const Pool*>> out;
  for (auto it = pools_.lower_bound(PoolKey{device_class, "", ""});
       it != pools_.end() && it->first.device_class == device_class; ++it) {
    if (it->first.partition == partition)
      out.emplace_back(&it->first, &it->second);
  }
  return out;
}

std::vector<std::string> CapacityIndex::UnitsOnNode(
    absl::string_view node) const {
  auto it = units_by_node_.find(node);
  if (it == units_by_node_.end()) return {};
  return std::vector<std::string>(it->second.begin(), it->second.end());
}

std::vector<CapacityEntry> CapacityIndex::Capacity() const {
  std::vector<CapacityEntry> out;
  out.reserve(pools_.size());
  for (const auto& [key, pool] : pools_) {
    out.push_back(CapacityEntry{key.device_class, key.model, key.partition,
                                pool.total, pool.allocated, pool.free(),
                                pool.unhealthy});
  }
  return out;
}

}  // namespace accelsched
