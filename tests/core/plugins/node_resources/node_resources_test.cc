// The node_resources plugin: a request's pod must fit in what a node has
// available (allocatable less what live allocations hold, plus what a
// PostFilter action would free); a node not accounted is not limited. Its
// PreFilter refuses a pod no node of the request's pools could ever hold;
// its Filter states the pod's CPU and memory as the least room, by which the
// index's walk skips nodes.
#include "core/plugins/node_resources/node_resources.h"

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_state.h"
#include "core/framework/framework.h"
#include "core/framework/holds.h"
#include "core/framework/session.h"
#include "core/framework/snapshot.h"
#include "core/framework/statement.h"
#include "core/matching/match_spec.h"
#include "core/plugins/index_placer.h"
#include "core/plugins/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;

const absl::Time kNow = absl::FromUnixSeconds(1000);
const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};
const PoolKey kL4{DeviceClass::kNvidiaGpu, "nvidia-l4", ""};

Unit Whole(const PoolKey& pool, const std::string& key, const std::string& node,
           int order) {
  Unit u;
  u.key = key;
  u.pool = pool;
  u.home = node;
  u.hosts = {node};
  u.devices = {{node, key, "", ""}};
  u.order = order;
  return u;
}
Unit T4(const std::string& key, const std::string& node, int order) {
  return Whole(kT4, key, node, order);
}

Node Healthy(const std::string& name) {
  Node n;
  n.name = name;
  n.last_heartbeat = kNow;
  return n;
}

std::vector<HomeTree::Entry> Entries(const HomeTree& homes) {
  std::vector<HomeTree::Entry> out;
  homes.ForEach([&](const HomeTree::Entry& e) {
    out.push_back(e);
    return true;
  });
  return out;
}

MatchSpec WithPod(const PoolKey& pool, int count, NodeResources pod) {
  MatchSpec spec = MatchSpec::ForPool(pool, count);
  spec.pod_resources = pod;
  return spec;
}

// A bare index and its nodes, with sessions and cycles of new requests over
// them through the default profile (best fit).
class NodeResourcesTest : public testing::Test {
 protected:
  NodeResourcesTest()
      : framework_(MakeFramework()),
        holds_(nullptr, nullptr, Holds::Standing::kReadOnly),
        session_(*framework_, snapshot_, holds_, statement_) {
    snapshot_.index = &index_;
    snapshot_.nodes = &nodes_;
    snapshot_.now = kNow;
  }

  static std::unique_ptr<const Framework> MakeFramework() {
    absl::StatusOr<std::unique_ptr<Framework>> fw = Framework::Create(
        PluginRegistry(),
        DefaultProfile(ProfileOptions{Packing::kBestFit, false}));
    EXPECT_TRUE(fw.ok()) << fw.status();
    return *std::move(fw);
  }

  // `name` with `units` free units of `pool`, offering `allocatable`
  // (nullopt: not accounted) of which `held` is held.
  void AddNode(const std::string& name, int units,
               std::optional<NodeResources> allocatable,
               NodeResources held = {}, const PoolKey& pool = kT4) {
    nodes_[name] = Healthy(name);
    for (int g = 0; g < units; ++g) {
      index_.Put(Whole(pool, absl::StrCat(name, "-", g), name, g));
    }
    index_.SetAllocatable(name, allocatable);
    if (held != NodeResources{}) index_.AddHeld(name, held, +1);
  }

  // A cycle of a new request for `spec` (kept for the cycle), prepared.
  std::unique_ptr<CycleState> Cycle(const MatchSpec& spec) {
    specs_.push_back(std::make_unique<MatchSpec>(spec));
    auto cycle = std::make_unique<CycleState>(
        CycleMode::kAllocate, snapshot_, *specs_.back(), request_, &holds_);
    framework_->Prepare(*cycle);
    return cycle;
  }

  Verdict PreFilter(const MatchSpec& spec) {
    std::unique_ptr<CycleState> cycle = Cycle(spec);
    return plugin_.PreFilter(session_, *cycle);
  }

  CapacityIndex index_;
  NodeMap nodes_;
  Snapshot snapshot_;
  std::unique_ptr<const Framework> framework_;
  Holds holds_;
  DryStatement statement_;
  Session session_;
  Allocation request_;
  std::vector<std::unique_ptr<MatchSpec>> specs_;
  NodeResourcesPlugin plugin_;
};

MATCHER(IsSuccess, "") {
  *result_listener << "reason \"" << arg.reason << "\"";
  return arg.code == Verdict::Code::kSuccess;
}
MATCHER_P(IsUnresolvable, reason, "") {
  *result_listener << "code " << static_cast<int>(arg.code) << ", reason \""
                   << arg.reason << "\"";
  return arg.code == Verdict::Code::kUnresolvable && arg.reason == reason;
}

