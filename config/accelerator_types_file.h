// The accelerator-type registry's data: the built-in types, compiled into the
// binary from config/accelerator_types.textproto, and an operator's file in
// the same format (an accelsched.v1.AcceleratorTypeRegistry in protobuf text
// format, parsed by protobuf's TextFormat), merged over them.
#ifndef ACCELSCHED_CONFIG_ACCELERATOR_TYPES_FILE_H_
#define ACCELSCHED_CONFIG_ACCELERATOR_TYPES_FILE_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "accelsched/v1/accelerator_type.pb.h"
#include "core/accelerators/accelerator_type.h"
#include "core/accelerators/accelerator_type_set.h"

namespace accelsched {

// Message <-> domain. FromProto copies the fields as they are (checks and
// defaults are NormalizeAndValidateType's).
AcceleratorType FromProto(const v1::AcceleratorType& proto);
void ToProto(const AcceleratorType& type, v1::AcceleratorType* proto);

// Parses `text` and adds its entries, in order, to `builder`. `source` names
// the text in messages (a file path). INVALID_ARGUMENT for a syntax error
// ("SOURCE:LINE:COLUMN: reason", as protobuf reports it) or an entry the
// builder refuses ("SOURCE:LINE: types[3] (acme-x1): reason", LINE being where
// the entry begins, or its first field in list syntax). Lines and columns
// count from 1. On error some entries may
// have been added: discard the builder.
absl::Status AddAcceleratorTypesText(absl::string_view text,
                                     absl::string_view source,
                                     AcceleratorTypeSetBuilder& builder);

// The text of the built-in types (config/accelerator_types.textproto).
absl::string_view BuiltinAcceleratorTypesText();

// The built-in accelerator types. Parsed on first use (about 1 ms;
// bench/README.md), then shared; thread-safe. The built-in data is checked by
// the tests, so it cannot fail here: a failure aborts with the reason.
std::shared_ptr<const AcceleratorTypeSet> BuiltinAcceleratorTypes();

// The built-in accelerator types extended by the file at `path` (none when
// empty). NOT_FOUND or PERMISSION_DENIED (naming the path) when the file cannot
// be read; INVALID_ARGUMENT as AddAcceleratorTypesText otherwise.
absl::StatusOr<std::shared_ptr<const AcceleratorTypeSet>> LoadAcceleratorTypes(
    const std::string& path);

}  // namespace accelsched

#endif  // ACCELSCHED_CONFIG_ACCELERATOR_TYPES_FILE_H_
