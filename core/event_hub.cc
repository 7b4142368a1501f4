#include "core/event_hub.h"

#include "absl/strings/str_cat.h"

namespace accelsched {

absl::StatusOr<std::optional<Event>> EventHub::Watcher::Next(
    absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return fell_behind_ || !queue_.empty();
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  if (fell_behind_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "watcher fell behind: more than ", capacity_,
        " events were waiting; list the state again and start a new watch"));
  }
  if (queue_.empty()) return std::nullopt;
  Event e = std::move(queue_.front());
  queue_.pop_front();
  return e;
}

bool EventHub::Watcher::Offer(const Event& e) {
  absl::MutexLock lock(&mu_);
  if (fell_behind_) return false;
  if (queue_.size() >= capacity_) {
    fell_behind_ = true;
    queue_.clear();
    return false;
  }
  queue_.push_back(e);
  return true;
}

void EventHub::AddListener(Listener listener) {
  absl::MutexLock lock(&mu_);
  listeners_.push_back(std::move(listener));
}

std::shared_ptr<EventHub::Watcher> EventHub::Subscribe() {
  auto w = std::make_shared<Watcher>(buffer_);
  absl::MutexLock lock(&mu_);
  watchers_.push_back(w);
  return w;
}

void EventHub::Unsubscribe(const std::shared_ptr<Watcher>& watcher) {
  absl::MutexLock lock(&mu_);
  watchers_.remove(watcher);
}

void EventHub::Publish(std::vector<Event> events) {
  absl::MutexLock lock(&mu_);
  for (const Event& e : events) {
    for (const Listener& listener : listeners_) listener(e);
    for (auto it = watchers_.begin(); it != watchers_.end();) {
      if ((*it)->Offer(e)) {
        ++it;
      } else {
        ++dropped_;
        it = watchers_.erase(it);
      }
    }
  }
}

size_t EventHub::watchers() const {
  absl::MutexLock lock(&mu_);
  return watchers_.size();
}

uint64_t EventHub::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

}  // namespace accelsched
