// What one admission pass costs after a release, as the queue grows: a
// cluster of --nodes nodes of 8 T4s, full with 1-GPU allocations of random
// leases across --tenants tenants, and N requests pending across the same
// tenants (1, 2, 4 or 8 GPUs). Each sample releases one random allocation:
// the release and the pass it runs (which admits a 1-GPU request into the
// freed GPU and gives up on every other group), timed from the call to its
// return. The store acknowledges at once (an in-memory stand-in that keeps
// nothing), so the figure is the scheduler's own work under its lock; the
// commit's fsync comes on top and is the same with or without a queue
// (loadgen measures it). Baseline: the same release with no queue.
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "bench/null_store.h"
#include "config/accelerator_types_file.h"
#include "core/base/clock.h"
#include "core/packing/packing_policy.h"
#include "core/scheduler/scheduler.h"
#include "tests/support/blocking_scheduler.h"

ABSL_FLAG(int, nodes, 10000, "nodes of 8 GPUs");
ABSL_FLAG(int, tenants, 100, "tenants the allocations and requests belong to");
ABSL_FLAG(std::string, pending, "0,1000,2000,5000,10000",
          "queue lengths to measure at");
ABSL_FLAG(int, samples, 2000, "releases timed at each queue length");
ABSL_FLAG(std::string, packing, "fragmentation",
          "the scheduler's --packing policy");

namespace accelsched {
namespace {

struct Percentiles {
  double p50_us, p99_us, max_us;
};

Percentiles Summarize(std::vector<absl::Duration> samples) {
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) {
    return absl::ToDoubleMicroseconds(samples[std::min(
        samples.size() - 1, static_cast<size_t>(q * samples.size()))]);
  };
  return {at(0.50), at(0.99), absl::ToDoubleMicroseconds(samples.back())};
}

// From the tenants' standings, which count the queue by tenant: not Stats(),
// whose per-tenant count of live allocations walks all 80,000 of them and
// would leave the next timed call a cold cache.
int TotalPending(const Scheduler& s) {
  int n = 0;
  for (const TenantStanding& t : s.queue().TenantStandings("")) n += t.pending;
  return n;
}

int Run() {
  const int nodes = absl::GetFlag(FLAGS_nodes);
  const int tenants = absl::GetFlag(FLAGS_tenants);
  const int samples = absl::GetFlag(FLAGS_samples);
  std::vector<int> lengths;
  for (absl::string_view n :
       absl::StrSplit(absl::GetFlag(FLAGS_pending), ',')) {
    lengths.push_back(std::stoi(std::string(n)));
  }
  std::sort(lengths.begin(), lengths.end());

  NullStore store;
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  Scheduler::Options options;
  options.heartbeat_timeout = absl::ZeroDuration();
  options.pending_lease = absl::Hours(24 * 365);
  absl::StatusOr<Packing> packing = ParsePacking(absl::GetFlag(FLAGS_packing));
  if (!packing.ok()) {
    std::fprintf(stderr, "%s\n", packing.status().ToString().c_str());
    return 1;
  }
  options.packing = *packing;
  Scheduler scheduler(&store, &clock, BuiltinAcceleratorTypes(), options);
  BlockingScheduler s(&scheduler);
  if (!s.Load().ok()) return 1;
  std::mt19937 rng(42);
  const absl::Time setup = absl::Now();
  for (int n = 0; n < nodes; ++n) {
    Node node;
    node.name = absl::StrCat("node-", n);
    for (int g = 0; g < 8; ++g) {
      Device d;
      d.id = absl::StrCat("node-", n, "-gpu", g);
      d.model = "nvidia-tesla-t4";
      d.index = g;
      node.devices.push_back(std::move(d));
    }
    if (!s.RegisterNode(std::move(node)).ok()) return 1;
  }
  // Full, with leases of 10 minutes to 10 hours.
  std::vector<std::string> running;
  std::uniform_int_distribution<int> tenant_of(0, tenants - 1);
  std::uniform_int_distribution<int> minutes(10, 600);
  int next = 0;
  auto request = [&](bool queue, int count) {
    AllocationRequest r;
    r.request_id = absl::StrCat("r-", next++);
    r.device = "nvidia-tesla-t4";
    r.count = count;
    r.tenant = absl::StrCat("tenant-", tenant_of(rng));
    r.lease = absl::Minutes(minutes(rng));
    r.queue = queue;
    return r;
  };
  for (int i = 0; i < nodes * 8; ++i) {
    AllocationRequest r = request(false, 1);
    if (!s.Allocate(r).ok()) return 1;
    running.push_back(r.request_id);
  }
  std::printf("setup: %d nodes, %zu allocations in %.1f s\n", nodes,
              running.size(), absl::ToDoubleSeconds(absl::Now() - setup));
  const int kSizes[] = {1, 1, 1, 2, 4, 8};
  std::uniform_int_distribution<int> size_of(0, 5);
  int pending = 0;
  auto enqueue = [&] {
    absl::StatusOr<Allocation> a =
        s.Allocate(request(true, kSizes[size_of(rng)]));
    if (!a.ok()) return false;
    if (a->state == AllocationState::kPending) {
      ++pending;
    } else {
      running.push_back(a->request_id);
    }
    return true;
  };
  std::printf("%8s %10s %10s %10s %12s %14s\n", "pending", "p50_us", "p99_us",
              "max_us", "vs_empty_p99", "sweep_max_us");
  double empty_p99 = 0;
  for (int length : lengths) {
    while (pending < length) {
      if (!enqueue()) return 1;
    }
    std::vector<absl::Duration> taken, sweeps;
    for (int i = 0; i < samples; ++i) {
      // The server's sweeper refreshes reservations once a second; about
      // every 500 releases here.
      if (i % 500 == 0) {
        const absl::Time start = absl::Now();
        if (!s.Sweep().ok()) return 1;
        sweeps.push_back(absl::Now() - start);
      }
      std::uniform_int_distribution<size_t> pick(0, running.size() - 1);
      const size_t at = pick(rng);
      const std::string id = running[at];
      running[at] = running.back();
      running.pop_back();
      const absl::Time start = absl::Now();
      absl::StatusOr<Allocation> released = s.Release({"", id});
      taken.push_back(absl::Now() - start);
      if (!released.ok()) return 1;
      // The cluster stays full and the queue as long: a plain allocation
      // refills the GPU when nothing was queued, else requests are queued
      // for the one the pass admitted (the tracked ids are a sample of the
      // running ones; the admitted join the cluster untracked).
      if (length == 0) {
        AllocationRequest refill = request(false, 1);
        if (s.Allocate(refill).ok()) running.push_back(refill.request_id);
      } else {
        pending = TotalPending(scheduler);
        while (pending < length) {
          if (!enqueue()) return 1;
        }
      }
    }
    const Percentiles p = Summarize(taken);
    if (length == 0) empty_p99 = p.p99_us;
    std::printf("%8d %10.1f %10.1f %10.1f %12.2f %14.1f\n", length, p.p50_us,
                p.p99_us, p.max_us, empty_p99 > 0 ? p.p99_us / empty_p99 : 1.0,
                Summarize(sweeps).max_us);
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
