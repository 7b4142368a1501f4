// Explain's record of a scheduling cycle (ExplainResponse.steps): every
// plugin the cycle ran for the request, in the order it ran, how many
// candidate nodes reached it and how many it let through, and what it
// decided. The cycle writes it as it runs (only in Explain), so Explain
// reports what Allocate and the admission pass do: the same code.
#ifndef ACCELSCHED_CORE_FRAMEWORK_CYCLE_RECORD_H_
#define ACCELSCHED_CORE_FRAMEWORK_CYCLE_RECORD_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace accelsched {

struct CycleStep {
  std::string plugin;
  std::string extension_point;  // ExtensionPointName
  int nodes_in = 0;
  int nodes_out = 0;
  std::string detail;  // "preempted 2 allocations"; "" for nothing to say

  bool operator==(const CycleStep&) const = default;
};

class CycleRecord {
 public:
  void Add(CycleStep step) { steps_.push_back(std::move(step)); }
  const std::vector<CycleStep>& steps() const { return steps_; }
  std::vector<CycleStep> Take() { return std::move(steps_); }

 private:
  std::vector<CycleStep> steps_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_FRAMEWORK_CYCLE_RECORD_H_
