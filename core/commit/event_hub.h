// Fan-out of committed changes to watchers. Publishing never blocks on a
// watcher: each has a bounded buffer, and one that falls behind is dropped and
// told so. A watcher is either read by a thread that blocks (Next) or, for a
// server that holds no thread per watcher, notified when it has something to
// take (TryNext). Thread-safe.
#ifndef ACCELSCHED_CORE_COMMIT_EVENT_HUB_H_
#define ACCELSCHED_CORE_COMMIT_EVENT_HUB_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/model/allocation_model.h"

namespace accelsched {

// Which events a watcher gets: every field that is set must match.
struct EventFilter {
  std::string tenant;      // allocation events of this tenant
  std::string request_id;  // allocation events of this request
  // Events of this node: events naming it (catalog events, a MIG re-layout
  // planned there), allocation events of an allocation with a device on it.
  std::string node;

  bool Matches(const Event& event) const;
};

class EventHub {
 public:
  // Called when a watcher that had nothing to take has something: an event,
  // or the error that ends it. Runs on the publishing thread under the hub's
  // lock (so that Unsubscribe, once returned, guarantees no call is running or
  // will run): it must be quick and must not call into the hub.
  using ReadyCallback = absl::AnyInvocable<void()>;

  class Watcher {
   public:
    Watcher(size_t capacity, EventFilter filter, ReadyCallback on_ready)
        : capacity_(capacity),
          filter_(std::move(filter)),
          index_key_(IndexKey(filter_)),
          on_ready_(std::move(on_ready)) {}
    // The next event; nullopt when none came within `timeout`; the error that
    // ended the watcher otherwise (see TryNext).
    absl::StatusOr<std::optional<Event>> Next(absl::Duration timeout);
    // The next event without waiting; nullptr when there is none, and then the
    // ready callback runs when there is (never before the first TryNext).
    // RESOURCE_EXHAUSTED once this watcher fell behind (its buffer filled) and
    // was dropped; UNAVAILABLE once the hub closed (the server is stopping).
    absl::StatusOr<std::shared_ptr<const Event>> TryNext();

   private:
    friend class EventHub;
    // Takes `e` when it matches; false when the buffer is full (the watcher is
    // then marked as fallen behind). Sets `notify` when the ready callback is
    // due.
    bool Offer(const std::shared_ptr<const Event>& e, bool* notify);
    // Ends the watcher with `status` (the hub closed); sets `notify` as Offer.
    void End(absl::Status status, bool* notify);

    const size_t capacity_;
    const EventFilter filter_;
    // Where the hub files it (EventHub::IndexKey).
    const std::pair<int, std::string> index_key_;
    ReadyCallback on_ready_;  // called by the hub under its lock only
    absl::Mutex mu_;
    std::deque<std::shared_ptr<const Event>> queue_ ABSL_GUARDED_BY(mu_);
    absl::Status ended_ ABSL_GUARDED_BY(mu_);  // not OK once ended
    // The last TryNext found nothing: the next event or error notifies. A new
    // watcher is quiet until its first TryNext, so that its owner can start
    // reading without racing a callback.
    bool armed_ ABSL_GUARDED_BY(mu_) = false;
  };

  // `buffer`: events a watcher may have waiting before it is dropped.
  explicit EventHub(size_t buffer) : buffer_(buffer) {}
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  // Called for every published event, in order, on the publishing thread; must
  // be quick and must not call back into the hub (metrics use it to count).
  using Listener = std::function<void(const Event&)>;
  void AddListener(Listener listener);

  // A watcher of the events matching `filter` published from now on.
  // `on_ready` may be empty (a reader that blocks in Next). After Close the
  // watcher is born ended with UNAVAILABLE.
  std::shared_ptr<Watcher> Subscribe(EventFilter filter = {},
                                     ReadyCallback on_ready = nullptr);
  // Stops notifying `watcher`; once it returns its ready callback neither runs
  // nor will run.
  void Unsubscribe(const std::shared_ptr<Watcher>& watcher);
  // Hands the events, in order, to every listener and matching watcher. Their
  // sequence numbers are the committer's (see GroupCommitter), kept as they
  // are.
  void Publish(std::vector<Event> events);
  // Ends every watcher, and every later one, with UNAVAILABLE: the server is
  // stopping, and streams must end now rather than at its grace deadline.
  void Close();

  size_t watchers() const;
  uint64_t dropped() const;

 private:
  // Watchers are filed under the most selective field their filter sets
  // (request id, then tenant, then node; {0, ""} for none), so that a
  // publish visits only the watchers that may match, not every one: a
  // thousand watches of one task each cost a thousand lookups less per event.
  using Key = std::pair<int, std::string>;
  static Key IndexKey(const EventFilter& filter);
  // Where a watcher that may want `event` is filed.
  static std::vector<Key> KeysOf(const Event& event);

  const size_t buffer_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<Key, std::list<std::shared_ptr<Watcher>>> watchers_
      ABSL_GUARDED_BY(mu_);
  size_t count_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Listener> listeners_ ABSL_GUARDED_BY(mu_);
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_COMMIT_EVENT_HUB_H_
