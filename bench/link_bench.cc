// How often a request of several GPUs on one node gets well-linked GPUs: the
// real scheduler (an in-memory store that acknowledges at once, a fake
// clock) on one stream of Allocate and Release, twice per board in one run:
// the nodes registered without links (GPUs in index order, as before links
// were reported) and with the links the agent reads (ChooseLinkedSet).
//
// Boards, as core/plugins/gpu_links/linked_set.h's tiers see them:
//   pairs:  8 GPUs, NVIDIA/k8s-device-plugin#546's board: NVLink pairs
//           (0,2), (1,3), (4,5), (6,7) (4 NVLinks each), GPUs 0-3 on CPU 0,
//           PCIe switches (0,1), (2,3), (4,5), (6,7) (the switches are this
//           benchmark's assumption);
//   pcie:   8 GPUs, two PCIe switches of four, one per CPU, no NVLink;
//   nvswitch: 8 GPUs, every pair NVLinked through NVSwitches, 18 links
//           each, but GPU 0 has 12 (a degraded link), so its pairs count 12;
//   pcie16: 16 GPUs, four PCIe switches of four, two per CPU, no NVLink
//           (a request of 8 on a node with 14 or more free GPUs takes the
//           greedy path of ChooseLinkedSet).
// Then ChooseLinkedSet alone is timed on a node with every GPU free.
// The stream (--steps, --seed): while fewer than --occupancy of the
// cluster's GPUs are held, a request for 1, 2 or 4 GPUs (weights 40, 35,
// 25; on pcie16 1, 2, 4 or 8, weights 40, 30, 20, 10); otherwise the
// release of a random live allocation. A refused request (no node has room)
// is counted and dropped. For every allocation of several GPUs, the worst
// pair among its GPUs is tallied (by the board's links, whatever the
// scheduler was told); the time of each Allocate is measured. Exits non-zero
// if a device is handed out twice.
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/null_store.h"
#include "bench/quantile.h"
#include "config/accelerator_types_file.h"
#include "core/base/clock.h"
#include "core/plugins/gpu_links/linked_set.h"
#include "core/scheduler/scheduler.h"
#include "tests/support/blocking_scheduler.h"

ABSL_FLAG(int, nodes, 64, "nodes of 8 GPUs per board");
ABSL_FLAG(int, steps, 20000, "allocations and releases per run");
ABSL_FLAG(double, occupancy, 0.75, "share of GPUs held before releasing");
ABSL_FLAG(int, seed, 1, "the stream's seed");

