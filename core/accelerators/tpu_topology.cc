#include "core/accelerators/tpu_topology.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace accelsched {

std::vector<int> TopologyDimensions(absl::string_view topology) {
  std::vector<absl::string_view> parts = absl::StrSplit(topology, 'x');
  if (parts.size() < 2 || parts.size() > 3) return {};
  std::vector<int> dims;
  for (absl::string_view d : parts) {
    int n = 0;
    // SimpleAtoi takes a sign and spaces; a dimension is digits only, with
    // no leading zero (one topology, one spelling).
    if (d.empty() || d.size() > 4 || d.front() == '0' ||
        d.find_first_not_of("0123456789") != absl::string_view::npos ||
        !absl::SimpleAtoi(d, &n) || n <= 0 || n > kMaxTopologyDimension) {
      return {};
    }
    dims.push_back(n);
  }
  return dims;
}

namespace {

int Product(const std::vector<int>& dims) {
  int chips = 1;
  for (int d : dims) chips *= d;
  return chips;
}

}  // namespace

int TopologyChips(absl::string_view topology) {
  const std::vector<int> dims = TopologyDimensions(topology);
  return dims.empty() ? 0 : Product(dims);
}

const TpuTopology* FindTpuTopology(absl::Span<const TpuTopology> topologies,
                                   absl::string_view topology) {
  for (const TpuTopology& t : topologies) {
    if (t.topology == topology) return &t;
  }
  return nullptr;
}

std::optional<TpuTopology> ApplyTopologyRule(const TpuTopologyRule& rule,
                                             absl::string_view topology) {
  const std::vector<int> dims = TopologyDimensions(topology);
  if (dims.size() != 3 || rule.dimension_multiple < 1 ||
      rule.chips_per_host < 1) {
    return std::nullopt;
  }
  for (int d : dims) {
    if (d % rule.dimension_multiple != 0) return std::nullopt;
  }
  if (rule.ascending && !(dims[0] <= dims[1] && dims[1] <= dims[2])) {
    return std::nullopt;
  }
  const int64_t chips = int64_t{dims[0]} * dims[1] * dims[2];
  if (chips > rule.max_chips || chips % rule.chips_per_host != 0) {
    return std::nullopt;
  }
  return TpuTopology{std::string(topology), static_cast<int>(chips),
                     static_cast<int>(chips / rule.chips_per_host)};
}

std::string TopologyNames(absl::Span<const TpuTopology> topologies,
                          absl::Span<const TpuTopologyRule> rules) {
  std::string out = absl::StrJoin(topologies, ", ",
                                  [](std::string* out, const TpuTopology& t) {
                                    absl::StrAppend(out, t.topology);
                                  });
  for (const TpuTopologyRule& r : rules) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", "AxBxC",
                    r.ascending ? " (A <= B <= C)" : "", " of multiples of ",
                    r.dimension_multiple, " up to ", r.max_chips, " chips");
  }
  return out;
}

absl::Status ValidateTpuTopologyRules(absl::Span<const TpuTopologyRule> rules) {
  for (size_t i = 0; i < rules.size(); ++i) {
    const TpuTopologyRule& r = rules[i];
    const std::string field = absl::StrCat("tpu_topology_rules[", i, "]");
    if (r.dimension_multiple < 1 || r.dimension_multiple > 64) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".dimension_multiple ", r.dimension_multiple,
                       " is out of range [1, 64]"));
    }
    const int smallest =
        r.dimension_multiple * r.dimension_multiple * r.dimension_multiple;
    if (r.max_chips < smallest) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".max_chips ", r.max_chips, " is below the ",
                       smallest, " chips of the smallest shape"));
    }
    if (r.chips_per_host < 1 || smallest % r.chips_per_host != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".chips_per_host ", r.chips_per_host, " does not divide the ",
          smallest, " chips of the smallest shape"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateTpuTopologies(absl::Span<const TpuTopology> topologies) {
  absl::flat_hash_set<absl::string_view> seen;
  size_t dimensions = 0;
  for (size_t i = 0; i < topologies.size(); ++i) {
    const TpuTopology& t = topologies[i];
    const std::string field = absl::StrCat("tpu_topologies[", i, "]");
    const std::vector<int> dims = TopologyDimensions(t.topology);
    if (dims.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".topology \"", t.topology,
                       "\" is not of the form NxM or NxMxK (each 1 to ",
                       kMaxTopologyDimension, ")"));
    }
    if (!seen.insert(t.topology).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".topology \"", t.topology, "\" is listed twice"));
    }
    if (dimensions == 0) dimensions = dims.size();
    if (dims.size() != dimensions) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".topology \"", t.topology, "\" has ", dims.size(),
          " dimensions; ", topologies[0].topology, " has ", dimensions));
    }
    const int chips = Product(dims);
    if (t.chips != chips) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".chips ", t.chips,
                                                     " is not the ", chips,
                                                     " chips of ", t.topology));
    }
    if (t.hosts < 1 || chips % t.hosts != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".hosts ", t.hosts, " does not divide the ",
                       chips, " chips of ", t.topology, " evenly"));
    }
  }
  return absl::OkStatus();
}

}  // namespace accelsched
