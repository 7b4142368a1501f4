#include "services/leadership.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/pg_leader_election.h"

namespace accelsched {
namespace {

// An absl::Mutex as the lock std::condition_variable_any releases while it
// waits (abseil's has no lower-case lock()).
class Lockable {
 public:
  explicit Lockable(absl::Mutex* mu) : mu_(mu) {}
  void lock() ABSL_NO_THREAD_SAFETY_ANALYSIS { mu_->Lock(); }
  void unlock() ABSL_NO_THREAD_SAFETY_ANALYSIS { mu_->Unlock(); }

 private:
  absl::Mutex* mu_;
};

}  // namespace

Leadership::Leadership()
    : config_{.replicated = false,
              .renew_deadline = absl::InfiniteDuration(),
              .retry_period = absl::ZeroDuration()} {}

Leadership::Leadership(absl::Duration renew_deadline,
                       absl::Duration retry_period, Callbacks callbacks)
    : config_{.replicated = true,
              .renew_deadline = renew_deadline,
              .retry_period = retry_period},
      callbacks_(std::move(callbacks)) {}

Leadership::~Leadership() { Stop(); }

void Leadership::Start(std::unique_ptr<PgLeaderElection> election) {
  election_ = std::move(election);
  thread_ = std::thread([this] { Run(); });
  watch_thread_ = std::thread([this] { Watch(); });
}

void Leadership::Stop() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
  {
    absl::MutexLock lock(&mu_);
    term_.stopped = true;
    watch_cv_.notify_all();
  }
  if (watch_thread_.joinable()) watch_thread_.join();
}

void Leadership::Watch() {
  absl::MutexLock lock(&mu_);
  Lockable held(&mu_);
  while (!term_.stopped) {
    if (!term_.serving) {
      watch_cv_.wait(held);
      continue;
    }
    if (std::chrono::steady_clock::now() >= term_.valid_until) {
      SetServing(false);
      continue;
    }
    // Woken early by a renewal or a change of serving. A copy: the wait reads
    // its deadline while mu_ is released, when a renewal may write it.
    const SteadyTime until = term_.valid_until;
    watch_cv_.wait_until(held, until);
  }
}

void Leadership::Resign() {
  int64_t epoch = 0;
  {
    absl::MutexLock lock(&mu_);
    if (election_ == nullptr || term_.lost || term_.epoch == 0) return;
    epoch = term_.epoch;
  }
  if (absl::Status s = election_->Resign(epoch); !s.ok()) {
    std::fprintf(stderr, "accelschedd: resigning epoch %lld: %s\n",
                 static_cast<long long>(epoch), s.ToString().c_str());
  }
}

absl::Status Leadership::Check() const {
  if (!config_.replicated) return absl::OkStatus();
  absl::ReaderMutexLock lock(&mu_);
  const std::string leader = term_.leader_address.empty()
                                 ? std::string("not known yet")
                                 : absl::StrCat("at ", term_.leader_address);
  if (term_.lost) {
    return absl::UnavailableError(absl::StrCat(
        "this server is no longer the leader; the leader is ", leader));
  }
  if (term_.epoch == 0) {
    return absl::UnavailableError(
        absl::StrCat("this server is a follower; the leader is ", leader));
  }
  if (!term_.loaded) {
    return absl::UnavailableError(
        "this server was just elected leader and is loading its state");
  }
  if (std::chrono::steady_clock::now() >= term_.valid_until) {
    return absl::UnavailableError(
        absl::StrCat("this server could not renew its leadership within ",
                     absl::FormatDuration(config_.renew_deadline), ": ",
                     term_.last_error.empty() ? "renewing" : term_.last_error));
  }
  return absl::OkStatus();
}

bool Leadership::lost() const {
  absl::ReaderMutexLock lock(&mu_);
  return term_.lost;
}

int64_t Leadership::epoch() const {
  absl::ReaderMutexLock lock(&mu_);
  return term_.epoch;
}

void Leadership::SetServing(bool serving) {
  if (serving == term_.serving) return;
  term_.serving = serving;
  watch_cv_.notify_all();
  if (callbacks_.serving && !term_.stopped)
    callbacks_.serving(serving, term_.epoch);
}

