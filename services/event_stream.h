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

#include <memory>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "accelsched/v1/accelsched.pb.h"
#include "core/event_hub.h"
#include "core/placement.h"

namespace accelsched {

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
  static EventStream* Start(EventHub* hub, EventFilter filter,
                            PlacementOptions placement, OnFinish on_finish,
                            OnDoneCallback on_done);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  EventStream(EventHub* hub, PlacementOptions placement, OnFinish on_finish,
              OnDoneCallback on_done);
  // Writes the next event, or ends the stream with the watcher's error, or
  // (nothing waiting) leaves it to the hub's ready callback.
  void WriteNext() ABSL_LOCKS_EXCLUDED(mu_);
  void End(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  EventHub* const hub_;
  const PlacementOptions placement_;
  std::shared_ptr<EventHub::Watcher> watcher_;
  // Orders the hub's ready callback against gRPC's reactions: never a write
  // after Finish.
  absl::Mutex mu_;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  OnFinish on_finish_ ABSL_GUARDED_BY(mu_);
  OnDoneCallback on_done_;                  // run by OnDone only
  v1::Event message_ ABSL_GUARDED_BY(mu_);  // the write in flight
};

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_EVENT_STREAM_H_
