// The --tenants file: an accelsched.v1.TenantsConfig in protobuf text format
// (proto/accelsched/v1/tenants.proto), read into TenantPolicies.
#ifndef ACCELSCHED_CONFIG_TENANTS_FILE_H_
#define ACCELSCHED_CONFIG_TENANTS_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/tenants/tenant_policy.h"

namespace accelsched {

// Parses `text` (`source` names it in messages). Quota models resolve
// through `registry` to canonical names. INVALID_ARGUMENT for a syntax error
// ("SOURCE:LINE:COLUMN: reason") or an entry that is wrong ("SOURCE:LINE:
// tenants[2] (team-a): quotas[0].partition: ..."): an empty or repeated
// name, a negative or non-finite weight, an unknown model, a partition the
// model does not have, a negative nominal or borrowing limit, a pool quoted
// twice, a borrowing limit without a cohort.
absl::StatusOr<TenantPolicies> ParseTenantPolicies(
    absl::string_view text, absl::string_view source,
    const AcceleratorTypeSet& registry);

// The file at `path` (none when empty: every tenant gets the default).
// NOT_FOUND or PERMISSION_DENIED naming the path when it cannot be read;
// INVALID_ARGUMENT as ParseTenantPolicies.
absl::StatusOr<TenantPolicies> LoadTenantPolicies(
    const std::string& path, const AcceleratorTypeSet& registry);

}  // namespace accelsched

#endif  // ACCELSCHED_CONFIG_TENANTS_FILE_H_
