// The request_mix plugin (PreFilter, new requests): counts every request that
// could be held somewhere in the recent mix of requests (core/packing/
// request_mix.h), before it is placed, so that packing weighs free capacity
// against what is asked now, the request itself included: each of its
// groups as one shape of `count` units and its pod, for each model it
// accepts (weight 1 / their number) or for any model. Shares are not
// counted: they are placed per GPU, not by units. Counted into the
// snapshot's count_into (a copy in Explain); never refuses.
#ifndef ACCELSCHED_CORE_PLUGINS_REQUEST_MIX_REQUEST_MIX_H_
#define ACCELSCHED_CORE_PLUGINS_REQUEST_MIX_REQUEST_MIX_H_

#include <memory>

#include "absl/time/time.h"
#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"
#include "core/model/request_spec.h"
#include "core/packing/request_mix.h"

namespace accelsched {

// Counts `spec` in `mix` as of `now`, as the plugin does.
void CountInMix(const RequestSpec& spec, absl::Time now, RequestMix& mix);

class RequestMixPlugin final : public PreFilterPlugin {
 public:
  static constexpr char kName[] = "request_mix";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  bool ForNewRequests() const override { return true; }
  Verdict PreFilter(Session& session, CycleState& cycle) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_REQUEST_MIX_REQUEST_MIX_H_
