#include "config/tenants_file.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "accelsched/v1/tenants.pb.h"
#include "config/text_file.h"
#include "core/base/status_macros.h"
#include "core/matching/allocation_request.h"
#include "core/matching/matcher.h"

namespace accelsched {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

// The pool a quota entry names, checked against the registry.
absl::StatusOr<PoolKey> QuotaPool(const AcceleratorTypeSet& registry,
                                  const v1::QuotaConfig& q,
                                  const std::string& field) {
  const AcceleratorType* type = registry.Find(q.model());
  if (type == nullptr) {
    return Invalid(absl::StrCat(field, ".model"),
                   absl::StrCat("\"", q.model(),
                                "\" is not a model the accelerator-type "
                                "registry knows"));
  }
  const std::string& p = q.partition();
  if (type->is_tpu() ? !type->FindTopology(p).has_value()
                     : !p.empty() && type->mig.Find(p) == nullptr) {
    return Invalid(absl::StrCat(field, ".partition"),
                   absl::StrCat("\"", p, "\" is not a ",
                                type->is_tpu() ? "TPU topology" : "MIG profile",
                                " of ", type->canonical_model));
  }
  return PoolKey{type->device_class, type->canonical_model, p};
}

absl::StatusOr<TenantPolicy> FromProto(const AcceleratorTypeSet& registry,
                                       const v1::TenantConfig& t) {
  RETURN_IF_ERROR(ValidateTenant(t.name(), "name"));
  if (t.name().empty()) return Invalid("name", "is required");
  TenantPolicy policy;
  if (!std::isfinite(t.weight()) || t.weight() < 0) {
    return Invalid("weight", absl::StrCat(t.weight(),
                                          " is not a finite "
                                          "number >= 0"));
  }
  if (t.weight() > 0) policy.weight = t.weight();
  policy.cohort = t.cohort();
  policy.preemptible = !t.non_preemptible();
  for (int i = 0; i < t.quotas_size(); ++i) {
    const v1::QuotaConfig& q = t.quotas(i);
    const std::string field = absl::StrCat("quotas[", i, "]");
    ASSIGN_OR_RETURN(PoolKey pool, QuotaPool(registry, q, field));
    if (q.nominal() < 0) {
      return Invalid(absl::StrCat(field, ".nominal"), "must be >= 0");
    }
    Quota quota{q.nominal(), std::nullopt};
    if (q.has_borrowing_limit()) {
      if (q.borrowing_limit() < 0) {
        return Invalid(absl::StrCat(field, ".borrowing_limit"), "must be >= 0");
      }
      if (policy.cohort.empty()) {
        return Invalid(absl::StrCat(field, ".borrowing_limit"),
                       "needs a cohort to borrow from");
      }
      quota.borrowing_limit = q.borrowing_limit();
    }
    if (!policy.quotas.emplace(pool, quota).second) {
      return Invalid(field,
                     absl::StrCat("a second quota for ", UnitName(pool), "s"));
    }
  }
  return policy;
}

}  // namespace

absl::StatusOr<TenantPolicies> ParseTenantPolicies(
    absl::string_view text, absl::string_view source,
    const AcceleratorTypeSet& registry) {
  v1::TenantsConfig file;
  google::protobuf::TextFormat::ParseInfoTree locations;
  RETURN_IF_ERROR(ParseText(text, source, &file, &locations));
  const google::protobuf::FieldDescriptor* tenants_field =
      v1::TenantsConfig::descriptor()->FindFieldByName("tenants");
  std::map<std::string, TenantPolicy> tenants;
  for (int i = 0; i < file.tenants_size(); ++i) {
    const v1::TenantConfig& t = file.tenants(i);
    absl::StatusOr<TenantPolicy> policy = FromProto(registry, t);
    if (policy.ok() && !tenants.emplace(t.name(), *policy).second) {
      policy = Invalid("name", "repeats an earlier tenant's");
    }
    if (!policy.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(EntryName(source, locations, tenants_field, i, t.name()),
                       ": ", policy.status().message()));
    }
  }
  return TenantPolicies(std::move(tenants));
}

absl::StatusOr<TenantPolicies> LoadTenantPolicies(
    const std::string& path, const AcceleratorTypeSet& registry) {
  if (path.empty()) return TenantPolicies();
  ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  return ParseTenantPolicies(text, path, registry);
}

}  // namespace accelsched
