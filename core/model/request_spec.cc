#include "core/model/request_spec.h"

#include <bit>
#include <cstdint>
#include <type_traits>

#include "absl/strings/str_cat.h"

namespace accelsched {
namespace {

// Each value's encoding ends where the next begins: strings carry their
// length, lists their size, so that no two values share a key.
void Encode(std::string& out, absl::string_view s) {
  absl::StrAppend(&out, s.size(), ":", s);
}
void Encode(std::string& out, const std::string& s) {
  Encode(out, absl::string_view(s));
}
void Encode(std::string& out, bool b) { out.push_back(b ? 'y' : 'n'); }
void Encode(std::string& out, int v) { absl::StrAppend(&out, v, ";"); }
void Encode(std::string& out, DeviceClass c) {
  Encode(out, static_cast<int>(c));
}
void Encode(std::string& out, const std::vector<std::string>& list) {
  absl::StrAppend(&out, list.size(), "[");
  for (const std::string& s : list) Encode(out, s);
}
void Encode(std::string& out, const Labels& labels) {
  absl::StrAppend(&out, labels.size(), "{");
  for (const auto& [key, value] : labels) {
    Encode(out, key);
    Encode(out, value);
  }
}
// By power of two seconds (0: the server default, -1).
void Encode(std::string& out, absl::Duration d) {
  const int64_t seconds = absl::ToInt64Seconds(d);
  Encode(out, seconds <= 0 ? -1
                           : static_cast<int>(std::bit_width(
                                 static_cast<uint64_t>(seconds))));
}
void Encode(std::string& out, const std::optional<NodeResources>& r) {
  if (!r.has_value()) {
    out.push_back('-');
    return;
  }
  absl::StrAppend(&out, r->cpu_milli, "m", r->memory_bytes, "b", r->pods, "p");
}
void Encode(std::string& out, const std::optional<GpuShare>& s) {
  if (!s.has_value()) {
    out.push_back('-');
    return;
  }
  absl::StrAppend(&out, s->compute_milli, "m", s->memory_bytes, "b");
  Encode(out, s->group);
}

}  // namespace

bool RequestSpec::SameFor(Role role, const RequestSpec& other) const {
  bool same = true;
  ForEachField([&](const Field& field, auto member) {
    if ((field.roles & role) != 0) same = same && this->*member == other.*member;
  });
  return same;
}

std::string RequestSpec::KeyFor(Role role) const {
  std::string key;
  ForEachField([&](const Field& field, auto member) {
    if ((field.roles & role) == 0) return;
    Encode(key, this->*member);
    key.push_back('|');
  });
  return key;
}

}  // namespace accelsched
