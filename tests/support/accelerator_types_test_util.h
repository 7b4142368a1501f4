// Registries for tests: an operator's file with a made-up accelerator, and the
// built-in types extended by such text.
#ifndef ACCELSCHED_TESTS_SUPPORT_ACCELERATOR_TYPES_TEST_UTIL_H_
#define ACCELSCHED_TESTS_SUPPORT_ACCELERATOR_TYPES_TEST_UTIL_H_

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "config/accelerator_types_file.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/base/status_macros.h"

namespace accelsched {

// An operator's file: a made-up accelerator with two MIG-like profiles on a
// grid of four slots, and one more v5p shape.
inline constexpr char kAcmeTypes[] = R"pb(
  # Acme's accelerator.
  types {
    canonical_model: "acme-x1"
    aliases: "Acme X1"
    memory_bytes: 68719476736
    mig_memory_slices: 4
    mig_compute_slices: 4
    mig_profiles {
      name: "2g.32gb"
      memory_slices: 2
      compute_slices: 2
      starts: [ 0, 2 ]
    }
    mig_profiles {
      name: "4g.64gb"
      memory_slices: 4
      compute_slices: 4
      starts: 0
    }
    node_label_value: "acme-x1"
    resource_name: "acme.com/x1"
  }
  types {
    canonical_model: "tpu-v5p-slice"
    tpu_topologies { topology: "2x2x6" chips: 24 hosts: 6 }
  }
)pb";

// The built-in types extended by `text`, read as the file "ops.textproto".
inline absl::StatusOr<std::shared_ptr<const AcceleratorTypeSet>> BuiltinPlus(
    absl::string_view text) {
  AcceleratorTypeSetBuilder builder(*BuiltinAcceleratorTypes());
  RETURN_IF_ERROR(AddAcceleratorTypesText(text, "ops.textproto", builder));
  return std::move(builder).Build();
}

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_ACCELERATOR_TYPES_TEST_UTIL_H_
