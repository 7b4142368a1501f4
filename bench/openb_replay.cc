// How much of a real heterogeneous GPU cluster stays unallocated as pods
// arrive, after the method of "Beware of Fragmentation: Scheduling
// GPU-Sharing Workloads with Fragmentation Gradient Descent" (Weng et al.,
// USENIX ATC '23) and its simulator (hkust-adsl/kubernetes-scheduler-
// simulator): Alibaba's openb cluster (1,213 GPU nodes, 6,212 GPUs, each node's
// CPU and memory) and its gpushare pod lists (each pod's CPU, memory and
// GPUs), the pods shuffled and sampled until the GPU they ask reaches 130% of
// the cluster's, no departures. Reports the unallocated share of the GPUs'
// compute as arrivals reach 50% ... 130% of capacity for accelsched's
// policies (the real CapacityIndex, the placement plugins for whole GPUs under
// --packing best_fit and fragmentation and for a share, pod_resources from
// each pod's CPU and memory, allocatable from each node's), for first fit in
// node order (the first node, and on it the first GPU, that fits), with and
// without CPU and memory accounting, and for FGD as the paper defines it
// (Fgd below, after its simulator's pkg/utils/frag.go).
//
// A pod that asks part of one GPU (gpu_milli < 1000) asks a share of
// gpu_milli thousandths, on GPUs that all take shares (Device.sharing MPS);
// the arrivals and the unallocated capacity are counted in thousandths of a
// GPU, as the paper counts them. The subset of pods that ask whole GPUs is
// replayed as well.
// Pods that ask no GPU are not accelsched's: they are placed as
// kube-scheduler would (--cpu_only_pods), the same way for every policy, and
// accelsched's accounting counts what they hold. Without accounting, a pod
// placed where its CPU or memory does not fit keeps its GPUs and never starts.
//
// Exits non-zero when a run with accounting that sees every pod leaves a pod
// on a node without room for its CPU or memory, or the capacity index and
// the replay's own count of free GPUs disagree (CI's openb_replay_smoke).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/openb_data.h"
#include "core/catalog/capacity_index.h"
#include "core/catalog/pool_queries.h"
#include "core/model/node_resources.h"
#include "core/plugins/index_placer.h"
#include "core/plugins/request_mix/request_mix.h"

ABSL_FLAG(std::string, data_dir, OPENB_DATA_DIR,
          "directory with nodes.csv and pods_<trace>.csv "
          "(scripts/openb_data.py writes them)");
ABSL_FLAG(std::vector<std::string>, traces,
          std::vector<std::string>({"gpushare20", "gpushare40", "gpushare60",
                                    "gpushare80", "gpushare100"}),
          "pod lists to replay (pods_<trace>.csv)");
ABSL_FLAG(int, seeds, 10, "shuffles and samplings of each pod list");
ABSL_FLAG(double, tune, 1.3,
          "arrivals stop when the GPU asked reaches this share of the "
          "cluster's");
ABSL_FLAG(std::string, cpu_only_pods, "spread",
          "the pods that ask no GPU, placed as kube-scheduler would, for "
          "every policy: spread (its default scoring, LeastAllocated: the "
          "node left with the most free CPU and memory), pack "
          "(MostAllocated: the least), or none (left out)");
ABSL_FLAG(bool, cpu_only_pods_counted, true,
          "accelsched's accounting counts what the pods without GPUs hold "
          "(false: it does not, as when kube-scheduler places them beside "
          "accelsched's pods and the node's allocatable stays whole; first "
          "fit always sees them)");

