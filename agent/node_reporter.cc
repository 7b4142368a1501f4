#include "agent/node_reporter.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"

namespace accelsched::agent {
namespace {

absl::Status FromGrpc(absl::string_view method, const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(method, ": ", s.error_message()));
}

// `node` without what a heartbeat reports.
v1::Node Inventory(v1::Node node) {
  for (v1::Device& d : *node.mutable_devices()) d.clear_healthy();
  return node;
}

}  // namespace

bool IsTransient(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable ||
         code == absl::StatusCode::kDeadlineExceeded ||
         code == absl::StatusCode::kResourceExhausted ||
         code == absl::StatusCode::kAborted;
}

NodeReporter::NodeReporter(
    std::unique_ptr<v1::AcceleratorScheduler::StubInterface> stub,
    Options options)
    : stub_(std::move(stub)), options_(std::move(options)) {}

void NodeReporter::Prepare(grpc::ClientContext& context) const {
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoMilliseconds(options_.rpc_timeout));
  // Wait for a connection within the deadline rather than fail at once while
  // the channel is between reconnection attempts: a call then itself
  // reconnects to a server that came back.
  context.set_wait_for_ready(true);
  if (!options_.admin_token.empty()) {
    context.AddMetadata("authorization",
                        absl::StrCat("Bearer ", options_.admin_token));
  }
}

v1::Node NodeReporter::NodeOf(const Observation& observation) const {
  v1::Node node;
  node.set_name(options_.node_name);
  // What a new node gets; the server keeps an existing node's cordon.
  node.set_schedulable(true);
  node.mutable_labels()->insert(options_.labels.begin(), options_.labels.end());
  for (const v1::Device& d : observation.devices) {
    v1::Device* p = node.add_devices();
    *p = d;
    p->set_healthy(!observation.unhealthy.contains(d.id()));
  }
  if (observation.allocatable.has_value()) {
    *node.mutable_allocatable() = *observation.allocatable;
  }
  return node;
}

absl::Status NodeReporter::Report(
    const Observation& observation,
    const std::map<std::string, v1::MigRelayoutFailure>&
        mig_relayout_failures) {
  last_reply_.Clear();
  const v1::Node node = NodeOf(observation);
  const v1::Node inventory = Inventory(node);
  absl::Status registration;
  if (!registered_ || !google::protobuf::util::MessageDifferencer::Equals(
                          inventory, last_registered_)) {
    grpc::ClientContext context;
    Prepare(context);
    v1::RegisterNodeRequest request;
    *request.mutable_node() = node;
    v1::Node reply;
    registration = FromGrpc("RegisterNode",
                            stub_->RegisterNode(&context, request, &reply));
    if (registration.ok()) {
      registered_ = true;
      last_registered_ = inventory;
      ++registrations_;
    } else if (IsTransient(registration.code()) || !registered_) {
      return registration;
    }
    // Otherwise the server refused the new inventory (say, a MIG re-layout of
    // a GPU that a live allocation holds) and keeps the last one: heartbeat
    // that one, so the node stays live, and try again next pass.
  }
  std::set<std::string> known;
  for (const v1::Device& d : last_registered_.devices()) {
    known.insert(d.id());
    for (const v1::MigSlice& s : d.mig_slices()) known.insert(s.id());
  }
  std::set<std::string> seen;
  for (const v1::Device& d : observation.devices) seen.insert(d.id());

  grpc::ClientContext context;
  Prepare(context);
  v1::HeartbeatRequest request;
  request.set_name(options_.node_name);
  for (const v1::Device& d : last_registered_.devices()) {
    // A registered device this pass did not see is unhealthy too.
    if (observation.unhealthy.contains(d.id()) || !seen.contains(d.id())) {
      request.add_unhealthy_device_ids(d.id());
    }
  }
  for (const auto& [id, stats] : observation.stats) {
    if (known.contains(id)) (*request.mutable_device_stats())[id] = stats;
  }
  request.mutable_mig_relayout_failures()->insert(mig_relayout_failures.begin(),
                                                  mig_relayout_failures.end());
  v1::HeartbeatResponse reply;
  absl::Status heartbeat =
      FromGrpc("Heartbeat", stub_->Heartbeat(&context, request, &reply));
  if (heartbeat.ok()) {
    ++heartbeats_;
    last_reply_ = std::move(reply);
  }
  if (heartbeat.code() == absl::StatusCode::kNotFound) registered_ = false;
  return registration.ok() ? heartbeat : registration;
}

}  // namespace accelsched::agent
