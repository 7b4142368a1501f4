#include "config/text_file.h"

#include <google/protobuf/io/tokenizer.h>

#include <cerrno>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace accelsched {
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

// The 0-based line where entry `i` of `field` begins, or -1. protobuf records
// one location per field statement, so for list syntax ("types: [ {..},
// {..} ]") the entry's own location is missing or another statement's; an entry
// begins no later than its first field, whose location is exact.
int EntryLine(const google::protobuf::TextFormat::ParseInfoTree& tree,
              const google::protobuf::FieldDescriptor* field, int i) {
  int first_field = -1;
  if (const auto* nested = tree.GetTreeForNested(field, i)) {
    const google::protobuf::Descriptor* d = field->message_type();
    for (int f = 0; f < d->field_count(); ++f) {
      const auto* field = d->field(f);
      const int line =
          nested->GetLocation(field, field->is_repeated() ? 0 : -1).line;
      if (line >= 0 && (first_field < 0 || line < first_field)) {
        first_field = line;
      }
    }
  }
  const int statement = tree.GetLocation(field, i).line;
  if (statement >= 0 && (first_field < 0 || statement <= first_field)) {
    return statement;
  }
  return first_field;
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  }
  std::string text;
  char buf[1 << 14];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  const int read_errno = errno;
  if (std::fclose(f) != 0 && !failed) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot close ", path));
  }
  if (failed) {
    return absl::ErrnoToStatus(read_errno, absl::StrCat("cannot read ", path));
  }
  return text;
}

absl::Status ParseText(absl::string_view text, absl::string_view source,
                       google::protobuf::Message* out,
                       google::protobuf::TextFormat::ParseInfoTree* locations) {
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(locations);
  // The parser takes an int length; an operator's file is small.
  if (text.size() > (64 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", text.size(), " bytes is too large"));
  }
  if (!parser.ParseFromString(std::string(text), out)) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", errors.message()));
  }
  return absl::OkStatus();
}

std::string EntryName(absl::string_view source,
                      const google::protobuf::TextFormat::ParseInfoTree& tree,
                      const google::protobuf::FieldDescriptor* field, int i,
                      absl::string_view name) {
  const int line = EntryLine(tree, field, i);
  return absl::StrCat(source, line < 0 ? "" : absl::StrCat(":", line + 1), ": ",
                      field->name(), "[", i, "]",
                      name.empty() ? "" : absl::StrCat(" (", name, ")"));
}

}  // namespace accelsched
