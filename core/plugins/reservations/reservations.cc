#include "core/plugins/reservations/reservations.h"

namespace accelsched {

std::unique_ptr<Plugin> ReservationsPlugin::New() {
  return std::make_unique<ReservationsPlugin>();
}

bool ReservationsPlugin::Prepare(CycleState& cycle) const {
  return cycle.holds() != nullptr && !cycle.holds()->reservations().empty();
}

const char* ReservationsPlugin::Filter(const CycleState& cycle,
                                       const NodeView& node) const {
  const Reservations& held = cycle.holds()->reservations();
  auto pool = held.find(*node.pool);
  if (pool == held.end()) return nullptr;
  auto r = pool->second.find(node.name);
  if (r == pool->second.end() || r->second.held_for == cycle.request().id) {
    return nullptr;
  }
  if (r->second.YieldsTo(cycle.request().priority)) return nullptr;
  return cycle.ends_at() > r->second.start ? kHeld : nullptr;
}

absl::string_view ReservationsPlugin::ExcludedNote() const {
  return "what is free there is held for waiting requests until their "
         "reservations start (a request whose lease ends by then may take "
         "it)";
}

}  // namespace accelsched
