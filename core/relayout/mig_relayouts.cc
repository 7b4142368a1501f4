#include "core/relayout/mig_relayouts.h"

#include <algorithm>
#include <optional>
#include <set>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/model/mig_plan.h"

namespace accelsched {

void MigRelayouts::Load(uint64_t event_sequence,
                        const std::vector<Node>& nodes) {
  // Every plan is written with its MIG_RELAYOUT_PLANNED event, and a
  // generation is drawn only for a plan made: none written is above the
  // last event's number, or above a generation stored. Plans of a failed
  // commit reached no agent (a heartbeat's reply and a watch wait for their
  // write), so their generations may be drawn again.
  last_generation_ = event_sequence;
  for (const Node& node : nodes) {
    for (const Device& d : node.devices) {
      last_generation_ = std::max(last_generation_, d.mig_generation);
    }
  }
  for (auto& [key, lapsed] : released_) lapsed_.emplace(key, lapsed);
  released_.clear();
}

void MigRelayouts::Plan(Catalog& catalog, const Allocation& pending,
                        const RelayoutChoice& choice, absl::Time now,
                        Write& write) {
  std::optional<Node> planned;
  for (const RelayoutChoice::Gpu& gpu : choice.gpus) {
    const uint64_t generation = last_generation_ + 1;
    absl::StatusOr<Node> node = catalog.SetMigPlan(
        choice.node, gpu.device_id,
        MigPlan{gpu.plan.layout, generation, pending.id, now + timeout_});
    // The planner only chose GPUs the catalog would take; one refused is
    // left out, and the request plans again later.
    if (!node.ok()) continue;
    last_generation_ = generation;  // one per event (Load)
    write.events.push_back(
        Event{Event::Type::kMigRelayoutPlanned, now, pending, choice.node,
              absl::StrCat(gpu.device_id, ": ",
                           DescribeMigLayout(gpu.plan.layout), " (generation ",
                           generation, "; destroys ", gpu.plan.destroyed,
                           " free slice", gpu.plan.destroyed == 1 ? "" : "s",
                           ", creates ", gpu.plan.created, ")"),
              0});
    planned = *std::move(node);
  }
  if (planned.has_value()) {
    write.mutations.push_back(PutNodeMutation{*std::move(planned)});
  }
}

bool MigRelayouts::Drop(Catalog& catalog, const std::string& node,
                        const std::string& device_id, uint64_t generation,
                        absl::string_view why, absl::Time now, Write& write,
                        absl::Time hold_until) {
  auto dropped = catalog.DropMigPlan(node, device_id, generation);
  if (!dropped.has_value()) return false;
  backoff_[device_id] = now + timeout_;
  if (hold_until > absl::InfinitePast()) {
    lapsed_[{node, device_id}] = Lapsed{dropped->second, hold_until};
    catalog.RefreshNode(node);
  }
  write.mutations.push_back(PutNodeMutation{std::move(dropped->first)});
  write.events.push_back(
      Event{Event::Type::kMigRelayoutDropped,
            now,
            {},
            node,
            absl::StrCat(device_id, ": plan of generation ",
                         dropped->second.generation, " for ",
                         dropped->second.allocation_id, " dropped: ", why),
            0});
  return true;
}

bool MigRelayouts::DropDue(Catalog& catalog, absl::Time now, Write& write) {
  std::vector<GpuKey> due;
  for (const auto& [node, device] : catalog.mig_gpus().planned()) {
    const Device* d = FindDevice(catalog.nodes().find(node)->second, device);
    if (d->mig_plan->deadline <= now) due.emplace_back(node, device);
  }
  // Forget backoffs that have run out, so that the map stays small.
  absl::erase_if(backoff_,
                 [&](const auto& entry) { return entry.second <= now; });
  std::set<std::string> released;
  for (auto it = lapsed_.begin(); it != lapsed_.end();) {
    if (it->second.until <= now) {
      released.insert(it->first.first);
      it = lapsed_.erase(it);
    } else {
      ++it;
    }
  }
  std::erase_if(released_,
                [&](const auto& entry) { return entry.second.until <= now; });
  for (const std::string& node : released) catalog.RefreshNode(node);
  for (const auto& [node, device] : due) {
    // Its agent may have started just before the deadline: the slices it
    // planned away stay out of service for one more timeout, or until the
    // node registers what it has.
    Drop(catalog, node, device, 0,
         "the node did not report the layout by its deadline", now, write,
         now + timeout_);
  }
  return !due.empty();
}

std::vector<std::string> MigRelayouts::Registered(
    const std::string& node, const std::vector<MigPlanEnd>& ends,
    absl::Time now, Write& write) {
  std::vector<std::string> applied;
  for (const MigPlanEnd& end : ends) {
    if (end.applied) {  // the registration itself says so
      applied.push_back(end.plan.allocation_id);
      continue;
    }
    backoff_[end.device_id] = now + timeout_;
    write.events.push_back(
        Event{Event::Type::kMigRelayoutDropped,
              now,
              {},
              node,
              absl::StrCat(end.device_id, ": plan of generation ",
                           end.plan.generation, " dropped: ", end.reason),
              0});
  }
  return applied;
}

bool MigRelayouts::Failed(Catalog& catalog, const std::string& node,
                          const std::string& device_id, uint64_t generation,
                          absl::string_view error, absl::Time now,
                          Write& write) {
  if (Drop(catalog, node, device_id, generation,
           absl::StrCat("the node's agent could not apply it: ", error), now,
           write)) {
    return true;
  }
  // Dropped at its deadline already, its slices held for an agent that
  // might still be under way: it has now said it stopped.
  auto it = lapsed_.find({node, device_id});
  if (it == lapsed_.end() || it->second.plan.generation != generation) {
    return false;
  }
  released_.insert_or_assign(it->first, std::move(it->second));
  lapsed_.erase(it);
  catalog.RefreshNode(node);
  return true;
}

const MigPlan* MigRelayouts::LapsedPlan(absl::string_view node,
                                        absl::string_view device_id) const {
  auto it = lapsed_.find({std::string(node), std::string(device_id)});
  return it == lapsed_.end() ? nullptr : &it->second.plan;
}

void MigRelayouts::NodeReported(absl::string_view node) {
  auto first = lapsed_.lower_bound({std::string(node), ""});
  auto last = first;
  for (; last != lapsed_.end() && last->first.first == node; ++last) {
    released_.insert_or_assign(last->first, last->second);
  }
  lapsed_.erase(first, last);
}

}  // namespace accelsched