namespace accelsched {
namespace {

// Arrivals (GPUs asked, % of the cluster's) at which the state is reported,
// besides the end of the stream (--tune).
const int kPoints[] = {50, 80, 90, 100, 110, 120};

// The simulator's workload tuning: the pod list (in name order) shuffled,
// then pods removed at random while the GPUs asked exceed `target`, or pods
// drawn at random from the list and appended until the next would exceed it.
// `workload` must hold a pod that asks GPUs.
std::vector<const Pod*> MakeStream(const std::vector<Pod>& workload,
                                   int64_t target, std::mt19937& rng) {
  std::vector<const Pod*> stream;
  int64_t asked = 0;
  for (const Pod& p : workload) {
    stream.push_back(&p);
    asked += p.trace_milli;
  }
  std::shuffle(stream.begin(), stream.end(), rng);
  while (asked > target) {
    const size_t i =
        std::uniform_int_distribution<size_t>(0, stream.size() - 1)(rng);
    asked -= stream[i]->trace_milli;
    stream.erase(stream.begin() + static_cast<std::ptrdiff_t>(i));
  }
  while (true) {
    const Pod& p = workload[std::uniform_int_distribution<size_t>(
        0, workload.size() - 1)(rng)];
    if (asked + p.trace_milli > target) break;
    asked += p.trace_milli;
    stream.push_back(&p);
  }
  return stream;
}

enum class Policy { kAccelsched, kFirstFit, kFgd };

struct Variant {
  Policy policy;
  bool accounting;  // the policy checks the pod's CPU and memory
  const char* name;
  // kAccelsched's --packing (whole GPUs; a share goes best fit per GPU
  // under every policy).
  Packing packing = Packing::kBestFit;
};

const Variant kVariants[] = {
    {Policy::kAccelsched, true, "best_fit (plugins, pod_resources)"},
    {Policy::kAccelsched, true, "fragmentation (plugins, pod_resources)",
     Packing::kFragmentation},
    {Policy::kFirstFit, true, "first fit (node order)"},
    {Policy::kFgd, true, "FGD (the paper's, in this bench)"},
    {Policy::kAccelsched, false, "best_fit, no CPU accounting"},
    {Policy::kFirstFit, false, "first fit, no CPU accounting"},
};

// The cluster's state at one point of the arrivals, as shares of its GPUs'
// compute.
struct Snapshot {
  double unallocated = 0;
  // Held by pods placed on a node without room for their CPU or memory: they
  // cannot start (only without accounting).
  double stranded = 0;
  // The GPU the running pods ask (gpu_milli).
  double trace_used = 0;
};

struct Run {
  std::vector<Snapshot> points;  // one per kPoints, then the end
  int64_t failed = 0;            // GPU pods not placed
  int64_t cpu_only_failed = 0;   // pods without GPUs not placed
  std::map<std::string, int64_t> free_by_model;  // milli, at the end
  std::vector<std::string> errors;
};

// What is on each node, whatever the policy's view of it.
struct Truth {
  const std::vector<NodeSpec>* nodes;
  // Each GPU's free thousandths, per node; and per node its GPUs with all
  // of them free (what a whole-GPU pod may take).
  std::vector<std::vector<int64_t>> free;
  std::vector<int> whole;
  std::vector<int64_t> cpu, memory;  // held by running pods

