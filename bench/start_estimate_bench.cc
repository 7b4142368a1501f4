// How honest Allocation.estimated_start is: a replay through the real
// scheduler (an in-memory store that acknowledges at once, a fake clock) on
// the same request stream under three ways jobs end, in one run.
//
// --nodes nodes of 8 T4s. Queued requests arrive as a Poisson stream across
// --tenants tenants (fair share decides the order), for 1, 2, 4 or 8 GPUs
// (weights 50, 20, 20, 10), each with a lease drawn log-uniformly between
// 10 minutes and 6 hours (whole minutes), at a rate that offers --load of
// the cluster's GPU-hours when every job holds its whole lease. The endings:
//   full:    every job holds its GPUs until its lease ends (the sweep expires
//            it);
//   early:   every job releases after a uniform 20-100% of its lease;
//   renewed: a quarter of the jobs renew their lease once, a tick before it
//            ends, for as long again; the rest hold it whole.
// Time advances in --tick steps, each running the periodic pass (Sweep);
// every waiting request is read (GetAllocation) each tick, as a client
// polling its allocation would. For every request that waited and was
// admitted, the error is admitted_at minus an estimate: the first it was
// shown, and each one read while it waited. Reports how many had an estimate,
// and the median and 90th percentile of the absolute errors, and the shares
// admitted later and earlier than estimated by more than a tick.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
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

ABSL_FLAG(int, nodes, 32, "nodes of 8 T4s");
ABSL_FLAG(int, tenants, 4, "tenants the requests belong to");
ABSL_FLAG(int, hours, 24, "simulated hours of arrivals");
ABSL_FLAG(double, load, 0.95,
          "GPU-hours offered / the cluster's, with every lease held whole");
ABSL_FLAG(absl::Duration, tick, absl::Seconds(10), "time step");
ABSL_FLAG(int, seed, 1, "the stream's seed");

