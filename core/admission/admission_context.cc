#include "core/admission/admission_context.h"

#include "absl/strings/str_cat.h"

namespace accelsched {

MatchSpec SpecOf(const Allocation& a) { return MatchSpec::Of(a); }

int64_t DemandMilli(const MatchSpec& spec) {
  if (spec.share.has_value()) return spec.share->compute_milli;
  return static_cast<int64_t>(spec.count) * spec.replicas * kGpuMilli;
}

std::vector<PoolKey> PoolsFor(const CapacityIndex& index,
                              const MatchSpec& spec) {
  std::vector<PoolKey> out;
  if (spec.requested_models.empty()) {
    for (const auto& [key, pool] :
         index.PoolsOf(spec.device_class, spec.partition)) {
      out.push_back(*key);
    }
    return out;
  }
  for (const std::string& model : spec.requested_models) {
    out.push_back(PoolKey{spec.device_class, model, spec.partition});
  }
  return out;
}

absl::Time LeaseEnd(const AdmissionContext& ctx, const Allocation& p) {
  return ctx.rules.now +
         (p.lease == absl::ZeroDuration() ? ctx.default_lease : p.lease);
}

bool EligibleHome(const AdmissionContext& ctx, const std::string& home,
                  const MatchSpec& spec, std::string* domain) {
  auto it = ctx.catalog->nodes().find(home);
  const Node* node = it == ctx.catalog->nodes().end() ? nullptr : &it->second;
  if (Ineligible(node, spec, ctx.rules) != nullptr) return false;
  if (!spec.topology_key.empty()) {
    auto label = node->labels.find(spec.topology_key);
    if (label == node->labels.end()) return false;
    *domain = label->second;
  }
  return true;
}

std::optional<std::vector<std::vector<const Unit*>>> MatchRequest(
    const AdmissionContext& ctx, const MatchSpec& spec,
    const EligibilityRules& rules) {
  if (spec.replicas > 1) {
    return MatchGang(ctx.catalog->index(), ctx.catalog->nodes(), spec, rules);
  }
  if (spec.share.has_value()) {
    const Unit* gpu =
        MatchShare(ctx.catalog->index(), ctx.catalog->nodes(), spec, rules);
    if (gpu == nullptr) return std::nullopt;
    return std::vector<std::vector<const Unit*>>{{gpu}};
  }
  std::optional<std::vector<const Unit*>> units =
      Match(ctx.catalog->index(), ctx.catalog->nodes(), spec, rules);
  if (!units.has_value()) return std::nullopt;
  return std::vector<std::vector<const Unit*>>{*std::move(units)};
}

std::string WaitReason(const AdmissionContext& ctx, const MatchSpec& spec) {
  int64_t free = 0, total = 0, free_milli = 0;
  // Whether GPUs with compute free hold shares of a group other than the
  // share's, which it may not join.
  bool other_groups = false;
  for (const PoolKey& key : PoolsFor(ctx.catalog->index(), spec)) {
    if (const auto* pool = ctx.catalog->index().FindPool(key)) {
      free += pool->free();
      total += pool->total;
      free_milli += pool->free_share_milli;
      if (spec.share.has_value()) {
        other_groups =
            other_groups ||
            pool->by_share.size() >
                (pool->by_share.contains(spec.share->group) ? 1u : 0u);
      }
    }
  }
  const std::string unit =
      RequestUnitName(spec.device_class, spec.requested_models, spec.partition);
  if (spec.share.has_value()) {
    return absl::StrCat("no ", unit, " has ", spec.share->compute_milli,
                        " compute milli",
                        spec.share->memory_bytes > 0
                            ? absl::StrCat(" and ", spec.share->memory_bytes,
                                           " bytes of GPU memory")
                            : "",
                        " free for the share (", free_milli,
                        " milli free over the sharing devices, in all",
                        other_groups ? ", some on GPUs that shares of "
                                       "another group hold"
                                     : "",
                        ")");
  }
  // Free units may be where the pod does not fit: say what it needs too.
  std::string pod;
  if (spec.pod_resources.has_value()) {
    pod = absl::StrCat(" and room for the pod (", spec.pod_resources->cpu_milli,
                       " cpu_milli, ", spec.pod_resources->memory_bytes,
                       " memory_bytes)");
  }
  if (spec.replicas > 1) {
    return absl::StrCat("no ", spec.replicas, " nodes",
                        spec.topology_key.empty()
                            ? ""
                            : absl::StrCat(" sharing one ", spec.topology_key),
                        " with ", spec.count, " free ", unit,
                        spec.count == 1 ? "" : "s", pod, " each (", free,
                        " free of ", total, ")");
  }
  return absl::StrCat("no node has ", spec.count, " free ", unit,
                      spec.count == 1 ? "" : "s", pod, " (", free, " free of ",
                      total, ")");
}

}  // namespace accelsched