// Only a request with pod_resources: it states the pod's CPU and memory as
// the least room a node must have.
TEST_F(NodeResourcesTest, PrepareStatesThePodAsTheLeastRoom) {
  EXPECT_EQ(plugin_.kind(), FilterPlugin::Kind::kRoom);
  std::unique_ptr<CycleState> bare = Cycle(MatchSpec::ForPool(kT4, 1));
  EXPECT_FALSE(plugin_.Prepare(*bare));
  EXPECT_EQ(bare->filters().min_room().cpu,
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(bare->filters().min_room().memory,
            std::numeric_limits<int64_t>::min());
  std::unique_ptr<CycleState> pod =
      Cycle(WithPod(kT4, 1, NodeResources{1500, 4096, 1}));
  EXPECT_TRUE(plugin_.Prepare(*pod));
  EXPECT_EQ(pod->filters().min_room().cpu, 1500);
  EXPECT_EQ(pod->filters().min_room().memory, 4096);
}

// The first resource short of the pod, counting what would come free there
// (NodeView::freed); a node not accounted is never short.
TEST_F(NodeResourcesTest, FilterCountsWhatWouldComeFree) {
  // cpu: 2000 of 8000 free; memory: 16 of 64; pods: 0 of 2.
  AddNode("n1", 1, NodeResources{8000, 64, 2}, NodeResources{6000, 48, 2});
  AddNode("open", 1, std::nullopt, NodeResources{6000, 48, 2});
  struct Case {
    std::string name;
    std::string node;
    NodeResources pod;
    NodeResources freed;
    std::string why;  // "" for none
  };
  for (const Case& c : std::vector<Case>{
           {"pods full", "n1", {1000, 8, 1}, {}, "insufficient pods"},
           {"a pod slot freed", "n1", {1000, 8, 1}, {0, 0, 1}, ""},
           {"short of cpu",
            "n1",
            {4000, 8, 1},
            {0, 0, 1},
            "insufficient cpu_milli"},
           {"cpu freed", "n1", {4000, 8, 1}, {2000, 0, 1}, ""},
           {"cpu first",
            "n1",
            {4000, 32, 1},
            {0, 0, 1},
            "insufficient cpu_milli"},
           {"short of memory",
            "n1",
            {2000, 32, 1},
            {0, 0, 1},
            "insufficient memory_bytes"},
           {"memory freed", "n1", {2000, 32, 1}, {0, 16, 1}, ""},
           {"not accounted", "open", {100000, 1 << 20, 1}, {}, ""},
       }) {
    std::unique_ptr<CycleState> cycle = Cycle(WithPod(kT4, 1, c.pod));
    const char* why =
        plugin_.Filter(*cycle, NodeView{c.node, nullptr, nullptr, c.freed});
    EXPECT_EQ(why == nullptr ? "" : std::string(why), c.why) << c.name;
  }
}

// Explain's account: the resource short with what is free of what the node
// offers and what the request needs.
TEST_F(NodeResourcesTest, DescribeSaysWhatIsFreeAndWhatIsNeeded) {
  AddNode("n1", 1, NodeResources{8000, 64, 0}, NodeResources{6500, 0, 1});
  struct Case {
    std::string name;
    NodeResources pod;
    std::optional<std::pair<std::string, std::string>> reason;
  };
  for (const Case& c : std::vector<Case>{
           {"short of cpu",
            {4000, 8, 1},
            std::pair<std::string, std::string>{
                "insufficient cpu_milli",
                "1500 of 8000 cpu_milli free, the request needs 4000"}},
           {"short of memory",
            {1000, 100, 1},
            std::pair<std::string, std::string>{
                "insufficient memory_bytes",
                "64 of 64 memory_bytes free, the request needs 100"}},
           {"fits", {1500, 64, 1}, std::nullopt},
       }) {
    std::unique_ptr<CycleState> cycle = Cycle(WithPod(kT4, 1, c.pod));
    const std::optional<NodeReason> r =
        plugin_.Describe(*cycle, NodeView{"n1", nullptr, nullptr, {}});
    ASSERT_EQ(r.has_value(), c.reason.has_value()) << c.name;
    if (r.has_value()) {
      EXPECT_EQ(r->category, c.reason->first) << c.name;
      EXPECT_EQ(r->detail, c.reason->second) << c.name;
    }
  }
}

// A pod no node of the request's pools could ever hold is refused for good,
// naming the field and the most a node offers; a node not accounted may
// hold anything.
TEST_F(NodeResourcesTest, PreFilterRefusesAPodNoNodeCouldEverHold) {
  AddNode("cpu-rich", 1, NodeResources{16000, 32, 0});
  AddNode("memory-rich", 1, NodeResources{4000, 256, 0});
  // Held in full: allocatable, not available, is what counts.
  AddNode("busy", 1, NodeResources{8000, 128, 0}, NodeResources{8000, 128, 1});
  AddNode("l4-open", 1, std::nullopt, {}, kL4);
  struct Case {
    std::string name;
    MatchSpec spec;
    std::string reason;  // "" for success
  };
  MatchSpec any_model = WithPod(kT4, 1, NodeResources{100000, 1 << 20, 1});
  any_model.requested_models = {kT4.model, kL4.model};
  for (const Case& c : std::vector<Case>{
           {"no pod", MatchSpec::ForPool(kT4, 1), ""},
           {"one node offers both", WithPod(kT4, 1, {8000, 128, 1}), ""},
           {"the most cpu", WithPod(kT4, 1, {16000, 32, 1}), ""},
           {"more cpu than any", WithPod(kT4, 1, {16001, 0, 1}),
            "pod_resources.cpu_milli 16001 is more than any node with a "
            "nvidia-tesla-t4 device offers: at most 16000 cpu_milli "
            "allocatable"},
           {"more memory than any", WithPod(kT4, 1, {0, 257, 1}),
            "pod_resources.memory_bytes 257 is more than any node with a "
            "nvidia-tesla-t4 device offers: at most 256 memory_bytes "
            "allocatable"},
           {"each on its own node", WithPod(kT4, 1, {16000, 256, 1}),
            "pod_resources (16000 cpu_milli, 256 memory_bytes): no node with "
            "a nvidia-tesla-t4 device offers both"},
           {"a pool with a node not accounted", any_model, ""},
       }) {
    if (c.reason.empty()) {
      EXPECT_THAT(PreFilter(c.spec), IsSuccess()) << c.name;
    } else {
      EXPECT_THAT(PreFilter(c.spec), IsUnresolvable(c.reason)) << c.name;
    }
  }
  EXPECT_TRUE(plugin_.ForNewRequests());
}

// Through a placement: best fit's node short of the pod is skipped (by the
// index's order for CPU and memory, by the filter for pods).
TEST_F(NodeResourcesTest, APlacementSkipsNodesShortOfThePod) {
  AddNode("a-small", 1, NodeResources{1000, 1 << 20, 0});
  AddNode("b-lean", 1, NodeResources{8000, 16, 0});
  AddNode("c-full", 1, NodeResources{8000, 1 << 20, 1}, NodeResources{0, 0, 1});
  AddNode("d-big", 2, NodeResources{8000, 1 << 20, 0});
  IndexPlacer placer(&index_, &nodes_, {Packing::kBestFit});
  struct Case {
    std::string name;
    NodeResources pod;
    std::string node;
  };
  for (const Case& c : std::vector<Case>{
           {"fits the first", {500, 8, 1}, "a-small"},
           {"short of cpu", {2000, 8, 1}, "b-lean"},
           // b is short of memory, c of pods.
           {"short of memory on b, of pods on c", {2000, 1024, 1}, "d-big"},
           {"nowhere", {9000, 8, 1}, "none"},
       }) {
    auto units = placer.PlaceOne(WithPod(kT4, 1, c.pod), kNow);
    EXPECT_EQ(units.has_value() ? units->front()->home : "none", c.node)
        << c.name;
  }
}

// A change of the node's available memory alone re-keys its free entry: a
// match skipping by memory then finds it.
TEST_F(NodeResourcesTest, MemoryAloneRekeysTheFreeEntry) {
  CapacityIndex index;
  NodeMap nodes;
  index.Put(T4("a", "n1", 0));
  index.Put(T4("b", "n1", 1));
  nodes["n1"] = Healthy("n1");
  index.SetAllocatable("n1", NodeResources{8000, 64, 0});
  index.AddHeld("n1", NodeResources{0, 60, 0}, +1);
  index.SetHolder("a", "x");  // re-inserted with 4 bytes of memory
  index.AddHeld("n1", NodeResources{0, 60, 0}, -1);
  const CapacityIndex::Pool* pool = index.FindPool(kT4);
  ASSERT_NE(pool, nullptr);
  EXPECT_THAT(Entries(pool->by_free),
              ElementsAre(HomeTree::Entry{1, 8000, "n1", 64}));
  MatchSpec spec = MatchSpec::ForPool(kT4, 1);
  spec.pod_resources = NodeResources{0, 8, 1};
  IndexPlacer placer(&index, &nodes, {Packing::kBestFit, absl::Minutes(5)});
  auto chosen = placer.PlaceOne(spec, kNow);
  ASSERT_TRUE(chosen.has_value());
  EXPECT_EQ((*chosen)[0]->key, "b");
}

}  // namespace
}  // namespace accelsched