namespace accelsched {
namespace {

constexpr char kModel[] = "nvidia-tesla-t4";

struct Arrival {
  absl::Duration at;  // after the start
  int count = 1;
  std::string tenant;
  absl::Duration lease;
  double early = 1.0;  // early: the share of its lease it runs
  bool renews = false;
};

std::vector<Arrival> Stream() {
  std::mt19937 rng(absl::GetFlag(FLAGS_seed));
  const std::pair<int, int> kCounts[] = {{1, 50}, {2, 20}, {4, 20}, {8, 10}};
  std::discrete_distribution<int> count_of({50, 20, 20, 10});
  std::uniform_real_distribution<double> log_minutes(std::log(10.0),
                                                     std::log(360.0));
  std::uniform_int_distribution<int> tenant_of(
      0, absl::GetFlag(FLAGS_tenants) - 1);
  std::uniform_real_distribution<double> share(0.2, 1.0);
  std::bernoulli_distribution renews(0.25);
  // Mean GPU-hours per request, for the arrival rate.
  double mean_gpus = 0;
  for (const auto& [count, weight] : kCounts) mean_gpus += count * weight;
  mean_gpus /= 100;
  // E[exp(U(a, b))] = (e^b - e^a) / (b - a), in minutes.
  const double mean_hours =
      (360.0 - 10.0) / (std::log(360.0) - std::log(10.0)) / 60;
  const double per_hour = absl::GetFlag(FLAGS_load) *
                          absl::GetFlag(FLAGS_nodes) * 8 /
                          (mean_gpus * mean_hours);
  std::exponential_distribution<double> gap_hours(per_hour);
  std::vector<Arrival> stream;
  const absl::Duration end = absl::Hours(absl::GetFlag(FLAGS_hours));
  for (absl::Duration at = absl::ZeroDuration();;) {
    at += absl::Hours(gap_hours(rng));
    if (at >= end) break;
    Arrival a;
    a.at = at;
    a.count = kCounts[count_of(rng)].first;
    a.tenant = absl::StrCat("tenant-", tenant_of(rng));
    a.lease = absl::Minutes(std::round(std::exp(log_minutes(rng))));
    a.early = share(rng);
    a.renews = renews(rng);
    stream.push_back(std::move(a));
  }
  return stream;
}

enum class Ending { kFull, kEarly, kRenewed };

const char* EndingName(Ending e) {
  switch (e) {
    case Ending::kFull:
      return "full";
    case Ending::kEarly:
      return "early";
    case Ending::kRenewed:
      return "renewed";
  }
  return "";
}

struct Errors {
  // Signed, admitted_at - estimate: of the first estimate each request was
  // shown, and of every estimate read (each tick it waited with one).
  std::vector<double> first_min, read_min;
};

struct ReplayResult {
  int arrived = 0;
  int waited = 0;     // pending on arrival and admitted within the replay
  int estimated = 0;  // of those, shown an estimate before admission
  std::vector<double> waits_min;
  Errors errors;
};

absl::StatusOr<ReplayResult> Replay(Ending ending,
                                    const std::vector<Arrival>& stream) {
  const absl::Duration tick = absl::GetFlag(FLAGS_tick);
  NullStore store;
  const absl::Time start = absl::FromUnixSeconds(1'700'000'000);
  FakeClock clock(start);
  Scheduler::Options options;
  options.heartbeat_timeout = absl::ZeroDuration();
  options.pending_lease = absl::Hours(24 * 365);
  options.max_lease = absl::Hours(24);
  Scheduler scheduler(&store, &clock, BuiltinAcceleratorTypes(), options);
  BlockingScheduler s(&scheduler);
  if (absl::Status st = s.Load(); !st.ok()) return st;
  for (int n = 0; n < absl::GetFlag(FLAGS_nodes); ++n) {
    Node node;
    node.name = absl::StrCat("n", n);
    for (int g = 0; g < 8; ++g) {
      Device d;
      d.id = absl::StrCat("n", n, "-gpu", g);
      d.model = kModel;
      d.index = g;
      node.devices.push_back(std::move(d));
    }
    if (absl::StatusOr<Node> r = s.RegisterNode(std::move(node)); !r.ok()) {
      return r.status();
    }
  }
  ReplayResult result;
  // What a running job does next, by when: release it (early), or renew it.
  struct Next {
    std::string id;
    bool renew = false;
    absl::Duration lease;
  };
  std::multimap<absl::Time, Next> due;
  struct Waiting {
    const Arrival* arrival;
    std::optional<absl::Time> first;  // the first estimate shown
    std::vector<absl::Time> read;     // every estimate read
  };
  absl::flat_hash_map<std::string, Waiting> waiting;
  auto started = [&](const std::string& id, const Arrival& a,
                     absl::Time admitted) {
    switch (ending) {
      case Ending::kFull:
        break;  // expires at its lease end
      case Ending::kEarly:
        due.emplace(admitted + a.lease * a.early,
                    Next{id, false, absl::ZeroDuration()});
        break;
      case Ending::kRenewed:
        if (a.renews) {
          due.emplace(admitted + a.lease - tick, Next{id, true, a.lease});
        }
        break;
    }
  };
  auto note = [](Waiting& w, const Allocation& a) {
    if (!a.estimated_start.has_value()) return;
    if (!w.first.has_value()) w.first = a.estimated_start;
    w.read.push_back(*a.estimated_start);
  };
  size_t next = 0;
  // Arrivals for --hours, then until the queue has drained.
  const absl::Time arrivals_end =
      start + absl::Hours(absl::GetFlag(FLAGS_hours));
  for (absl::Time t = start; t < arrivals_end || !waiting.empty(); t += tick) {
    if (t > arrivals_end + absl::Hours(48)) break;
    clock.Advance(t - clock.Now());
    while (!due.empty() && due.begin()->first <= t) {
      const Next n = due.begin()->second;
      due.erase(due.begin());
      absl::StatusOr<Allocation> r =
          n.renew ? s.RenewLease(n.id, n.lease) : s.Release({n.id, ""});
      if (!r.ok()) return r.status();
    }
    while (next < stream.size() && start + stream[next].at <= t) {
      const Arrival& a = stream[next];
      AllocationRequest r;
      r.request_id = absl::StrCat("r", next++);
      r.device = kModel;
      r.count = a.count;
      r.tenant = a.tenant;
      r.lease = a.lease;
      r.queue = true;
      ++result.arrived;
      absl::StatusOr<Allocation> got = s.Allocate(r);
      if (!got.ok()) return got.status();
      if (got->state == AllocationState::kActive) {
        started(got->id, a, t);
      } else {
        Waiting w{&a, std::nullopt, {}};
        note(w, *got);
        waiting.emplace(r.request_id, w);
      }
    }
    if (absl::StatusOr<int> swept = s.Sweep(); !swept.ok()) {
      return swept.status();
    }
    for (auto it = waiting.begin(); it != waiting.end();) {
      absl::StatusOr<Allocation> a = s.GetAllocation({"", it->first});
      if (!a.ok()) return a.status();
      Waiting& w = it->second;
      if (a->pending()) {
        note(w, *a);
        ++it;
        continue;
      }
      if (a->state == AllocationState::kActive) {
        started(a->id, *w.arrival, a->admitted_at);
        ++result.waited;
        result.waits_min.push_back(
            absl::ToDoubleMinutes(a->admitted_at - a->created_at));
        if (w.first.has_value()) {
          ++result.estimated;
          result.errors.first_min.push_back(
              absl::ToDoubleMinutes(a->admitted_at - *w.first));
          for (absl::Time e : w.read) {
            result.errors.read_min.push_back(
                absl::ToDoubleMinutes(a->admitted_at - e));
          }
        }
      }
      waiting.erase(it++);
    }
  }
  return result;
}

// p50 and p90 of |error|, and the shares later / earlier than a tick.
std::string Describe(const std::vector<double>& signed_min) {
  std::vector<double> abs;
  int late = 0, early = 0;
  const double tick_min = absl::ToDoubleMinutes(absl::GetFlag(FLAGS_tick));
  for (double e : signed_min) {
    abs.push_back(std::fabs(e));
    if (e > tick_min) ++late;
    if (e < -tick_min) ++early;
  }
  const double n = std::max<size_t>(1, signed_min.size());
  char out[96];
  std::snprintf(out, sizeof(out), "%8.1f %8.1f %6.0f%% %6.0f%%",
                Quantile(abs, 0.5), Quantile(abs, 0.9), 100.0 * late / n,
                100.0 * early / n);
  return out;
}

int Run() {
  const std::vector<Arrival> stream = Stream();
  std::printf(
      "replay: %d nodes x 8 T4, %d h of arrivals, load %.2f, %d tenants, "
      "tick %s, %zu requests\n",
      absl::GetFlag(FLAGS_nodes), absl::GetFlag(FLAGS_hours),
      absl::GetFlag(FLAGS_load), absl::GetFlag(FLAGS_tenants),
      absl::FormatDuration(absl::GetFlag(FLAGS_tick)).c_str(), stream.size());
  std::printf(
      "errors are admitted_at - estimate, in minutes; late: admitted more "
      "than a tick after the estimate, early: more than a tick before\n");
  std::printf("%-8s %7s %7s %9s %9s | %-33s | %-33s\n", "ending", "waited",
              "with", "wait_p50", "wait_p90",
              "first estimate: p50 p90 late early",
              "every read: p50 p90 late early");
  for (Ending ending : {Ending::kFull, Ending::kEarly, Ending::kRenewed}) {
    const absl::Time began = absl::Now();
    absl::StatusOr<ReplayResult> r = Replay(ending, stream);
    if (!r.ok()) {
      std::fprintf(stderr, "%s: %s\n", EndingName(ending),
                   r.status().ToString().c_str());
      return 1;
    }
    std::printf("%-8s %7d %6.0f%% %9.1f %9.1f | %s | %s   (%.1f s)\n",
                EndingName(ending), r->waited,
                100.0 * r->estimated / std::max(1, r->waited),
                Quantile(r->waits_min, 0.5), Quantile(r->waits_min, 0.9),
                Describe(r->errors.first_min).c_str(),
                Describe(r->errors.read_min).c_str(),
                absl::ToDoubleSeconds(absl::Now() - began));
  }
  return 0;
}

}  // namespace
}  // namespace accelsched

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // As in accelschedd (services/main.cc): Debian's abseil checks lock order
  // on every lock otherwise.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return accelsched::Run();
}
