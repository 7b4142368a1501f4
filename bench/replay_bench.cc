// How full a heterogeneous cluster gets before the first request that does not
// fit, under the matcher's rule and under simpler ones, on the same request
// streams. Synthetic, after the shape of Alibaba's GPU cluster trace
// (cluster-trace-gpu-v2023): nodes of 1, 2, 4 and 8 GPUs of several models;
// requests of 1-8 GPUs, most naming no model, about a third a set of
// acceptable models, the rest one model. Requests arrive and never leave.
//
// The rule accelsched applies is run twice: through the real matcher on a real
// capacity index, and through the same simple simulator the other rules use;
// the bench checks that both place every request on the same node.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/catalog/capacity_index.h"
#include "core/plugins/index_placer.h"

ABSL_FLAG(int, nodes, 1000, "nodes in each synthetic cluster");
ABSL_FLAG(int, seeds, 20, "clusters and request streams replayed");

namespace accelsched {
namespace {

// Models and how many of the cluster's nodes have each (a few common models,
// some rare ones, as in a real fleet).
const std::pair<const char*, int> kModels[] = {
    {"nvidia-tesla-t4", 25}, {"nvidia-tesla-v100", 20}, {"nvidia-a10g", 15},
    {"nvidia-l4", 12},       {"nvidia-tesla-a100", 12}, {"nvidia-a100-80gb", 8},
    {"nvidia-h100", 5},      {"nvidia-l40s", 3},
};
// Node sizes (GPUs) and their weights.
const std::pair<int, int> kNodeSizes[] = {{1, 20}, {2, 20}, {4, 30}, {8, 30}};
// Request sizes and their weights.
const std::pair<int, int> kRequestSizes[] = {
    {1, 55}, {2, 20}, {4, 15}, {8, 10}};
// Sets of acceptable models, as the trace's "V100M16|V100M32": neighbours in
// memory or generation.
const std::vector<std::vector<std::string>> kSets = {
    {"nvidia-tesla-t4", "nvidia-l4"},
    {"nvidia-a10g", "nvidia-l4"},
    {"nvidia-tesla-v100", "nvidia-tesla-t4"},
    {"nvidia-tesla-a100", "nvidia-a100-80gb"},
    {"nvidia-a100-80gb", "nvidia-h100"},
    {"nvidia-l40s", "nvidia-a10g", "nvidia-l4"},
};
constexpr int kShareNoModel = 55;  // percent of requests
constexpr int kShareSet = 30;      // percent; the rest name one model

struct SimNode {
  std::string name;
  std::string model;
  int size = 0;
  int free = 0;
};

struct Request {
  std::vector<std::string> models;  // sorted; empty: any
  int count = 1;
};

template <typename T>
T Pick(std::mt19937& rng, const std::vector<std::pair<T, int>>& weighted) {
  int total = 0;
  for (const auto& [v, w] : weighted) total += w;
  int r = std::uniform_int_distribution<>(0, total - 1)(rng);
  for (const auto& [v, w] : weighted) {
    if (r < w) return v;
    r -= w;
  }
  return weighted.back().first;
}

std::vector<SimNode> MakeCluster(int n, std::mt19937& rng) {
  std::vector<std::pair<std::string, int>> models(std::begin(kModels),
                                                  std::end(kModels));
  std::vector<std::pair<int, int>> sizes(std::begin(kNodeSizes),
                                         std::end(kNodeSizes));
  std::vector<SimNode> nodes;
  for (int i = 0; i < n; ++i) {
    SimNode node;
    node.name = absl::StrFormat("node-%05d", i);  // name order = index order
    node.model = Pick(rng, models);
    node.size = node.free = Pick(rng, sizes);
    nodes.push_back(node);
  }
  return nodes;
}

// Requests that the empty cluster could serve, until `total`.
std::vector<Request> MakeRequests(const std::vector<SimNode>& nodes,
                                  size_t total, std::mt19937& rng) {
  std::vector<std::pair<std::string, int>> models(std::begin(kModels),
                                                  std::end(kModels));
  std::vector<std::pair<int, int>> sizes(std::begin(kRequestSizes),
                                         std::end(kRequestSizes));
  std::vector<Request> out;
  while (out.size() < total) {
    Request r;
    r.count = Pick(rng, sizes);
    const int kind = std::uniform_int_distribution<>(0, 99)(rng);
    if (kind >= kShareNoModel + kShareSet) {
      r.models = {Pick(rng, models)};
    } else if (kind >= kShareNoModel) {
      r.models = kSets[std::uniform_int_distribution<size_t>(
          0, kSets.size() - 1)(rng)];
      std::sort(r.models.begin(), r.models.end());
    }
    const bool possible =
        std::any_of(nodes.begin(), nodes.end(), [&](const SimNode& n) {
          return n.size >= r.count &&
                 (r.models.empty() ||
                  std::binary_search(r.models.begin(), r.models.end(),
                                     n.model));
        });
    if (possible) out.push_back(std::move(r));
  }
  return out;
}

bool Accepts(const Request& r, const SimNode& n) {
  return n.free >= r.count &&
         (r.models.empty() ||
          std::binary_search(r.models.begin(), r.models.end(), n.model));
}

// A rule: among the nodes that can take the request, the index of the one
// it picks, or -1.
using Rule = std::function<int(const std::vector<SimNode>&, const Request&)>;

int FirstFit(const std::vector<SimNode>& nodes, const Request& r) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (Accepts(r, nodes[i])) return static_cast<int>(i);
  }
  return -1;
}

