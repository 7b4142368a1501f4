// Choosing the nodes of a gang under topology levels (issue 34), through the
// real MatchGang on a real CapacityIndex: --nodes nodes of 8 H100s in three
// levels, --blocks blocks of racks of --rack_nodes nodes, each rack cut into
// NVLink domains of --nvl_nodes nodes (node labels example.com/block,
// example.com/rack, example.com/nvlink-domain). A seeded share of the nodes
// (--busy) is taken whole and some others in part (1-7 of 8 GPUs, --partial),
// so that domains differ in what they can hold. A gang of --groups groups of
// 8 GPUs asks, on the same cluster in one run:
//   key:       topology_key block (every group in one block, least left over);
//   +rack:     required block, preferred rack;
//   +nvl:      required block, preferred NVLink domain;
//   nvl only:  preferred NVLink domain, no required level.
// For each: the time of one choice (p50, p99 and max over --samples, nothing
// allocated between samples), the domains of each level the gang spans, and
// the GPUs left free on the racks and NVLink domains it touches (what it
// strands there). Exits non-zero when a choice leaves its required block or
// holds a node twice.
#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/quantile.h"
#include "core/catalog/capacity_index.h"
#include "core/plugins/index_placer.h"
#include "core/plugins/topology/topology.h"

ABSL_FLAG(int, nodes, 10000, "nodes of 8 H100s");
ABSL_FLAG(int, blocks, 10, "blocks the nodes are split into");
ABSL_FLAG(int, rack_nodes, 40, "nodes per rack");
ABSL_FLAG(int, nvl_nodes, 8, "nodes per NVLink domain (within a rack)");
ABSL_FLAG(double, busy, 0.5, "share of nodes taken whole");
ABSL_FLAG(double, partial, 0.2, "share of nodes taken in part");
ABSL_FLAG(int, groups, 64, "the gang's groups of 8 GPUs");
ABSL_FLAG(int, samples, 200, "choices timed per request");

