// The reservations plugin (Filter, held): a node's units of a pool held for
// another waiting request (core/framework/holds.h) are not taken, unless the
// request's own lease ends by the hold's start (conservative backfill), or
// the hold is a nominated or planned-ahead one of a lower priority (which
// yields). What it leaves out is held for a time, not for good: Explain's
// per-node account does not weigh it, and a request refused only for holds
// is told so apart.
#ifndef ACCELSCHED_CORE_PLUGINS_RESERVATIONS_RESERVATIONS_H_
#define ACCELSCHED_CORE_PLUGINS_RESERVATIONS_RESERVATIONS_H_

#include <memory>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"

namespace accelsched {

class ReservationsPlugin final : public FilterPlugin {
 public:
  static constexpr char kName[] = "reservations";
  static constexpr char kHeld[] = "held for a waiting request";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  Kind kind() const override { return Kind::kHeld; }
  // Only when the cycle reads holds and there are any.
  bool Prepare(CycleState& cycle) const override;
  // kHeld when node.pool's units on node.name are held for another request
  // against this one, else nullptr.
  const char* Filter(const CycleState& cycle,
                     const NodeView& node) const override;
  bool in_account() const override { return false; }
  absl::string_view ExcludedNote() const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_RESERVATIONS_RESERVATIONS_H_
