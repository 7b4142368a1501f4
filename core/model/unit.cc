#include "core/model/unit.h"

#include "absl/strings/str_cat.h"

namespace accelsched {

std::string TpuUnitKey(absl::string_view slice_id) {
  return absl::StrCat("tpu-slice ", slice_id);
}

}  // namespace accelsched