  bool Room(size_t i, const Pod& p) const {
    const NodeSpec& n = (*nodes)[i];
    return cpu[i] + p.cpu_milli <= n.cpu_milli &&
           memory[i] + p.memory_bytes <= n.memory_bytes;
  }
  // Takes `milli` of GPU `g` of node `i` (kGpuMilli: the whole GPU).
  void Take(size_t i, size_t g, int64_t milli) {
    if (free[i][g] == kGpuMilli) --whole[i];
    free[i][g] -= milli;
  }
};

bool Accepts(const Pod& p, const NodeSpec& n) {
  return p.models.empty() ||
         std::binary_search(p.models.begin(), p.models.end(), n.model);
}

enum class CpuOnly { kSpread, kPack, kNone };

// Where kube-scheduler puts a pod without GPUs: the node left with the
// largest (kSpread: LeastAllocated, its default) or the smallest (kPack:
// MostAllocated) free share of CPU and memory, then the first.
int KubePlace(const Truth& t, const Pod& p, CpuOnly how) {
  const double sign = how == CpuOnly::kPack ? -1 : 1;
  int best = -1;
  double best_score = 0;
  for (size_t i = 0; i < t.nodes->size(); ++i) {
    if (!t.Room(i, p)) continue;
    const NodeSpec& n = (*t.nodes)[i];
    const double score =
        sign * static_cast<double>(n.cpu_milli - t.cpu[i] - p.cpu_milli) /
            static_cast<double>(n.cpu_milli) +
        static_cast<double>(n.memory_bytes - t.memory[i] - p.memory_bytes) /
            static_cast<double>(n.memory_bytes) * sign;
    if (best < 0 || score > best_score) {
      best = static_cast<int>(i);
      best_score = score;
    }
  }
  return best;
}

// A typical pod of FGD: what it asks (the simulator's PodResource: CPU, the
// GPU per GPU in thousandths, the GPUs) and its share of the workload.
struct TypicalPod {
  int64_t cpu_milli = 0;
  int64_t milli = 0;
  int gpus = 0;
  double weight = 0;
};

// FGD's workload: the stream's pods by shape (CPU, GPU per GPU, GPUs; the
// pods asking no GPU too), most frequent first, taken one shape at a time
// until they cover 95% of the pods, then renormalised: GetTypicalPods
// (kubernetes-scheduler-simulator pkg/utils/frag.go) with the settings of
// the simulator's experiment driver (scripts/generate_config_and_run.py:
// isInvolvedCpuPods true, podPopularityThreshold 95, podIncreaseStep 1).
std::vector<TypicalPod> TypicalPods(const std::vector<const Pod*>& stream) {
  std::map<std::tuple<int64_t, int64_t, int>, double> counts;
  double total = 0;
  for (const Pod* p : stream) {
    const int64_t milli =
        p->gpus == 0 ? 0 : (p->shares ? p->trace_milli : kGpuMilli);
    counts[{p->cpu_milli, milli, p->gpus}] += 1;
    total += 1;
  }
  std::vector<TypicalPod> all;
  for (const auto& [shape, n] : counts) {
    const auto& [cpu, milli, gpus] = shape;
    all.push_back(TypicalPod{cpu, milli, gpus, n});
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const TypicalPod& a, const TypicalPod& b) {
                     return a.weight > b.weight;
                   });
  size_t taken = 0;
  double covered = 0;
  while (covered < 0.95 * total && taken < all.size()) {
    covered += all[taken++].weight;
  }
  all.resize(taken);
  for (TypicalPod& t : all) t.weight /= covered;
  return all;
}

// FGD's fragmentation of a node (frag.go NodeGpuShareFragAmount summed but
// for Q3, with GetNodePodFrag): for each typical pod, all the node's free
// GPU when the pod asks no GPU (types XL and XR count whole) or could not
// run there (too little CPU, or too few GPUs with its GPU free), else the
// free GPU of the GPUs that cannot host it; weighted by the pod's share.
// In thousandths of a GPU.
double FgdFragmentation(int64_t cpu_left, const std::vector<int64_t>& free,
                        const std::vector<TypicalPod>& typical) {
  int64_t total = 0;
  for (int64_t f : free) total += f;
  double frag = 0;
  for (const TypicalPod& t : typical) {
    int hosts = 0;
    int64_t short_of = 0;
    for (int64_t f : free) {
      if (f >= t.milli) {
        ++hosts;
      } else {
        short_of += f;
      }
    }
    const bool fits = t.milli > 0 && hosts >= t.gpus && cpu_left >= t.cpu_milli;
    frag += t.weight * static_cast<double>(fits ? short_of : total);
  }
  return frag;
}

// Where a pod goes: a node and the GPUs it takes there.
struct Spot {
  int node = -1;
  std::vector<size_t> gpus;
};

// The first node that fits, and on it the first GPUs that do.
Spot FirstFit(const Truth& t, const Pod& p, bool accounting) {
  for (size_t i = 0; i < t.nodes->size(); ++i) {
    if (!Accepts(p, (*t.nodes)[i]) || (accounting && !t.Room(i, p))) continue;
    if (!p.shares && t.whole[i] < p.gpus) continue;
    Spot spot{static_cast<int>(i), {}};
    const int64_t need = p.shares ? p.trace_milli : kGpuMilli;
    for (size_t g = 0;
         g < t.free[i].size() && spot.gpus.size() < static_cast<size_t>(p.gpus);
         ++g) {
      if (t.free[i][g] >= need) spot.gpus.push_back(g);
    }
    if (spot.gpus.size() == static_cast<size_t>(p.gpus)) return spot;
  }
  return {};
}

// FGD (Weng et al., USENIX ATC'23, section 4): of every node the pod fits
// (CPU and memory, GPU model, GPUs), and on it every GPU a share fits (one
// per distinct free amount) or its first whole free GPUs, the placement that
// increases FgdFragmentation least. The changes are compared exactly, ties
// to the first node in list order (the simulator turns them into
// kube-scheduler's integer node scores, among which ties are broken by the
// scheduler).
Spot Fgd(const Truth& t, const Pod& p, const std::vector<TypicalPod>& typical) {
  Spot best;
  double best_change = 0;
  const int64_t milli = p.shares ? p.trace_milli : kGpuMilli;
  std::vector<int64_t> after;
  for (size_t i = 0; i < t.nodes->size(); ++i) {
    const NodeSpec& n = (*t.nodes)[i];
    if (!Accepts(p, n) || !t.Room(i, p)) continue;
    if (!p.shares && t.whole[i] < p.gpus) continue;
    const std::vector<int64_t>& free = t.free[i];
    const int64_t cpu_left = n.cpu_milli - t.cpu[i];
    double before = -1;  // computed once a placement fits
    std::vector<std::vector<size_t>> choices;
    if (p.shares) {
      std::vector<int64_t> seen;
      for (size_t g = 0; g < free.size(); ++g) {
        if (free[g] < milli ||
            std::find(seen.begin(), seen.end(), free[g]) != seen.end()) {
          continue;
        }
        seen.push_back(free[g]);
        choices.push_back({g});
      }
    } else {
      std::vector<size_t> gpus;
      for (size_t g = 0;
           g < free.size() && static_cast<int>(gpus.size()) < p.gpus; ++g) {
        if (free[g] == kGpuMilli) gpus.push_back(g);
      }
      choices.push_back(std::move(gpus));
    }
    for (const std::vector<size_t>& gpus : choices) {
      if (before < 0) before = FgdFragmentation(cpu_left, free, typical);
      after = free;
      for (size_t g : gpus) after[g] -= milli;
      const double change =
          FgdFragmentation(cpu_left - p.cpu_milli, after, typical) - before;
      if (best.node < 0 || change < best_change) {
        best.node = static_cast<int>(i);
        best.gpus = gpus;
        best_change = change;
      }
    }
  }
  return best;
}

NodeResources Need(const Pod& p) {
  return NormalizedPodNeed(NodeResources{p.cpu_milli, p.memory_bytes, 0});
}

// `counted`: accelsched's index holds what the pods without GPUs hold.
Run Replay(const std::vector<NodeSpec>& specs,
           const std::vector<const Pod*>& stream, const Variant& v,
           CpuOnly cpu_only, bool counted) {
  int64_t capacity = 0;  // thousandths of a GPU
  Truth truth{&specs,
              {},
              {},
              std::vector<int64_t>(specs.size()),
              std::vector<int64_t>(specs.size())};
  CapacityIndex index;
  NodeMap nodes;
  // Each unit's node and GPU.
  std::map<std::string, std::pair<size_t, size_t>, std::less<>> gpu_of;
  for (size_t i = 0; i < specs.size(); ++i) {
    const NodeSpec& n = specs[i];
    capacity += int64_t{n.gpus} * kGpuMilli;
    truth.free.emplace_back(n.gpus, kGpuMilli);
    truth.whole.push_back(n.gpus);
    Node node;
    node.name = n.name;
    nodes.emplace(n.name, node);
    for (int g = 0; g < n.gpus; ++g) {
      const std::string key = absl::StrCat(n.name, "-", g);
      Unit u{key,
             {DeviceClass::kNvidiaGpu, n.model, ""},
             n.name,
             {n.name},
             {{n.name, key, "", ""}},
             "",
             g,
             true,
             ""};
      u.sharing = GpuSharing::kMps;
      u.memory_bytes = kGpuMemory;
      index.Put(std::move(u));
      gpu_of[key] = {i, static_cast<size_t>(g)};
    }
    if (v.accounting) {
      index.SetAllocatable(n.name,
                           NodeResources{n.cpu_milli, n.memory_bytes, 0});
    }
  }
  // FGD's workload, from the stream it replays (as the simulator takes it
  // from the pod list).
  const std::vector<TypicalPod> typical = v.policy == Policy::kFgd
                                              ? TypicalPods(stream)
                                              : std::vector<TypicalPod>();
  const absl::Time now = absl::UnixEpoch();
  RequestMix mix;  // the whole-GPU pods asked so far
  IndexPlacer placer(&index, &nodes,
                     {v.packing, absl::ZeroDuration(), &mix, nullptr});

  Run run;
  int64_t asked = 0, allocated = 0, stranded = 0, trace_used = 0;
  size_t next_point = 0;
  auto snapshot = [&] {
    const double cap = static_cast<double>(capacity);
    return Snapshot{static_cast<double>(capacity - allocated) / cap,
                    static_cast<double>(stranded) / cap,
                    static_cast<double>(trace_used) / cap};
  };
  for (size_t k = 0; k < stream.size(); ++k) {
    const Pod& pod = *stream[k];
    if (pod.gpus == 0) {
      // Not accelsched's: kube-scheduler places it, against the node's real
      // CPU and memory; with accounting, accelsched's index holds it too
      // unless told otherwise.
      const int i = KubePlace(truth, pod, cpu_only);
      if (i < 0) {
        ++run.cpu_only_failed;
        continue;
      }
      truth.cpu[i] += pod.cpu_milli;
      truth.memory[i] += pod.memory_bytes;
      if (v.accounting && counted) {
        index.AddHeld(specs[i].name, Need(pod), +1);
      }
      continue;
    }
    // What the pod takes of each of its GPUs.
    const int64_t milli = pod.shares ? pod.trace_milli : kGpuMilli;
    Spot spot;
    if (v.policy == Policy::kFirstFit) {
      spot = FirstFit(truth, pod, v.accounting);
    } else if (v.policy == Policy::kFgd) {
      spot = Fgd(truth, pod, typical);
    } else {
      MatchSpec spec;
      spec.requested_models = pod.models;
      spec.count = pod.gpus;
      if (v.accounting) spec.pod_resources = Need(pod);
      if (!pod.shares) CountInMix(spec, now, mix);
      UnitGroup units;
      if (pod.shares) spec.share = GpuShare{milli, 0};
      if (auto placed = placer.PlaceOne(spec, now)) {
        units = *std::move(placed);
      }
      if (!units.empty()) {
        const std::string home = units.front()->home;
        std::vector<std::string> keys;
        for (const Unit* u : units) keys.push_back(u->key);
        for (const std::string& key : keys) {
          if (pod.shares) {
            index.AddShare(
                key, GpuShare{milli, ShareMemory(*spec.share, kGpuMemory)}, +1);
          } else {
            index.SetHolder(key, absl::StrCat("pod-", k));
          }
          const auto [i, g] = gpu_of.find(key)->second;
          spot.node = static_cast<int>(i);
          spot.gpus.push_back(g);
          if (truth.free[i][g] < milli || !Accepts(pod, specs[i])) {
            run.errors.push_back(absl::StrCat(
                "the placement put pod ", k, " on ", key, ", which has ",
                truth.free[i][g], " thousandths free, of ", specs[i].model));
          }
        }
        if (v.accounting) index.AddHeld(home, Need(pod), +1);
      }
    }
    asked += pod.trace_milli;
    if (spot.node >= 0) {
      const size_t i = static_cast<size_t>(spot.node);
      for (size_t g : spot.gpus) truth.Take(i, g, milli);
      const int64_t took = milli * pod.gpus;
      allocated += took;
      if (truth.Room(i, pod)) {
        truth.cpu[i] += pod.cpu_milli;
        truth.memory[i] += pod.memory_bytes;
        trace_used += pod.trace_milli;
      } else {
        // Its GPUs are held; the pod stays pending for CPU or memory.
        stranded += took;
        const bool sees_all = v.policy != Policy::kAccelsched ||
                              cpu_only == CpuOnly::kNone || counted;
        if (v.accounting && sees_all && run.errors.size() < 5) {
          run.errors.push_back(
              absl::StrCat(v.name, " placed pod ", k, " on ", specs[i].name,
                           ", which has no room for its CPU or memory"));
        }
      }
    } else {
      ++run.failed;
    }
    while (next_point < std::size(kPoints) &&
           asked * 100 >= kPoints[next_point] * capacity) {
      run.points.push_back(snapshot());
      ++next_point;
    }
  }
  while (run.points.size() <= std::size(kPoints)) {
    run.points.push_back(snapshot());
  }
  int64_t truth_free = 0, truth_taken_gpus = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    for (int64_t f : truth.free[i]) {
      run.free_by_model[specs[i].model] += f;
      truth_free += f;
    }
    truth_taken_gpus += specs[i].gpus - truth.whole[i];
  }
  if (v.policy == Policy::kAccelsched) {
    // A GPU with a share or held whole counts as allocated; what shares
    // leave is free for shares (a GPU held whole leaves nothing).
    int64_t index_allocated = 0, index_free = 0;
    for (const CapacityEntry& e : CapacityOf(index)) {
      index_allocated += e.allocated;
      index_free += e.free_compute_milli;
    }
    if (index_allocated != truth_taken_gpus || index_free != truth_free) {
      run.errors.push_back(absl::StrCat("the index counts ", index_allocated,
                                        " GPUs taken and ", index_free,
                                        " thousandths free, the replay ",
                                        truth_taken_gpus, " and ", truth_free));
    }
  }
  return run;
}

