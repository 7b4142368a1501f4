#include "agent/node_allocatable.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/files.h"
#include "agent/kube_quantity.h"
#include "rapidjson/document.h"
#include "rapidjson/error/en.h"

namespace accelsched::agent {
namespace {

// The string member `name` of `object`, or nullptr when absent.
const rapidjson::Value* Member(const rapidjson::Value& object,
                               const char* name) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(name);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

absl::string_view StringOf(const rapidjson::Value& v) {
  return absl::string_view(v.GetString(), v.GetStringLength());
}

// status.allocatable.`name` counted at `scale`; `required` or 0 when absent.
absl::StatusOr<int64_t> Quantity(const rapidjson::Value& allocatable,
                                 absl::string_view source, const char* name,
                                 bool required, QuantityScale scale,
                                 int64_t max) {
  const std::string field = absl::StrCat(source, ": status.allocatable.", name);
  const rapidjson::Value* v = Member(allocatable, name);
  if (v == nullptr) {
    if (!required) return 0;
    return absl::InvalidArgumentError(absl::StrCat(field, " is missing"));
  }
  if (!v->IsString()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " must be a string such as \"8\" or \"64Gi\""));
  }
  return ParseQuantity(field, StringOf(*v), scale, max);
}

}  // namespace

absl::StatusOr<v1::NodeResources> KubeNodeAllocatable(
    absl::string_view json, absl::string_view source,
    absl::string_view node_name) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not JSON at byte ", doc.GetErrorOffset(), ": ",
                     rapidjson::GetParseError_En(doc.GetParseError())));
  }
  const rapidjson::Value* kind = Member(doc, "kind");
  if (kind == nullptr || !kind->IsString() || StringOf(*kind) != "Node") {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not a Node object (kind \"",
                     kind != nullptr && kind->IsString() ? StringOf(*kind) : "",
                     "\"); write it with kubectl get node NAME -o json"));
  }
  if (!node_name.empty()) {
    const rapidjson::Value* metadata = Member(doc, "metadata");
    const rapidjson::Value* name =
        metadata != nullptr ? Member(*metadata, "name") : nullptr;
    const absl::string_view got =
        name != nullptr && name->IsString() ? StringOf(*name) : "";
    if (got != node_name) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": metadata.name is \"", got,
                       "\", not this agent's node \"", node_name, "\""));
    }
  }
  const rapidjson::Value* status = Member(doc, "status");
  const rapidjson::Value* allocatable =
      status != nullptr ? Member(*status, "allocatable") : nullptr;
  if (allocatable == nullptr || !allocatable->IsObject()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": status.allocatable is missing"));
  }
  absl::StatusOr<int64_t> cpu =
      Quantity(*allocatable, source, "cpu", /*required=*/true,
               QuantityScale::kMilli, kMaxCpuMilli);
  if (!cpu.ok()) return cpu.status();
  absl::StatusOr<int64_t> memory =
      Quantity(*allocatable, source, "memory", /*required=*/true,
               QuantityScale::kUnits, kMaxMemoryBytes);
  if (!memory.ok()) return memory.status();
  absl::StatusOr<int64_t> pods =
      Quantity(*allocatable, source, "pods", /*required=*/false,
               QuantityScale::kUnits, kMaxPods);
  if (!pods.ok()) return pods.status();
  v1::NodeResources out;
  out.set_cpu_milli(*cpu);
  out.set_memory_bytes(*memory);
  out.set_pods(static_cast<int32_t>(*pods));
  return out;
}

absl::StatusOr<int64_t> OnlineCpus() {
  errno = 0;
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (n == -1) {
    const int e = errno;
    return absl::InternalError(absl::StrCat(
        "sysconf(_SC_NPROCESSORS_ONLN) failed: ",
        e != 0 ? std::strerror(e) : "not supported on this system"));
  }
  if (n < 1) {
    return absl::InternalError(
        absl::StrCat("sysconf(_SC_NPROCESSORS_ONLN) returned ", n));
  }
  return static_cast<int64_t>(n);
}

