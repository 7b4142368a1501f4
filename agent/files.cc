#include "agent/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "config/text_file.h"

namespace accelsched::agent {

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot read ", path));
  }
  std::string text;
  char buffer[1 << 14];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      text.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      const int read_errno = errno;
      ::close(fd);
      return absl::ErrnoToStatus(read_errno,
                                 absl::StrCat("cannot read ", path));
    }
  }
  // Read-only: nothing buffered can be lost, but say so if it fails.
  if (::close(fd) != 0 && errno != EINTR) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot close ", path));
  }
  return text;
}

absl::Status ParseTextFile(const std::string& path,
                           google::protobuf::Message& message) {
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  return ParseText(*text, path, &message, /*locations=*/nullptr);
}

absl::StatusOr<std::map<std::string, std::string>> ParseLabels(
    absl::string_view text, absl::string_view source) {
  std::map<std::string, std::string> labels;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", line_number, ": expected key=value, got \"",
                       line, "\""));
    }
    absl::string_view value = absl::StripAsciiWhitespace(line.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    labels[std::string(absl::StripAsciiWhitespace(line.substr(0, eq)))] =
        std::string(value);
  }
  return labels;
}

}  // namespace accelsched::agent
