#include "config/tenants_file.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "accelsched/v1/tenants.pb.h"
#include "config/text_file.h"
#include "core/base/status_macros.h"
#include "core/matching/allocation_request.h"
#include "core/matching/match_spec.h"

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

absl::StatusOr<int64_t> CheckRange(const std::string& field, int64_t n,
                                   int64_t max) {
  if (n < 0) return Invalid(field, "must be >= 0");
  if (n > max) return Invalid(field, absl::StrCat("must be at most ", max));
  return n;
}

// Quotas are counted in thousandths of a unit (tenant_policy.h): `units`
// (the field `name`) times 1000, or `milli` (`name`_milli) when `has_milli`;
// `has_units`: `name` is set too.
absl::StatusOr<int64_t> QuotaMilli(const std::string& field,
                                   absl::string_view name, bool has_units,
                                   int64_t units, bool has_milli,
                                   int64_t milli) {
  // At most a trillion units: far above any cluster, and far below what
  // counting it in thousandths would overflow.
  constexpr int64_t kMaxUnits = 1'000'000'000'000;
  if (has_milli) {
    if (has_units) {
      return Invalid(
          absl::StrCat(field, ".", name, "_milli"),
          absl::StrCat("set ", name, " or ", name, "_milli, not both"));
    }
    return CheckRange(absl::StrCat(field, ".", name, "_milli"), milli,
                      kMaxUnits * kGpuMilli);
  }
  ASSIGN_OR_RETURN(
      const int64_t checked,
      CheckRange(absl::StrCat(field, ".", name), units, kMaxUnits));
  return checked * kGpuMilli;
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
    const bool milli = q.has_nominal_milli() || q.has_borrowing_limit_milli();
    if (milli && (pool.device_class != DeviceClass::kNvidiaGpu ||
                  !pool.partition.empty())) {
      return Invalid(
          absl::StrCat(field, q.has_nominal_milli() ? ".nominal_milli"
                                                    : ".borrowing_limit_milli"),
          "only whole NVIDIA GPUs (no partition), which GPU shares are of, "
          "are counted in thousandths");
    }
    Quota quota;
    ASSIGN_OR_RETURN(quota.nominal_milli,
                     QuotaMilli(field, "nominal", q.nominal() != 0, q.nominal(),
                                q.has_nominal_milli(), q.nominal_milli()));
    if (q.has_borrowing_limit() || q.has_borrowing_limit_milli()) {
      ASSIGN_OR_RETURN(
          quota.borrowing_limit_milli,
          QuotaMilli(field, "borrowing_limit", q.has_borrowing_limit(),
                     q.borrowing_limit(), q.has_borrowing_limit_milli(),
                     q.borrowing_limit_milli()));
      if (policy.cohort.empty()) {
        return Invalid(absl::StrCat(field, q.has_borrowing_limit()
                                               ? ".borrowing_limit"
                                               : ".borrowing_limit_milli"),
                       "needs a cohort to borrow from");
      }
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
