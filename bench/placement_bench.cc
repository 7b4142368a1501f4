// What a placement adds to every reply that carries an allocation (Allocate,
// GetAllocation, ListAllocations, WatchEvents, Explain): core's placement
// (node affinity, tolerations, resource) and, on top, its Kubernetes JSON (the
// PodSpec patch and the DRA claim), for the allocation's placement and each
// node's. BM_BuildPlacements is the first alone; BM_AllocationToProto is the
// whole reply as the server builds it, then serialized for the wire.
#include <benchmark/benchmark.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/placement/placement.h"
#include "services/proto_convert.h"

namespace accelsched {
namespace {

// `gpus` whole A100s on one node, as Allocate returns them.
Allocation Sample(int gpus) {
  Allocation a;
  a.id = "a-00060f2c5e7a1-0001beef";
  a.request_id = "f7c2a9-n0-0";
  a.state = AllocationState::kActive;
  a.node = "gpu-node-17";
  a.tenant = "flytesnacks/development";
  a.device_class = DeviceClass::kNvidiaGpu;
  a.requested_models = {"nvidia-tesla-a100"};
  a.model = "nvidia-tesla-a100";
  a.count = gpus;
  a.container_name = "f7c2a9-n0-0";
  a.targets = {{"gpu-node-17", "gpu-node-17", "nvidia-tesla-a100", ""}};
  for (int i = 0; i < gpus; ++i) {
    a.devices.push_back(
        {"gpu-node-17",
         absl::StrCat("GPU-8f2c1d7e-4b3a-11ee-be56-0242ac12000", i), "", ""});
  }
  return a;
}

void BM_BuildPlacements(benchmark::State& state) {
  const Allocation a = Sample(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(BuildPlacement(a, PlacementOptions()));
    benchmark::DoNotOptimize(BuildNodePlacements(a, PlacementOptions()));
  }
}
BENCHMARK(BM_BuildPlacements)->Arg(1)->Arg(8)->Unit(benchmark::kMicrosecond);

void BM_AllocationToProto(benchmark::State& state) {
  const Allocation a = Sample(static_cast<int>(state.range(0)));
  size_t bytes = 0;
  for (auto _ : state) {
    v1::Allocation proto;
    AllocationToProto(a, PlacementOptions(), &proto);
    std::string wire = proto.SerializeAsString();
    bytes = wire.size();
    benchmark::DoNotOptimize(wire);
  }
  state.counters["reply_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_AllocationToProto)->Arg(1)->Arg(8)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace accelsched

BENCHMARK_MAIN();
