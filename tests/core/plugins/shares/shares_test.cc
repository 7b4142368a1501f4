// The shares plugin: a request for a share of one GPU. Its PreFilter
// refuses a share no GPU could ever hold; its placement is best fit per GPU
// (the least free compute that holds the share's compute and memory, on a
// GPU its group may join, on a node the filters pass); WhyNot and
// DescribePool say why none holds it.
#include "core/plugins/shares/shares.h"

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

const absl::Time kNow = absl::FromUnixSeconds(1000);
const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};
const PoolKey kL4{DeviceClass::kNvidiaGpu, "nvidia-l4", ""};

// A GPU `key` of `pool` alone on node `node`; MPS-shared with `memory`
// bytes unless `memory` is 0.
Unit Gpu(const std::string& key, const std::string& node, uint64_t memory,
         const PoolKey& pool = kT4) {
  Unit u;
  u.key = key;
  u.pool = pool;
  u.home = node;
  u.hosts = {node};
  u.devices = {{node, key, "", ""}};
  if (memory > 0) {
    u.sharing = GpuSharing::kMps;
    u.memory_bytes = memory;
  }
  return u;
}

Node Healthy(const std::string& name) {
  Node n;
  n.name = name;
  n.last_heartbeat = kNow;
  return n;
}

// A share request of `pool`.
MatchSpec Share(int64_t compute, int64_t memory, std::string group,
                const PoolKey& pool = kT4) {
  MatchSpec spec = MatchSpec::ForPool(pool, 1);
  spec.share = GpuShare{compute, memory, std::move(group)};
  return spec;
}

// A bare index and its nodes, with sessions and cycles of new requests over
// them through the default profile (best fit for whole units).
class SharesTest : public testing::Test {
 protected:
  SharesTest()
      : framework_(MakeFramework()),
        holds_(nullptr, nullptr, Holds::Standing::kReadOnly),
        session_(*framework_, snapshot_, holds_, statement_) {
    snapshot_.index = &index_;
    snapshot_.nodes = &nodes_;
    snapshot_.now = kNow;
    snapshot_.heartbeat_timeout = absl::Minutes(5);
  }

  static std::unique_ptr<const Framework> MakeFramework() {
    absl::StatusOr<std::unique_ptr<Framework>> fw = Framework::Create(
        PluginRegistry(),
        DefaultProfile(ProfileOptions{Packing::kBestFit, false}));
    EXPECT_TRUE(fw.ok()) << fw.status();
    return *std::move(fw);
  }

  void Put(Unit u) {
    nodes_.try_emplace(u.home, Healthy(u.home));
    index_.Put(std::move(u));
  }

  // The four GPUs the placement tests share, each of 1000 bytes on its own
  // node: g1 with 600 milli of group ns-a (400 left), g2 with 200 of ns-a
  // (800 left), g3 with none, g4 with 900 of ns-b (100 left).
  void PutFourGpus() {
    Put(Gpu("g1", "n1", 1000));
    Put(Gpu("g2", "n2", 1000));
    Put(Gpu("g3", "n3", 1000));
    Put(Gpu("g4", "n4", 1000));
    index_.AddShare("g1", GpuShare{600, 600, "ns-a"}, +1);
    index_.AddShare("g2", GpuShare{200, 200, "ns-a"}, +1);
    index_.AddShare("g4", GpuShare{900, 900, "ns-b"}, +1);
  }

  // A prepared cycle of a new request for `spec` (kept for the cycle).
  std::unique_ptr<CycleState> Cycle(const MatchSpec& spec) {
    specs_.push_back(std::make_unique<MatchSpec>(spec));
    auto cycle = std::make_unique<CycleState>(
        CycleMode::kAllocate, snapshot_, *specs_.back(), request_, &holds_);
    framework_->Prepare(*cycle);
    return cycle;
  }

  // The GPU the share goes on, or "none".
  std::string Placed(const MatchSpec& spec) {
    std::unique_ptr<CycleState> cycle = Cycle(spec);
    std::optional<Groups> groups = plugin_.Place(session_, *cycle);
    if (!groups.has_value()) return "none";
    EXPECT_EQ(groups->size(), 1u);
    EXPECT_EQ(groups->front().size(), 1u);
    return groups->front().front()->key;
  }

  Verdict PreFilter(const MatchSpec& spec) {
    std::unique_ptr<CycleState> cycle = Cycle(spec);
    return plugin_.PreFilter(session_, *cycle);
  }