struct Stat {
  double sum = 0, min = 1e9, max = -1e9;
  int n = 0;
  void Add(double x) {
    sum += x;
    min = std::min(min, x);
    max = std::max(max, x);
    ++n;
  }
  double mean() const { return n == 0 ? 0 : sum / n; }
};

struct Summary {
  std::vector<Stat> unallocated{std::size(kPoints) + 1};
  std::vector<Stat> stranded{std::size(kPoints) + 1};
  std::vector<Stat> trace_used{std::size(kPoints) + 1};
  Stat failed, cpu_only_failed;
  std::map<std::string, Stat> free_by_model;
};

size_t PointIndex(int percent) {
  return static_cast<size_t>(
      std::find(std::begin(kPoints), std::end(kPoints), percent) -
      std::begin(kPoints));
}

// Replays `workload` for every variant and seed and prints the tables.
// Returns false when a run with accounting broke an invariant.
bool ReplayWorkload(const std::vector<NodeSpec>& nodes,
                    const std::vector<Pod>& workload, int64_t capacity,
                    int seeds, double tune, CpuOnly cpu_only, bool counted) {
  const int64_t target =
      static_cast<int64_t>(std::floor(tune * capacity * kGpuMilli));
  std::vector<Summary> summaries(std::size(kVariants));
  bool ok = true;
  size_t stream_pods = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<const Pod*> stream = MakeStream(workload, target, rng);
    stream_pods += stream.size();
    for (size_t v = 0; v < std::size(kVariants); ++v) {
      const Run run = Replay(nodes, stream, kVariants[v], cpu_only, counted);
      for (const std::string& e : run.errors) {
        std::printf("ERROR (seed %d): %s\n", seed, e.c_str());
        ok = false;
      }
      Summary& s = summaries[v];
      for (size_t p = 0; p < run.points.size(); ++p) {
        s.unallocated[p].Add(100 * run.points[p].unallocated);
        s.stranded[p].Add(100 * run.points[p].stranded);
        s.trace_used[p].Add(100 * run.points[p].trace_used);
      }
      s.failed.Add(static_cast<double>(run.failed));
      s.cpu_only_failed.Add(static_cast<double>(run.cpu_only_failed));
      for (const auto& [model, free] : run.free_by_model) {
        s.free_by_model[model].Add(static_cast<double>(free) / kGpuMilli);
      }
    }
  }
  std::printf("  %zu pods a stream (mean of %d seeds)\n\n",
              stream_pods / static_cast<size_t>(seeds), seeds);
  std::printf(
      "  unallocated GPU compute, %% of the cluster's, as arrivals reach "
      "(%% of GPU capacity, in thousandths of a GPU):\n");
  const int end = static_cast<int>(std::lround(100 * tune));
  std::printf("  %-36s", "policy");
  for (int p : kPoints) std::printf(" %6d", p);
  std::printf(" %6d   %-15s %-15s\n", end, "100: min-max",
              absl::StrCat(end, ": min-max").c_str());
  for (size_t v = 0; v < std::size(kVariants); ++v) {
    const Summary& s = summaries[v];
    std::printf("  %-36s", kVariants[v].name);
    for (const Stat& st : s.unallocated) std::printf(" %6.2f", st.mean());
    const Stat& a = s.unallocated[PointIndex(100)];
    const Stat& b = s.unallocated.back();
    std::printf("   %-15s %-15s\n",
                absl::StrFormat("%.2f-%.2f", a.min, a.max).c_str(),
                absl::StrFormat("%.2f-%.2f", b.min, b.max).c_str());
  }
  std::printf(
      "\n  at 100%% / %d%% arrivals: GPU held by pods that cannot start "
      "(no room for their CPU or memory), GPU the running pods ask, %% of "
      "the cluster's; pods not placed at the end (with GPUs / without)\n",
      end);
  std::printf("  %-36s %15s %15s %15s\n", "policy", "cannot start",
              "trace's GPU", "not placed");
  const size_t at100 = PointIndex(100);
  for (size_t v = 0; v < std::size(kVariants); ++v) {
    const Summary& s = summaries[v];
    std::printf("  %-36s %15s %15s %15s\n", kVariants[v].name,
                absl::StrFormat("%.2f / %.2f", s.stranded[at100].mean(),
                                s.stranded.back().mean())
                    .c_str(),
                absl::StrFormat("%.2f / %.2f", s.trace_used[at100].mean(),
                                s.trace_used.back().mean())
                    .c_str(),
                absl::StrFormat("%.0f / %.0f", s.failed.mean(),
                                s.cpu_only_failed.mean())
                    .c_str());
  }
  std::printf(
      "\n  unallocated GPU compute at the end by model (GPUs, mean):\n");
  std::printf("  %-36s", "policy");
  for (const auto& [model, stat] : summaries[0].free_by_model) {
    std::printf(" %7s", model.c_str());
  }
  std::printf("\n");
  for (size_t v = 0; v < std::size(kVariants); ++v) {
    std::printf("  %-36s", kVariants[v].name);
    for (const auto& [model, stat] : summaries[v].free_by_model) {
      std::printf(" %7.0f", stat.mean());
    }
    std::printf("\n");
  }
  std::printf("\n");
  return ok;
}

