// What one acknowledged call changes: its mutations and the events they
// announce, queued together for one commit (GroupCommitter::Enqueue). Plain
// value.
#ifndef ACCELSCHED_CORE_COMMIT_WRITE_H_
#define ACCELSCHED_CORE_COMMIT_WRITE_H_

#include <vector>

#include "core/commit/store.h"
#include "core/model/allocation_model.h"

namespace accelsched {

struct Write {
  std::vector<Mutation> mutations;
  std::vector<Event> events;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_COMMIT_WRITE_H_