  // DescribePool of `keys`' units of `pool` on `node`, as "category (detail)",
  // "category" without detail, or "" when they serve.
  std::string Describe(const MatchSpec& spec, const std::string& node,
                       const std::vector<std::string>& keys,
                       const PoolKey& pool = kT4) {
    std::unique_ptr<CycleState> cycle = Cycle(spec);
    std::vector<const Unit*> units;
    for (const std::string& key : keys) units.push_back(index_.Find(key));
    std::optional<NodeReason> r =
        plugin_.DescribePool(*cycle, node, pool, units);
    if (!r.has_value()) return "";
    return r->detail.empty() ? r->category
                             : absl::StrCat(r->category, " (", r->detail, ")");
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
  SharesPlugin plugin_;
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

TEST_F(SharesTest, PreFilterRefusesWhatNoGpuCouldEverHold) {
  Put(Gpu("t4-plain", "n1", 0));  // takes no shares
  Put(Gpu("l4-a", "n2", 1000, kL4));
  Put(Gpu("l4-b", "n3", 4000, kL4));
  index_.SetHolder("l4-b", "x");  // held whole: it could hold a share later
  MatchSpec any = Share(300, 0, "");
  any.requested_models.clear();
  struct Case {
    std::string name;
    MatchSpec spec;
    std::string reason;  // "" for success
  };
  for (const Case& c : std::vector<Case>{
           {"no share asked", MatchSpec::ForPool(kT4, 1), ""},
           {"a model whose GPUs take no shares", Share(300, 0, ""),
            "share: no nvidia-tesla-t4 device takes shares"},
           {"a model no node has", Share(300, 0, "", {DeviceClass::kNvidiaGpu,
                                                     "nvidia-h100", ""}),
            "share: no nvidia-h100 device takes shares"},
           {"any model: some GPU takes shares", any, ""},
           {"a fraction of the memory", Share(300, 0, "", kL4), ""},
           {"the most memory one GPU has", Share(300, 4000, "", kL4), ""},
           {"more memory than any GPU has", Share(300, 4001, "", kL4),
            "share.memory_bytes 4001 is more than any nvidia-l4 device that "
            "takes shares has: at most 4000 bytes"},
       }) {
    if (c.reason.empty()) {
      EXPECT_THAT(PreFilter(c.spec), IsSuccess()) << c.name;
    } else {
      EXPECT_THAT(PreFilter(c.spec), IsUnresolvable(c.reason)) << c.name;
    }
  }
  EXPECT_TRUE(plugin_.ForNewRequests());
}

TEST_F(SharesTest, ShareGoesOnTheGpuLeftWithTheLeastFreeComputeThatHoldsIt) {
  PutFourGpus();
  struct Case {
    std::string name;
    MatchSpec spec;
    std::string gpu;
  };
  for (const Case& c : std::vector<Case>{
           {"fits the fullest of its group", Share(300, 0, "ns-a"), "g1"},
           {"the next of its group", Share(500, 0, "ns-a"), "g2"},
           {"an unshared GPU when its group's are short", Share(900, 0, "ns-a"),
            "g3"},
           {"the whole of an unshared GPU", Share(1000, 0, "ns-a"), "g3"},
           {"its own group's last 100", Share(50, 0, "ns-b"), "g4"},
           {"no group: only an unshared GPU", Share(50, 0, ""), "g3"},
           // g1 has 400 bytes left; 500 asked skips it.
           {"short of memory", Share(300, 500, "ns-a"), "g2"},
           // A fraction of memory: 400 milli takes 400 of g1's 1000 bytes.
           {"a fraction of memory that fits", Share(400, 0, "ns-a"), "g1"},
       }) {
    EXPECT_EQ(Placed(c.spec), c.gpu) << c.name;
  }
}

TEST_F(SharesTest, ShareSkipsGpusTheFiltersOrAWholeHolderRefuse) {
  PutFourGpus();
  nodes_["n1"].schedulable = false;
  EXPECT_EQ(Placed(Share(300, 0, "ns-a")), "g2");
  nodes_["n2"].last_heartbeat = kNow - absl::Minutes(10);
  EXPECT_EQ(Placed(Share(300, 0, "ns-a")), "g3");
  index_.SetHolder("g3", "whole");
  EXPECT_EQ(Placed(Share(300, 0, "ns-a")), "none");
  EXPECT_EQ(Placed(Share(50, 0, "ns-b")), "g4");
  // The same through the framework's placement: shares places shares.
  IndexPlacer placer(&index_, &nodes_,
                     {Packing::kFragmentation, absl::Minutes(5)});
  auto units = placer.PlaceOne(Share(50, 0, "ns-b"), kNow);
  ASSERT_TRUE(units.has_value());
  EXPECT_EQ(units->front()->key, "g4");
}

// Between models, the fit decides; for as good a fit, the model order.
TEST_F(SharesTest, AcrossModelsTheBestFitThenTheModelOrder) {
  Put(Gpu("t", "n1", 1000, kT4));
  Put(Gpu("l", "n2", 1000, kL4));
  MatchSpec spec = Share(300, 0, "");
  spec.requested_models = {kT4.model, kL4.model};
  EXPECT_EQ(Placed(spec), "t");
  index_.AddShare("l", GpuShare{100, 100, ""}, +1);
  EXPECT_EQ(Placed(spec), "l");
}

TEST_F(SharesTest, WhyNotSaysWhatIsFreeOverTheSharingGpus) {
  PutFourGpus();
  index_.SetHolder("g3", "whole");
  // 400 + 800 + 100 milli free on GPUs that may take a share; ns-b's are
  // not ns-a's to join.
  std::unique_ptr<CycleState> cycle = Cycle(Share(950, 0, "ns-a"));
  EXPECT_EQ(plugin_.WhyNot(session_, *cycle),
            "no nvidia-tesla-t4 device has 950 compute milli free for the "
            "share (1300 milli free over the sharing devices, in all, some on "
            "GPUs that shares of another group hold)");
  cycle = Cycle(Share(950, 5000, "ns-b"));
  EXPECT_EQ(plugin_.WhyNot(session_, *cycle),
            "no nvidia-tesla-t4 device has 950 compute milli and 5000 bytes "
            "of GPU memory free for the share (1300 milli free over the "
            "sharing devices, in all, some on GPUs that shares of another "
            "group hold)");
  // Only ns-a shares left: nothing of another group for ns-a.
  index_.AddShare("g4", GpuShare{900, 900, "ns-b"}, -1);
  index_.SetHolder("g4", "whole");
  cycle = Cycle(Share(950, 0, "ns-a"));
  EXPECT_EQ(plugin_.WhyNot(session_, *cycle),
            "no nvidia-tesla-t4 device has 950 compute milli free for the "
            "share (1200 milli free over the sharing devices, in all)");
}

TEST_F(SharesTest, DescribePoolSaysWhyTheClosestGpuDoesNotHoldIt) {
  PutFourGpus();
  Put(Gpu("plain", "n5", 0));
  Put(Gpu("sick", "n6", 1000));
  Unit sick = *index_.Find("sick");
  sick.healthy = false;
  index_.Put(sick);
  Put(Gpu("whole", "n7", 1000));
  index_.SetHolder("whole", "x");
  struct Case {
    std::string name;
    MatchSpec spec;
    std::vector<std::string> units;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {"it fits", Share(300, 0, "ns-a"), {"g1"}, ""},
           {"one of two fits", Share(470, 0, "ns-a"), {"g1", "g2"}, ""},
           {"short of compute", Share(470, 0, "ns-a"), {"g1"},
            "no nvidia-tesla-t4 device with the share free (g1 has 400 of "
            "1000 milli free, the request needs 470)"},
           {"the closest of its group, not another's", Share(470, 0, "ns-a"),
            {"g1", "g4"},
            "no nvidia-tesla-t4 device with the share free (g1 has 400 of "
            "1000 milli free, the request needs 470)"},
           {"short of memory", Share(300, 500, "ns-a"), {"g1"},
            "no nvidia-tesla-t4 device with the share free (g1 has 400 bytes "
            "of GPU memory free, the share needs 500)"},
           {"another group's, the request of none", Share(50, 0, ""), {"g4"},
            "no nvidia-tesla-t4 device with the share free (g4 holds shares "
            "of group \"ns-b\", the request is of no group)"},
           {"another group's", Share(50, 0, "ns-a"), {"g4"},
            "no nvidia-tesla-t4 device with the share free (g4 holds shares "
            "of group \"ns-b\", the request is of group \"ns-a\")"},
           {"held whole", Share(50, 0, ""), {"whole"},
            "no nvidia-tesla-t4 device with the share free (held whole or "
            "unhealthy)"},
           {"unhealthy", Share(50, 0, ""), {"sick"},
            "no nvidia-tesla-t4 device with the share free (held whole or "
            "unhealthy)"},
           {"takes no shares", Share(50, 0, ""), {"plain"},
            "no nvidia-tesla-t4 device takes shares"},
       }) {
    EXPECT_EQ(Describe(c.spec, "n", c.units), c.says) << c.name;
  }
}

TEST_F(SharesTest, PlacesSharesOnly) {
  std::unique_ptr<CycleState> whole = Cycle(MatchSpec::ForPool(kT4, 1));
  std::unique_ptr<CycleState> share = Cycle(Share(300, 0, ""));
  EXPECT_FALSE(plugin_.Places(*whole));
  EXPECT_TRUE(plugin_.Places(*share));
}

}  // namespace
}  // namespace accelsched
