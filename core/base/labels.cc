#include "core/base/labels.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace accelsched {
namespace {

bool IsAlnum(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c));
}

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? of at most 63 characters.
bool IsQualifiedName(absl::string_view s) {
  if (s.empty() || s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back()))
    return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

}  // namespace

bool IsDnsSubdomain(absl::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (absl::string_view part : absl::StrSplit(s, '.')) {
    if (part.empty() || part.size() > 63 || part.front() == '-' ||
        part.back() == '-') {
      return false;
    }
    for (char c : part) {
      if (!absl::ascii_islower(static_cast<unsigned char>(c)) &&
          !absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '-') {
        return false;
      }
    }
  }
  return true;
}

bool IsDnsLabel(absl::string_view s) {
  return s.size() <= 63 && !absl::StrContains(s, '.') && IsDnsSubdomain(s);
}

bool IsLabelKey(absl::string_view key) {
  size_t slash = key.find('/');
  if (slash == absl::string_view::npos) return IsQualifiedName(key);
  return IsDnsSubdomain(key.substr(0, slash)) &&
         IsQualifiedName(key.substr(slash + 1));
}

bool IsLabelValue(absl::string_view v) {
  return v.empty() || IsQualifiedName(v);
}

absl::Status ValidateLabels(const Labels& labels, absl::string_view field) {
  for (const auto& [key, value] : labels) {
    if (!IsLabelKey(key)) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " key \"", key,
          "\" is not a valid label key ([prefix/]name, name at most "
          "63 characters of [A-Za-z0-9._-] beginning and ending "
          "alphanumeric)"));
    }
    if (!IsLabelValue(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[\"", key, "\"] value \"", value,
                       "\" is not a valid label value (at most 63 characters "
                       "of [A-Za-z0-9._-] "
                       "beginning and ending alphanumeric)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LabelSelector> LabelSelector::Parse(absl::string_view text,
                                                   absl::string_view field) {
  LabelSelector selector;
  if (text.size() > kMaxSelectorLength) {
    return absl::InvalidArgumentError(absl::StrCat(field, " is ", text.size(),
                                                   " characters long; at most ",
                                                   kMaxSelectorLength));
  }
  if (absl::StripAsciiWhitespace(text).empty()) return selector;
  for (absl::string_view raw : absl::StrSplit(text, ',')) {
    absl::string_view term = absl::StripAsciiWhitespace(raw);
    Term t;
    size_t pos;
    if ((pos = term.find("!=")) != absl::string_view::npos) {
      t.op = Op::kNotEquals;
      t.key = std::string(absl::StripAsciiWhitespace(term.substr(0, pos)));
      t.value = std::string(absl::StripAsciiWhitespace(term.substr(pos + 2)));
    } else if ((pos = term.find('=')) != absl::string_view::npos) {
      t.op = Op::kEquals;
      absl::string_view rest = term.substr(pos + 1);
      absl::ConsumePrefix(&rest, "=");
      t.key = std::string(absl::StripAsciiWhitespace(term.substr(0, pos)));
      t.value = std::string(absl::StripAsciiWhitespace(rest));
    } else if (absl::ConsumePrefix(&term, "!")) {
      t.op = Op::kNotExists;
      t.key = std::string(absl::StripAsciiWhitespace(term));
    } else {
      t.op = Op::kExists;
      t.key = std::string(term);
    }
    const bool has_value = t.op == Op::kEquals || t.op == Op::kNotEquals;
    if (!IsLabelKey(t.key) || (has_value && !IsLabelValue(t.value))) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " term \"", term,
                       "\" is malformed (expected k=v, k==v, k!=v, k or !k, "
                       "separated by commas)"));
    }
    selector.terms_.push_back(std::move(t));
  }
  return selector;
}

LabelSelector LabelSelector::FromMap(const Labels& required) {
  LabelSelector selector;
  for (const auto& [key, value] : required) {
    selector.terms_.push_back(Term{key, Op::kEquals, value});
  }
  return selector;
}

std::string LabelSelector::ToString() const {
  std::string text;
  for (const Term& t : terms_) {
    if (!text.empty()) text += ',';
    switch (t.op) {
      case Op::kEquals:
        absl::StrAppend(&text, t.key, "=", t.value);
        break;
      case Op::kNotEquals:
        absl::StrAppend(&text, t.key, "!=", t.value);
        break;
      case Op::kExists:
        text += t.key;
        break;
      case Op::kNotExists:
        absl::StrAppend(&text, "!", t.key);
        break;
    }
  }
  return text;
}

bool LabelSelector::Matches(const Labels& labels) const {
  for (const Term& t : terms_) {
    auto it = labels.find(t.key);
    const bool present = it != labels.end();
    switch (t.op) {
      case Op::kEquals:
        if (!present || it->second != t.value) return false;
        break;
      case Op::kNotEquals:
        if (present && it->second == t.value) return false;
        break;
      case Op::kExists:
        if (!present) return false;
        break;
      case Op::kNotExists:
        if (present) return false;
        break;
    }
  }
  return true;
}

}  // namespace accelsched
