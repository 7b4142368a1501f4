#include "core/plugins/registry.h"

#include <cstdlib>
#include <string>

#include "core/packing/placement_score.h"
#include "core/plugins/accelerator_fit/accelerator_fit.h"
#include "core/plugins/backfill/backfill.h"
#include "core/plugins/best_fit/best_fit.h"
#include "core/plugins/fair_share/fair_share.h"
#include "core/plugins/first_fit/first_fit.h"
#include "core/plugins/fragmentation/fragmentation.h"
#include "core/plugins/gpu_links/gpu_links.h"
#include "core/plugins/label_selector/label_selector.h"
#include "core/plugins/lease_term/lease_term.h"
#include "core/plugins/mig_relayout/mig_relayout.h"
#include "core/plugins/node_drain/node_drain.h"
#include "core/plugins/node_resources/node_resources.h"
#include "core/plugins/plan_ahead/plan_ahead.h"
#include "core/plugins/preemption/preemption.h"
#include "core/plugins/quota/quota.h"
#include "core/plugins/reclaim/reclaim.h"
#include "core/plugins/request_mix/request_mix.h"
#include "core/plugins/reservations/reservations.h"
#include "core/plugins/schedulable/schedulable.h"
#include "core/plugins/shares/shares.h"
#include "core/plugins/spread/spread.h"
#include "core/plugins/topology/topology.h"

namespace accelsched {
namespace {

// When the default profile runs a plugin.
enum class When {
  kAlways,
  kPacking,     // when --packing is `packing`
  kPreemption,  // when --preemption
};

struct Entry {
  const char* name;
  PluginFactory make;
  When when = When::kAlways;
  Packing packing = Packing::kFragmentation;
  double weight = 1;
};

// Every plugin, in the order the default profile runs them at each extension
// point they implement (Kubernetes' multiPoint).
const Entry kPlugins[] = {
    // QueueSort, and Reserve to count an admitted tenant's share again.
    {FairSharePlugin::kName, &FairSharePlugin::New},
    // PreFilter: what no node could ever hold, then the recent mix, then
    // quota.
    {AcceleratorFitPlugin::kName, &AcceleratorFitPlugin::New},
    {SharesPlugin::kName, &SharesPlugin::New},
    {NodeResourcesPlugin::kName, &NodeResourcesPlugin::New},
    {RequestMixPlugin::kName, &RequestMixPlugin::New},
    {QuotaPlugin::kName, &QuotaPlugin::New},
    // Filter: the gates (selector first), room, holds for others.
    {LabelSelectorPlugin::kName, &LabelSelectorPlugin::New},
    {SchedulablePlugin::kName, &SchedulablePlugin::New},
    {NodeDrainPlugin::kName, &NodeDrainPlugin::New},
    {TopologyPlugin::kName, &TopologyPlugin::New},
    {ReservationsPlugin::kName, &ReservationsPlugin::New},
    // Score: the placements (shares, gangs, then one --packing policy for
    // whole units), the lease term beside fragmentation, GPU links within a
    // node.
    {BestFitPlugin::kName, &BestFitPlugin::New, When::kPacking,
     Packing::kBestFit},
    {FirstFitPlugin::kName, &FirstFitPlugin::New, When::kPacking,
     Packing::kFirstFit},
    {SpreadPlugin::kName, &SpreadPlugin::New, When::kPacking,
     Packing::kSpread},
    {FragmentationPlugin::kName, &FragmentationPlugin::New, When::kPacking,
     Packing::kFragmentation},
    {LeaseTermPlugin::kName, &LeaseTermPlugin::New, When::kPacking,
     Packing::kFragmentation, kLeaseWeight},
    {GpuLinksPlugin::kName, &GpuLinksPlugin::New},
    // PostFilter, in the order tried: re-slicing idle MIG GPUs before
    // preempting anyone, then reclaim (for quota), planning ahead, and the
    // backfill reservation last. (Topology's check of new gangs runs where
    // it stands above.)
    {MigRelayoutPlugin::kName, &MigRelayoutPlugin::New},
    {PreemptionPlugin::kName, &PreemptionPlugin::New, When::kPreemption},
    {ReclaimPlugin::kName, &ReclaimPlugin::New, When::kPreemption},
    {PlanAheadPlugin::kName, &PlanAheadPlugin::New},
    {BackfillPlugin::kName, &BackfillPlugin::New},
};

}  // namespace

const Registry& PluginRegistry() {
  static const Registry* const registry = [] {
    auto* r = new Registry();
    for (const Entry& e : kPlugins) {
      // The names are the plugins' own and unique: a failure is a bug here.
      if (!r->Register(e.name, e.make).ok()) std::abort();
    }
    return r;
  }();
  return *registry;
}

Profile DefaultProfile(const ProfileOptions& options) {
  Profile profile;
  for (const Entry& e : kPlugins) {
    if (e.when == When::kPacking && e.packing != options.packing) continue;
    if (e.when == When::kPreemption && !options.preemption) continue;
    profile.plugins.push_back(Profile::Entry{e.name, e.weight});
  }
  return profile;
}

}  // namespace accelsched