namespace accelsched {
namespace {

constexpr char kModel[] = "nvidia-h100";
// GPUs per node of `board`.
int GpusOf(const std::string& board) { return board == "pcie16" ? 16 : 8; }

std::string GpuId(int node, int gpu) {
  return absl::StrCat("n", node, "-gpu", gpu);
}

// The links each GPU of board `board` reports, by GPU index pairs.
std::vector<std::vector<DeviceLink>> BoardLinks(const std::string& board,
                                                int node) {
  const int gpus = GpusOf(board);
  std::vector<std::vector<DeviceLink>> links(gpus);
  for (int a = 0; a < gpus; ++a) {
    for (int b = 0; b < gpus; ++b) {
      if (a == b) continue;
      const std::string peer = GpuId(node, b);
      if (board == "pairs") {
        const int partner[] = {2, 3, 0, 1, 5, 4, 7, 6};
        if (partner[a] == b) {
          links[a].push_back({peer, LinkKind::kNvlink, 4});
        } else if (a / 2 == b / 2) {
          links[a].push_back({peer, LinkKind::kPcieSwitch, 0});
        } else if (a / 4 == b / 4) {
          links[a].push_back({peer, LinkKind::kSameNuma, 0});
        }
      } else if (board == "pcie") {
        if (a / 4 == b / 4)
          links[a].push_back({peer, LinkKind::kPcieSwitch, 0});
      } else if (board == "pcie16") {
        if (a / 4 == b / 4) {
          links[a].push_back({peer, LinkKind::kPcieSwitch, 0});
        } else if (a / 8 == b / 8) {
          links[a].push_back({peer, LinkKind::kSameNuma, 0});
        }
      } else {  // nvswitch
        links[a].push_back(
            {peer, LinkKind::kNvlink, (a == 0 || b == 0) ? 12 : 18});
      }
    }
  }
  return links;
}

struct RunResult {
  int requests[9] = {};  // by count
  int refused[9] = {};
  // Allocations of 2, 4 and 8 GPUs by their worst pair (PairTier), and
  // their NVLinks summed.
  int by_tier[9][4] = {};
  long nvlinks[9] = {};
  std::vector<double> allocate_us;
  bool double_booked = false;
};

absl::StatusOr<RunResult> Run(const std::string& board, bool report_links) {
  NullStore store;
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  Scheduler::Options options;
  options.heartbeat_timeout = absl::ZeroDuration();
  Scheduler scheduler(&store, &clock, BuiltinAcceleratorTypes(), options);
  BlockingScheduler s(&scheduler);
  if (absl::Status st = s.Load(); !st.ok()) return st;
  const int nodes = absl::GetFlag(FLAGS_nodes);
  // Every node's links, for the tally, whether or not the scheduler has
  // them.
  std::vector<Node> truth;
  for (int n = 0; n < nodes; ++n) {
    Node node;
    node.name = absl::StrCat("n", n);
    const std::vector<std::vector<DeviceLink>> links = BoardLinks(board, n);
    for (int g = 0; g < GpusOf(board); ++g) {
      Device d;
      d.id = GpuId(n, g);
      d.model = kModel;
      d.index = g;
      d.links = links[g];
      node.devices.push_back(std::move(d));
    }
    truth.push_back(node);
    if (!report_links) {
      for (Device& d : node.devices) d.links.clear();
    }
    if (absl::StatusOr<Node> r = s.RegisterNode(std::move(node)); !r.ok()) {
      return r.status();
    }
  }
  std::mt19937 rng(absl::GetFlag(FLAGS_seed));
  // 16-GPU nodes also get requests of 8.
  std::discrete_distribution<int> count_of(
      GpusOf(board) == 16
          ? std::initializer_list<double>{0, 40, 30, 0, 20, 0, 0, 0, 10}
          : std::initializer_list<double>{0, 40, 35, 0, 25});
  struct Live {
    std::string id;
    int count;
  };
  std::vector<Live> live;
  absl::flat_hash_set<std::string> held;
  int used = 0;
  const int limit =
      static_cast<int>(absl::GetFlag(FLAGS_occupancy) * nodes * GpusOf(board));
  RunResult result;
  for (int step = 0; step < absl::GetFlag(FLAGS_steps); ++step) {
    if (used >= limit && !live.empty()) {
      std::uniform_int_distribution<size_t> pick(0, live.size() - 1);
      const size_t i = pick(rng);
      absl::StatusOr<Allocation> r = s.Release({live[i].id, ""});
      if (!r.ok()) return r.status();
      for (const AllocatedDevice& d : r->devices) held.erase(d.device_id);
      used -= live[i].count;
      live[i] = live.back();
      live.pop_back();
      continue;
    }
    const int count = count_of(rng);
    AllocationRequest r;
    r.request_id = absl::StrCat("r", step);
    r.device = kModel;
    r.count = count;
    ++result.requests[count];
    const absl::Time t0 = absl::Now();
    absl::StatusOr<Allocation> got = s.Allocate(r);
    result.allocate_us.push_back(absl::ToDoubleMicroseconds(absl::Now() - t0));
    if (!got.ok()) {
      if (got.status().code() != absl::StatusCode::kResourceExhausted) {
        return got.status();
      }
      ++result.refused[count];
      continue;
    }
    live.push_back({got->id, count});
    used += count;
    std::vector<absl::string_view> ids;
    for (const AllocatedDevice& d : got->devices) {
      if (!held.insert(d.device_id).second) result.double_booked = true;
      ids.push_back(d.device_id);
    }
    if (count < 2) continue;
    const int node = std::stoi(got->devices[0].node.substr(1));
    const LinkedSet set = AsLinkedSet(LinkGraph(truth[node], ids));
    ++result.by_tier[count][static_cast<int>(set.tier)];
    result.nvlinks[count] += set.nvlinks;
  }
  return result;
}

double Percent(int part, int whole) {
  return whole == 0 ? 0 : 100.0 * part / whole;
}

int Main() {
  std::printf("%-9s %-11s %9s %9s %9s | %9s %9s %9s %9s | %9s | %7s %9s %9s\n",
              "board", "scheduler", "2:NVLink", "2:switch", "2:NVL/all",
              "4:NVLink", "4:switch", "4:CPU", "4:NVL/all", "8:CPU", "refused",
              "p50 us", "p99 us");
  bool ok = true;
  for (const std::string board : {"pairs", "pcie", "nvswitch", "pcie16"}) {
    for (bool links : {false, true}) {
      absl::StatusOr<RunResult> r = Run(board, links);
      if (!r.ok()) {
        std::fprintf(stderr, "%s: %s\n", board.c_str(),
                     r.status().ToString().c_str());
        return 1;
      }
      if (r->double_booked) {
        std::fprintf(stderr, "%s: a GPU was handed out twice\n", board.c_str());
        ok = false;
      }
      auto at_least = [&](int count, PairTier tier) {
        int n = 0;
        for (int t = static_cast<int>(tier); t < 4; ++t) {
          n += r->by_tier[count][t];
        }
        return n;
      };
      auto all = [&](int count) { return at_least(count, PairTier::kNone); };
      int refused = 0, requests = 0;
      for (int c = 0; c < 9; ++c) {
        refused += r->refused[c];
        requests += r->requests[c];
      }
      std::printf(
          "%-9s %-11s %8.1f%% %8.1f%% %9.2f | %8.1f%% %8.1f%% %8.1f%% %9.2f | "
          "%8.1f%% | %6.1f%% %9.1f %9.1f\n",
          board.c_str(), links ? "links" : "index order",
          Percent(at_least(2, PairTier::kNvlink), all(2)),
          Percent(at_least(2, PairTier::kPcieSwitch), all(2)),
          all(2) == 0 ? 0.0 : static_cast<double>(r->nvlinks[2]) / all(2),
          Percent(at_least(4, PairTier::kNvlink), all(4)),
          Percent(at_least(4, PairTier::kPcieSwitch), all(4)),
          Percent(at_least(4, PairTier::kSameNuma), all(4)),
          all(4) == 0 ? 0.0 : static_cast<double>(r->nvlinks[4]) / all(4),
          Percent(at_least(8, PairTier::kSameNuma), all(8)),
          Percent(refused, requests), Quantile(r->allocate_us, 0.5),
          Quantile(r->allocate_us, 0.99));
    }
  }
  // The choice alone, on a node with every GPU free: the graph built and the
  // set chosen, as UnitsIn does.
  std::printf(
      "\nChooseLinkedSet alone, every GPU free (p50 / p99 of 2,000):\n");
  for (const auto& [board, count] : std::vector<std::pair<std::string, int>>{
           {"pairs", 2}, {"pairs", 4}, {"pcie16", 4}, {"pcie16", 8}}) {
    Node node;
    const std::vector<std::vector<DeviceLink>> links = BoardLinks(board, 0);
    std::vector<absl::string_view> ids;
    for (int g = 0; g < GpusOf(board); ++g) {
      Device d;
      d.id = GpuId(0, g);
      d.links = links[g];
      node.devices.push_back(std::move(d));
    }
    for (const Device& d : node.devices) ids.push_back(d.id);
    std::vector<double> us;
    size_t chosen = 0;
    for (int i = 0; i < 2000; ++i) {
      const absl::Time t0 = absl::Now();
      chosen += ChooseLinkedSet(LinkGraph(node, ids), count).members.size();
      us.push_back(absl::ToDoubleMicroseconds(absl::Now() - t0));
    }
    const int64_t sets = SetsOf(GpusOf(board), count);
    std::printf("  %-7s %d of %2d (%5lld sets, %s): %6.1f / %6.1f us\n",
                board.c_str(), count, GpusOf(board),
                static_cast<long long>(sets),
                sets <= kMaxExhaustiveSets ? "every one" : "greedy",
                Quantile(us, 0.5), Quantile(us, 0.99));
    if (chosen != static_cast<size_t>(2000 * count)) ok = false;
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace accelsched

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return accelsched::Main();
}
