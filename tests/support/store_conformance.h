// The Store contract (core/commit/store.h) as a typed test suite, instantiated
// for every implementation and the fake (store_conformance_test.cc: SQLite and
// the fake; pg_store_test.cc: PostgreSQL), so that the scheduler's tests on the
// fake mean what they say: a case that passes on one store and fails on
// another is a bug in one of them. A Factory has Open(), which opens the
// store again on what was committed (null and a test failure when it cannot).
// SqlStoreConformanceTest adds the cases of the SQL stores' shared row mapping
// (storage/rows.h), for factories that also have RunSql(sql), which runs SQL
// written in what SQLite and PostgreSQL both accept on the store's database
// beside the open store, so that a case can lay rows out as the Store API
// never would. Include in one test file each.
#ifndef ACCELSCHED_TESTS_SUPPORT_STORE_CONFORMANCE_H_
#define ACCELSCHED_TESTS_SUPPORT_STORE_CONFORMANCE_H_

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/commit/store.h"
#include "core/model/node_resources.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
// Unnamed, as in a test file: this header is included by one file per binary.
namespace {  // NOLINT(build/namespaces_headers)

using ::testing::ElementsAre;
using ::testing::IsEmpty;

template <typename Factory>
class StoreConformanceTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(store_, nullptr); }

  Store& store() { return *store_; }
  // Closes the store, then opens it again.
  Store& Reopen() {
    store_.reset();
    store_ = factory_.Open();
    EXPECT_NE(store_, nullptr);
    return *store_;
  }

  absl::Status Apply(std::initializer_list<Mutation> batch) {
    return store_->Apply(absl::MakeConstSpan(batch.begin(), batch.size()));
  }
  std::vector<Node> Nodes() {
    absl::StatusOr<std::vector<Node>> nodes = store_->LoadNodes();
    EXPECT_OK(nodes);
    return nodes.ok() ? *nodes : std::vector<Node>{};
  }
  std::vector<StoredAllocation> Allocations() {
    absl::StatusOr<std::vector<StoredAllocation>> all =
        store_->LoadAllocations();
    EXPECT_OK(all);
    return all.ok() ? *all : std::vector<StoredAllocation>{};
  }
  uint64_t Sequence() {
    absl::StatusOr<uint64_t> sequence = store_->LoadEventSequence();
    EXPECT_OK(sequence);
    return sequence.ok() ? *sequence : ~uint64_t{0};
  }

  Factory factory_;
  std::unique_ptr<Store> store_ = factory_.Open();
};

TYPED_TEST_SUITE_P(StoreConformanceTest);

// A device with every field set to something other than its default.
Device FullGpu(const std::string& id, int index) {
  Device d;
  d.id = id;
  d.device_class = DeviceClass::kNvidiaGpu;
  d.model = "NVIDIA A100-SXM4-80GB";
  d.canonical_model = "nvidia-a100-80gb";
  d.memory_bytes = (uint64_t{1} << 63) + 12345;  // the top bit survives
  d.index = index;
  d.healthy = false;
  return d;
}