// Best fit (fewest free GPUs left on the node); `model_rank` orders models
// among equally good nodes: lower first.
Rule BestFit(
    std::function<long(const std::map<std::string, long>&, const std::string&)>
        model_rank) {
  return [model_rank](const std::vector<SimNode>& nodes, const Request& r) {
    std::map<std::string, long> free_by_model;
    for (const SimNode& n : nodes) free_by_model[n.model] += n.free;
    int best = -1;
    std::tuple<int, long, std::string> best_key;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const SimNode& n = nodes[i];
      if (!Accepts(r, n)) continue;
      std::tuple<int, long, std::string> key{
          n.free, model_rank(free_by_model, n.model), n.model};
      if (best < 0 || key < best_key) {
        best = static_cast<int>(i);
        best_key = key;
      }
    }
    return best;
  };
}

struct Outcome {
  double share = 0;   // GPUs allocated when the first request failed
  size_t placed = 0;  // requests placed before it
  // What the first failing request named: 0 any model, 1 one, 2 a set; -1
  // when none failed.
  int first_failure_kind = -1;
  std::vector<int> picks;  // node index per request; -1: did not fit
};

// Fills in the shares from the picks.
void Account(const std::vector<Request>& stream, long total, Outcome& out) {
  long used = 0;
  bool failed = false;
  for (size_t k = 0; k < out.picks.size(); ++k) {
    if (out.picks[k] < 0) {
      if (!failed) {
        out.share = static_cast<double>(used) / total;
        out.first_failure_kind =
            static_cast<int>(std::min<size_t>(stream[k].models.size(), 2));
      }
      failed = true;
      continue;
    }
    used += stream[k].count;
    if (!failed) ++out.placed;
  }
  if (!failed) out.share = static_cast<double>(used) / total;
}

Outcome Replay(std::vector<SimNode> nodes, const std::vector<Request>& stream,
               const Rule& rule) {
  Outcome out;
  long total = 0;
  for (const SimNode& n : nodes) total += n.size;
  for (const Request& r : stream) {
    const int i = rule(nodes, r);
    if (i >= 0) nodes[i].free -= r.count;
    out.picks.push_back(i);
  }
  Account(stream, total, out);
  return out;
}

// The matcher itself, on a capacity index built from the same cluster.
Outcome ReplayMatcher(const std::vector<SimNode>& sim,
                      const std::vector<Request>& stream) {
  CapacityIndex index;
  NodeMap nodes;
  std::map<std::string, int> position;
  long total = 0;
  for (size_t i = 0; i < sim.size(); ++i) {
    const SimNode& n = sim[i];
    Node node;
    node.name = n.name;
    nodes.emplace(n.name, node);
    position[n.name] = static_cast<int>(i);
    for (int g = 0; g < n.size; ++g) {
      const std::string key = absl::StrCat(n.name, "-", g);
      index.Put(Unit{key,
                     {DeviceClass::kNvidiaGpu, n.model, ""},
                     n.name,
                     {n.name},
                     {{n.name, key, "", ""}},
                     "",
                     g,
                     true,
                     ""});
    }
    total += n.size;
  }
  IndexPlacer placer(&index, &nodes, {Packing::kBestFit});
  Outcome out;
  for (size_t k = 0; k < stream.size(); ++k) {
    MatchSpec spec;
    spec.requested_models = stream[k].models;
    spec.count = stream[k].count;
    auto units = placer.PlaceOne(spec, absl::UnixEpoch());
    if (!units.has_value()) {
      out.picks.push_back(-1);
      continue;
    }
    const std::string home = units->front()->home;
    std::vector<std::string> keys;
    for (const Unit* u : *units) keys.push_back(u->key);
    for (const std::string& key : keys) {
      index.SetHolder(key, absl::StrCat("r", k));
    }
    out.picks.push_back(position[home]);
  }
  Account(stream, total, out);
  return out;
}

