#include "core/tenants/tenant_policy.h"

#include <utility>

namespace accelsched {

const TenantPolicies& TenantPolicies::Default() {
  static const TenantPolicies* const kDefault = new TenantPolicies();
  return *kDefault;
}

TenantPolicies::TenantPolicies(std::map<std::string, TenantPolicy> tenants) {
  for (auto& [name, policy] : tenants) {
    if (!policy.cohort.empty()) cohorts_[policy.cohort].push_back(name);
    has_quotas_ = has_quotas_ || !policy.quotas.empty();
    tenants_.emplace(name, std::move(policy));
  }
}

const TenantPolicy& TenantPolicies::Find(absl::string_view tenant) const {
  static const TenantPolicy* const kDefault = new TenantPolicy();
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? *kDefault : it->second;
}

const std::vector<std::string>& TenantPolicies::CohortMembers(
    absl::string_view cohort) const {
  static const std::vector<std::string>* const kNone =
      new std::vector<std::string>();
  auto it = cohorts_.find(cohort);
  return it == cohorts_.end() ? *kNone : it->second;
}

}  // namespace accelsched