// Every kind of device and every field, devices out of index order and MIG
// slices out of start order, so that an implementation that sorts is caught.
Node FullNode(const std::string& name = "n1") {
  Node n;
  n.name = name;
  n.labels = {{"kubernetes.io/hostname", name + "-host"}, {"pool", "a100"}};
  n.schedulable = false;
  n.last_heartbeat = absl::FromUnixNanos(1'700'000'000'123'456'789);
  n.allocatable = NodeResources{96'000, (int64_t{1} << 41) + 7, 110};
  Device whole = FullGpu(name + "-gpu-a", 3);
  whole.sharing = GpuSharing::kMps;
  Device mig = FullGpu(name + "-gpu-m", 1);
  mig.healthy = true;
  mig.mig_enabled = true;
  mig.mig_slices = {{name + "-mig-4", "3g.40gb", 4},
                    {name + "-mig-0", "1g.10gb", 0}};
  mig.mig_generation = 3;
  // A re-layout in flight: keeps the 3g, destroys the 1g, creates two
  // (listed out of start order, as written).
  mig.mig_plan = MigPlan{
      {{"", "2g.20gb", 2}, {"", "2g.20gb", 0}, {name + "-mig-4", "3g.40gb", 4}},
      3,
      "alloc-" + name,
      absl::FromUnixNanos(1'700'000'600'000'000'017)};
  Device chip;
  chip.id = name + "-chip-0";
  chip.device_class = DeviceClass::kGoogleTpu;
  chip.model = "tpu-v5p-slice";
  chip.canonical_model = "tpu-v5p-slice";
  chip.index = 0;
  chip.tpu_slice_id = "slice-1";
  chip.tpu_topology = "2x2x1";
  Device removed = FullGpu(name + "-gpu-gone", 2);
  removed.removed = true;
  // Every kind of link, out of peer order, as reported.
  whole.links = {{name + "-gpu-m", LinkKind::kNvlink, 12},
                 {name + "-gpu-gone", LinkKind::kSameNuma, 0},
                 {name + "-gpu-m", LinkKind::kPcieSwitch, 0}};
  mig.links = {{name + "-gpu-a", LinkKind::kNvlink, 12}};
  n.devices = {whole, mig, chip, removed};
  return n;
}

// What a store gives back: canonical names are the catalog's to derive.
Node AsStored(Node n) {
  for (Device& d : n.devices) d.canonical_model.clear();
  return n;
}

Allocation FullAllocation(const std::string& id, AllocationState state) {
  Allocation a;
  a.id = id;
  a.request_id = "req-" + id;
  a.state = state;
  a.node = "n1";
  a.devices = {
      {"n1", "n1-gpu-m", "n1-mig-4", "3g.40gb"},
      {"n1", "n1-gpu-m", "n1-mig-0", "1g.10gb"},
      {"n1", "n1-gpu-a", "", "",
       GpuShare{470, (int64_t{1} << 40) + 3, "ml-team"}, GpuSharing::kMps},
      {"n1", "n1-gpu-b", "", "", GpuShare{1000, 0}, GpuSharing::kTimeSlicing}};
  a.tenant = "proj/dev";
  a.priority = -7;
  a.created_at = absl::FromUnixNanos(1'700'000'000'000'000'001);
  a.expires_at = a.created_at + absl::Hours(1);
  if (state != AllocationState::kActive) {
    a.ended_at = a.created_at + absl::Minutes(3);
    a.end_reason = "expired";
  }
  a.device_class = DeviceClass::kNvidiaGpu;
  a.requested_models = {"nvidia-a100-80gb", "nvidia-h100"};
  // As a client spelled them, in its order; the last holds what a list
  // column would use for separators.
  a.device_spellings = {"H100 80G", "A100 80G", " nvidia-h100,\n"};
  a.model = "nvidia-a100-80gb";
  a.partition = "3g.40gb";
  a.count = 2;
  a.unpartitioned = true;
  a.resource_name = "example.com/gpu";
  a.container_name = "main";
  a.admitted_at = a.created_at + absl::Seconds(42);
  a.replicas = 3;
  a.topology_key = "example.com/rack";
  a.preferred_topology = "example.com/nvlink-domain";
  a.node_selector = {{"pool", "a"}, {"zone", "z1"}};
  a.lease = absl::Minutes(90);
  a.expected_duration = absl::Hours(5);
  // Not in node-name order: the order given is kept.
  a.targets = {{"n2", "n2-host", "nvidia-a100-80gb", "mixed"},
               {"n1", "n1-host", "a100-80", ""}};
  a.pod_resources = NodeResources{4'500, int64_t{48} << 30, 1};
  a.share = GpuShare{470, 0};  // zeros stay present
  return a;
}

std::vector<std::string> UnitsOf(const std::string& id) {
  return {id + "-unit-z", id + "-unit-a"};  // not sorted: order is kept
}

TYPED_TEST_P(StoreConformanceTest, NewStoreIsEmpty) {
  EXPECT_THAT(this->Nodes(), IsEmpty());
  EXPECT_THAT(this->Allocations(), IsEmpty());
  EXPECT_EQ(this->Sequence(), 0u);
}

TYPED_TEST_P(StoreConformanceTest, EveryNodeFieldRoundTripsThroughAReopen) {
  ASSERT_OK(this->Apply(
      {PutNodeMutation{FullNode("n2")}, PutNodeMutation{FullNode("n1")}}));
  const std::vector<Node> expected = {AsStored(FullNode("n1")),
                                      AsStored(FullNode("n2"))};
  EXPECT_EQ(this->Nodes(), expected);  // in name order
  this->Reopen();
  EXPECT_EQ(this->Nodes(), expected);
}

TYPED_TEST_P(StoreConformanceTest, MigPlanIsReplacedOrDroppedWithItsDevice) {
  ASSERT_OK(this->Apply({PutNodeMutation{FullNode()}}));
  Node next = FullNode();
  Device& mig = next.devices[1];
  mig.mig_plan->slices = {{"", "7g.80gb", 0}};
  mig.mig_plan->generation = 4;
  mig.mig_generation = 4;
  ASSERT_OK(this->Apply({PutNodeMutation{next}}));
  EXPECT_EQ(this->Nodes(), std::vector<Node>{AsStored(next)});
  mig.mig_plan.reset();  // applied or dropped; the generation stays
  ASSERT_OK(this->Apply({PutNodeMutation{next}}));
  this->Reopen();
  EXPECT_EQ(this->Nodes(), std::vector<Node>{AsStored(next)});
  ASSERT_OK(this->Apply({DeleteNodeMutation{"n1"}}));
  EXPECT_TRUE(this->Nodes().empty());
}

TYPED_TEST_P(StoreConformanceTest, PutNodeReplacesLabelsAndDevices) {
  ASSERT_OK(this->Apply({PutNodeMutation{FullNode()}}));
  Node smaller = FullNode();
  smaller.labels = {{"pool", "b"}};
  smaller.schedulable = true;
  smaller.devices.resize(1);
  smaller.devices[0].model = "A100 80G";
  smaller.devices[0].links.resize(1);
  ASSERT_OK(this->Apply({PutNodeMutation{smaller}}));
  this->Reopen();
  EXPECT_THAT(this->Nodes(), ElementsAre(AsStored(smaller)));
  // The dropped MIG slice ids and device ids are free for another node.
  Node other = FullNode("n2");
  other.devices[1].mig_slices[0].id = "n1-mig-4";
  other.devices[3].id = "n1-gpu-gone";
  EXPECT_OK(this->Apply({PutNodeMutation{other}}));
}

// A node's allocatable resources are absent (reported none), zeros or
// values, each kept as it is through a reopen; a re-registration replaces them,
// with absent as with any value.
TYPED_TEST_P(StoreConformanceTest, NodeAllocatableAbsentZeroOrSetRoundTrips) {
  Node absent = FullNode("n1");
  absent.allocatable.reset();
  Node zeros = FullNode("n2");
  zeros.allocatable = NodeResources{};
  Node largest = FullNode("n3");
  largest.allocatable = NodeResources{kMaxCpuMilli, kMaxMemoryBytes, kMaxPods};
  ASSERT_OK(this->Apply({PutNodeMutation{absent}, PutNodeMutation{zeros},
                         PutNodeMutation{largest}}));
  std::vector<Node> expected = {AsStored(absent), AsStored(zeros),
                                AsStored(largest)};
  EXPECT_EQ(this->Nodes(), expected);
  this->Reopen();
  EXPECT_EQ(this->Nodes(), expected);

  absent.allocatable = NodeResources{1, 2, 3};
  zeros.allocatable.reset();
  largest.allocatable.reset();
  ASSERT_OK(this->Apply({PutNodeMutation{absent}, PutNodeMutation{zeros},
                         PutNodeMutation{largest}}));
  this->Reopen();
  expected = {AsStored(absent), AsStored(zeros), AsStored(largest)};
  EXPECT_EQ(this->Nodes(), expected);
}

// Cordon, heartbeat and health are single columns: nothing else of the node
// may change with them, and the change must survive a restart.
TYPED_TEST_P(StoreConformanceTest, NodeStatusWritesOnlyCordonHeartbeatHealth) {
  ASSERT_OK(this->Apply({PutNodeMutation{FullNode()}}));
  Node status = FullNode();
  status.schedulable = true;
  status.last_heartbeat += absl::Seconds(10);
  status.devices[0].healthy = true;
  status.devices[1].healthy = false;
  // Not status: these must be ignored.
  status.labels = {{"other", "label"}};
  status.allocatable.reset();
  status.devices[0].model = "T4";
  status.devices[0].removed = true;
  status.devices[1].mig_slices.clear();
  status.devices.pop_back();
  ASSERT_OK(this->Apply({PutNodeStatusMutation{status}}));
  Node expected = FullNode();
  expected.schedulable = true;
  expected.last_heartbeat = status.last_heartbeat;
  expected.devices[0].healthy = true;
  expected.devices[1].healthy = false;
  EXPECT_THAT(this->Nodes(), ElementsAre(AsStored(expected)));
  this->Reopen();
  EXPECT_THAT(this->Nodes(), ElementsAre(AsStored(expected)));
}

TYPED_TEST_P(StoreConformanceTest, NodeStatusOfUnknownNodeOrDeviceIsNotFound) {
  ASSERT_OK(this->Apply({PutNodeMutation{FullNode()}}));
  Node unknown = FullNode("n9");
  EXPECT_THAT(this->Apply({PutNodeStatusMutation{unknown}}),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
  Node extra = FullNode();
  extra.schedulable = true;
  extra.devices.push_back(FullGpu("not-there", 7));
  EXPECT_THAT(this->Apply({PutNodeStatusMutation{extra}}),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
  Node other_nodes_device = FullNode();
  ASSERT_OK(this->Apply({PutNodeMutation{FullNode("n2")}}));
  other_nodes_device.devices = {FullGpu("n2-gpu-a", 3)};
  EXPECT_THAT(this->Apply({PutNodeStatusMutation{other_nodes_device}}),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
  EXPECT_THAT(this->Nodes(),
              ElementsAre(AsStored(FullNode()), AsStored(FullNode("n2"))));
}

// The bug of issue 9: a device dropped while allocated came back after a
// restart as present.
TYPED_TEST_P(StoreConformanceTest, RemovedFlagIsSeenAfterAReopen) {
  Node n = FullNode();
  for (Device& d : n.devices) d.removed = false;
  ASSERT_OK(this->Apply({PutNodeMutation{n}}));
  n.devices[0].removed = true;
  ASSERT_OK(this->Apply({PutNodeMutation{n}}));
  this->Reopen();
  std::vector<Node> nodes = this->Nodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_TRUE(nodes[0].devices[0].removed);
  EXPECT_FALSE(nodes[0].devices[1].removed);
  n.devices[0].removed = false;
  ASSERT_OK(this->Apply({PutNodeMutation{n}}));
  this->Reopen();
  nodes = this->Nodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_FALSE(nodes[0].devices[0].removed);
}

// A device kept as removed may have the index the node now reports for
// another (a GPU that fell off the bus renumbers the rest); two present devices
// may not.
TYPED_TEST_P(StoreConformanceTest, OnlyPresentDevicesNeedDistinctIndices) {
  Node n;
  n.name = "n1";
  n.devices = {FullGpu("g1", 0), FullGpu("g0", 0)};
  n.devices[1].removed = true;
  ASSERT_OK(this->Apply({PutNodeMutation{n}}));
  n.devices[1].removed = false;
  EXPECT_THAT(this->Apply({PutNodeMutation{n}}),
              StatusIs(absl::StatusCode::kAlreadyExists, testing::_));
  this->Reopen();
  std::vector<Node> nodes = this->Nodes();
  ASSERT_EQ(nodes.size(), 1u);
  ASSERT_EQ(nodes[0].devices.size(), 2u);
  EXPECT_TRUE(nodes[0].devices[1].removed);
}

TYPED_TEST_P(StoreConformanceTest, DeviceAndMigIdsAreUniqueAcrossNodes) {
  ASSERT_OK(this->Apply({PutNodeMutation{FullNode()}}));
  Node same_device = FullNode("n2");
  same_device.devices[0].id = "n1-gpu-a";
  EXPECT_THAT(this->Apply({PutNodeMutation{same_device}}),
              StatusIs(absl::StatusCode::kAlreadyExists, testing::_));
  Node same_slice = FullNode("n2");
  same_slice.devices[1].mig_slices[1].id = "n1-mig-0";
  EXPECT_THAT(this->Apply({PutNodeMutation{same_slice}}),
              StatusIs(absl::StatusCode::kAlreadyExists, testing::_));
  Node repeated = FullNode("n3");
  repeated.devices[3].id = repeated.devices[0].id;
  EXPECT_THAT(this->Apply({PutNodeMutation{repeated}}),
              StatusIs(absl::StatusCode::kAlreadyExists, testing::_));
  EXPECT_THAT(this->Nodes(), ElementsAre(AsStored(FullNode())));
}

TYPED_TEST_P(StoreConformanceTest, DeleteNodeForgetsItAndUnknownIsNotFound) {
  ASSERT_OK(this->Apply({PutNodeMutation{FullNode()}}));
  ASSERT_OK(this->Apply({DeleteNodeMutation{"n1"}}));
  EXPECT_THAT(this->Apply({DeleteNodeMutation{"n1"}}),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
  this->Reopen();
  EXPECT_THAT(this->Nodes(), IsEmpty());
  // Its ids are free again.
  EXPECT_OK(this->Apply({PutNodeMutation{FullNode()}}));
}

// Chips of one TPU slice on several hosts share one topology.
TYPED_TEST_P(StoreConformanceTest, TpuSliceHasTheTopologyWrittenLast) {
  Node a = FullNode("a");
  Node b = FullNode("b");
  ASSERT_OK(this->Apply({PutNodeMutation{a}, PutNodeMutation{b}}));
  b.devices[2].tpu_topology = "2x2x2";
  ASSERT_OK(this->Apply({PutNodeMutation{b}}));
  this->Reopen();
  a.devices[2].tpu_topology = "2x2x2";
  EXPECT_THAT(this->Nodes(), ElementsAre(AsStored(a), AsStored(b)));
}

TYPED_TEST_P(StoreConformanceTest, AllocationsInEveryStateRoundTrip) {
  std::vector<Mutation> batch;
  std::vector<StoredAllocation> expected;
  int i = 0;
  for (AllocationState state :
       {AllocationState::kActive, AllocationState::kReleased,
        AllocationState::kExpired, AllocationState::kPending,
        AllocationState::kPreempted}) {
    const std::string id = absl::StrCat("a-", i++);
    Allocation a = FullAllocation(id, state);
    // One model, several (FullAllocation's) and none (any model).
    // Pod resources too: set (FullAllocation's), zeros but the pod's slot,
    // and none.
    if (state == AllocationState::kReleased) {
      a.requested_models = {a.model};
      a.device_spellings = {"A100 80G"};
      a.pod_resources = NodeResources{0, 0, 1};
    }
    if (state == AllocationState::kExpired) {
      a.requested_models.clear();
      a.device_spellings.clear();
      a.pod_resources.reset();
    }
    // Built in place: gcc 12 warns of a moved-from variant otherwise.
    batch.emplace_back(std::in_place_type<PutAllocationMutation>,
                       PutAllocationMutation{a, UnitsOf(id), true});
    expected.push_back(StoredAllocation{a, UnitsOf(id)});
  }
  // A TPU slice across two hosts, with no MIG fields.
  Allocation tpu = FullAllocation("a-9", AllocationState::kActive);
  tpu.device_class = DeviceClass::kGoogleTpu;
  tpu.devices = {{"host-a", "chip-0", "", ""}, {"host-b", "chip-4", "", ""}};
  tpu.partition = "2x2x2";
  batch.emplace_back(std::in_place_type<PutAllocationMutation>,
                     PutAllocationMutation{
                         tpu, std::vector<std::string>{"tpu slice-1"}, true});
  expected.push_back(StoredAllocation{tpu, {"tpu slice-1"}});
  ASSERT_OK(this->store().Apply(batch));
  EXPECT_EQ(this->Allocations(), expected);  // in id order
  this->Reopen();
  EXPECT_EQ(this->Allocations(), expected);
}

// An update changes what an allocation's life changes (state, lease, end) and
// nothing that identifies it.
TYPED_TEST_P(StoreConformanceTest, AllocationUpdateChangesOnlyStateLeaseEnd) {
  const Allocation created = FullAllocation("a-1", AllocationState::kActive);
  ASSERT_OK(
      this->Apply({PutAllocationMutation{created, UnitsOf("a-1"), true}}));
  Allocation renewed = created;
  renewed.expires_at += absl::Hours(2);
  renewed.tenant = "someone-else";       // ignored
  renewed.devices.clear();               // ignored
  renewed.requested_models.clear();      // ignored
  renewed.device_spellings = {"T4"};     // ignored
  renewed.pod_resources.reset();         // ignored
  renewed.node_selector.clear();         // ignored
  renewed.lease = absl::ZeroDuration();  // ignored
  ASSERT_OK(this->Apply({PutAllocationMutation{renewed, UnitsOf("a-1")}}));
  Allocation ended = renewed;
  ended.state = AllocationState::kReleased;
  ended.ended_at = created.created_at + absl::Minutes(9);
  ended.end_reason = "released";
  ended.preempted_by = "a-9";
  ASSERT_OK(this->Apply({PutAllocationMutation{ended, UnitsOf("a-1")}}));
  Allocation expected = created;
  expected.expires_at = renewed.expires_at;
  expected.state = AllocationState::kReleased;
  expected.ended_at = ended.ended_at;
  expected.end_reason = "released";
  expected.preempted_by = "a-9";
  this->Reopen();
  EXPECT_THAT(this->Allocations(),
              ElementsAre(StoredAllocation{expected, UnitsOf("a-1")}));
}

// A PENDING allocation holds nothing; admitted, it is written again in one
// batch. A PREEMPTED one keeps its units until it ends.
TYPED_TEST_P(StoreConformanceTest, PendingIsAdmittedAndPreemptedHoldsUnits) {
  Allocation pending = FullAllocation("a-1", AllocationState::kPending);
  pending.ended_at = absl::UnixEpoch();
  pending.end_reason.clear();
  pending.devices.clear();
  pending.targets.clear();
  pending.node.clear();
  ASSERT_OK(this->Apply({PutAllocationMutation{pending, {}, true}}));
  this->Reopen();
  EXPECT_THAT(this->Allocations(), ElementsAre(StoredAllocation{pending, {}}));
  Allocation admitted = FullAllocation("a-1", AllocationState::kActive);
  ASSERT_OK(this->Apply({DeleteAllocationMutation{"a-1"},
                         PutAllocationMutation{admitted, {"u1"}, true}}));
  this->Reopen();
  EXPECT_THAT(this->Allocations(),
              ElementsAre(StoredAllocation{admitted, {"u1"}}));
  Allocation preempted = admitted;
  preempted.state = AllocationState::kPreempted;
  preempted.preempted_by = "a-2";
  ASSERT_OK(this->Apply({PutAllocationMutation{preempted, {"u1"}}}));
  const Allocation other = FullAllocation("a-2", AllocationState::kActive);
  EXPECT_THAT(this->Apply({PutAllocationMutation{other, {"u1"}, true}}),
              StatusIs(absl::StatusCode::kAlreadyExists, testing::_));
  preempted.end_reason = "preempted";
  ASSERT_OK(this->Apply({PutAllocationMutation{preempted, {"u1"}},
                         PutAllocationMutation{other, {"u1"}, true}}));
}

TYPED_TEST_P(StoreConformanceTest, AllocationCreatedTwiceOrUpdatedUnknown) {
  const Allocation a = FullAllocation("a-1", AllocationState::kActive);
  ASSERT_OK(this->Apply({PutAllocationMutation{a, UnitsOf("a-1"), true}}));
  EXPECT_THAT(this->Apply({PutAllocationMutation{a, {"other"}, true}}),
              StatusIs(absl::StatusCode::kAlreadyExists, testing::_));
  EXPECT_THAT(this->Apply({PutAllocationMutation{
                  FullAllocation("a-2", AllocationState::kReleased), {"u"}}}),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
  EXPECT_THAT(this->Allocations(),
              ElementsAre(StoredAllocation{a, UnitsOf("a-1")}));
}

// The schema itself refuses a unit in two live allocations, and the whole
// batch with it; a unit is free again once its allocation ended or is gone.
TYPED_TEST_P(StoreConformanceTest, AUnitIsLiveInOneAllocationAtMost) {
  const Allocation first = FullAllocation("a-1", AllocationState::kActive);
  ASSERT_OK(this->Apply({PutAllocationMutation{first, {"u1", "u2"}, true}}));
  const Allocation second = FullAllocation("a-2", AllocationState::kActive);
  EXPECT_THAT(this->Apply({PutNodeMutation{FullNode()},
                           PutAllocationMutation{second, {"u3", "u2"}, true}}),
              StatusIs(absl::StatusCode::kAlreadyExists, testing::_));
  EXPECT_THAT(this->Nodes(), IsEmpty());
  EXPECT_EQ(this->Allocations().size(), 1u);
  // Taking before ending is refused even within one batch...
  Allocation ended = first;
  ended.state = AllocationState::kReleased;
  ended.end_reason = "released";
  EXPECT_THAT(this->Apply({PutAllocationMutation{second, {"u2"}, true},
                           PutAllocationMutation{ended, {"u1", "u2"}}}),
              StatusIs(absl::StatusCode::kAlreadyExists, testing::_));
  // ...ending first is not.
  ASSERT_OK(this->Apply({PutAllocationMutation{ended, {"u1", "u2"}},
                         PutAllocationMutation{second, {"u2"}, true}}));
  // An ended allocation may share units with other ended ones.
  Allocation third = FullAllocation("a-3", AllocationState::kExpired);
  ASSERT_OK(this->Apply({PutAllocationMutation{third, {"u1", "u2"}, true}}));
  // Forgetting a live allocation frees its units.
  ASSERT_OK(this->Apply({DeleteAllocationMutation{"a-2"}}));
  const Allocation fourth = FullAllocation("a-4", AllocationState::kActive);
  EXPECT_OK(this->Apply({PutAllocationMutation{fourth, {"u2"}, true}}));
}

TYPED_TEST_P(StoreConformanceTest, DeleteAllocationForgetsItUnknownIsNoError) {
  const Allocation a = FullAllocation("a-1", AllocationState::kExpired);
  ASSERT_OK(this->Apply({PutAllocationMutation{a, UnitsOf("a-1"), true}}));
  ASSERT_OK(this->Apply({DeleteAllocationMutation{"a-1"}}));
  EXPECT_OK(this->Apply({DeleteAllocationMutation{"a-1"}}));
  this->Reopen();
  EXPECT_THAT(this->Allocations(), IsEmpty());
}

TYPED_TEST_P(StoreConformanceTest, EventSequenceRoundTripsAndNeverGoesBack) {
  ASSERT_OK(this->Apply({PutEventSequenceMutation{41}}));
  ASSERT_OK(this->Apply({PutEventSequenceMutation{41}}));
  ASSERT_OK(this->Apply({PutEventSequenceMutation{(uint64_t{1} << 62) + 3}}));
  this->Reopen();
  EXPECT_EQ(this->Sequence(), (uint64_t{1} << 62) + 3);
  EXPECT_THAT(this->Apply({PutEventSequenceMutation{40}}),
              StatusIs(absl::StatusCode::kFailedPrecondition, testing::_));
  EXPECT_EQ(this->Sequence(), (uint64_t{1} << 62) + 3);
}

// A batch whose last mutation fails leaves every earlier one unwritten, now
// and after a restart.
TYPED_TEST_P(StoreConformanceTest, FailedBatchLeavesThePreviousState) {
  const Allocation a = FullAllocation("a-1", AllocationState::kActive);
  ASSERT_OK(this->Apply({PutNodeMutation{FullNode()},
                         PutAllocationMutation{a, UnitsOf("a-1"), true},
                         PutEventSequenceMutation{5}}));
  const std::vector<Node> nodes = this->Nodes();
  const std::vector<StoredAllocation> allocations = this->Allocations();
  Node changed = FullNode();
  changed.schedulable = true;
  changed.devices[0].healthy = true;
  Allocation ended = a;
  ended.state = AllocationState::kExpired;
  EXPECT_THAT(
      this->Apply({PutNodeMutation{FullNode("n2")},
                   PutNodeStatusMutation{changed}, DeleteNodeMutation{"n1"},
                   PutAllocationMutation{ended, UnitsOf("a-1")},
                   DeleteAllocationMutation{"a-1"}, PutEventSequenceMutation{9},
                   DeleteNodeMutation{"n9"}}),
      StatusIs(absl::StatusCode::kNotFound, testing::_));
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_EQ(this->Nodes(), nodes);
    EXPECT_EQ(this->Allocations(), allocations);
    EXPECT_EQ(this->Sequence(), 5u);
    this->Reopen();
  }
  // The store still takes writes.
  EXPECT_OK(this->Apply({PutNodeMutation{FullNode("n2")}}));
}

REGISTER_TYPED_TEST_SUITE_P(
    StoreConformanceTest, NewStoreIsEmpty,
    EveryNodeFieldRoundTripsThroughAReopen,
    MigPlanIsReplacedOrDroppedWithItsDevice, PutNodeReplacesLabelsAndDevices,
    NodeAllocatableAbsentZeroOrSetRoundTrips,
    NodeStatusWritesOnlyCordonHeartbeatHealth,
    NodeStatusOfUnknownNodeOrDeviceIsNotFound, RemovedFlagIsSeenAfterAReopen,
    OnlyPresentDevicesNeedDistinctIndices, DeviceAndMigIdsAreUniqueAcrossNodes,
    DeleteNodeForgetsItAndUnknownIsNotFound, TpuSliceHasTheTopologyWrittenLast,
    AllocationsInEveryStateRoundTrip, AllocationUpdateChangesOnlyStateLeaseEnd,
    PendingIsAdmittedAndPreemptedHoldsUnits,
    AllocationCreatedTwiceOrUpdatedUnknown, AUnitIsLiveInOneAllocationAtMost,
    DeleteAllocationForgetsItUnknownIsNoError,
    EventSequenceRoundTripsAndNeverGoesBack, FailedBatchLeavesThePreviousState);

// The SQL stores: the Store contract's cases, plus these, which lay rows out
// beneath the store.
template <typename Factory>
class SqlStoreConformanceTest : public StoreConformanceTest<Factory> {
 protected:
  // Runs `sql` on the store's database, beside the open store.
  void RunSql(const std::string& sql) { EXPECT_OK(this->factory_.RunSql(sql)); }
};

TYPED_TEST_SUITE_P(SqlStoreConformanceTest);

// MIG slices written before SQLite's schema 3 all have position 0: ties are
// broken by start slot, on every store, so that a node comes back the same
// whichever store holds it. FullNode's slices were written out of start order.
TYPED_TEST_P(SqlStoreConformanceTest, MigSlicesOfOnePositionLoadInStartOrder) {
  ASSERT_OK(this->Apply({PutNodeMutation{FullNode()}}));
  this->RunSql("UPDATE mig_slices SET position = 0");
  Node expected = AsStored(FullNode());
  std::vector<MigSlice>& slices = expected.devices[1].mig_slices;
  ASSERT_EQ(slices.size(), 2u);
  ASSERT_GT(slices[0].start, slices[1].start);
  std::swap(slices[0], slices[1]);
  EXPECT_THAT(this->Nodes(), ElementsAre(expected));
  this->Reopen();
  EXPECT_THAT(this->Nodes(), ElementsAre(expected));
}

// Every ordered list a load returns follows the stored positions, not the
// order the rows were inserted in: with the positions reversed beneath the
// store, each list comes back reversed.
TYPED_TEST_P(SqlStoreConformanceTest, EveryListLoadsInStoredPositionOrder) {
  const Allocation a = FullAllocation("a-1", AllocationState::kActive);
  ASSERT_OK(this->Apply({PutNodeMutation{FullNode()},
                         PutAllocationMutation{a, UnitsOf("a-1"), true}}));
  this->RunSql(
      "UPDATE devices SET position = 10 - position; "
      "UPDATE mig_slices SET position = 10 - position; "
      "UPDATE allocation_devices SET position = 10 - position; "
      "UPDATE allocation_targets SET position = 10 - position; "
      "UPDATE allocation_device_spellings SET position = 10 - position; "
      "UPDATE allocation_units SET position = 10 - position");
  Node node = AsStored(FullNode());
  std::reverse(node.devices.begin(), node.devices.end());
  for (Device& d : node.devices) {
    std::reverse(d.mig_slices.begin(), d.mig_slices.end());
  }
  Allocation allocation = a;
  std::reverse(allocation.devices.begin(), allocation.devices.end());
  std::reverse(allocation.targets.begin(), allocation.targets.end());
  std::reverse(allocation.device_spellings.begin(),
               allocation.device_spellings.end());
  std::vector<std::string> units = UnitsOf("a-1");
  std::reverse(units.begin(), units.end());
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_THAT(this->Nodes(), ElementsAre(node));
    EXPECT_THAT(this->Allocations(),
                ElementsAre(StoredAllocation{allocation, units}));
    this->Reopen();
  }
}

// An optional NodeResources is NULL in all three of its columns or in none:
// a row with only some NULL was not written by the store, and loading it is
// INTERNAL naming the column, rather than a value made up of zeros.
TYPED_TEST_P(SqlStoreConformanceTest, PartlyNullResourcesAreInternal) {
  Node absent = FullNode("n2");
  absent.allocatable.reset();
  ASSERT_OK(this->Apply(
      {PutNodeMutation{FullNode()}, PutNodeMutation{absent},
       PutAllocationMutation{FullAllocation("a-1", AllocationState::kActive),
                             UnitsOf("a-1"), true}}));
  this->RunSql("UPDATE nodes SET allocatable_pods = NULL WHERE name = 'n1'");
  EXPECT_THAT(this->store().LoadNodes(),
              StatusIs(absl::StatusCode::kInternal,
                       testing::HasSubstr("allocatable_pods")));
  this->RunSql(
      "UPDATE nodes SET allocatable_pods = 0 WHERE name = 'n1'; "
      "UPDATE nodes SET allocatable_memory_bytes = 5 WHERE name = 'n2'");
  EXPECT_THAT(this->store().LoadNodes(),
              StatusIs(absl::StatusCode::kInternal,
                       testing::HasSubstr("allocatable_memory_bytes")));
  this->RunSql("UPDATE allocations SET pod_cpu_milli = NULL");
  EXPECT_THAT(this->store().LoadAllocations(),
              StatusIs(absl::StatusCode::kInternal,
                       testing::HasSubstr("pod_memory_bytes")));
}

REGISTER_TYPED_TEST_SUITE_P(SqlStoreConformanceTest,
                            MigSlicesOfOnePositionLoadInStartOrder,
                            EveryListLoadsInStoredPositionOrder,
                            PartlyNullResourcesAreInternal);

}  // namespace
}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_STORE_CONFORMANCE_H_
