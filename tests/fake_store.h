// An in-memory Store for core tests, with injectable write failures.
#ifndef ACCELSCHED_TESTS_FAKE_STORE_H_
#define ACCELSCHED_TESTS_FAKE_STORE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/store.h"

namespace accelsched {

class FakeStore final : public Store {
 public:
  absl::StatusOr<std::vector<Node>> LoadNodes() override {
    std::vector<Node> out;
    for (const auto& [name, node] : nodes_) out.push_back(node);
    return out;
  }
  absl::Status PutNode(const Node& node) override {
    if (!fail_writes_.ok()) return fail_writes_;
    nodes_[node.name] = node;
    return absl::OkStatus();
  }
  absl::Status PutNodeStatus(const Node& node) override {
    if (!fail_writes_.ok()) return fail_writes_;
    Node& stored = nodes_.at(node.name);
    stored.schedulable = node.schedulable;
    stored.last_heartbeat = node.last_heartbeat;
    for (size_t i = 0; i < node.devices.size(); ++i) {
      stored.devices[i].healthy = node.devices[i].healthy;
    }
    return absl::OkStatus();
  }
  absl::Status DeleteNode(absl::string_view name) override {
    if (!fail_writes_.ok()) return fail_writes_;
    if (nodes_.erase(std::string(name)) == 0) {
      return absl::NotFoundError(absl::StrCat("node \"", name, "\" not found"));
    }
    return absl::OkStatus();
  }

  // Every later write fails with `s` (OK restores writes).
  void FailWrites(absl::Status s) { fail_writes_ = std::move(s); }
  const std::map<std::string, Node>& nodes() const { return nodes_; }

 private:
  std::map<std::string, Node> nodes_;
  absl::Status fail_writes_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_FAKE_STORE_H_
