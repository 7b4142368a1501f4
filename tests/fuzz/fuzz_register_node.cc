// libFuzzer: a RegisterNodeRequest parsed from arbitrary bytes, through
// validation and the real scheduler; an accepted node must read back and be
// removable.
#include <cstddef>
#include <cstdint>

#include "accelsched/v1/accelsched.pb.h"
#include "google/protobuf/stubs/logging.h"
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
  v1::RegisterNodeRequest proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<Node> node = NodeFromProto(proto.node());
  if (!node.ok()) return 0;
  FuzzCluster cluster;
  BlockingScheduler& s = cluster.scheduler();
  // The fixture is rebuilt for every input, so a fuzzed node may also replace
  // one of its nodes.
  absl::StatusOr<Node> stored = s.RegisterNode(*node);
  if (stored.ok()) {
    v1::Node out;
    NodeToProto(*stored, &out);
    if (!s.GetNode(stored->name).ok()) __builtin_trap();
    if (!s.RemoveNode(stored->name, /*force=*/true).ok()) __builtin_trap();
  }
  CheckCapacity(s);
  return 0;
}
