#include "core/catalog/capacity_index.h"

#include <tuple>

#include "absl/strings/str_cat.h"

namespace accelsched {

void CapacityIndex::Count(const Unit& u, int sign) {
  Pool& pool = pools_[u.pool];
  Home& home = pool.homes[u.home];
  pool.total += sign;
  pool.shared_milli += sign * u.shared_milli;
  // A unit with shares on it counts as allocated: no whole request may have
  // it (GetCapacity's free_compute_milli tells what is left of it).
  if (!u.holder.empty()) {
    int& held = home.holders[u.holder];
    held += sign;
    if (held == 0) home.holders.erase(u.holder);
  }
  if (u.held()) {
    pool.allocated += sign;
  } else if (!u.healthy) {
    pool.unhealthy += sign;
  }
  if (u.shareable()) {
    pool.free_share_milli += sign * u.free_milli();
    pool.free_share_memory += sign * u.free_share_memory();
    if (u.free_milli() > 0) {
      const HomeTree::Entry e{static_cast<int>(u.free_milli()), 0, u.key,
                              u.free_share_memory()};
      if (u.shared_milli == 0) {
        if (sign > 0) {
          pool.unshared.Insert(e);
        } else {
          pool.unshared.Erase(e);
        }
      } else if (sign > 0) {
        pool.by_share[u.share_group].Insert(e);
      } else {
        auto tree = pool.by_share.find(u.share_group);
        tree->second.Erase(e);
        if (tree->second.empty()) pool.by_share.erase(tree);
      }
    }
  }
  if (u.free()) {
    if (home.free > 0) {
      pool.by_free.Erase({home.free, home.cpu, u.home});
      --pool.homes_with_free[home.free];
    }
    home.free += sign;
    if (home.free > 0) {
      std::tie(home.cpu, home.memory) = Keys(u.home);
      pool.by_free.Insert({home.free, home.cpu, u.home, home.memory});
      if (home.free >= static_cast<int>(pool.homes_with_free.size()))
        pool.homes_with_free.resize(home.free + 1);
      ++pool.homes_with_free[home.free];
    }
  }
}

void CapacityIndex::CountHome(Pool& pool, absl::string_view node, int sign) {
  const NodeAccount* account = Account(node);
  if (account == nullptr || !account->allocatable.has_value()) {
    pool.unaccounted_homes += sign;
    return;
  }
  const NodeResources& a = *account->allocatable;
  const HomeTree::Entry e{0, a.cpu_milli, std::string(node), a.memory_bytes};
  if (sign > 0) {
    pool.by_allocatable.Insert(e);
  } else {
    pool.by_allocatable.Erase(e);
  }
}

void CapacityIndex::Put(Unit unit) {
  Remove(unit.key);
  Pool& pool = pools_[unit.pool];
  Home& home = pool.homes[unit.home];
  if (home.units.empty()) {
    CountHome(pool, unit.home, +1);
  } else {
    pool.home_sizes.erase(pool.home_sizes.find(home.units.size()));
  }
  home.units.push_back(unit.key);
  pool.home_sizes.insert(home.units.size());
  if (unit.sharing != GpuSharing::kNone) {
    pool.sharing_memory.insert(unit.memory_bytes);
  }
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
  if (u.sharing != GpuSharing::kNone) {
    pool.sharing_memory.erase(pool.sharing_memory.find(u.memory_bytes));
  }
  std::erase(home.units, u.key);
  if (home.units.empty()) {
    CountHome(pool, u.home, -1);
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

void CapacityIndex::SetHolder(absl::string_view key, absl::string_view holder) {
  auto it = units_.find(key);
  if (it == units_.end()) return;
  Count(it->second, -1);
  it->second.holder = std::string(holder);
  Count(it->second, +1);
}

void CapacityIndex::AddShare(absl::string_view key, const GpuShare& share,
                             int sign) {
  auto it = units_.find(key);
  if (it == units_.end()) return;
  Unit& u = it->second;
  Count(u, -1);
  u.shared_milli += sign * share.compute_milli;
  u.shared_memory += sign * share.memory_bytes;
  // The last share gone, any group may take the GPU again.
  u.share_group = u.shared_milli > 0 ? share.group : std::string();
  Count(u, +1);
}

std::pair<int64_t, int64_t> CapacityIndex::Keys(absl::string_view node) const {
  const NodeAccount* account = Account(node);
  if (account == nullptr || !account->allocatable.has_value()) {
    return {kUnaccountedCpu, kUnaccountedMemory};
  }
  const NodeResources available = account->available();
  return {available.cpu_milli, available.memory_bytes};
}

void CapacityIndex::Rekey(absl::string_view node) {
  const auto [cpu, memory] = Keys(node);
  auto units = units_by_node_.find(node);
  if (units == units_by_node_.end()) return;
  for (const std::string& key : units->second) {
    const Unit& u = units_.find(key)->second;
    if (u.home != node) continue;
    Pool& pool = pools_.find(u.pool)->second;
    Home& home = pool.homes.find(u.home)->second;
    // Done already (another unit of it)?
    if (home.cpu == cpu && home.memory == memory) continue;
    if (home.free > 0) {
      pool.by_free.Erase({home.free, home.cpu, u.home});
      pool.by_free.Insert({home.free, cpu, u.home, memory});
    }
    home.cpu = cpu;
    home.memory = memory;
  }
}

void CapacityIndex::SetAllocatable(absl::string_view node,
                                   std::optional<NodeResources> allocatable) {
  // The pools `node` is a home of, counted out with the old allocatable and
  // back in with the new.
  std::set<Pool*> homed;
  if (auto units = units_by_node_.find(node); units != units_by_node_.end()) {
    for (const std::string& key : units->second) {
      const Unit& u = units_.find(key)->second;
      if (u.home == node) homed.insert(&pools_.find(u.pool)->second);
    }
  }
  for (Pool* pool : homed) CountHome(*pool, node, -1);
  if (!allocatable.has_value()) {
    if (auto it = accounts_.find(node); it != accounts_.end()) {
      it->second.allocatable.reset();
      if (it->second.held == NodeResources{}) accounts_.erase(it);
    }
  } else {
    accounts_[node].allocatable = allocatable;
  }
  for (Pool* pool : homed) CountHome(*pool, node, +1);
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

std::vector<std::string> CapacityIndex::UnitsOnNode(
    absl::string_view node) const {
  auto it = units_by_node_.find(node);
  if (it == units_by_node_.end()) return {};
  return std::vector<std::string>(it->second.begin(), it->second.end());
}

}  // namespace accelsched
