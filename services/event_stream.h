// One WatchEvents stream on gRPC's callback API: a ServerWriteReactor fed by
// the event hub. It holds no thread: the hub's ready callback starts a write
// when events arrive after a quiet spell, and each finished write starts the
// next, so at most one write is in flight. A stream whose watcher fell behind
// ends with RESOURCE_EXHAUSTED, one open while the server stops with
// UNAVAILABLE; a cancelled one is unsubscribed and freed as soon as gRPC is
// done with it.
#ifndef ACCELSCHED_SERVICES_EVENT_STREAM_H_
#define ACCELSCHED_SERVICES_EVENT_STREAM_H_

#include <grpcpp/support/server_callback.h>

#include <cstdint>
#include <deque>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "accelsched/v1/accelsched.pb.h"
#include "core/commit/event_hub.h"
#include "core/placement/placement.h"

namespace accelsched {

// The gRPC message of each recent event, converted once for all the streams
// that write it (placement JSON included): a stream holds the message it is
// writing, and this keeps the last kKept for the streams still behind.
// Thread-safe.
class EventMessages {
 public:
  explicit EventMessages(PlacementOptions placement) : placement_(placement) {}
  // `event` as a message; converted on the first call for its sequence
  // number, then shared while it is among the last kKept events asked for.
  std::shared_ptr<const v1::Event> Get(const Event& event);

 private:
  static constexpr size_t kKept = 256;
  const PlacementOptions placement_;
  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<const v1::Event>> by_sequence_
      ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> order_ ABSL_GUARDED_BY(mu_);  // oldest first
};

class EventStream final : public grpc::ServerWriteReactor<v1::Event> {
 public:
  // Runs once, with the status the stream ends with, as it finishes.
  using OnFinish = absl::AnyInvocable<void(const absl::Status&) &&>;
  // Runs once, after OnFinish, when gRPC is done with the stream (its status
  // sent, or the call cancelled).
  using OnDoneCallback = absl::AnyInvocable<void() &&>;

  // Subscribes to `hub` (which must outlive the stream) and starts streaming.
  // The stream deletes itself when gRPC is done with it. A stream whose write
  // is held by a client that does not read ends when the client reads again
  // or the call is cancelled.
  // `messages` must outlive the stream too.
  static EventStream* Start(EventHub* hub, EventFilter filter,
                            EventMessages* messages, OnFinish on_finish,
                            OnDoneCallback on_done);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  EventStream(EventHub* hub, EventMessages* messages, OnFinish on_finish,
              OnDoneCallback on_done);
  // Writes the next event, or ends the stream with the watcher's error, or
  // (nothing waiting) leaves it to the hub's ready callback.
  void WriteNext() ABSL_LOCKS_EXCLUDED(mu_);
  void End(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  EventHub* const hub_;
  EventMessages* const messages_;
  std::shared_ptr<EventHub::Watcher> watcher_;
  // Orders the hub's ready callback against gRPC's reactions: never a write
  // after Finish.
  absl::Mutex mu_;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  OnFinish on_finish_ ABSL_GUARDED_BY(mu_);
  OnDoneCallback on_done_;  // run by OnDone only
  // The message of the write in flight, kept until it is done.
  std::shared_ptr<const v1::Event> writing_ ABSL_GUARDED_BY(mu_);
};

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_EVENT_STREAM_H_
