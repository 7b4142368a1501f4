// libFuzzer: an AllocateRequest parsed from arbitrary bytes, through validation
// and the real scheduler (allocate, read back, release), on a small cluster.
#include <cstddef>
#include <cstdint>

#include "accelsched/v1/accelsched.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/util/json_util.h"
#include "services/proto_convert.h"
#include "tests/fuzz/scheduler_fuzz_fixture.h"

// Invalid UTF-8 in string fields is an ordinary parse failure here, not worth a
// log line.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accelsched;
  v1::AllocateRequest proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<AllocationRequest> req = AllocationRequestFromProto(proto);
  if (!req.ok()) return 0;
  FuzzCluster cluster;
  BlockingScheduler& s = cluster.scheduler();
  (void)s.Explain(*req);
  absl::StatusOr<Allocation> a = s.Allocate(*req);
  if (a.ok()) {
    v1::Allocation out;
    AllocationToProto(*a, {.nvidia_visible_devices = true}, &out);
    // Whatever the request's strings, the placement's JSON parses. A queued
    // request that must wait (PENDING) has no placement yet.
    google::protobuf::Struct json;
    if (a->live() != out.has_placement()) __builtin_trap();
    if (a->live() && !google::protobuf::util::JsonStringToMessage(
                          out.placement().pod_spec_patch(), &json)
                          .ok()) {
      __builtin_trap();
    }
    if (a->live() && !out.placement().resource_claim().empty() &&
        !google::protobuf::util::JsonStringToMessage(
             out.placement().resource_claim(), &json)
             .ok()) {
      __builtin_trap();
    }
    if (!s.GetAllocation({a->id, ""}).ok()) __builtin_trap();
    if (!s.Release({a->id, ""}).ok()) __builtin_trap();
  }
  CheckCapacity(s);
  return 0;
}
