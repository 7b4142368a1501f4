#include "agent/discovery.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"

namespace accelsched::agent {

absl::StatusOr<Observation> ObserveAll(
    const std::vector<std::unique_ptr<DeviceSource>>& sources, absl::Time now) {
  Observation out;
  for (const std::unique_ptr<DeviceSource>& source : sources) {
    if (absl::Status s = source->Observe(out); !s.ok()) return s;
  }
  std::set<std::string> ids;
  for (const v1::Device& d : out.devices) {
    if (!ids.insert(d.id()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("device id \"", d.id(), "\" is reported twice"));
    }
  }
  const google::protobuf::Timestamp time =
      google::protobuf::util::TimeUtil::NanosecondsToTimestamp(
          absl::ToUnixNanos(now));
  for (auto& [id, stats] : out.stats) *stats.mutable_time() = time;
  return out;
}

std::string NodeJson(v1::Node node, const Observation& observation) {
  for (v1::Device& d : *node.mutable_devices()) {
    if (auto it = observation.stats.find(d.id());
        it != observation.stats.end()) {
      *d.mutable_stats() = it->second;
    }
    for (v1::MigSlice& s : *d.mutable_mig_slices()) {
      if (auto it = observation.stats.find(s.id());
          it != observation.stats.end()) {
        *s.mutable_stats() = it->second;
      }
    }
  }
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  // Printing a message the agent built cannot fail.
  (void)google::protobuf::util::MessageToJsonString(node, &json, options);
  return json;
}

}  // namespace accelsched::agent