void Leadership::Lose(const std::string& why) {
  {
    absl::MutexLock lock(&mu_);
    if (term_.lost) return;
    term_.lost = true;
    SetServing(false);
    if (term_.stopped) return;
  }
  std::fprintf(stderr, "accelschedd: lost the leadership: %s\n", why.c_str());
  if (callbacks_.lost) callbacks_.lost(why);
}

void Leadership::LogOnce(const absl::Status& error) {
  const std::string text = error.ToString();
  {
    absl::MutexLock lock(&mu_);
    if (text == term_.last_error) return;
    term_.last_error = text;
  }
  std::fprintf(stderr, "accelschedd: leader election: %s\n", text.c_str());
}

void Leadership::Run() {
  absl::Duration wait;
  do {
    int64_t epoch = 0;
    {
      absl::ReaderMutexLock lock(&mu_);
      if (term_.lost) return;
      epoch = term_.epoch;
    }
    wait = config_.retry_period;
    if (epoch == 0) {
      wait = std::min(wait, Campaign());
    } else {
      Renew();
    }
  } while (!stop_.WaitForNotificationWithTimeout(wait));
}

absl::Duration Leadership::Campaign() {
  const SteadyTime start = std::chrono::steady_clock::now();
  absl::StatusOr<int64_t> epoch = election_->TryAcquire();
  if (!epoch.ok()) {
    LogOnce(epoch.status());
    return config_.retry_period;
  }
  if (*epoch == 0) {
    // Tried again as the holder's lease or deadline runs out (a killed
    // leader's successor is not a retry period late), just after it.
    const absl::Duration next =
        election_->next_attempt() + absl::Milliseconds(1);
    absl::StatusOr<PgLeaderElection::Leader> leader = election_->Current();
    if (!leader.ok()) {
      LogOnce(leader.status());
      return next;
    }
    absl::MutexLock lock(&mu_);
    term_.leader_address = leader->address;
    return next;
  }
  {
    absl::MutexLock lock(&mu_);
    term_.epoch = *epoch;
    term_.valid_until =
        start + absl::ToChronoNanoseconds(config_.renew_deadline);
    term_.last_error.clear();
  }
  std::fprintf(stderr, "accelschedd: elected leader, epoch %lld\n",
               static_cast<long long>(*epoch));
  Promote(*epoch);
  return config_.retry_period;
}

void Leadership::Promote(int64_t epoch) {
  const absl::Time start = absl::Now();
  if (absl::Status s = callbacks_.promote(epoch); !s.ok()) {
    const absl::Status error(
        s.code(), absl::StrCat("loading the state as leader: ", s.message()));
    // A state this server cannot load (DATA_LOSS: a type its
    // --accelerator_types lacks) is not a passing fault: holding the lease
    // would keep every other replica from serving for as long as this one
    // lives, and a replica that can load takes over at once. Anything else
    // (the database busy, restarting, out of memory) is tried again.
    if (!absl::IsDataLoss(s) && !absl::IsInvalidArgument(s) &&
        !absl::IsFailedPrecondition(s)) {
      return LogOnce(error);
    }
    LogOnce(error);
    if (absl::Status r = election_->Resign(epoch); !r.ok()) LogOnce(r);
    return Lose(absl::StrCat(error.message(), "; resigned the leadership"));
  }
  absl::MutexLock lock(&mu_);
  term_.loaded = true;
  SetServing(std::chrono::steady_clock::now() < term_.valid_until);
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
    epoch = term_.epoch;
    loaded = term_.loaded;
  }
  const SteadyTime start = std::chrono::steady_clock::now();
  absl::Status s = election_->Renew(epoch);
  if (absl::IsFailedPrecondition(s)) return Lose(std::string(s.message()));
  // Serving ends at the deadline by Watch, whether this failed or hangs.
  if (!s.ok()) return LogOnce(s);
  {
    absl::MutexLock lock(&mu_);
    term_.valid_until =
        start + absl::ToChronoNanoseconds(config_.renew_deadline);
    watch_cv_.notify_all();
    term_.last_error.clear();
    if (term_.loaded)
      SetServing(std::chrono::steady_clock::now() < term_.valid_until);
  }
  if (!loaded) Promote(epoch);
}

}  // namespace accelsched
