// Reading an operator's protobuf text-format file (the accelerator types, the
// tenants, the node agent's inventory): the file, the parse, and messages
// that name the line of the entry at fault. Protobuf and abseil only.
#ifndef ACCELSCHED_CONFIG_TEXT_FILE_H_
#define ACCELSCHED_CONFIG_TEXT_FILE_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace accelsched {

// The whole file. NOT_FOUND or PERMISSION_DENIED (naming the path) when it
// cannot be read.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Parses `text` into `out`, recording where each field was in `locations`
// (none when it is null). INVALID_ARGUMENT "SOURCE:LINE:COLUMN: reason"
// (1-based, as protobuf reports it: the first error) for a syntax error, or
// when the text is over 64 MiB.
absl::Status ParseText(absl::string_view text, absl::string_view source,
                       google::protobuf::Message* out,
                       google::protobuf::TextFormat::ParseInfoTree* locations);

// "SOURCE:LINE: FIELD[i] (NAME)" for entry `i` of the repeated message
// `field`: LINE is where the entry begins (or its first field, in list
// syntax), left out when unknown; " (NAME)" when `name` is not empty.
std::string EntryName(absl::string_view source,
                      const google::protobuf::TextFormat::ParseInfoTree& tree,
                      const google::protobuf::FieldDescriptor* field, int i,
                      absl::string_view name);

}  // namespace accelsched

#endif  // ACCELSCHED_CONFIG_TEXT_FILE_H_
