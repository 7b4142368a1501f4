// Tenants' fair-share weights, quotas, cohorts and preemption policy, as an
// operator's --tenants file sets them (config/tenants_file.h reads it).
// Immutable once built; a reload builds a new one.
#ifndef ACCELSCHED_CORE_TENANTS_TENANT_POLICY_H_
#define ACCELSCHED_CORE_TENANTS_TENANT_POLICY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/model/unit.h"

namespace accelsched {

// In thousandths of a unit, as usage is counted (AllocationBook::UsageMilli),
// so that shares count as their fraction of a GPU: a quota of 2 GPUs is
// 2000.
struct Quota {
  int64_t nominal_milli = 0;
  // Most it may use above `nominal_milli` from its cohort; nullopt: no limit.
  std::optional<int64_t> borrowing_limit_milli;
};

struct TenantPolicy {
  double weight = 1;
  std::string cohort;  // empty: none
  bool preemptible = true;
  std::map<PoolKey, Quota> quotas;  // a pool without one is not limited
};

class TenantPolicies {
 public:
  TenantPolicies() = default;
  explicit TenantPolicies(std::map<std::string, TenantPolicy> tenants);
  // No tenant named: every tenant gets the default policy.
  static const TenantPolicies& Default();

  // The tenant's policy; a tenant the file does not name gets the default
  // (weight 1, no quota, no cohort, preemptible).
  const TenantPolicy& Find(absl::string_view tenant) const;
  const std::map<std::string, TenantPolicy, std::less<>>& tenants() const {
    return tenants_;
  }
  // Whether any tenant has a quota.
  bool has_quotas() const { return has_quotas_; }
  // Tenants of `cohort`, sorted; empty for "" or an unknown cohort.
  const std::vector<std::string>& CohortMembers(absl::string_view cohort) const;

 private:
  std::map<std::string, TenantPolicy, std::less<>> tenants_;
  std::map<std::string, std::vector<std::string>, std::less<>> cohorts_;
  bool has_quotas_ = false;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_TENANTS_TENANT_POLICY_H_
