#include "agent/kube_quantity.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

// The rules, from kubernetes/apimachinery at
// eed236ceee2c19c2753a3d93ac0631dc20750454, pkg/api/resource/:
//   quantity.go:40-58    the grammar: <signedNumber><suffix>, a number being
//                        <digits>, <digits>.<digits>, <digits>. or .<digits>
//                        ("1." and ".5" are numbers; "1.G" too, line 233);
//   quantity.go:161-275  parseQuantityString, the scanner: sign, digits, an
//                        optional '.' and digits, then the suffix to the end;
//   quantity.go:278-283  ParseQuantity: "" is malformed;
//   suffix.go:88-106,    the suffix table, case-sensitive: "" n u m k M G T P
//     113-132            E (10^0, -9, -6, -3, 3, 6, 9, 12, 15, 18) and Ki Mi
//                        Gi Ti Pi Ei (2^10 ... 2^60); "K" and "ki" are not
//                        suffixes, "E" alone is exa;
//   suffix.go:189-195    otherwise 'e' or 'E' and a base-10 signed integer
//                        (strconv.ParseInt: "e3", "E+3", "e-3") is a decimal
//                        exponent;
//   quantity.go:370-375  the value is kept exactly (inf.Dec), rounded up to
//                        nano;
//   quantity.go:813-822  Value is ceil(q) and MilliValue ceil(q * 1000),
//                        away from zero.
// kube-scheduler reads a node's status.allocatable with MilliValue for cpu and
// Value for memory and pods (kubernetes/kubernetes
// pkg/scheduler/framework/types.go, Resource.Add), as the agent does.
//
// Where the scanner is looser than its grammar, the grammar is followed: a
// number without a digit (".", "+", "Gi", "-Ki", which ParseQuantity reads as
// 0) is refused, and so is an exponent outside int32 (suffix.go:194 casts it
// to int32, so "1e4294967296" is 1 there). Negative quantities, which
// Kubernetes allows, are refused: no node has negative allocatable. The API
// server writes quantities in canonical form (quantity.go:425,
// CanonicalizeBytes), never these. tests/agent/node_allocatable_test.cc's
// table agrees with apimachinery v0.33.0's ParseQuantity, Value and
// MilliValue case by case.

namespace accelsched::agent {
namespace {

struct Suffix {
  const char* text;
  int exp10;
  int exp2;
};

// suffix.go:88-132.
constexpr Suffix kSuffixes[] = {
    {"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},
    {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},   {"T", 12, 0},
    {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
    {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
};

// A base-10 integer with an optional sign, within int32 (suffix.go:189-195).
bool ParseExponent(absl::string_view s, int64_t& out) {
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(c)) return false;
  }
  while (s.size() > 1 && s.front() == '0') s.remove_prefix(1);
  if (s.size() > 10) return false;
  int64_t value = 0;
  for (char c : s) value = value * 10 + (c - '0');
  if (negative) value = -value;
  if (value < INT32_MIN || value > INT32_MAX) return false;
  out = value;
  return true;
}

// `digits` (decimal, most significant first) times two.
void Double(std::string& digits) {
  int carry = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    const int d = (*it - '0') * 2 + carry;
    *it = static_cast<char>('0' + d % 10);
    carry = d / 10;
  }
  if (carry > 0) digits.insert(digits.begin(), static_cast<char>('0' + carry));
}

}  // namespace

absl::StatusOr<int64_t> ParseQuantity(absl::string_view field,
                                      absl::string_view text,
                                      QuantityScale scale, int64_t max) {
  const auto malformed = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " \"", absl::CHexEscape(text),
                     "\" is not a Kubernetes quantity: ", why));
  };
  // The scanner (quantity.go:161-275): sign, digits, '.', digits, suffix.
  size_t pos = 0;
  bool negative = false;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    negative = text[pos] == '-';
    ++pos;
  }
  const size_t int_start = pos;
  while (pos < text.size() && absl::ascii_isdigit(text[pos])) ++pos;
  const absl::string_view int_digits = text.substr(int_start, pos - int_start);
  absl::string_view frac_digits;
  if (pos < text.size() && text[pos] == '.') {
    const size_t frac_start = ++pos;
    while (pos < text.size() && absl::ascii_isdigit(text[pos])) ++pos;
    frac_digits = text.substr(frac_start, pos - frac_start);
  }
  if (int_digits.empty() && frac_digits.empty()) {
    return malformed("expected a number such as 8, 0.5 or 7910m");
  }
  const absl::string_view suffix = text.substr(pos);
  int64_t exp10 = 0;
  int exp2 = 0;
  bool known = false;
  for (const Suffix& s : kSuffixes) {
    if (suffix == s.text) {
      exp10 = s.exp10;
      exp2 = s.exp2;
      known = true;
      break;
    }
  }
  if (!known) {
    if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E') ||
        !ParseExponent(suffix.substr(1), exp10)) {
      return malformed(absl::StrCat(
          "unknown suffix \"", absl::CHexEscape(suffix),
          "\" (valid: n u m k M G T P E, Ki Mi Gi Ti Pi Ei, or e/E and an "
          "integer exponent)"));
    }
  }

  // value = digits * 10^exp10 * 2^exp2, exactly; then rounded up.
  std::string digits = absl::StrCat(int_digits, frac_digits);
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return 0;  // "0", "-0.0", "0Gi"
  digits.erase(0, first);
  if (negative) return malformed("negative");
  exp10 -= static_cast<int64_t>(frac_digits.size());
  if (scale == QuantityScale::kMilli) exp10 += 3;
  const auto too_large = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " \"", absl::CHexEscape(text), "\" is more than ",
                     max, scale == QuantityScale::kMilli ? " milli" : "",
                     ", the most accelsched accepts"));
  };
  const int64_t magnitude = static_cast<int64_t>(digits.size()) + exp10;
  // At least 10^(magnitude - 1), which is past int64 from 10^19 on.
  if (magnitude > 19) return too_large();
  // Below 10^(magnitude) * 2^60 < 1: rounds up to 1.
  if (magnitude <= -19) {
    if (max < 1) return too_large();
    return 1;
  }
  for (int i = 0; i < exp2; ++i) Double(digits);
  // Split into whole part and fraction at 10^-exp10.
  std::string whole;
  bool fraction = false;
  if (exp10 >= 0) {
    whole = digits + std::string(static_cast<size_t>(exp10), '0');
  } else {
    const int64_t keep = static_cast<int64_t>(digits.size()) + exp10;
    const size_t cut = keep > 0 ? static_cast<size_t>(keep) : 0;
    whole = digits.substr(0, cut);
    fraction = digits.find_first_not_of('0', cut) != std::string::npos;
  }
  if (whole.empty()) whole = "0";
  uint64_t value = 0;
  if (whole.size() > 19 || !absl::SimpleAtoi(whole, &value)) {
    return too_large();
  }
  if (fraction) ++value;
  if (value > static_cast<uint64_t>(max)) return too_large();
  return static_cast<int64_t>(value);
}

}  // namespace accelsched::agent
