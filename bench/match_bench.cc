// The in-core matcher on synthetic clusters of 1,000, 10,000 and 100,000 nodes:
// a mix of whole GPUs of several models, MIG GPUs with mixed geometries and TPU
// v5e slices, about half allocated. Reports Allocate+Release pairs per second
// and the cost of one match.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/accelerator_types_file.h"
#include "core/catalog/capacity_index.h"
#include "core/matching/matcher.h"

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
      c.index.SetAllocation(key, "pre-allocated");
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

const MatchSpec kSpecs[] = {
    MatchSpec::ForPool(kH100, 2),
    MatchSpec::ForPool(kMig1g, 1),
    MatchSpec::ForPool(kL4, 1),
    MatchSpec::ForPool(kT4, 4),
    MatchSpec::ForPool(kTpu, 1),
    MatchSpec::ForPool(kMig3g, 1, LabelSelector::FromMap({{"pool", "p1"}})),
};

const EligibilityRules kRules = [] {
  EligibilityRules rules;
  rules.now = absl::FromUnixSeconds(1'700'000'000);
  rules.heartbeat_timeout = absl::Minutes(5);
  return rules;
}();

// One match per iteration, allocating nothing.
void BM_Match(benchmark::State& state) {
  Cluster& c = BuildCluster(static_cast<int>(state.range(0)));
  size_t i = 0;
  for (auto _ : state) {
    auto units =
        Match(c.index, c.nodes, kSpecs[i++ % std::size(kSpecs)], kRules);
    benchmark::DoNotOptimize(units);
  }
  state.SetItemsProcessed(state.iterations());
}

// Match, mark the units allocated, then release them: the in-core work of one
// Allocate and one Release.
void BM_AllocateRelease(benchmark::State& state) {
  Cluster& c = BuildCluster(static_cast<int>(state.range(0)));
  size_t i = 0;
  int64_t misses = 0;
  for (auto _ : state) {
    auto units =
        Match(c.index, c.nodes, kSpecs[i++ % std::size(kSpecs)], kRules);
    if (!units.has_value()) {
      ++misses;
      continue;
    }
    std::vector<std::string> keys;
    for (const Unit* u : *units) keys.push_back(u->key);
    for (const std::string& k : keys) c.index.SetAllocation(k, "bench");
    for (const std::string& k : keys) c.index.SetAllocation(k, "");
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
  for (const auto& [key, pool] : c.index.PoolsOf(DeviceClass::kNvidiaGpu, "")) {
    models.push_back(key->model);
  }
  std::vector<MatchSpec> specs;
  for (size_t m = 0; m < models.size(); ++m) {
    for (int count : {1, 2, 4}) {
      MatchSpec spec;
      spec.count = count;
      for (int k = 0; k < models_per_request; ++k) {
        spec.models.push_back(models[(m + 7 * k) % models.size()]);
      }
      std::sort(spec.models.begin(), spec.models.end());
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
  size_t i = 0;
  int64_t misses = 0;
  for (auto _ : state) {
    auto units = Match(c.index, c.nodes, specs[i++ % specs.size()], kRules);
    if (!units.has_value()) ++misses;
    benchmark::DoNotOptimize(units);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["misses"] = static_cast<double>(misses);
}

BENCHMARK(BM_Match)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(
    benchmark::kMicrosecond);
// Named model (1), three acceptable models (3), any model (0).
BENCHMARK(BM_MatchWide)
    ->ArgNames({"nodes", "models"})
    ->Args({1000, 1})
    ->Args({100000, 1})
    ->Args({100000, 3})
    ->Args({100000, 0})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AllocateRelease)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace accelsched

BENCHMARK_MAIN();