absl::StatusOr<int64_t> MemTotalBytes(const std::string& proc_dir) {
  const std::string path =
      (std::filesystem::path(proc_dir) / "meminfo").string();
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (!absl::StartsWith(line, "MemTotal:")) continue;
    // "MemTotal:       65843296 kB"
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    int64_t kib = 0;
    if (fields.size() != 3 || fields[2] != "kB" ||
        !absl::SimpleAtoi(fields[1], &kib) || kib < 0 ||
        kib > std::numeric_limits<int64_t>::max() / 1024) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": expected \"MemTotal: <n> kB\", got \"", line, "\""));
    }
    return kib * 1024;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, " has no MemTotal line"));
}

v1::NodeResources MachineAllocatable(int64_t cpus, int64_t memory_bytes,
                                     const MachineReserve& reserve,
                                     std::string* notice) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t cpu_milli = cpus > kMax / 1000 ? kMax : cpus * 1000;
  std::vector<std::string> clamped;
  v1::NodeResources out;
  if (reserve.cpu_milli > cpu_milli) {
    clamped.push_back(absl::StrCat("--reserved_cpu_milli=", reserve.cpu_milli,
                                   " is more than the machine's ", cpu_milli,
                                   " cpu_milli"));
    out.set_cpu_milli(0);
  } else {
    out.set_cpu_milli(cpu_milli - reserve.cpu_milli);
  }
  if (reserve.memory_bytes > memory_bytes) {
    clamped.push_back(
        absl::StrCat("--reserved_memory_bytes=", reserve.memory_bytes,
                     " is more than the machine's ", memory_bytes, " bytes"));
    out.set_memory_bytes(0);
  } else {
    out.set_memory_bytes(memory_bytes - reserve.memory_bytes);
  }
  out.set_pods(reserve.max_pods);
  if (notice != nullptr) {
    notice->clear();
    if (!clamped.empty()) {
      *notice = absl::StrCat(absl::StrJoin(clamped, "; "),
                             ": allocatable 0 of it, so pods placed by "
                             "accelsched may use none");
    }
  }
  return out;
}

NodeAllocatable::NodeAllocatable(Options options)
    : options_(std::move(options)) {}

absl::StatusOr<v1::NodeResources> NodeAllocatable::ReadSource(
    std::string& notice) const {
  switch (options_.source) {
    case Source::kNone:
      break;
    case Source::kKubernetes: {
      absl::StatusOr<std::string> json = ReadWholeFile(options_.kube_node_file);
      if (!json.ok()) return json.status();
      return KubeNodeAllocatable(*json, options_.kube_node_file,
                                 options_.node_name);
    }
    case Source::kMachine: {
      absl::StatusOr<int64_t> cpus = options_.online_cpus();
      if (!cpus.ok()) return cpus.status();
      absl::StatusOr<int64_t> memory = MemTotalBytes(options_.proc_dir);
      if (!memory.ok()) return memory.status();
      v1::NodeResources out =
          MachineAllocatable(*cpus, *memory, options_.reserve, &notice);
      if (out.cpu_milli() > kMaxCpuMilli ||
          out.memory_bytes() > kMaxMemoryBytes || out.pods() > kMaxPods) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the machine's allocatable (", out.cpu_milli(), " cpu_milli, ",
            out.memory_bytes(), " memory_bytes, ", out.pods(),
            " pods) is above what accelsched accepts (", kMaxCpuMilli, ", ",
            kMaxMemoryBytes, ", ", kMaxPods, ")"));
      }
      return out;
    }
  }
  return absl::InternalError("no allocatable source");
}

NodeAllocatable::Reading NodeAllocatable::Read() {
  Reading reading;
  if (options_.source == Source::kNone) return reading;
  absl::StatusOr<v1::NodeResources> now = ReadSource(reading.notice);
  if (now.ok()) {
    last_good_ = *std::move(now);
  } else {
    reading.error = now.status();
  }
  reading.allocatable = last_good_;
  return reading;
}

absl::StatusOr<NodeAllocatable::Source> AllocatableSource(
    absl::string_view flag, bool kube_node_file) {
  if (flag == "auto") {
    return kube_node_file ? NodeAllocatable::Source::kKubernetes
                          : NodeAllocatable::Source::kMachine;
  }
  if (flag == "none") {
    if (kube_node_file) {
      return absl::InvalidArgumentError(
          "--allocatable=none ignores --kube_node_file: set one of them");
    }
    return NodeAllocatable::Source::kNone;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--allocatable=\"", flag, "\": expected auto or none"));
}

}  // namespace accelsched::agent
