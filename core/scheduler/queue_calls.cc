#include "core/scheduler/queue_calls.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/page_token.h"
#include "core/base/status_macros.h"
#include "core/tenants/dominant_share.h"

namespace accelsched {

absl::StatusOr<QueuePage> QueueCalls::GetQueue(
    absl::string_view tenant, int page_size,
    absl::string_view page_token) const {
  ASSIGN_OR_RETURN(const PageRequest request,
                   ParsePageRequest(page_size, page_token));
  size_t start = 0;
  if (!request.after.empty() && !absl::SimpleAtoi(request.after, &start)) {
    return absl::InvalidArgumentError("page_token is not one GetQueue gave");
  }
  QueuePage page;
  absl::ReaderMutexLock lock(&state_.mu());
  lifecycle_.AssertReaderHeld();
  const SchedulerMemory& m = state_.view();
  const std::shared_ptr<const std::vector<std::string>> order =
      lifecycle_.PendingOrder(/*fresh=*/true);
  size_t seen = 0;
  for (const std::string& id : *order) {
    const Allocation& a = m.book.Find(id)->allocation;
    if (!tenant.empty() && a.tenant != tenant) continue;
    if (seen++ < start) continue;
    if (static_cast<int>(page.pending.size()) == request.size) {
      page.next_page_token = EncodePageToken(absl::StrCat(seen - 1));
      break;
    }
    page.pending.push_back(lifecycle_.WithQueueFields(a));
  }
  return page;
}

std::vector<TenantStanding> QueueCalls::TenantStandings(
    absl::string_view tenant) const {
  absl::ReaderMutexLock lock(&state_.mu());
  lifecycle_.AssertReaderHeld();
  return TenantStandingsLocked(tenant);
}

std::vector<TenantStanding> QueueCalls::TenantStandingsLocked(
    absl::string_view tenant) const {
  const SchedulerMemory& m = state_.view();
  const std::map<std::string, int64_t> pending = m.queue.CountByTenant();
  std::set<std::string> names;
  for (const auto& entry : m.book.tallies().usage_milli())
    names.insert(entry.first);
  for (const auto& entry : m.tenants->tenants()) names.insert(entry.first);
  for (const auto& entry : pending) names.insert(entry.first);
  std::vector<TenantStanding> out;
  for (const std::string& name : names) {
    if (!tenant.empty() && name != tenant) continue;
    const TenantPolicy& policy = m.tenants->Find(name);
    TenantStanding t;
    t.tenant = name;
    t.dominant_share =
        DominantShare(m.catalog.index(), m.book, *m.tenants, name);
    t.weight = policy.weight;
    t.cohort = policy.cohort;
    auto p = pending.find(name);
    t.pending = p == pending.end() ? 0 : p->second;
    std::map<PoolKey, TenantStanding::Pool> pools;
    for (const auto& [key, quota] : policy.quotas) {
      pools[key] = TenantStanding::Pool{key, 0, quota.nominal_milli, 0};
    }
    if (auto u = m.book.tallies().usage_milli().find(name);
        u != m.book.tallies().usage_milli().end()) {
      for (const auto& [key, used] : u->second) {
        auto [it, fresh] =
            pools.try_emplace(key, TenantStanding::Pool{key, 0, -1, 0});
        it->second.used_milli = used;
      }
    }
    for (auto& [key, pool] : pools) {
      if (pool.nominal_milli >= 0) {
        pool.borrowed_milli =
            std::max<int64_t>(0, pool.used_milli - pool.nominal_milli);
      }
      t.pools.push_back(pool);
    }
    out.push_back(std::move(t));
  }
  return out;
}

absl::Status QueueCalls::SetTenantPolicies(
    std::shared_ptr<const TenantPolicies> next) {
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  {
    absl::MutexLock lock(&state_.mu());
    lifecycle_.AssertHeld();
    // Not in force while memory is stale: the admission write after it would
    // be refused, and the caller told the policies did not change.
    RETURN_IF_ERROR(state_.CheckFresh());
    SchedulerMemory& m = state_.memory();
    m.tenants = std::move(next);
    ++m.version;
    ticket = lifecycle_.Admit(state_.clock().Now());
  }
  state_.committer().Flush();
  return ticket == nullptr ? absl::OkStatus() : state_.committer().Wait(ticket);
}

}  // namespace accelsched
