// Keeps the server's record of one node true: registers the node's inventory
// when the reporter starts and whenever the inventory changes (a MIG re-layout,
// a GPU gone from the bus, an edited inventory file, a new allocatable CPU,
// memory or pod count), then sends a heartbeat
// with the complete unhealthy set and the devices' readings (and MIG
// re-layout failures), returning the server's MIG plans. Not thread-safe:
// one loop owns it.
#ifndef ACCELSCHED_AGENT_NODE_REPORTER_H_
#define ACCELSCHED_AGENT_NODE_REPORTER_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "accelsched/v1/accelsched.grpc.pb.h"
#include "agent/observation.h"

namespace accelsched::agent {

class NodeReporter {
 public:
  struct Options {
    std::string node_name;
    std::map<std::string, std::string> labels;
    // Sent as "authorization: Bearer <token>" when not empty.
    std::string admin_token;
    // Each call's deadline.
    absl::Duration rpc_timeout = absl::Seconds(10);
  };

  NodeReporter(std::unique_ptr<v1::AcceleratorScheduler::StubInterface> stub,
               Options options);

  // The node as it would be registered from `observation`: name, labels,
  // devices with `healthy` from the unhealthy set and no readings, and
  // allocatable when the observation has one (unset otherwise: RegisterNode
  // replaces the node, so the server then accounts none).
  v1::Node NodeOf(const Observation& observation) const;

  // Registers the node if it has not been registered by this reporter, if its
  // inventory, labels or allocatable differ from the last registration
  // (allocatable set or unset counts), or if the server no longer knows it
  // (NOT_FOUND from a heartbeat: it restarted on an empty database or an
  // operator removed the node; a kubelet re-creates its Node object the same
  // way); then heartbeats. When the server refuses a new
  // inventory other than for being unavailable (say FAILED_PRECONDITION: a
  // MIG re-layout of a GPU a live allocation holds), the heartbeat still goes
  // out for the inventory last registered, with the devices this pass did not
  // see among the unhealthy and only known ids' readings, so that the node
  // stays live; the registration is retried next pass. Returns the first
  // failing call's status, prefixed with the method (the refused
  // registration's, even when the heartbeat succeeded). The heartbeat carries
  // `mig_relayout_failures` (HeartbeatRequest.mig_relayout_failures, by GPU
  // id).
  absl::Status Report(const Observation& observation,
                      const std::map<std::string, v1::MigRelayoutFailure>&
                          mig_relayout_failures = {});

  // How many RegisterNode and Heartbeat calls succeeded (for the log and
  // tests; a grown heartbeats() tells that the last Report's heartbeat, and
  // the failures it carried, got through).
  int registrations() const { return registrations_; }
  int heartbeats() const { return heartbeats_; }

  // The MIG layouts the server planned for the node's GPUs, by GPU id, as
  // the last Report's heartbeat reply gave them (HeartbeatResponse.
  // mig_plans); empty when that Report's heartbeat failed or was not sent.
  const google::protobuf::Map<std::string, v1::MigLayout>& mig_plans() const {
    return last_reply_.mig_plans();
  }

 private:
  void Prepare(grpc::ClientContext& context) const;

  const std::unique_ptr<v1::AcceleratorScheduler::StubInterface> stub_;
  const Options options_;
  bool registered_ = false;
  // The last registered inventory (allocatable included), with health
  // cleared: a health change is a heartbeat, not a registration.
  v1::Node last_registered_;
  int registrations_ = 0;
  int heartbeats_ = 0;
  v1::HeartbeatResponse last_reply_;
};

// True for the codes after which the same call may succeed later: the server
// is down, restarting or overloaded.
bool IsTransient(absl::StatusCode code);

}  // namespace accelsched::agent

#endif  // ACCELSCHED_AGENT_NODE_REPORTER_H_