int Main() {
  const std::string dir = absl::GetFlag(FLAGS_data_dir);
  const int seeds = absl::GetFlag(FLAGS_seeds);
  const double tune = absl::GetFlag(FLAGS_tune);
  const std::string cpu_only_flag = absl::GetFlag(FLAGS_cpu_only_pods);
  const std::map<std::string, std::pair<CpuOnly, const char*>> kCpuOnly = {
      {"spread",
       {CpuOnly::kSpread,
        "placed as kube-scheduler places them by default (LeastAllocated: "
        "the node left with the most free CPU and memory)"}},
      {"pack",
       {CpuOnly::kPack,
        "placed as kube-scheduler with MostAllocated would (the node left "
        "with the least free CPU and memory)"}},
      {"none", {CpuOnly::kNone, "left out"}},
  };
  auto how = kCpuOnly.find(cpu_only_flag);
  if (seeds < 1 || tune < 1.25 || tune > 3.0 || how == kCpuOnly.end()) {
    std::fprintf(stderr,
                 "--seeds must be >= 1, --tune in [1.25, 3], --cpu_only_pods "
                 "spread, pack or none\n");
    return 2;
  }
  const CpuOnly cpu_only = how->second.first;
  const bool counted = absl::GetFlag(FLAGS_cpu_only_pods_counted);
  auto nodes = LoadNodes(dir);
  if (!nodes.has_value()) return 2;
  int64_t capacity = 0, cpu = 0;
  std::map<std::string, int> gpus_by_model;
  for (const NodeSpec& n : *nodes) {
    capacity += n.gpus;
    cpu += n.cpu_milli;
    gpus_by_model[n.model] += n.gpus;
  }
  std::vector<std::string> models;
  for (const auto& [m, g] : gpus_by_model)
    models.push_back(absl::StrCat(m, " ", g));
  std::printf(
      "openb cluster: %zu nodes, %lld GPUs (%s), %lld cores; arrivals until "
      "the GPU asked reaches %.0f%% of capacity, no departures; %d seeds\n",
      nodes->size(), static_cast<long long>(capacity),
      absl::StrJoin(models, ", ").c_str(), static_cast<long long>(cpu / 1000),
      100 * tune, seeds);
  std::printf(
      "a pod asking part of a GPU (gpu_milli < 1000) asks a share of it "
      "(every GPU takes shares, MPS); arrivals and unallocated capacity in "
      "thousandths of a GPU. The pods asking whole GPUs are replayed alone "
      "as well.\n");
  std::printf(
      "pods without GPUs (--cpu_only_pods=%s): %s, for every policy%s\n\n",
      cpu_only_flag.c_str(), how->second.second,
      cpu_only == CpuOnly::kNone ? ""
      : counted
          ? "; accelsched's accounting counts what they hold"
          : "; accelsched's accounting does NOT count what they hold "
            "(--cpu_only_pods_counted=false): its pods may land where they "
            "took the CPU");
  bool ok = true;
  for (const std::string& trace : absl::GetFlag(FLAGS_traces)) {
    auto pods = LoadPods(dir, trace);
    if (!pods.has_value()) return 2;
    int64_t sharing = 0, cpu_only_pods = 0, whole_pods = 0;
    for (const Pod& p : *pods) {
      if (p.gpus == 0) {
        ++cpu_only_pods;
      } else if (p.shares) {
        ++sharing;
      } else {
        ++whole_pods;
      }
    }
    // The subset keeps the pods without GPUs in proportion: the first of
    // them in the list, as many as whole-GPU pods are a share of GPU pods.
    const int64_t keep =
        whole_pods + sharing == 0
            ? 0
            : (cpu_only_pods * whole_pods + (whole_pods + sharing) / 2) /
                  (whole_pods + sharing);
    std::vector<Pod> all, whole;
    int64_t kept = 0;
    for (const Pod& p : *pods) {
      if (p.gpus == 0 && cpu_only == CpuOnly::kNone) continue;
      all.push_back(p);
      if (p.gpus == 0 ? kept++ < keep : !p.shares) whole.push_back(p);
    }
    std::printf(
        "== %s: %zu pods: %lld ask no GPU, %lld part of one (a share), %lld "
        "whole GPUs\n",
        trace.c_str(), pods->size(), static_cast<long long>(cpu_only_pods),
        static_cast<long long>(sharing), static_cast<long long>(whole_pods));
    if (sharing + whole_pods == 0) {
      std::printf("  no pod asks a GPU\n\n");
      continue;
    }
    std::printf("-- all pods, shares on shared GPUs:\n");
    ok =
        ReplayWorkload(*nodes, all, capacity, seeds, tune, cpu_only, counted) &&
        ok;
    if (whole_pods == 0) {
      std::printf("-- only the pods asking whole GPUs: none in %s\n\n",
                  trace.c_str());
      continue;
    }
    if (cpu_only == CpuOnly::kNone) {
      std::printf("-- only the pods asking whole GPUs:\n");
    } else {
      std::printf(
          "-- only the pods asking whole GPUs, and the first %lld of the %lld "
          "asking none (the same share):\n",
          static_cast<long long>(keep), static_cast<long long>(cpu_only_pods));
    }
    ok = ReplayWorkload(*nodes, whole, capacity, seeds, tune, cpu_only,
                        counted) &&
         ok;
  }
  if (!ok) std::printf("FAILED: see the errors above\n");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace accelsched

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return accelsched::Main();
}
