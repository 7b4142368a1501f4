// The in-core matcher on synthetic clusters of 1,000, 10,000 and 100,000 nodes:
// a mix of whole GPUs of several models, MIG GPUs with mixed geometries and TPU
// v5e slices, about half allocated. Reports Allocate+Release pairs per second
// and the cost of one match, with and without the pod's CPU and memory
// (pod_resources) on a cluster whose nodes' CPU is accounted.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/accelerator_types_file.h"
#include "core/catalog/capacity_index.h"
#include "core/catalog/pool_queries.h"
#include "core/model/node_resources.h"
#include "core/plugins/index_placer.h"
#include "core/plugins/request_mix/request_mix.h"

namespace accelsched {
namespace {

struct Cluster {
  CapacityIndex index;
  NodeMap nodes;
};

const PoolKey kH100{DeviceClass::kNvidiaGpu, "nvidia-h100", ""};
const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};
const PoolKey kL4{DeviceClass::kNvidiaGpu, "nvidia-l4", ""};
const PoolKey kMig1g{DeviceClass::kNvidiaGpu, "nvidia-tesla-a100", "1g.5gb"};
const PoolKey kMig3g{DeviceClass::kNvidiaGpu, "nvidia-tesla-a100", "3g.20gb"};
const PoolKey kTpu{DeviceClass::kGoogleTpu, "tpu-v5-lite-podslice", "2x4"};

void AddUnit(Cluster& c, const std::string& key, const PoolKey& pool,
             const std::string& node, const std::string& group, int order) {
  c.index.Put(Unit{
      key, pool, node, {node}, {{node, key, "", ""}}, group, order, true, ""});
}

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);
constexpr int64_t kGiB = int64_t{1} << 30;

void AddNode(Cluster& c, const std::string& name, Labels labels = {}) {
  Node node;
  node.name = name;
  node.last_heartbeat = kNow;
  node.labels = std::move(labels);
  c.nodes.emplace(name, std::move(node));
}

// Marks a seeded 30-70% of `keys` allocated.
void AllocateSome(Cluster& c, const std::vector<std::string>& keys,
                  std::mt19937& rng) {
  const double share = 0.3 + 0.4 * std::uniform_real_distribution<>(0, 1)(rng);
  for (const std::string& key : keys) {
    if (std::uniform_real_distribution<>(0, 1)(rng) < share) {
      c.index.SetHolder(key, "pre-allocated");
    }
  }
}

// The cluster of `n` nodes that `fill` makes, made once.
Cluster& Cached(void (*fill)(int, Cluster&), int n) {
  static auto* clusters =
      new std::map<std::pair<void (*)(int, Cluster&), int>, Cluster>;
  auto [it, fresh] = clusters->try_emplace({fill, n});
  if (fresh) fill(n, it->second);
  return it->second;
}

// Node i is one of five shapes; then a seeded 30-70% of each node's units are
// allocated.
void FillMixed(int n, Cluster& c) {
  std::mt19937 rng(42);
  for (int i = 0; i < n; ++i) {
    const std::string name = absl::StrCat("node-", i);
    AddNode(c, name, {{"pool", absl::StrCat("p", i % 4)}});
    std::vector<std::string> keys;
    auto add = [&](const std::string& key, const PoolKey& pool,
                   const std::string& group, int order) {
      AddUnit(c, key, pool, name, group, order);
      keys.push_back(key);
    };
    switch (i % 5) {
      case 0:
        for (int g = 0; g < 8; ++g)
          add(absl::StrCat(name, "-h", g), kH100, "", g);
        break;
      case 1:  // 8 MIG A100s: 7 x 1g.5gb, or 3g.20gb + 3g.20gb
        for (int g = 0; g < 8; ++g) {
          const std::string gpu = absl::StrCat(name, "-a", g);
          if (g % 2 == 0) {
            for (int s = 0; s < 7; ++s)
              add(absl::StrCat(gpu, "-", s), kMig1g, gpu, g * 8 + s);
          } else {
            add(gpu + "-0", kMig3g, gpu, g * 8);
            add(gpu + "-4", kMig3g, gpu, g * 8 + 4);
          }
        }
        break;
      case 2:
        for (int g = 0; g < 4; ++g)
          add(absl::StrCat(name, "-l", g), kL4, "", g);
        break;
      case 3:
        add(absl::StrCat(name, "-tpu"), kTpu, "", 0);
        break;
      case 4:
        for (int g = 0; g < 8; ++g)
          add(absl::StrCat(name, "-t", g), kT4, "", g);
        break;
    }
    AllocateSome(c, keys, rng);
  }
}

