// Dynamic MIG re-layout (issue 33), measured two ways through the real
// scheduler (an in-memory store that acknowledges at once, a fake clock):
//
// 1. A replay, static against dynamic (without and with planning ahead at
//    lease ends) on the same stream in one run:
//    --nodes nodes of 8 H100s in MIG mode, each laid out at the start as
//    seven 1g.10gb slices (a daytime inference layout). Queued MIG requests
//    arrive as a Poisson stream whose mix follows the time of day: by day
//    (the first 12 hours of each 24) 70% 1g.10gb, 20% 2g.20gb, 10% 3g.40gb;
//    by night 20% 1g.10gb, 50% 3g.40gb, 30% 7g.80gb; at a rate that offers
//    --load of the cluster's compute slices, each holding its slices for an
//    exponential time of mean --mean_minutes (at most 8 hours). A request not
//    admitted within --max_wait expires (the pending lease). "static": no
//    node re-lays out (the layout stays as laid out at the start); "dynamic":
//    every node is labelled accelsched.io/mig-relayout=enabled and a
//    simulated agent applies each plan --apply_delay after it was made
//    (re-registering the node with the planned layout, new slices with new
//    ids), with planning ahead off (--mig_relayout_ahead=0); "ahead": the
//    same with the server's default (10m). Each request's lease is its hold
//    plus a minute. Time advances in --tick steps, each running the periodic
//    pass (Sweep); waits are measured to the tick. Reports the share of
//    requests served, by day and by night, and their waits.
// 2. The admission pass with planning on: --pass_gpus MIG H100s (8 a node,
//    all re-laying out) with six of their seven 1g.10gb slices allocated and
//    --pass_pending requests for 3g.40gb pending; each sample releases one
//    slice and refills it (the pass after a release), timed from the call to
//    its return, and every 500th sample first runs the periodic pass, which
//    plans (its time reported apart).
#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "bench/null_store.h"
#include "bench/quantile.h"
#include "config/accelerator_types_file.h"
#include "core/base/clock.h"
#include "core/scheduler/scheduler.h"
#include "tests/support/blocking_scheduler.h"

ABSL_FLAG(int, nodes, 32, "replay: nodes of 8 MIG H100s");
ABSL_FLAG(int, hours, 48, "replay: simulated hours (days of 24)");
ABSL_FLAG(double, load, 0.7, "replay: compute slices offered / the cluster's");
ABSL_FLAG(int, mean_minutes, 60,
          "replay: mean time a request holds its slices");
ABSL_FLAG(absl::Duration, max_wait, absl::Hours(2),
          "replay: a request not admitted by then expires");
ABSL_FLAG(absl::Duration, apply_delay, absl::Seconds(30),
          "replay: how long the simulated agent takes to apply a plan");
ABSL_FLAG(absl::Duration, tick, absl::Seconds(10), "replay: time step");
ABSL_FLAG(int, seed, 1, "replay: the stream's seed");
ABSL_FLAG(int, pass_gpus, 1000, "pass: MIG GPUs (0: skip this part)");
ABSL_FLAG(int, pass_pending, 1000, "pass: pending 3g.40gb requests");
ABSL_FLAG(int, pass_samples, 2000, "pass: releases timed");

