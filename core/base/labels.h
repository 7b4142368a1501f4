// Kubernetes-style node labels: syntax validation and label selectors.
#ifndef ACCELSCHED_CORE_BASE_LABELS_H_
#define ACCELSCHED_CORE_BASE_LABELS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace accelsched {

using Labels = std::map<std::string, std::string>;

inline constexpr size_t kMaxSelectorLength = 4096;

// A lower-case RFC 1123 subdomain of at most 253 characters: the syntax of
// Kubernetes node names and of label-key prefixes.
bool IsDnsSubdomain(absl::string_view s);

// A lower-case RFC 1123 label of at most 63 characters: the syntax of a
// Kubernetes container name and of a DRA request name.
bool IsDnsLabel(absl::string_view s);

// Kubernetes label syntax: a key is [prefix/]name (also the syntax of an
// extended resource name, "nvidia.com/gpu"); a value is empty or a name.
bool IsLabelKey(absl::string_view key);
bool IsLabelValue(absl::string_view value);

// Kubernetes label syntax: key = [prefix/]name, prefix a DNS subdomain of at
// most 253 characters, name and value at most 63 characters of [A-Za-z0-9._-]
// beginning and ending alphanumeric (the value may be empty). Errors name
// `field` ("node.labels").
absl::Status ValidateLabels(const Labels& labels, absl::string_view field);

// An equality-based selector: "k=v,k2==v2,k3!=v3,k4,!k5" (all terms must hold).
class LabelSelector {
 public:
  // INVALID_ARGUMENT naming `field` when malformed. The empty string selects
  // everything.
  static absl::StatusOr<LabelSelector> Parse(absl::string_view text,
                                             absl::string_view field);
  // Every key=value of `required` must be present (a node_selector map).
  static LabelSelector FromMap(const Labels& required);

  bool Matches(const Labels& labels) const;
  bool empty() const { return terms_.empty(); }
  // The terms in the selector syntax, in the order given ("k=v,k2!=v2,k3,
  // !k4"): equal selectors spell the same, and one selector spelled two ways
  // may not.
  std::string ToString() const;

 private:
  enum class Op { kEquals, kNotEquals, kExists, kNotExists };
  struct Term {
    std::string key;
    Op op;
    std::string value;
  };
  std::vector<Term> terms_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_BASE_LABELS_H_
