#include "core/model/node_resources.h"

#include "absl/strings/str_cat.h"
#include "core/base/field_error.h"

namespace accelsched {
namespace {

int64_t Get(const NodeResources& r, absl::string_view resource) {
  if (resource == "cpu_milli") return r.cpu_milli;
  if (resource == "memory_bytes") return r.memory_bytes;
  return r.pods;
}

absl::Status CheckRange(absl::string_view field, absl::string_view name,
                        int64_t value, int64_t max) {
  if (value >= 0 && value <= max) return absl::OkStatus();
  return InvalidField(
      absl::StrCat(field, ".", name),
      absl::StrCat("must be between 0 and ", max, ", got ", value));
}

}  // namespace

absl::Status CheckNodeResources(absl::string_view field,
                                const NodeResources& r) {
  if (absl::Status s =
          CheckRange(field, "cpu_milli", r.cpu_milli, kMaxCpuMilli);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckRange(field, "memory_bytes", r.memory_bytes, kMaxMemoryBytes);
      !s.ok()) {
    return s;
  }
  return CheckRange(field, "pods", r.pods, kMaxPods);
}

NodeResources NormalizedPodNeed(NodeResources need) {
  if (need.pods == 0) need.pods = 1;
  return need;
}

const char* FirstShortfall(const NodeResources& available,
                           const NodeResources& need, bool limits_pods) {
  if (available.cpu_milli < need.cpu_milli) return "cpu_milli";
  if (available.memory_bytes < need.memory_bytes) return "memory_bytes";
  if (limits_pods && available.pods < need.pods) return "pods";
  return nullptr;
}

bool Relieves(const NodeResources& room, const NodeResources& need,
              bool limits_pods, const NodeResources& freed) {
  return (room.cpu_milli < need.cpu_milli && freed.cpu_milli > 0) ||
         (room.memory_bytes < need.memory_bytes && freed.memory_bytes > 0) ||
         (limits_pods && room.pods < need.pods && freed.pods > 0);
}

std::string ShortfallDetail(absl::string_view resource,
                            const NodeResources& available,
                            const NodeResources& allocatable,
                            const NodeResources& need) {
  return absl::StrCat(Get(available, resource), " of ",
                      Get(allocatable, resource), " ", resource,
                      " free, the request needs ", Get(need, resource));
}

std::string OvercommitNote(const NodeResources& available,
                           const NodeResources& allocatable) {
  std::string note;
  for (absl::string_view resource : {"cpu_milli", "memory_bytes", "pods"}) {
    const int64_t left = Get(available, resource);
    if (left >= 0) continue;  // pods not limited read 0
    const int64_t offered = Get(allocatable, resource);
    absl::StrAppend(&note, note.empty() ? "live allocations hold " : ", ",
                    offered - left, " ", resource, " of ", offered,
                    " allocatable");
  }
  return note;
}

}  // namespace accelsched
