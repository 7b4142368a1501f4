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
  // A request whose lease ends before the hold starts may take the node
  // meanwhile (a backfill).
  const Reservation* r = cycle.holds()->HoldForOther(
      *node.pool, node.name, cycle.request().id, cycle.request().priority);
  return r != nullptr && cycle.ends().lease() > r->start ? kHeld : nullptr;
}

absl::string_view ReservationsPlugin::ExcludedNote() const {
  return "what is free there is held for waiting requests until their "
         "reservations start (a request whose lease ends by then may take "
         "it)";
}

}  // namespace accelsched
