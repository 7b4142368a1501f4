#include "services/event_stream.h"

#include <utility>

#include "services/grpc_status.h"
#include "services/proto_convert.h"

namespace accelsched {

std::shared_ptr<const v1::Event> EventMessages::Get(const Event& event) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = by_sequence_.try_emplace(event.sequence);
  if (inserted) {
    auto message = std::make_shared<v1::Event>();
    EventToProto(event, placement_, message.get());
    it->second = std::move(message);
    order_.push_back(event.sequence);
    if (order_.size() > kKept) {
      by_sequence_.erase(order_.front());
      order_.pop_front();
    }
  }
  return it->second;
}

EventStream* EventStream::Start(EventHub* hub, EventFilter filter,
                                EventMessages* messages, OnFinish on_finish,
                                OnDoneCallback on_done) {
  auto* stream =
      new EventStream(hub, messages, std::move(on_finish), std::move(on_done));
  // The watcher starts quiet: events published before the first WriteNext
  // wait for it rather than call back.
  stream->watcher_ =
      hub->Subscribe(std::move(filter), [stream] { stream->WriteNext(); });
  stream->WriteNext();
  return stream;
}

EventStream::EventStream(EventHub* hub, EventMessages* messages,
                         OnFinish on_finish, OnDoneCallback on_done)
    : hub_(hub),
      messages_(messages),
      on_finish_(std::move(on_finish)),
      on_done_(std::move(on_done)) {}

void EventStream::WriteNext() {
  absl::MutexLock lock(&mu_);
  if (finished_) return;
  absl::StatusOr<std::shared_ptr<const Event>> next = watcher_->TryNext();
  if (!next.ok()) {
    End(next.status());
  } else if (*next != nullptr) {
    writing_ = messages_->Get(**next);
    StartWrite(writing_.get());
  }
}

void EventStream::OnWriteDone(bool ok) {
  if (ok) {
    WriteNext();
    return;
  }
  // The client went away; OnCancel may follow.
  absl::MutexLock lock(&mu_);
  End(absl::OkStatus());
}

void EventStream::OnCancel() {
  absl::MutexLock lock(&mu_);
  End(absl::OkStatus());
}

void EventStream::End(const absl::Status& status) {
  if (finished_) return;
  finished_ = true;
  std::move(on_finish_)(status);
  Finish(ToGrpcStatus(status));
}

void EventStream::OnDone() {
  // After this no ready callback runs, so the stream can go.
  hub_->Unsubscribe(watcher_);
  std::move(on_done_)();
  delete this;
}

}  // namespace accelsched
