// Small file readers the agent's sources share.
#ifndef ACCELSCHED_AGENT_FILES_H_
#define ACCELSCHED_AGENT_FILES_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace accelsched::agent {

// The whole file. When it cannot be opened or read, the errno's code
// (absl::ErrnoToStatus: NOT_FOUND when it does not exist, PERMISSION_DENIED,
// ...) with "cannot read PATH: <strerror>".
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

// Parses protobuf text format into `message`; INVALID_ARGUMENT
// "PATH:LINE:COLUMN: what" for the first syntax error.
absl::Status ParseTextFile(const std::string& path,
                           google::protobuf::Message& message);

// Node labels, one `key=value` per line; the value may be double-quoted as
// the Kubernetes downward API writes label files (`key="value"`); spaces
// around keys and values are dropped. Blank lines and lines starting with '#'
// are skipped. INVALID_ARGUMENT "PATH:LINE: ..."
// for a line without '='. Keys and values are checked by the server.
absl::StatusOr<std::map<std::string, std::string>> ParseLabels(
    absl::string_view text, absl::string_view source);

}  // namespace accelsched::agent

#endif  // ACCELSCHED_AGENT_FILES_H_
