#include "core/commit/event_hub.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace accelsched {

bool EventFilter::Matches(const Event& event) const {
  // Catalog events carry no allocation: they have no tenant or request.
  const bool allocation_event = !event.allocation.id.empty();
  if (!tenant.empty() &&
      (!allocation_event || event.allocation.tenant != tenant)) {
    return false;
  }
  if (!request_id.empty() &&
      (!allocation_event || event.allocation.request_id != request_id)) {
    return false;
  }
  if (!node.empty()) {
    // An event naming the node (a MIG re-layout planned there carries the
    // pending allocation it is for, which has no devices yet), or an
    // allocation's with a device on it.
    return event.node == node ||
           (allocation_event && event.allocation.touches(node));
  }
  return true;
}

absl::StatusOr<std::optional<Event>> EventHub::Watcher::Next(
    absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !ended_.ok() || !queue_.empty();
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  if (!ended_.ok()) return ended_;
  if (queue_.empty()) return std::nullopt;
  Event e = *queue_.front();
  queue_.pop_front();
  return e;
}

absl::StatusOr<std::shared_ptr<const Event>> EventHub::Watcher::TryNext() {
  absl::MutexLock lock(&mu_);
  if (!ended_.ok()) return ended_;
  if (queue_.empty()) {
    armed_ = true;
    return nullptr;
  }
  std::shared_ptr<const Event> e = std::move(queue_.front());
  queue_.pop_front();
  return e;
}

bool EventHub::Watcher::Offer(const std::shared_ptr<const Event>& e,
                              bool* notify) {
  if (!filter_.Matches(*e)) return true;
  absl::MutexLock lock(&mu_);
  if (!ended_.ok()) return false;
  if (queue_.size() >= capacity_) {
    ended_ = absl::ResourceExhaustedError(absl::StrCat(
        "watcher fell behind: more than ", capacity_,
        " events were waiting; list the state again and start a new watch"));
    queue_.clear();
  } else {
    queue_.push_back(e);
  }
  *notify = *notify || armed_;
  armed_ = false;
  return ended_.ok();
}

void EventHub::Watcher::End(absl::Status status, bool* notify) {
  absl::MutexLock lock(&mu_);
  if (!ended_.ok()) return;
  ended_ = std::move(status);
  queue_.clear();
  *notify = armed_;
  armed_ = false;
}

namespace {
enum KeyKind { kAny = 0, kRequest = 1, kTenant = 2, kNode = 3 };
}  // namespace

EventHub::Key EventHub::IndexKey(const EventFilter& filter) {
  if (!filter.request_id.empty()) return {kRequest, filter.request_id};
  if (!filter.tenant.empty()) return {kTenant, filter.tenant};
  if (!filter.node.empty()) return {kNode, filter.node};
  return {kAny, ""};
}

std::vector<EventHub::Key> EventHub::KeysOf(const Event& event) {
  std::vector<Key> keys = {{kAny, ""}};
  if (event.allocation.id.empty()) {
    keys.push_back({kNode, event.node});
    return keys;
  }
  const Allocation& a = event.allocation;
  keys.push_back({kRequest, a.request_id});
  keys.push_back({kTenant, a.tenant});
  auto add_node = [&keys](const std::string& name) {
    Key node{kNode, name};
    if (std::find(keys.begin(), keys.end(), node) == keys.end()) {
      keys.push_back(std::move(node));
    }
  };
  for (const AllocatedDevice& d : a.devices) add_node(d.node);
  // Named by the event (EventFilter::Matches).
  if (!event.node.empty()) add_node(event.node);
  return keys;
}

void EventHub::AddListener(Listener listener) {
  absl::MutexLock lock(&mu_);
  listeners_.push_back(std::move(listener));
}

namespace {

absl::Status Closed() {
  return absl::UnavailableError(
      "the server is stopping; watch again (another replica or after the "
      "restart)");
}

}  // namespace

std::shared_ptr<EventHub::Watcher> EventHub::Subscribe(EventFilter filter,
                                                       ReadyCallback on_ready) {
  auto w = std::make_shared<Watcher>(buffer_, std::move(filter),
                                     std::move(on_ready));
  absl::MutexLock lock(&mu_);
  if (closed_) {
    bool unused = false;
    w->End(Closed(), &unused);
  } else {
    watchers_[w->index_key_].push_back(w);
    ++count_;
  }
  return w;
}

void EventHub::Unsubscribe(const std::shared_ptr<Watcher>& watcher) {
  absl::MutexLock lock(&mu_);
  auto it = watchers_.find(watcher->index_key_);
  if (it == watchers_.end()) return;
  const size_t before = it->second.size();
  it->second.remove(watcher);
  count_ -= before - it->second.size();
  if (it->second.empty()) watchers_.erase(it);
}

void EventHub::Publish(std::vector<Event> events) {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<Watcher>> ready;
  for (Event& e : events) {
    for (const Listener& listener : listeners_) listener(e);
    if (count_ == 0) continue;
    const auto shared = std::make_shared<const Event>(std::move(e));
    for (const Key& key : KeysOf(*shared)) {
      auto filed = watchers_.find(key);
      if (filed == watchers_.end()) continue;
      std::list<std::shared_ptr<Watcher>>& list = filed->second;
      for (auto it = list.begin(); it != list.end();) {
        bool notify = false;
        const bool kept = (*it)->Offer(shared, &notify);
        // At most once per watcher and batch: it reads until it finds
        // nothing.
        if (notify) ready.push_back(*it);
        if (kept) {
          ++it;
        } else {
          ++dropped_;
          --count_;
          it = list.erase(it);
        }
      }
      if (list.empty()) watchers_.erase(filed);
    }
  }
  // Under the hub's lock (see ReadyCallback); a dropped watcher is told too.
  for (const std::shared_ptr<Watcher>& w : ready) {
    if (w->on_ready_) w->on_ready_();
  }
}

void EventHub::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  for (const auto& [key, list] : watchers_) {
    for (const std::shared_ptr<Watcher>& w : list) {
      bool notify = false;
      w->End(Closed(), &notify);
      if (notify && w->on_ready_) w->on_ready_();
    }
  }
  watchers_.clear();
  count_ = 0;
}

size_t EventHub::watchers() const {
  absl::MutexLock lock(&mu_);
  return count_;
}

uint64_t EventHub::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

}  // namespace accelsched
