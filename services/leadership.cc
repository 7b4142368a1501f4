#include "services/leadership.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/pg_leader_election.h"

namespace accelsched {

Leadership::Leadership()
    : replicated_(false),
      lease_(absl::InfiniteDuration()),
      retry_period_(absl::ZeroDuration()) {}

Leadership::Leadership(absl::Duration lease, absl::Duration retry_period,
                       Callbacks callbacks)
    : replicated_(true),
      lease_(lease),
      retry_period_(retry_period),
      callbacks_(std::move(callbacks)) {}

Leadership::~Leadership() { Stop(); }

void Leadership::Start(std::unique_ptr<PgLeaderElection> election) {
  election_ = std::move(election);
  thread_ = std::thread([this] { Run(); });
}

void Leadership::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
  absl::MutexLock lock(&mu_);
  stopped_ = true;
}

void Leadership::Resign() {
  int64_t epoch = 0;
  {
    absl::MutexLock lock(&mu_);
    if (election_ == nullptr || lost_ || epoch_ == 0) return;
    epoch = epoch_;
  }
  if (absl::Status s = election_->Resign(epoch); !s.ok()) {
    std::fprintf(stderr, "accelschedd: resigning epoch %lld: %s\n",
                 static_cast<long long>(epoch), s.ToString().c_str());
  }
}

absl::Status Leadership::Check() const {
  if (!replicated_) return absl::OkStatus();
  absl::ReaderMutexLock lock(&mu_);
  const std::string leader = leader_address_.empty()
                                 ? std::string("not known yet")
                                 : absl::StrCat("at ", leader_address_);
  if (lost_) {
    return absl::UnavailableError(absl::StrCat(
        "this server is no longer the leader; the leader is ", leader));
  }
  if (epoch_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("this server is a follower; the leader is ", leader));
  }
  if (!loaded_) {
    return absl::UnavailableError(
        "this server was just elected leader and is loading its state");
  }
  if (absl::Now() >= valid_until_) {
    return absl::UnavailableError(
        absl::StrCat("this server could not renew its leadership within ",
                     absl::FormatDuration(lease_), ": ", last_error_));
  }
  return absl::OkStatus();
}

bool Leadership::lost() const {
  absl::ReaderMutexLock lock(&mu_);
  return lost_;
}

int64_t Leadership::epoch() const {
  absl::ReaderMutexLock lock(&mu_);
  return epoch_;
}

void Leadership::SetServing(bool serving) {
  if (serving == serving_) return;
  serving_ = serving;
  if (callbacks_.serving && !stopped_) callbacks_.serving(serving, epoch_);
}

void Leadership::Lose(const std::string& why) {
  {
    absl::MutexLock lock(&mu_);
    if (lost_) return;
    lost_ = true;
    SetServing(false);
    if (stopped_) return;
  }
  std::fprintf(stderr, "accelschedd: lost the leadership: %s\n", why.c_str());
  if (callbacks_.lost) callbacks_.lost(why);
}

void Leadership::LogOnce(const absl::Status& error) {
  const std::string text = error.ToString();
  {
    absl::MutexLock lock(&mu_);
    if (text == last_error_) return;
    last_error_ = text;
  }
  std::fprintf(stderr, "accelschedd: leader election: %s\n", text.c_str());
}

void Leadership::Run() {
  do {
    int64_t epoch = 0;
    {
      absl::ReaderMutexLock lock(&mu_);
      if (lost_) return;
      epoch = epoch_;
    }
    if (epoch == 0) {
      Campaign();
    } else {
      Renew();
    }
  } while (!stop_.WaitForNotificationWithTimeout(retry_period_));
}

void Leadership::Campaign() {
  const absl::Time start = absl::Now();
  absl::StatusOr<int64_t> epoch = election_->TryAcquire();
  if (!epoch.ok()) return LogOnce(epoch.status());
  if (*epoch == 0) {
    absl::StatusOr<PgLeaderElection::Leader> leader = election_->Current();
    if (!leader.ok()) return LogOnce(leader.status());
    absl::MutexLock lock(&mu_);
    leader_address_ = leader->address;
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    epoch_ = *epoch;
    valid_until_ = start + lease_;
    last_error_.clear();
  }
  std::fprintf(stderr, "accelschedd: elected leader, epoch %lld\n",
               static_cast<long long>(*epoch));
  Promote(*epoch);
}

void Leadership::Promote(int64_t epoch) {
  const absl::Time start = absl::Now();
  if (absl::Status s = callbacks_.promote(epoch); !s.ok()) {
    return LogOnce(absl::Status(
        s.code(), absl::StrCat("loading the state as leader: ", s.message())));
  }
  absl::MutexLock lock(&mu_);
  loaded_ = true;
  SetServing(absl::Now() < valid_until_);
  std::fprintf(stderr,
               "accelschedd: serving as leader, epoch %lld (state "
               "loaded in %s)\n",
               static_cast<long long>(epoch),
               absl::FormatDuration(absl::Now() - start).c_str());
}

void Leadership::Renew() {
  int64_t epoch = 0;
  bool loaded = false;
  {
    absl::ReaderMutexLock lock(&mu_);
    epoch = epoch_;
    loaded = loaded_;
  }
  const absl::Time start = absl::Now();
  absl::Status s = election_->Renew(epoch);
  if (absl::IsFailedPrecondition(s)) return Lose(std::string(s.message()));
  if (!s.ok()) {
    LogOnce(s);
    absl::MutexLock lock(&mu_);
    if (absl::Now() >= valid_until_) SetServing(false);
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    valid_until_ = start + lease_;
    last_error_.clear();
    if (loaded_) SetServing(true);
  }
  if (!loaded) Promote(epoch);
}

}  // namespace accelsched