namespace accelsched {
namespace {

constexpr char kBlock[] = "example.com/block";
constexpr char kRack[] = "example.com/rack";
constexpr char kNvl[] = "example.com/nvlink-domain";
const PoolKey kH100{DeviceClass::kNvidiaGpu, "nvidia-h100", ""};
const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

struct Cluster {
  CapacityIndex index;
  NodeMap nodes;
};

void Build(Cluster& c) {
  const int n = absl::GetFlag(FLAGS_nodes);
  const int per_block =
      (n + absl::GetFlag(FLAGS_blocks) - 1) / absl::GetFlag(FLAGS_blocks);
  const int rack_nodes = absl::GetFlag(FLAGS_rack_nodes);
  const int nvl_nodes = absl::GetFlag(FLAGS_nvl_nodes);
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_int_distribution<int> some(1, 7);
  for (int i = 0; i < n; ++i) {
    const std::string name = absl::StrCat("node-", i);
    const int block = i / per_block;
    const int rack = i / rack_nodes;
    const int nvl = i / nvl_nodes;
    Node node;
    node.name = name;
    node.last_heartbeat = kNow;
    node.labels = {{kBlock, absl::StrCat("b", block)},
                   {kRack, absl::StrCat("r", rack)},
                   {kNvl, absl::StrCat("nvl", nvl)}};
    c.nodes.emplace(name, std::move(node));
    const double draw = u(rng);
    const int taken =
        draw < absl::GetFlag(FLAGS_busy) ? 8
        : draw < absl::GetFlag(FLAGS_busy) + absl::GetFlag(FLAGS_partial)
            ? some(rng)
            : 0;
    for (int g = 0; g < 8; ++g) {
      const std::string key = absl::StrCat(name, "-h", g);
      Unit unit;
      unit.key = key;
      unit.pool = kH100;
      unit.home = name;
      unit.hosts = {name};
      unit.devices = {{name, key, "", ""}};
      unit.order = g;
      c.index.Put(std::move(unit));
      if (g < taken) c.index.SetHolder(key, "busy");
    }
  }
}

struct Case {
  const char* name;
  std::string required;
  std::string preferred;
};

struct Result {
  double p50_us = 0, p99_us = 0, max_us = 0;
  double check_p50_us = 0;  // CheckGangDomains
  int blocks = 0, racks = 0, nvls = 0;
  int64_t stranded_rack = 0, stranded_nvl = 0;
};

bool Run(const Cluster& c, const Case& k, Result& out) {
  MatchSpec spec;
  spec.device_class = DeviceClass::kNvidiaGpu;
  spec.requested_models = {kH100.model};
  spec.count = 8;
  spec.replicas = absl::GetFlag(FLAGS_groups);
  spec.topology_key = k.required;
  spec.preferred_topology = k.preferred;
  IndexPlacer placer(&c.index, &c.nodes, {Packing::kBestFit});
  // Each call `--samples` times, in microseconds.
  auto time = [](auto call) {
    std::vector<double> us;
    for (int i = 0; i < absl::GetFlag(FLAGS_samples); ++i) {
      const absl::Time start = absl::Now();
      call();
      us.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
    }
    return us;
  };
  std::optional<Groups> groups;
  const std::vector<double> taken =
      time([&] { groups = placer.Place(spec, kNow); });
  bool refused = false;
  const std::vector<double> checks = time([&] {
    refused = refused || !CheckGangDomains(c.index, c.nodes, spec).ok();
  });
  out.check_p50_us = Quantile(checks, 0.5);
  if (refused) {
    std::fprintf(stderr, "%s: refused as never fitting\n", k.name);
    return false;
  }
  if (!groups.has_value()) {
    std::fprintf(stderr, "%s: no placement\n", k.name);
    return false;
  }
  out.p50_us = Quantile(taken, 0.5);
  out.p99_us = Quantile(taken, 0.99);
  out.max_us = Quantile(taken, 1.0);
  std::set<std::string> nodes, blocks, racks, nvls;
  for (const auto& group : *groups) {
    const std::string& node = group.front()->home;
    if (!nodes.insert(node).second) {
      std::fprintf(stderr, "%s: %s twice\n", k.name, node.c_str());
      return false;
    }
    const Labels& labels = c.nodes.at(node).labels;
    blocks.insert(labels.at(kBlock));
    racks.insert(labels.at(kRack));
    nvls.insert(labels.at(kNvl));
  }
  if (!k.required.empty() && blocks.size() != 1) {
    std::fprintf(stderr, "%s: spans %zu blocks\n", k.name, blocks.size());
    return false;
  }
  out.blocks = static_cast<int>(blocks.size());
  out.racks = static_cast<int>(racks.size());
  out.nvls = static_cast<int>(nvls.size());
  // Free GPUs left on the touched racks and NVLink domains, after the gang.
  for (const auto& [name, node] : c.nodes) {
    if (nodes.contains(name)) continue;
    const CapacityIndex::Pool* pool = c.index.FindPool(kH100);
    auto home = pool->homes.find(name);
    int free = 0;
    for (const std::string& key : home->second.units) {
      if (c.index.Find(key)->holder.empty()) ++free;
    }
    if (racks.contains(node.labels.at(kRack))) out.stranded_rack += free;
    if (nvls.contains(node.labels.at(kNvl))) out.stranded_nvl += free;
  }
  return true;
}

int Main() {
  Cluster c;
  const absl::Time began = absl::Now();
  Build(c);
  std::printf(
      "%d nodes x 8 H100 in %d blocks, racks of %d nodes, NVLink domains of "
      "%d; "
      "%.0f%% taken whole, %.0f%% in part (built in %.1f s); a gang of %d x 8 "
      "GPUs, %d samples each\n",
      absl::GetFlag(FLAGS_nodes), absl::GetFlag(FLAGS_blocks),
      absl::GetFlag(FLAGS_rack_nodes), absl::GetFlag(FLAGS_nvl_nodes),
      100 * absl::GetFlag(FLAGS_busy), 100 * absl::GetFlag(FLAGS_partial),
      absl::ToDoubleSeconds(absl::Now() - began), absl::GetFlag(FLAGS_groups),
      absl::GetFlag(FLAGS_samples));
  const Case cases[] = {
      {"key", kBlock, ""},
      {"+rack", kBlock, kRack},
      {"+nvl", kBlock, kNvl},
      {"nvl only", "", kNvl},
  };
  std::printf("%-9s %9s %9s %9s %10s %7s %6s %5s %12s %11s %9s\n", "request",
              "p50_us", "p99_us", "max_us", "p99/key", "blocks", "racks",
              "nvls", "free_racks", "free_nvls", "check_us");
  double key_p99 = 0;
  for (const Case& k : cases) {
    Result r;
    if (!Run(c, k, r)) return 1;
    if (key_p99 == 0) key_p99 = r.p99_us;
    std::printf(
        "%-9s %9.0f %9.0f %9.0f %10.2f %7d %6d %5d %12lld %11lld %9.0f\n",
        k.name, r.p50_us, r.p99_us, r.max_us, r.p99_us / key_p99, r.blocks,
        r.racks, r.nvls, static_cast<long long>(r.stranded_rack),
        static_cast<long long>(r.stranded_nvl), r.check_p50_us);
  }
  return 0;
}

}  // namespace
}  // namespace accelsched

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return accelsched::Main();
}