namespace accelsched {
namespace {

constexpr char kModel[] = "nvidia-h100";

const Labels kRelayouts = {{"accelsched.io/mig-relayout", "enabled"}};

Node SmallSlicedNode(const std::string& name, bool relayout) {
  Node node;
  node.name = name;
  if (relayout) node.labels = kRelayouts;
  for (int g = 0; g < 8; ++g) {
    Device d;
    d.id = absl::StrCat(name, "-gpu", g);
    d.model = kModel;
    d.index = g;
    d.mig_enabled = true;
    for (int s = 0; s < 7; ++s) {
      d.mig_slices.push_back({absl::StrCat(d.id, "-s", s), "1g.10gb", s});
    }
    node.devices.push_back(std::move(d));
  }
  return node;
}

struct Arrival {
  absl::Duration at;
  std::string profile;
  absl::Duration holds;
  bool night = false;
};

std::vector<Arrival> Stream(int nodes) {
  struct Share {
    const char* profile;
    int compute;
    double p;
  };
  const std::vector<Share> day = {
      {"1g.10gb", 1, 0.7}, {"2g.20gb", 2, 0.2}, {"3g.40gb", 3, 0.1}};
  const std::vector<Share> night = {
      {"1g.10gb", 1, 0.2}, {"3g.40gb", 3, 0.5}, {"7g.80gb", 7, 0.3}};
  const double slices = nodes * 8.0 * 7;
  const double mean_s = absl::GetFlag(FLAGS_mean_minutes) * 60.0;
  std::mt19937 rng(absl::GetFlag(FLAGS_seed));
  std::exponential_distribution<double> holds(1.0 / mean_s);
  std::uniform_real_distribution<double> pick(0, 1);
  std::vector<Arrival> out;
  const double end_s = absl::GetFlag(FLAGS_hours) * 3600.0;
  double t = 0;
  while (true) {
    const bool is_night = static_cast<int>(t / 3600) % 24 >= 12;
    const std::vector<Share>& mix = is_night ? night : day;
    double mean_compute = 0;
    for (const Share& s : mix) mean_compute += s.compute * s.p;
    const double rate = absl::GetFlag(FLAGS_load) * slices /
                        (mean_compute * mean_s);  // requests a second
    t += std::exponential_distribution<double>(rate)(rng);
    if (t >= end_s) break;
    double u = pick(rng);
    const Share* chosen = &mix.back();
    for (const Share& s : mix) {
      if (u < s.p) {
        chosen = &s;
        break;
      }
      u -= s.p;
    }
    out.push_back(Arrival{absl::Seconds(t), chosen->profile,
                          absl::Seconds(std::min(holds(rng), 8 * 3600.0)),
                          is_night});
  }
  return out;
}

struct ReplayResult {
  int arrived[2] = {0, 0};  // by day, by night
  int served[2] = {0, 0};
  std::vector<double> waits_s;  // of the served
  int relayouts = 0;
};

// Applies every plan made at least `delay` ago as its agent would: the node
// registers the planned layout, new slices with new ids.
absl::Status ApplyPlans(BlockingScheduler& s, int nodes, absl::Time now,
                        absl::Duration delay, absl::Duration timeout,
                        int& applied, int& next_id) {
  for (int n = 0; n < nodes; ++n) {
    absl::StatusOr<Node> node = s.GetNode(absl::StrCat("n", n));
    if (!node.ok()) return node.status();
    bool changed = false;
    for (Device& d : node->devices) {
      if (!d.mig_plan.has_value() ||
          d.mig_plan->deadline - timeout + delay > now) {
        continue;
      }
      d.mig_slices = d.mig_plan->slices;
      for (MigSlice& slice : d.mig_slices) {
        if (slice.id.empty()) slice.id = absl::StrCat("new-", next_id++);
      }
      ++applied;
      changed = true;
    }
    if (!changed) continue;
    node->available.reset();
    absl::StatusOr<Node> done = s.RegisterNode(*std::move(node));
    if (!done.ok()) return done.status();
  }
  return absl::OkStatus();
}

enum class Layout { kStatic, kDynamic, kAhead };

const char* LayoutName(Layout layout) {
  switch (layout) {
    case Layout::kStatic:
      return "static";
    case Layout::kDynamic:
      return "dynamic";
    case Layout::kAhead:
      return "ahead";
  }
  return "";
}

absl::StatusOr<ReplayResult> Replay(Layout layout,
                                    const std::vector<Arrival>& stream) {
  const bool dynamic = layout != Layout::kStatic;
  const int nodes = absl::GetFlag(FLAGS_nodes);
  const absl::Duration tick = absl::GetFlag(FLAGS_tick);
  NullStore store;
  const absl::Time start = absl::FromUnixSeconds(1'700'000'000);
  FakeClock clock(start);
  Scheduler::Options options;
  options.heartbeat_timeout = absl::ZeroDuration();
  options.pending_lease = absl::GetFlag(FLAGS_max_wait);
  if (layout != Layout::kAhead)
    options.mig_relayout_ahead = absl::ZeroDuration();
  Scheduler scheduler(&store, &clock, BuiltinAcceleratorTypes(), options);
  BlockingScheduler s(&scheduler);
  if (absl::Status st = s.Load(); !st.ok()) return st;
  for (int n = 0; n < nodes; ++n) {
    absl::StatusOr<Node> node =
        s.RegisterNode(SmallSlicedNode(absl::StrCat("n", n), dynamic));
    if (!node.ok()) return node.status();
  }
  ReplayResult result;
  std::multimap<absl::Time, std::string> departures;
  struct Waiting {
    absl::Time since;
    absl::Duration holds;
    bool night;
  };
  absl::flat_hash_map<std::string, Waiting> waiting;
  auto admitted = [&](const std::string& id, const Waiting& w, absl::Time t) {
    ++result.served[w.night];
    result.waits_s.push_back(absl::ToDoubleSeconds(t - w.since));
    departures.emplace(t + w.holds, id);
  };
  size_t next = 0;
  int next_id = 0;
  const absl::Time end = start + absl::Hours(absl::GetFlag(FLAGS_hours));
  for (absl::Time t = start; t < end; t += tick) {
    clock.Advance(t - clock.Now());
    while (!departures.empty() && departures.begin()->first <= t) {
      absl::StatusOr<Allocation> r =
          s.Release({"", departures.begin()->second});
      if (!r.ok()) return r.status();
      departures.erase(departures.begin());
    }
    while (next < stream.size() && start + stream[next].at <= t) {
      const Arrival& a = stream[next];
      AllocationRequest r;
      r.request_id = absl::StrCat("r", next++);
      r.device = kModel;
      r.partition_kind = PartitionKind::kPartitionSize;
      r.partition_size = a.profile;
      r.lease = a.holds + absl::Minutes(1);
      r.queue = true;
      ++result.arrived[a.night];
      absl::StatusOr<Allocation> got = s.Allocate(r);
      // Static layouts refuse a profile no GPU has: not served.
      if (absl::IsFailedPrecondition(got.status())) continue;
      if (!got.ok()) return got.status();
      const Waiting w{start + a.at, a.holds, a.night};
      if (got->state == AllocationState::kActive) {
        admitted(r.request_id, w, t);
      } else {
        waiting.emplace(r.request_id, w);
      }
    }
    absl::StatusOr<int> swept = s.Sweep();
    if (!swept.ok()) return swept.status();
    if (dynamic) {
      absl::Status st =
          ApplyPlans(s, nodes, t, absl::GetFlag(FLAGS_apply_delay),
                     options.mig_relayout_timeout, result.relayouts, next_id);
      if (!st.ok()) return st;
    }
    for (auto it = waiting.begin(); it != waiting.end();) {
      absl::StatusOr<Allocation> a = s.GetAllocation({"", it->first});
      if (!a.ok()) return a.status();
      if (a->pending()) {
        ++it;
        continue;
      }
      if (a->state == AllocationState::kActive)
        admitted(it->first, it->second, t);
      waiting.erase(it++);
    }
  }
  return result;
}

int RunReplay() {
  const std::vector<Arrival> stream = Stream(absl::GetFlag(FLAGS_nodes));
  std::printf(
      "replay: %d nodes x 8 H100 (7 x 1g.10gb each at the start), %d h, "
      "load %.2f, mean %d min, max wait %s, apply delay %s, %zu requests\n",
      absl::GetFlag(FLAGS_nodes), absl::GetFlag(FLAGS_hours),
      absl::GetFlag(FLAGS_load), absl::GetFlag(FLAGS_mean_minutes),
      absl::FormatDuration(absl::GetFlag(FLAGS_max_wait)).c_str(),
      absl::FormatDuration(absl::GetFlag(FLAGS_apply_delay)).c_str(),
      stream.size());
  std::printf("%-8s %8s %8s %9s %9s %9s %10s %10s %10s\n", "layout", "arrived",
              "served", "served%", "day%", "night%", "wait_p50_s", "wait_p90_s",
              "relayouts");
  double static_share = 0;
  for (Layout layout : {Layout::kStatic, Layout::kDynamic, Layout::kAhead}) {
    const absl::Time began = absl::Now();
    absl::StatusOr<ReplayResult> r = Replay(layout, stream);
    if (!r.ok()) {
      std::fprintf(stderr, "replay: %s\n", r.status().ToString().c_str());
      return 1;
    }
    auto pct = [](int a, int b) { return b == 0 ? 0.0 : 100.0 * a / b; };
    const int arrived = r->arrived[0] + r->arrived[1];
    const int served = r->served[0] + r->served[1];
    std::printf("%-8s %8d %8d %9.1f %9.1f %9.1f %10.0f %10.0f %10d  (%.1f s)\n",
                LayoutName(layout), arrived, served, pct(served, arrived),
                pct(r->served[0], r->arrived[0]),
                pct(r->served[1], r->arrived[1]), Quantile(r->waits_s, 0.5),
                Quantile(r->waits_s, 0.9), r->relayouts,
                absl::ToDoubleSeconds(absl::Now() - began));
    if (layout == Layout::kStatic) {
      static_share = pct(served, arrived);
    } else if (static_share > 0) {
      std::printf("%s / static served: %.2fx\n", LayoutName(layout),
                  pct(served, arrived) / static_share);
    }
  }
  return 0;
}

int RunPass() {
  const int gpus = absl::GetFlag(FLAGS_pass_gpus);
  if (gpus <= 0) return 0;
  const int nodes = (gpus + 7) / 8;
  NullStore store;
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  Scheduler::Options options;
  options.heartbeat_timeout = absl::ZeroDuration();
  options.pending_lease = absl::Hours(24 * 365);
  Scheduler scheduler(&store, &clock, BuiltinAcceleratorTypes(), options);
  BlockingScheduler s(&scheduler);
  if (!s.Load().ok()) return 1;
  for (int n = 0; n < nodes; ++n) {
    if (!s.RegisterNode(SmallSlicedNode(absl::StrCat("n", n), true)).ok()) {
      return 1;
    }
  }
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> minutes(10, 600);
  int next = 0;
  auto small = [&] {
    AllocationRequest r;
    r.request_id = absl::StrCat("s", next++);
    r.device = kModel;
    r.partition_kind = PartitionKind::kPartitionSize;
    r.partition_size = "1g.10gb";
    r.lease = absl::Minutes(minutes(rng));
    return r;
  };
  // Six of each GPU's seven slices taken: no 3g fits anywhere, and a plan
  // needs four free slots in a row.
  std::vector<std::string> running;
  for (int i = 0; i < nodes * 8 * 6; ++i) {
    AllocationRequest r = small();
    if (!s.Allocate(r).ok()) return 1;
    running.push_back(r.request_id);
  }
  for (int i = 0; i < absl::GetFlag(FLAGS_pass_pending); ++i) {
    AllocationRequest r;
    r.request_id = absl::StrCat("big", i);
    r.device = kModel;
    r.partition_kind = PartitionKind::kPartitionSize;
    r.partition_size = "3g.40gb";
    r.tenant = absl::StrCat("tenant-", i % 100);
    r.queue = true;
    if (!s.Allocate(r).ok()) return 1;
  }
  std::vector<double> taken, sweeps;
  for (int i = 0; i < absl::GetFlag(FLAGS_pass_samples); ++i) {
    if (i % 500 == 0) {
      const absl::Time start = absl::Now();
      if (!s.Sweep().ok()) return 1;
      sweeps.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
    }
    std::uniform_int_distribution<size_t> pick(0, running.size() - 1);
    const size_t at = pick(rng);
    const std::string id = running[at];
    running[at] = running.back();
    running.pop_back();
    const absl::Time start = absl::Now();
    if (!s.Release({"", id}).ok()) return 1;
    taken.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
    AllocationRequest refill = small();
    if (s.Allocate(refill).ok()) running.push_back(refill.request_id);
  }
  std::printf(
      "pass: %d MIG GPUs re-laying out, %d pending 3g.40gb: release + pass "
      "p50 %.1f us, p99 %.1f us, max %.1f us; periodic pass (plans) max "
      "%.1f us\n",
      nodes * 8, absl::GetFlag(FLAGS_pass_pending), Quantile(taken, 0.5),
      Quantile(taken, 0.99), Quantile(taken, 1.0), Quantile(sweeps, 1.0));
  return 0;
}

}  // namespace
}  // namespace accelsched

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // As in accelschedd (services/main.cc): Debian's abseil checks lock order
  // on every lock otherwise.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (int rc = accelsched::RunReplay(); rc != 0) return rc;
  return accelsched::RunPass();
}