struct Summary {
  double sum = 0, min = 1, max = 0;
  size_t placed = 0;
  int failures_by_kind[3] = {0, 0, 0};
  void Add(const Outcome& o) {
    sum += o.share;
    if (o.first_failure_kind >= 0) ++failures_by_kind[o.first_failure_kind];
    min = std::min(min, o.share);
    max = std::max(max, o.share);
    placed += o.placed;
  }
};

int Main() {
  const int n = absl::GetFlag(FLAGS_nodes);
  const int seeds = absl::GetFlag(FLAGS_seeds);
  auto most_free_first = [](const std::map<std::string, long>& f,
                            const std::string& m) { return -f.at(m); };
  auto by_name = [](const std::map<std::string, long>&, const std::string&) {
    return 0L;
  };
  auto scarcest_first = [](const std::map<std::string, long>& f,
                           const std::string& m) { return f.at(m); };
  const std::vector<std::pair<std::string, Rule>> rules = {
      {"best fit, ties to the model with most free GPUs (accelsched)",
       BestFit(most_free_first)},
      {"best fit, ties by model name", BestFit(by_name)},
      {"best fit, ties to the model with fewest free GPUs",
       BestFit(scarcest_first)},
      {"first fit (node order)", FirstFit},
  };
  std::vector<Summary> summaries(rules.size());
  Summary matcher;
  int disagreements = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<SimNode> cluster = MakeCluster(n, rng);
    long gpus = 0;
    for (const SimNode& node : cluster) gpus += node.size;
    const std::vector<Request> stream =
        MakeRequests(cluster, static_cast<size_t>(gpus), rng);
    std::vector<Outcome> outcomes;
    for (size_t i = 0; i < rules.size(); ++i) {
      outcomes.push_back(Replay(cluster, stream, rules[i].second));
      summaries[i].Add(outcomes.back());
    }
    const Outcome real = ReplayMatcher(cluster, stream);
    matcher.Add(real);
    if (real.picks != outcomes[0].picks) ++disagreements;
  }
  std::printf(
      "%d clusters of %d nodes (1/2/4/8 GPUs, %zu models); requests of 1-8 "
      "GPUs: %d%% any model, %d%% a set of models, %d%% one model; no "
      "departures.\n\n",
      seeds, n, std::size(kModels), kShareNoModel, kShareSet,
      100 - kShareNoModel - kShareSet);
  std::printf(
      "share of GPUs allocated when the first request fails (mean [min, "
      "max]), requests placed before it (mean), and what the first failing "
      "request named (streams: any model / one model / a set)\n\n");
  std::printf("%-62s %-22s %7s  %s\n", "rule", "at first failure", "placed",
              "failed first");
  auto row = [&](const std::string& name, const Summary& s) {
    std::printf("%-62s %.3f [%.3f, %.3f] %7.0f  %d / %d / %d\n", name.c_str(),
                s.sum / seeds, s.min, s.max,
                static_cast<double>(s.placed) / seeds, s.failures_by_kind[0],
                s.failures_by_kind[1], s.failures_by_kind[2]);
  };
  row("best_fit (the real plugin)", matcher);
  for (size_t i = 0; i < rules.size(); ++i) row(rules[i].first, summaries[i]);
  std::printf(
      "\nthe real matcher and the simulated rule placed every request on the "
      "same node in %d of %d streams\n",
      seeds - disagreements, seeds);
  std::printf("ratio, accelsched's rule / first fit: %.3f\n",
              summaries[0].sum / summaries.back().sum);
  return disagreements == 0 ? 0 : 1;
}

}  // namespace
}  // namespace accelsched

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return accelsched::Main();
}
