// A session: what the cycles of one admission pass, one Allocate or one
// Explain share (KAI-Scheduler's session): the snapshot they read, the holds
// they read and make, the statement through which they act, the requests
// placed in it, and what each plugin keeps for the session. Not
// thread-safe: one session, one thread, under the scheduler's lock.
#ifndef ACCELSCHED_CORE_FRAMEWORK_SESSION_H_
#define ACCELSCHED_CORE_FRAMEWORK_SESSION_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "core/framework/holds.h"
#include "core/framework/plugin.h"
#include "core/framework/snapshot.h"
#include "core/framework/statement.h"

namespace accelsched {

class Framework;

// What one plugin keeps for one session (Session::StateOf).
struct SessionState {
  virtual ~SessionState() = default;
};

class Session {
 public:
  // None is owned: each must outlive the session. `statement` changes the
  // scheduler's state (a pass), or records only (Explain, DryStatement).
  Session(const Framework& framework, const Snapshot& snapshot, Holds& holds,
          CycleStatement& statement)
      : framework_(framework),
        snapshot_(snapshot),
        holds_(holds),
        statement_(statement) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Framework& framework() const { return framework_; }
  const Snapshot& snapshot() const { return snapshot_; }
  Holds& holds() { return holds_; }
  const Holds& holds() const { return holds_; }
  CycleStatement& statement() { return statement_; }

  // Requests given units in this session: none is taken back in it (a
  // victim).
  void NotePlaced(const std::string& id) { placed_.insert(id); }
  bool placed(absl::string_view id) const { return placed_.contains(id); }

  // What `plugin` keeps for this session: a T (a SessionState constructible
  // from the session), made on first use.
  template <typename T>
  T& StateOf(const Plugin& plugin) {
    auto [it, fresh] = states_.try_emplace(&plugin);
    if (fresh) it->second = std::make_unique<T>(*this);
    return static_cast<T&>(*it->second);
  }

 private:
  const Framework& framework_;
  const Snapshot& snapshot_;
  Holds& holds_;
  CycleStatement& statement_;
  absl::flat_hash_set<std::string> placed_;
  absl::flat_hash_map<const Plugin*, std::unique_ptr<SessionState>> states_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_FRAMEWORK_SESSION_H_
