// What a scheduling cycle changes, done through the scheduler
// (KAI-Scheduler's Statement): each call changes the allocation book and the
// catalog at once, so that the rest of the session sees it, and queues its
// write. Explain's statement changes nothing: it only records.
#ifndef ACCELSCHED_CORE_FRAMEWORK_STATEMENT_H_
#define ACCELSCHED_CORE_FRAMEWORK_STATEMENT_H_

#include <string>

#include "core/framework/plugin.h"
#include "core/relayout/relayout_choice.h"

namespace accelsched {

class CycleStatement {
 public:
  virtual ~CycleStatement() = default;
  // Gives pending `id` the units of `groups` (ACTIVE from now).
  virtual void Place(const std::string& id, const Groups& groups) = 0;
  // Preempts live `victim` for pending `preemptor`: it keeps its units for
  // the preemption grace (never past its lease).
  virtual void Preempt(const std::string& victim,
                       const std::string& preemptor) = 0;
  // Re-lays out MIG GPUs as `choice` says, for pending `id`.
  virtual void PlanMigRelayout(const std::string& id,
                               const RelayoutChoice& choice) = 0;
};

// A statement that changes nothing (Explain's dry run, a cycle of a bare
// index): PostFilter actions act on the session's scratch holds only.
class DryStatement final : public CycleStatement {
 public:
  void Place(const std::string&, const Groups&) override {}
  void Preempt(const std::string&, const std::string&) override {}
  void PlanMigRelayout(const std::string&, const RelayoutChoice&) override {}
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_FRAMEWORK_STATEMENT_H_
