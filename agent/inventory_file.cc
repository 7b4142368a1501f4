#include "agent/inventory_file.h"

#include "absl/strings/str_cat.h"
#include "agent/files.h"

namespace accelsched::agent {

absl::Status InventoryFile::Observe(Observation& out) {
  v1::Node file;
  if (absl::Status s = ParseTextFile(path_, file); !s.ok()) return s;
  for (int i = 0; i < file.devices_size(); ++i) {
    const v1::Device& d = file.devices(i);
    const std::string field = absl::StrCat(path_, ": devices[", i, "]");
    if (d.id().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".id is required"));
    }
    bool slice_stats = false;
    for (const v1::MigSlice& slice : d.mig_slices()) {
      slice_stats = slice_stats || slice.has_stats();
    }
    if (!d.canonical_model().empty() || d.has_stats() || slice_stats ||
        d.healthy()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " (", d.id(),
          "): canonical_model, healthy and stats are not set by hand"));
    }
    out.devices.push_back(d);
  }
  return absl::OkStatus();
}

}  // namespace accelsched::agent