Cluster& BuildCluster(int n) { return Cached(FillMixed, n); }

// The mixed cluster with every node's CPU and memory accounted: 64 cores and
// 512 GiB allocatable, each node's held CPU, memory and pods set by `held`.
void FillAccounted(int n, Cluster& c,
                   NodeResources (*held)(std::mt19937& rng)) {
  FillMixed(n, c);
  std::mt19937 rng(1234);
  for (int i = 0; i < n; ++i) {
    const std::string name = absl::StrCat("node-", i);
    c.index.SetAllocatable(name, NodeResources{64'000, 512 * kGiB, 0});
    c.index.AddHeld(name, held(rng), +1);
  }
}

int64_t Uniform(std::mt19937& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// A seeded half of the nodes have at most 1.5 cores left (less than any
// request below asks); the others hold 0-40 cores. Memory: 0-256 GiB held.
void FillCpuShort(int n, Cluster& c) {
  FillAccounted(n, c, [](std::mt19937& rng) {
    NodeResources held;
    held.cpu_milli = Uniform(rng, 0, 1) == 0 ? Uniform(rng, 62'500, 64'000)
                                             : Uniform(rng, 0, 40'000);
    held.memory_bytes = Uniform(rng, 0, 256) * kGiB;
    held.pods = 1 + held.cpu_milli / 8'000;
    return held;
  });
}

// A seeded half of the nodes are busy: 40-60 cores held (4-24 left, enough
// for most requests below) and at most 4 GiB of memory left (less than any
// asks); the others hold 0-40 cores and 0-256 GiB. The busy nodes come first
// in best-fit order and pass the CPU bound, so a match visits them.
void FillMemoryShort(int n, Cluster& c) {
  FillAccounted(n, c, [](std::mt19937& rng) {
    NodeResources held;
    if (Uniform(rng, 0, 1) == 0) {
      held.cpu_milli = Uniform(rng, 40'000, 60'000);
      held.memory_bytes =
          512 * kGiB - Uniform(rng, 0, 4 * 1024) * (kGiB / 1024);
    } else {
      held.cpu_milli = Uniform(rng, 0, 40'000);
      held.memory_bytes = Uniform(rng, 0, 256) * kGiB;
    }
    held.pods = 1 + held.cpu_milli / 8'000;
    return held;
  });
}

const MatchSpec kSpecs[] = {
    MatchSpec::ForPool(kH100, 2),
    MatchSpec::ForPool(kMig1g, 1),
    MatchSpec::ForPool(kL4, 1),
    MatchSpec::ForPool(kT4, 4),
    MatchSpec::ForPool(kTpu, 1),
    MatchSpec::ForPool(kMig3g, 1, {{"pool", "p1"}}),
};

// kSpecs with what each request's pod needs: CPU and memory in proportion to
// what it asks (as a node's share for its devices would be).
const std::vector<MatchSpec> kPodSpecs = [] {
  const NodeResources needs[] = {
      {16'000, 128 * kGiB, 1},  // 2 H100
      {2'000, 8 * kGiB, 1},     // one 1g.5gb slice
      {4'000, 16 * kGiB, 1},    // one L4
      {16'000, 64 * kGiB, 1},   // 4 T4
      {24'000, 96 * kGiB, 1},   // one TPU v5e 2x4 slice
      {8'000, 32 * kGiB, 1},    // one 3g.20gb slice
  };
  static_assert(std::size(needs) == std::size(kSpecs));
  std::vector<MatchSpec> specs;
  for (size_t i = 0; i < std::size(kSpecs); ++i) {
    specs.push_back(kSpecs[i]);
    specs.back().pod_resources = NormalizedPodNeed(needs[i]);
  }
  return specs;
}();

const IndexPlacer::Options kBestFit{Packing::kBestFit, absl::Minutes(5)};

// One match per iteration, allocating nothing.
void BM_Match(benchmark::State& state) {
  Cluster& c = BuildCluster(static_cast<int>(state.range(0)));
  IndexPlacer placer(&c.index, &c.nodes, kBestFit);
  size_t i = 0;
  for (auto _ : state) {
    auto units = placer.PlaceOne(kSpecs[i++ % std::size(kSpecs)], kNow);
    benchmark::DoNotOptimize(units);
  }
  state.SetItemsProcessed(state.iterations());
}

// Every unit the clusters hold is held by "pre-allocated", whose lease ends in
// an hour.
class OneLease : public LeaseView {
 public:
  absl::Time FreeAt(absl::string_view allocation,
                    absl::Time /*now*/) const override {
    return allocation == "pre-allocated" ? kNow + absl::Hours(1)
                                         : absl::InfinitePast();
  }
};

// One match per iteration under a --packing policy (state.range(1): 0
// fragmentation, with the six requests as the mix and the lease term; 1 best
// fit), on the mixed cluster (state.range(2) 0) or on the accounted one with
// half the nodes short of CPU and each request's pod_resources (1), so that
// the policies are timed on one cluster in one run.
void BM_MatchPacking(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool pods = state.range(2) != 0;
  Cluster& c = pods ? Cached(FillCpuShort, n) : BuildCluster(n);
  static const OneLease leases;
  static const RequestMix mix = [] {
    RequestMix m;
    for (const MatchSpec& spec : kPodSpecs) CountInMix(spec, kNow, m);
    return m;
  }();
  IndexPlacer placer(&c.index, &c.nodes,
                     state.range(1) == 0
                         ? IndexPlacer::Options{Packing::kFragmentation,
                                                absl::Minutes(5), &mix, &leases}
                         : kBestFit);
  const absl::Time ends_at = kNow + absl::Hours(2);
  size_t i = 0;
  for (auto _ : state) {
    const MatchSpec& spec =
        pods ? kPodSpecs[i % kPodSpecs.size()] : kSpecs[i % std::size(kSpecs)];
    ++i;
    auto units = placer.PlaceOne(spec, kNow, ends_at);
    benchmark::DoNotOptimize(units);
  }
  state.SetItemsProcessed(state.iterations());
}

// One match per iteration on a cluster whose nodes' CPU and memory are
// accounted (`fill`): state.range(1) 1 with each request's pod_resources, 0
// the same requests without them (not limited by CPU or memory), so that the
// two are timed on one cluster.
void MatchPodResources(benchmark::State& state, void (*fill)(int, Cluster&)) {
  Cluster& c = Cached(fill, static_cast<int>(state.range(0)));
  IndexPlacer placer(&c.index, &c.nodes, kBestFit);
  const bool with = state.range(1) != 0;
  size_t i = 0;
  int64_t misses = 0;
  for (auto _ : state) {
    const MatchSpec& spec =
        with ? kPodSpecs[i % kPodSpecs.size()] : kSpecs[i % std::size(kSpecs)];
    ++i;
    auto units = placer.PlaceOne(spec, kNow);
    if (!units.has_value()) ++misses;
    benchmark::DoNotOptimize(units);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["misses"] = static_cast<double>(misses);
}

// Half the nodes short of CPU: skipped by the index's order.
void BM_MatchPodResources(benchmark::State& state) {
  MatchPodResources(state, FillCpuShort);
}

// Half the nodes short of memory, not of CPU: visited one by one.
void BM_MatchPodResourcesMemoryShort(benchmark::State& state) {
  MatchPodResources(state, FillMemoryShort);
}

// Match, mark the units allocated, then release them: the in-core work of one
// Allocate and one Release.
void BM_AllocateRelease(benchmark::State& state) {
  Cluster& c = BuildCluster(static_cast<int>(state.range(0)));
  IndexPlacer placer(&c.index, &c.nodes, kBestFit);
  size_t i = 0;
  int64_t misses = 0;
  for (auto _ : state) {
    auto units = placer.PlaceOne(kSpecs[i++ % std::size(kSpecs)], kNow);
    if (!units.has_value()) {
      ++misses;
      continue;
    }
    std::vector<std::string> keys;
    for (const Unit* u : *units) keys.push_back(u->key);
    for (const std::string& k : keys) c.index.SetHolder(k, "bench");
    for (const std::string& k : keys) c.index.SetHolder(k, "");
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["misses"] = static_cast<double>(misses);
}

// Twenty whole-GPU models, one per node (node i has model i % 20 and 1, 2, 4
// or 8 GPUs), a seeded 30-70% of each node allocated: the cluster of a
// model-less request, which may take any of them.
void FillWide(int n, Cluster& c) {
  std::vector<std::string> models;
  for (const AcceleratorType& m : BuiltinAcceleratorTypes()->types()) {
    if (m.device_class == DeviceClass::kNvidiaGpu && models.size() < 20)
      models.emplace_back(m.canonical_model);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < n; ++i) {
    const std::string name = absl::StrCat("node-", i);
    AddNode(c, name);
    const PoolKey pool{DeviceClass::kNvidiaGpu, models[i % models.size()], ""};
    std::vector<std::string> keys;
    for (int g = 0, gpus = 1 << ((i / 20) % 4); g < gpus; ++g) {
      keys.push_back(absl::StrCat(name, "-", g));
      AddUnit(c, keys.back(), pool, name, "", g);
    }
    AllocateSome(c, keys, rng);
  }
}

Cluster& BuildWideCluster(int n) { return Cached(FillWide, n); }

// The same counts (1, 2, 4) asked of one named model (each of the twenty in
// turn), of any model, and of three acceptable models.
std::vector<MatchSpec> WideSpecs(const Cluster& c, int models_per_request) {
  std::vector<std::string> models;
  for (const auto& [key, pool] :
       PoolsOf(c.index, DeviceClass::kNvidiaGpu, "")) {
    models.push_back(key->model);
  }
  std::vector<MatchSpec> specs;
  for (size_t m = 0; m < models.size(); ++m) {
    for (int count : {1, 2, 4}) {
      MatchSpec spec;
      spec.count = count;
      for (int k = 0; k < models_per_request; ++k) {
        spec.requested_models.push_back(models[(m + 7 * k) % models.size()]);
      }
      std::sort(spec.requested_models.begin(), spec.requested_models.end());
      specs.push_back(spec);
    }
  }
  return specs;
}

// One match per iteration; state.range(1) models per request, 0 for any.
void BM_MatchWide(benchmark::State& state) {
  Cluster& c = BuildWideCluster(static_cast<int>(state.range(0)));
  const std::vector<MatchSpec> specs =
      WideSpecs(c, static_cast<int>(state.range(1)));
  IndexPlacer placer(&c.index, &c.nodes, kBestFit);
  size_t i = 0;
  int64_t misses = 0;
  for (auto _ : state) {
    auto units = placer.PlaceOne(specs[i++ % specs.size()], kNow);
    if (!units.has_value()) ++misses;
    benchmark::DoNotOptimize(units);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["misses"] = static_cast<double>(misses);
}

// `n` GPUs, eight T4s per node, each taking shares (MPS, 16 GiB): a seeded
// 30% held whole, the rest carrying shares of 0 to 900 milli in all, so
// that free compute is spread over every value, each GPU's of one of eight
// sharing groups (namespaces).
void FillSharing(int n, Cluster& c) {
  std::mt19937 rng(7);
  for (int i = 0; i < n / 8; ++i) {
    const std::string name = absl::StrCat("node-", i);
    AddNode(c, name);
    for (int g = 0; g < 8; ++g) {
      const std::string key = absl::StrCat(name, "-t", g);
      Unit u{key, kT4, name, {name}, {{name, key, "", ""}}, "", g, true, ""};
      u.sharing = GpuSharing::kMps;
      u.memory_bytes = 16 * kGiB;
      c.index.Put(std::move(u));
      if (std::uniform_real_distribution<>(0, 1)(rng) < 0.3) {
        c.index.SetHolder(key, "pre-allocated");
        continue;
      }
      const int64_t used = std::uniform_int_distribution<int64_t>(0, 9)(rng);
      if (used > 0) {
        const std::string group =
            absl::StrCat("ns-", std::uniform_int_distribution<int>(0, 7)(rng));
        c.index.AddShare(
            key, GpuShare{used * 100, used * 16 * kGiB / 10, group}, +1);
      }
    }
  }
}

// One match per iteration on the sharing cluster, allocating nothing:
// state.range(1) 1 a share of 100 to 500 milli (memory its fraction, or
// given) of one of the eight groups, 0 one whole T4, so that the two are
// timed on one cluster.
void BM_MatchShare(benchmark::State& state) {
  Cluster& c = Cached(FillSharing, static_cast<int>(state.range(0)));
  std::vector<MatchSpec> specs;
  for (int64_t milli : {100, 250, 300, 470, 500}) {
    MatchSpec spec = MatchSpec::ForPool(kT4, 1);
    if (state.range(1) != 0) {
      spec.share = GpuShare{milli, milli == 250 ? 3 * kGiB : 0,
                            absl::StrCat("ns-", specs.size() % 8)};
    }
    specs.push_back(std::move(spec));
  }
  IndexPlacer placer(&c.index, &c.nodes, kBestFit);
  size_t i = 0;
  int64_t misses = 0;
  for (auto _ : state) {
    const MatchSpec& spec = specs[i++ % specs.size()];
    const bool found = placer.PlaceOne(spec, kNow).has_value();
    if (!found) ++misses;
    benchmark::DoNotOptimize(found);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["misses"] = static_cast<double>(misses);
}

// Whole T4 (0) and a share (1), on the same sharing cluster of n GPUs.
BENCHMARK(BM_MatchShare)
    ->ArgNames({"gpus", "share"})
    ->ArgsProduct({{1000, 100000}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Match)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(
    benchmark::kMicrosecond);
BENCHMARK(BM_MatchPacking)
    ->ArgNames({"nodes", "best_fit", "pod_resources"})
    ->ArgsProduct({{1000, 12500, 100000}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
// Named model (1), three acceptable models (3), any model (0).
BENCHMARK(BM_MatchWide)
    ->ArgNames({"nodes", "models"})
    ->Args({1000, 1})
    ->Args({100000, 1})
    ->Args({100000, 3})
    ->Args({100000, 0})
    ->Unit(benchmark::kMicrosecond);
// Without (0) and with (1) pod_resources, on the same accounted cluster.
BENCHMARK(BM_MatchPodResources)
    ->ArgNames({"nodes", "pod_resources"})
    ->ArgsProduct({{1000, 10000, 100000}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatchPodResourcesMemoryShort)
    ->ArgNames({"nodes", "pod_resources"})
    ->ArgsProduct({{1000, 10000, 100000}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AllocateRelease)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace accelsched

BENCHMARK_MAIN();
