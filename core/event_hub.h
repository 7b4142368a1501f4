// Fan-out of committed changes to watchers. Publishing never blocks on a
// watcher: each has a bounded buffer, and one that falls behind is dropped and
// told so. Thread-safe.
#ifndef ACCELSCHED_CORE_EVENT_HUB_H_
#define ACCELSCHED_CORE_EVENT_HUB_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/allocation_model.h"

namespace accelsched {

class EventHub {
 public:
  class Watcher {
   public:
    explicit Watcher(size_t capacity) : capacity_(capacity) {}
    // The next event; nullopt when none came within `timeout`;
    // RESOURCE_EXHAUSTED once this watcher fell behind (its buffer filled) and
    // was dropped.
    absl::StatusOr<std::optional<Event>> Next(absl::Duration timeout);

   private:
    friend class EventHub;
    // False when the buffer is full: the watcher is then marked as fallen
    // behind.
    bool Offer(const Event& e);

    const size_t capacity_;
    absl::Mutex mu_;
    std::deque<Event> queue_ ABSL_GUARDED_BY(mu_);
    bool fell_behind_ ABSL_GUARDED_BY(mu_) = false;
  };

  // `buffer`: events a watcher may have waiting before it is dropped.
  explicit EventHub(size_t buffer) : buffer_(buffer) {}
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  // Called for every published event, in order, on the publishing thread; must
  // be quick and must not call back into the hub (metrics use it to count).
  using Listener = std::function<void(const Event&)>;
  void AddListener(Listener listener);

  std::shared_ptr<Watcher> Subscribe();
  void Unsubscribe(const std::shared_ptr<Watcher>& watcher);
  // Hands the events, in order, to every listener and watcher. Their sequence
  // numbers are the committer's (see GroupCommitter), kept as they are.
  void Publish(std::vector<Event> events);

  size_t watchers() const;
  uint64_t dropped() const;

 private:
  const size_t buffer_;
  mutable absl::Mutex mu_;
  std::list<std::shared_ptr<Watcher>> watchers_ ABSL_GUARDED_BY(mu_);
  std::vector<Listener> listeners_ ABSL_GUARDED_BY(mu_);
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_EVENT_HUB_H_
