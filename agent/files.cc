#include "agent/files.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace accelsched::agent {
namespace {

// Keeps protobuf's first error, with 1-based line and column.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (message_.empty()) {
      message_ = absl::StrCat(line + 1, ":", column + 1, ": ", message);
    }
  }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

}  // namespace

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  return buffer.str();
}

absl::Status ParseTextFile(const std::string& path,
                           google::protobuf::Message& message) {
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(*text, &message)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", errors.message()));
  }
  return absl::OkStatus();
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
