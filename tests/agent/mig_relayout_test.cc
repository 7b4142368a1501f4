// Dynamic MIG re-layout on the node: plans applied through the fake
// libnvidia-ml (tests/fake_nvml), judged by what NVML holds afterwards (the
// fake's scenario file, which it writes back after each change, and a fresh
// discovery); and the real agent binary's --allow_mig_relayout against an
// in-process scheduler that serves plans.
#include "agent/mig_relayout.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "accelsched/v1/accelsched.grpc.pb.h"
#include "agent/nvidia_gpus.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/recording_scheduler.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace accelsched::agent {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text;
  std::filesystem::rename(path + ".tmp", path);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

constexpr char kH100[] =
    "gpu uuid=GPU-h100 name=\"NVIDIA H100 80GB HBM3\" memory_mib=81559 mig=1\n";

// An H100 in MIG mode with seven 1g.10gb instances MIG-0..MIG-6 at starts
// 0..6; `extra[start]` is added to that instance's line.
std::string SevenSlices(const std::map<int, std::string>& extra = {}) {
  std::string text = kH100;
  for (int i = 0; i < 7; ++i) {
    auto it = extra.find(i);
    absl::StrAppend(&text, "mig gpu=0 uuid=MIG-", i,
                    " profile=0 mem_mib=9856 start=", i, " gi=", i + 1,
                    it == extra.end() ? "" : " " + it->second, "\n");
  }
  return text;
}

v1::MigSlice Slice(const std::string& id, const std::string& profile,
                   int start) {
  v1::MigSlice s;
  s.set_id(id);
  s.set_profile(profile);
  s.set_start(start);
  return s;
}

// Four of the seven 1g.10gb kept, a 3g.40gb created at start 4.
v1::MigLayout FourAndA3g(uint64_t generation) {
  v1::MigLayout plan;
  plan.set_generation(generation);
  for (int i = 0; i < 4; ++i) {
    *plan.add_slices() = Slice(absl::StrCat("MIG-", i), "1g.10gb", i);
  }
  *plan.add_slices() = Slice("", "3g.40gb", 4);
  return plan;
}

google::protobuf::Map<std::string, v1::MigLayout> Plans(
    std::vector<std::pair<std::string, v1::MigLayout>> plans) {
  google::protobuf::Map<std::string, v1::MigLayout> map;
  for (auto& [id, plan] : plans) map[id] = plan;
  return map;
}

// A MIG slice as "id profile@start".
std::vector<std::string> SliceTexts(const v1::Device& d) {
  std::vector<std::string> out;
  for (const v1::MigSlice& s : d.mig_slices()) {
    out.push_back(absl::StrCat(s.id(), " ", s.profile(), "@", s.start()));
  }
  return out;
}

// The fake NVML, one agent's MIG re-layout over it, and discovery.
class MigRelayoutTest : public testing::Test {
 protected:
  void SetUp() override {
    ::setenv("FAKE_NVML_SCENARIO", scenario_.c_str(), 1);
    ::unsetenv("FAKE_NVML_INIT_ERROR");
  }

  // Loads the library and starts an agent's re-layout state afresh (an
  // agent process starting).
  void StartAgent() {
    plans_.reset();
    relayout_.reset();
    gpus_.reset();
    absl::StatusOr<std::unique_ptr<NvmlLibrary>> nvml =
        NvmlLibrary::Load(FAKE_NVML_PATH);
    ASSERT_OK(nvml);
    gpus_ = std::make_unique<NvidiaGpus>(*std::move(nvml));
    relayout_ = std::make_unique<MigRelayout>(&gpus_->nvml());
    plans_ = std::make_unique<MigPlans>(relayout_.get());
  }

  void SetScenario(const std::string& text) {
    WriteFile(scenario_, text);
    StartAgent();
  }

  // The GPU's slices as a discovery pass sees them now.
  std::vector<std::string> Discovered(const std::string& gpu = "GPU-h100") {
    Observation seen;
    EXPECT_OK(gpus_->Observe(seen));
    for (const v1::Device& d : seen.devices) {
      if (d.id() == gpu) return SliceTexts(d);
    }
    ADD_FAILURE() << gpu << " not discovered";
    return {};
  }

  // The fake's change counters (its `stats` line; all 0 before a change).
  std::map<std::string, int> Changes() {
    std::map<std::string, int> out = {{"gi_created", 0},
                                      {"gi_destroyed", 0},
                                      {"ci_created", 0},
                                      {"ci_destroyed", 0}};
    for (absl::string_view line : absl::StrSplit(ReadFile(scenario_), '\n')) {
      if (!absl::StartsWith(line, "stats ")) continue;
      for (absl::string_view kv : absl::StrSplit(line.substr(6), ' ')) {
        std::pair<std::string, std::string> p = absl::StrSplit(kv, '=');
        out[p.first] = std::stoi(p.second);
      }
    }
    return out;
  }

  static std::map<std::string, int> Counts(int gi_created, int gi_destroyed,
                                           int ci_created, int ci_destroyed) {
    return {{"gi_created", gi_created},
            {"gi_destroyed", gi_destroyed},
            {"ci_created", ci_created},
            {"ci_destroyed", ci_destroyed}};
  }

  TempDir dir_;
  std::string scenario_ = dir_.File("scenario");
  std::unique_ptr<NvidiaGpus> gpus_;
  std::unique_ptr<MigRelayout> relayout_;
  std::unique_ptr<MigPlans> plans_;
};

TEST_F(MigRelayoutTest, AppliesAPlanKeepingSlicesAndCreatingTheNewOne) {
  // A process on a kept slice does not matter.
  SetScenario(SevenSlices({{0, "procs=1"}}));
  ASSERT_THAT(Discovered(), ElementsAre("MIG-0 1g.10gb@0", "MIG-1 1g.10gb@1",
                                        "MIG-2 1g.10gb@2", "MIG-3 1g.10gb@3",
                                        "MIG-4 1g.10gb@4", "MIG-5 1g.10gb@5",
                                        "MIG-6 1g.10gb@6"));

  EXPECT_TRUE(plans_->Handle(Plans({{"GPU-h100", FourAndA3g(1)}})));
  EXPECT_THAT(plans_->failures(), IsEmpty());
  // The kept slices keep their MIG UUIDs; the new one has a new one.
  EXPECT_THAT(Discovered(), ElementsAre("MIG-0 1g.10gb@0", "MIG-1 1g.10gb@1",
                                        "MIG-2 1g.10gb@2", "MIG-3 1g.10gb@3",
                                        "MIG-h100-2-4 3g.40gb@4"));
  // Compute instances went before their GPU instances (the fake refuses a
  // GPU instance with one: IN_USE).
  EXPECT_EQ(Changes(), Counts(1, 3, 1, 3));

  // The same layout again (a new generation): nothing to do.
  EXPECT_TRUE(plans_->Handle(Plans({{"GPU-h100", FourAndA3g(2)}})));
  EXPECT_THAT(plans_->failures(), IsEmpty());
  EXPECT_EQ(Changes(), Counts(1, 3, 1, 3));
}

TEST_F(MigRelayoutTest, WholeGpuAndBackAgain) {
  SetScenario(SevenSlices());
  v1::MigLayout whole;
  whole.set_generation(1);
  *whole.add_slices() = Slice("", "7g.80gb", 0);
  EXPECT_TRUE(plans_->Handle(Plans({{"GPU-h100", whole}})));
  EXPECT_THAT(plans_->failures(), IsEmpty());
  EXPECT_THAT(Discovered(), ElementsAre("MIG-h100-4-0 7g.80gb@0"));

  v1::MigLayout halves;
  halves.set_generation(2);
  *halves.add_slices() = Slice("", "3g.40gb", 0);
  *halves.add_slices() = Slice("", "3g.40gb", 4);
  EXPECT_TRUE(plans_->Handle(Plans({{"GPU-h100", halves}})));
  EXPECT_THAT(plans_->failures(), IsEmpty());
  EXPECT_THAT(Discovered(),
              ElementsAre("MIG-h100-2-0 3g.40gb@0", "MIG-h100-2-4 3g.40gb@4"));
  EXPECT_EQ(Changes(), Counts(3, 8, 3, 8));
}

struct RefusalCase {
  std::string name;
  std::map<int, std::string> extra;  // on the 1g.10gb lines, by start
  std::string error;
};
void PrintTo(const RefusalCase& c, std::ostream* os) { *os << c.name; }

class RefusalTest : public MigRelayoutTest,
                    public testing::WithParamInterface<RefusalCase> {};

// Nothing is destroyed, and the failure goes out with the plan's generation.
TEST_P(RefusalTest, NothingChangesWhenASliceToDestroyMayBeInUse) {
  const std::string before = SevenSlices(GetParam().extra);
  SetScenario(before);
  EXPECT_FALSE(plans_->Handle(Plans({{"GPU-h100", FourAndA3g(7)}})));
  ASSERT_EQ(plans_->failures().size(), 1u);
  const v1::MigRelayoutFailure& f = plans_->failures().at("GPU-h100");
  EXPECT_EQ(f.generation(), 7u);
  EXPECT_THAT(f.error(), HasSubstr(GetParam().error));
  EXPECT_EQ(ReadFile(scenario_), before) << "NVML was changed";
  EXPECT_EQ(Discovered().size(), 7u);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RefusalTest,
    testing::Values(
        RefusalCase{"AProcessRuns",
                    {{5, "procs=1"}},
                    "1 compute process runs on 1g.10gb at start 5 (MIG-5), "
                    "which the plan destroys"},
        RefusalCase{"ProcessesOnTheLastOne",
                    {{6, "procs=3"}},
                    "3 compute processes run on 1g.10gb at start 6 (MIG-6)"},
        // Not knowing is a refusal too.
        RefusalCase{
            "ProcessesUnreadable",
            {{6,
              "\nfail call=nvmlDeviceGetComputeRunningProcesses_v3 error=4 "
              "start=6"}},
            "checking for compute processes on 1g.10gb at start 6 (MIG-6): "
            "nvmlDeviceGetComputeRunningProcesses_v3: Insufficient "
            "Permissions"}),
    [](const testing::TestParamInfo<RefusalCase>& info) {
      return info.param.name;
    });

struct BadPlanCase {
  std::string name;
  std::vector<v1::MigSlice> slices;
  std::string error;
};
void PrintTo(const BadPlanCase& c, std::ostream* os) { *os << c.name; }

class BadPlanTest : public MigRelayoutTest,
                    public testing::WithParamInterface<BadPlanCase> {};

// A plan that cannot apply as a whole is refused before any change.
TEST_P(BadPlanTest, IsRefusedBeforeAnyChange) {
  const std::string before = SevenSlices();
  SetScenario(before);
  v1::MigLayout plan;
  plan.set_generation(11);
  for (const v1::MigSlice& s : GetParam().slices) *plan.add_slices() = s;
  EXPECT_FALSE(plans_->Handle(Plans({{"GPU-h100", plan}})));
  ASSERT_TRUE(plans_->failures().contains("GPU-h100"));
  EXPECT_EQ(plans_->failures().at("GPU-h100").generation(), 11u);
  EXPECT_THAT(plans_->failures().at("GPU-h100").error(),
              HasSubstr(GetParam().error));
  EXPECT_EQ(ReadFile(scenario_), before) << "NVML was changed";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadPlanTest,
    testing::Values(
        BadPlanCase{"UnknownProfile",
                    {Slice("", "2g.15gb", 0)},
                    "profile \"2g.15gb\" is not a GPU instance profile of "
                    "GPU-h100 (valid: 1g.10gb, 2g.20gb, 3g.40gb, 4g.40gb, "
                    "7g.80gb, 1g.10gb+me, 1g.20gb)"},
        BadPlanCase{"StartTheProfileDoesNotAllow",
                    {Slice("", "3g.40gb", 2)},
                    "3g.40gb cannot start at 2 on GPU-h100 (valid starts: "
                    "0, 4)"},
        BadPlanCase{"Overlap",
                    {Slice("MIG-0", "1g.10gb", 0), Slice("", "2g.20gb", 0)},
                    "overlaps"},
        BadPlanCase{"OverlapWithAKeptSlice",
                    {Slice("MIG-4", "1g.10gb", 4), Slice("", "3g.40gb", 4)},
                    "3g.40gb at start 4 overlaps 1g.10gb at start 4"},
        BadPlanCase{"Twice",
                    {Slice("", "3g.40gb", 0), Slice("", "3g.40gb", 0)},
                    "mig_plan.slices[1]: 3g.40gb at start 0 is planned twice"}),
    [](const testing::TestParamInfo<BadPlanCase>& info) {
      return info.param.name;
    });

TEST_F(MigRelayoutTest, AnNvmlFailureIsReportedOnceAndANewGenerationIsTried) {
  // The GPU refuses the first creation at start 4 only.
  SetScenario(SevenSlices() +
              "fail call=nvmlDeviceCreateGpuInstanceWithPlacement error=23 "
              "gpu=0 start=4 times=1\n");
  EXPECT_FALSE(plans_->Handle(Plans({{"GPU-h100", FourAndA3g(3)}})));
  ASSERT_EQ(plans_->failures().size(), 1u);
  EXPECT_EQ(plans_->failures().at("GPU-h100").generation(), 3u);
  EXPECT_EQ(plans_->failures().at("GPU-h100").error(),
            "creating GPU instance 3g.40gb at start 4: "
            "nvmlDeviceCreateGpuInstanceWithPlacement: Insufficient resources "
            "(nvmlReturn_t 23)");
  // It stopped there: the destroyed three are gone, nothing was created.
  EXPECT_THAT(Discovered(), ElementsAre("MIG-0 1g.10gb@0", "MIG-1 1g.10gb@1",
                                        "MIG-2 1g.10gb@2", "MIG-3 1g.10gb@3"));
  EXPECT_EQ(Changes(), Counts(0, 3, 0, 3));
  // The failure was used up: a retry now would succeed.
  EXPECT_THAT(ReadFile(scenario_), Not(HasSubstr("fail ")));

  // Delivered; the same generation comes again: not retried.
  plans_->FailuresDelivered();
  EXPECT_FALSE(plans_->Handle(Plans({{"GPU-h100", FourAndA3g(3)}})));
  EXPECT_THAT(plans_->failures(), IsEmpty());
  EXPECT_EQ(Discovered().size(), 4u);
  EXPECT_EQ(Changes(), Counts(0, 3, 0, 3));

  // The server's next plan is tried, and finishes the layout.
  EXPECT_TRUE(plans_->Handle(Plans({{"GPU-h100", FourAndA3g(4)}})));
  EXPECT_THAT(plans_->failures(), IsEmpty());
  EXPECT_THAT(Discovered(), ElementsAre("MIG-0 1g.10gb@0", "MIG-1 1g.10gb@1",
                                        "MIG-2 1g.10gb@2", "MIG-3 1g.10gb@3",
                                        "MIG-h100-2-4 3g.40gb@4"));
  EXPECT_EQ(Changes(), Counts(1, 3, 1, 3));
  EXPECT_FALSE(plans_->Handle(Plans({{"GPU-h100", FourAndA3g(4)}})));
  EXPECT_EQ(Discovered().size(), 5u);
}

TEST_F(MigRelayoutTest, AnAgentKilledMidwayFinishesTheSamePlanAfterRestart) {
  // Killed between the 3g.40gb GPU instance and its compute instance (the
  // failure stands in for the kill).
  SetScenario(SevenSlices() +
              "fail call=nvmlGpuInstanceCreateComputeInstance error=999 "
              "times=1\n");
  EXPECT_FALSE(plans_->Handle(Plans({{"GPU-h100", FourAndA3g(5)}})));
  ASSERT_TRUE(plans_->failures().contains("GPU-h100"));
  EXPECT_THAT(plans_->failures().at("GPU-h100").error(),
              HasSubstr("creating the compute instance of 3g.40gb at start 4: "
                        "nvmlGpuInstanceCreateComputeInstance: Unknown Error"));
  EXPECT_EQ(Changes(), Counts(1, 3, 0, 3));
  // The instance without a compute instance has no MIG device: not seen.
  EXPECT_EQ(Discovered().size(), 4u);

  // The restarted agent gets the same plan: it only adds the compute
  // instance.
  StartAgent();
  EXPECT_TRUE(plans_->Handle(Plans({{"GPU-h100", FourAndA3g(5)}})));
  EXPECT_THAT(plans_->failures(), IsEmpty());
  EXPECT_THAT(Discovered(), ElementsAre("MIG-0 1g.10gb@0", "MIG-1 1g.10gb@1",
                                        "MIG-2 1g.10gb@2", "MIG-3 1g.10gb@3",
                                        "MIG-h100-2-4 3g.40gb@4"));
  EXPECT_EQ(Changes(), Counts(1, 3, 1, 3));
}

struct PartialCase {
  std::string name;
  std::string mig_lines;  // the instances the killed agent left
  std::map<std::string, int> changes;
};
void PrintTo(const PartialCase& c, std::ostream* os) { *os << c.name; }

class PartialLayoutTest : public MigRelayoutTest,
                          public testing::WithParamInterface<PartialCase> {};

TEST_P(PartialLayoutTest, IsFinishedWithoutDoingAnythingTwice) {
  std::string scenario = kH100;
  for (int i = 0; i < 4; ++i) {
    absl::StrAppend(&scenario, "mig gpu=0 uuid=MIG-", i,
                    " profile=0 mem_mib=9856 start=", i, " gi=", i + 1, "\n");
  }
  SetScenario(scenario + GetParam().mig_lines);
  EXPECT_TRUE(plans_->Handle(Plans({{"GPU-h100", FourAndA3g(1)}})));
  EXPECT_THAT(plans_->failures(), IsEmpty());
  const std::vector<std::string> slices = Discovered();
  ASSERT_EQ(slices.size(), 5u);
  EXPECT_EQ(slices[3], "MIG-3 1g.10gb@3");
  EXPECT_THAT(slices[4], HasSubstr(" 3g.40gb@4"));
  EXPECT_EQ(Changes(), GetParam().changes);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PartialLayoutTest,
    testing::Values(
        // Killed after the compute instance at start 4 was destroyed.
        PartialCase{"MidDestroy",
                    "mig gpu=0 uuid= profile=0 mem_mib=9856 start=4 gi=5 ci=0\n"
                    "mig gpu=0 uuid=MIG-5 profile=0 mem_mib=9856 start=5 gi=6\n"
                    "mig gpu=0 uuid=MIG-6 profile=0 mem_mib=9856 start=6 "
                    "gi=7\n",
                    {{"gi_created", 1},
                     {"gi_destroyed", 3},
                     {"ci_created", 1},
                     {"ci_destroyed", 2}}},
        // Killed after every destroy.
        PartialCase{"AllDestroyed",
                    "",
                    {{"gi_created", 1},
                     {"gi_destroyed", 0},
                     {"ci_created", 1},
                     {"ci_destroyed", 0}}},
        // Killed after creating the new GPU instance.
        PartialCase{"MidCreate",
                    "mig gpu=0 uuid= profile=2 start=4 gi=9 ci=0\n",
                    {{"gi_created", 0},
                     {"gi_destroyed", 0},
                     {"ci_created", 1},
                     {"ci_destroyed", 0}}}),
    [](const testing::TestParamInfo<PartialCase>& info) {
      return info.param.name;
    });

TEST_F(MigRelayoutTest, PlansForAWholeGpuOrAGpuElsewhereAreRefused) {
  // gpu=0 is the whole GPU: the slices belong to gpu=1.
  std::string scenario =
      "gpu uuid=GPU-whole name=\"NVIDIA H100 80GB HBM3\" memory_mib=81559\n" +
      SevenSlices();
  absl::StrReplaceAll({{"mig gpu=0", "mig gpu=1"}}, &scenario);
  SetScenario(scenario);
  v1::MigLayout one;
  *one.add_slices() = Slice("", "7g.80gb", 0);
  one.set_generation(5);
  v1::MigLayout other = one;
  other.set_generation(6);
  EXPECT_FALSE(
      plans_->Handle(Plans({{"GPU-whole", one}, {"GPU-elsewhere", other}})));
  ASSERT_THAT(plans_->failures(),
              UnorderedElementsAre(Pair("GPU-whole", testing::_),
                                   Pair("GPU-elsewhere", testing::_)));
  EXPECT_EQ(plans_->failures().at("GPU-whole").generation(), 5u);
  EXPECT_EQ(plans_->failures().at("GPU-whole").error(),
            "GPU-whole is not in MIG mode (the agent never changes MIG mode)");
  EXPECT_EQ(plans_->failures().at("GPU-elsewhere").generation(), 6u);
  EXPECT_EQ(plans_->failures().at("GPU-elsewhere").error(),
            "GPU-elsewhere is not on this node");
  EXPECT_EQ(ReadFile(scenario_), scenario) << "NVML was changed";
  EXPECT_EQ(Discovered().size(), 7u);

  // Without NVML every plan is refused.
  MigRelayout none(nullptr);
  EXPECT_THAT(none.Apply("GPU-whole", one),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("GPU-whole is not on this node")));
}

// `plan` with its allocation and deadline set.
v1::MigLayout For(v1::MigLayout plan, const std::string& allocation_id,
                  absl::Time deadline) {
  plan.set_allocation_id(allocation_id);
  plan.mutable_deadline()->set_seconds(absl::ToUnixSeconds(deadline));
  return plan;
}

TEST_F(MigRelayoutTest, APlanIsItsGenerationAllocationAndDeadline) {
  SetScenario(SevenSlices());
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  const absl::Time deadline = now + absl::Minutes(10);
  const v1::MigLayout plan = For(FourAndA3g(5), "a-1", deadline);
  EXPECT_TRUE(plans_->Handle(Plans({{"GPU-h100", plan}}), now));
  EXPECT_EQ(Changes(), Counts(1, 3, 1, 3));
  // The same plan in every heartbeat reply: handled once.
  EXPECT_FALSE(plans_->Handle(Plans({{"GPU-h100", plan}}), now));
  // The same generation for another request, or with another deadline, is
  // another plan (a server that lost its memory of generations); so is a
  // lower generation. Each is handled (here, nothing left to change).
  EXPECT_TRUE(plans_->Handle(
      Plans({{"GPU-h100", For(FourAndA3g(5), "a-2", deadline)}}), now));
  EXPECT_TRUE(plans_->Handle(
      Plans({{"GPU-h100",
              For(FourAndA3g(5), "a-2", deadline + absl::Seconds(1))}}),
      now));
  EXPECT_TRUE(plans_->Handle(
      Plans({{"GPU-h100",
              For(FourAndA3g(4), "a-2", deadline + absl::Seconds(1))}}),
      now));
  EXPECT_THAT(plans_->failures(), IsEmpty());
  EXPECT_EQ(Changes(), Counts(1, 3, 1, 3));
}

TEST_F(MigRelayoutTest, APlanNearItsDeadlineIsRefusedUntouched) {
  SetScenario(SevenSlices());
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  // 29 s left, under the 30 s margin: the server may drop it before the
  // agent is done, and hand the slices out again.
  EXPECT_FALSE(plans_->Handle(
      Plans({{"GPU-h100", For(FourAndA3g(5), "a-1", now + absl::Seconds(29))}}),
      now));
  ASSERT_TRUE(plans_->failures().contains("GPU-h100"));
  EXPECT_EQ(plans_->failures().at("GPU-h100").generation(), 5u);
  EXPECT_EQ(plans_->failures().at("GPU-h100").error(),
            "the plan's deadline 2027-01-15T08:00:29Z is 29s away, under the "
            "30s margin (--mig_relayout_margin): not started");
  EXPECT_EQ(Changes(), Counts(0, 0, 0, 0));
  EXPECT_EQ(Discovered().size(), 7u);
  // The same plan in the next replies: neither tried nor reported again.
  plans_->FailuresDelivered();
  EXPECT_FALSE(plans_->Handle(
      Plans({{"GPU-h100", For(FourAndA3g(5), "a-1", now + absl::Seconds(29))}}),
      now + absl::Seconds(10)));
  EXPECT_THAT(plans_->failures(), IsEmpty());
  // One past its deadline likewise; one with time to spare is applied.
  EXPECT_FALSE(plans_->Handle(
      Plans({{"GPU-h100", For(FourAndA3g(6), "a-1", now - absl::Seconds(1))}}),
      now));
  ASSERT_TRUE(plans_->failures().contains("GPU-h100"));
  EXPECT_EQ(plans_->failures().at("GPU-h100").generation(), 6u);
  EXPECT_EQ(plans_->failures().at("GPU-h100").error(),
            "the plan's deadline 2027-01-15T07:59:59Z passed 1s ago, under "
            "the 30s margin (--mig_relayout_margin): not started");
  EXPECT_EQ(Changes(), Counts(0, 0, 0, 0));
  EXPECT_EQ(ReadFile(scenario_), SevenSlices()) << "NVML was changed";
  plans_->FailuresDelivered();
  EXPECT_TRUE(plans_->Handle(
      Plans({{"GPU-h100", For(FourAndA3g(7), "a-1", now + absl::Seconds(31))}}),
      now));
  EXPECT_EQ(Changes(), Counts(1, 3, 1, 3));
}

// An applier that records the plans it is given and fails those listed.
class Recorder final : public MigLayoutApplier {
 public:
  absl::StatusOr<MigLayoutDiff> Apply(const std::string& gpu_id,
                                      const v1::MigLayout& plan) override {
    applied.push_back(absl::StrCat(gpu_id, " ", plan.generation(), " ",
                                   plan.allocation_id()));
    if (fail.contains(plan.generation())) {
      return absl::InternalError(absl::StrCat("failed ", plan.generation()));
    }
    return MigLayoutDiff{};
  }
  std::vector<std::string> applied;
  std::set<uint64_t> fail;
};

TEST(MigPlansTest, APlanIsNeverAppliedTwiceWhateverCameBetween) {
  Recorder applier;
  MigPlans plans(&applier);
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  const v1::MigLayout a = For(FourAndA3g(8), "a-1", now + absl::Minutes(10));
  const v1::MigLayout b = For(FourAndA3g(9), "a-2", now + absl::Minutes(10));
  EXPECT_TRUE(plans.Handle(Plans({{"GPU-1", a}}), now));
  EXPECT_TRUE(plans.Handle(Plans({{"GPU-1", b}}), now));
  // `a` back (a server whose state went back): not applied again.
  EXPECT_FALSE(plans.Handle(Plans({{"GPU-1", a}}), now));
  EXPECT_FALSE(plans.Handle(Plans({{"GPU-1", b}}), now));
  // A failed plan is neither retried nor reported again, even after
  // another.
  applier.fail = {3};
  const v1::MigLayout c = For(FourAndA3g(3), "a-3", now + absl::Minutes(10));
  EXPECT_FALSE(plans.Handle(Plans({{"GPU-1", c}}), now));
  EXPECT_EQ(plans.failures().at("GPU-1").error(), "failed 3");
  plans.FailuresDelivered();
  EXPECT_FALSE(plans.Handle(Plans({{"GPU-1", c}}), now));
  EXPECT_FALSE(plans.Handle(Plans({{"GPU-1", a}, {"GPU-2", c}}), now));
  EXPECT_EQ(plans.failures().at("GPU-2").error(), "failed 3");
  plans.FailuresDelivered();
  EXPECT_FALSE(plans.Handle(Plans({{"GPU-1", c}, {"GPU-2", c}}), now));
  EXPECT_THAT(plans.failures(), IsEmpty());
  EXPECT_THAT(applier.applied, ElementsAre("GPU-1 8 a-1", "GPU-1 9 a-2",
                                           "GPU-1 3 a-3", "GPU-2 3 a-3"));
  // Two hours on, `a` is forgotten; sent again, its deadline refuses it.
  const absl::Time later = now + absl::Hours(2);
  EXPECT_FALSE(plans.Handle(Plans({{"GPU-1", a}}), later));
  EXPECT_EQ(applier.applied.size(), 4u);
  EXPECT_THAT(plans.failures().at("GPU-1").error(),
              HasSubstr("passed 1h50m ago, under the 30s margin"));
}

TEST(MigPlansTest, APlanWithoutADeadlineIsApplied) {
  Recorder applier;
  MigPlans plans(&applier);
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  v1::MigLayout unset = FourAndA3g(1);
  v1::MigLayout zero = FourAndA3g(2);
  zero.mutable_deadline()->set_seconds(0);  // present, 0: taken as unset
  ASSERT_TRUE(zero.has_deadline());
  EXPECT_TRUE(plans.Handle(Plans({{"GPU-1", unset}, {"GPU-2", zero}}), now));
  EXPECT_THAT(plans.failures(), IsEmpty());
  EXPECT_THAT(applier.applied, ElementsAre("GPU-1 1 ", "GPU-2 2 "));
}

TEST(MigPlansTest, TheMarginIsTheOneGiven) {
  Recorder applier;
  MigPlans none(&applier, absl::ZeroDuration());
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  // At its deadline: refused even without a margin.
  EXPECT_TRUE(none.Handle(
      Plans({{"GPU-1", For(FourAndA3g(1), "a-1", now + absl::Seconds(1))}}),
      now));
  EXPECT_FALSE(
      none.Handle(Plans({{"GPU-1", For(FourAndA3g(2), "a-1", now)}}), now));
  EXPECT_EQ(none.failures().at("GPU-1").error(),
            "the plan's deadline 2027-01-15T08:00:00Z is 0 away, under the 0 "
            "margin (--mig_relayout_margin): not started");
  MigPlans wide(&applier, absl::Minutes(11));
  v1::MigLayout plan = For(FourAndA3g(3), "a-1", now + absl::Minutes(10));
  plan.mutable_deadline()->set_nanos(5'000'000);
  EXPECT_FALSE(wide.Handle(Plans({{"GPU-1", plan}}), now));
  EXPECT_EQ(wide.failures().at("GPU-1").error(),
            "the plan's deadline 2027-01-15T08:10:00.005Z is 10m0.005s away, "
            "under the 11m margin (--mig_relayout_margin): not started");
  EXPECT_THAT(applier.applied, ElementsAre("GPU-1 1 a-1"));
}

// An applier that fails with a long message.
class Verbose final : public MigLayoutApplier {
 public:
  absl::StatusOr<MigLayoutDiff> Apply(const std::string&,
                                      const v1::MigLayout&) override {
    // 10,000 bytes of two-byte characters after two bytes: a cut at the
    // limit less "..." would split one.
    std::string message = "xx";
    for (int i = 0; i < 5000; ++i) message += "\u00e9";
    return absl::InternalError(message);
  }
};

TEST(MigPlansTest, AFailureIsCutToWhatTheServerTakes) {
  Verbose applier;
  MigPlans plans(&applier);
  EXPECT_FALSE(plans.Handle(Plans({{"GPU-1", FourAndA3g(1)}})));
  ASSERT_TRUE(plans.failures().contains("GPU-1"));
  const std::string& error = plans.failures().at("GPU-1").error();
  EXPECT_LE(error.size(), kMaxRelayoutErrorBytes);
  EXPECT_GT(error.size(), kMaxRelayoutErrorBytes - 8);
  ASSERT_TRUE(absl::EndsWith(error, "..."));
  // Whole characters only: "xx", then two bytes each.
  EXPECT_EQ((error.size() - 3 - 2) % 2, 0u);
  EXPECT_EQ(static_cast<unsigned char>(error[error.size() - 4]), 0xA9);
  EXPECT_EQ(TruncatedRelayoutError("short"), "short");
  EXPECT_EQ(TruncatedRelayoutError(std::string(kMaxRelayoutErrorBytes, 'a')),
            std::string(kMaxRelayoutErrorBytes, 'a'));
}

// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms,
// surrogates or code points past U+10FFFF).
bool IsUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The continuation bytes after the first, and its payload bits.
    const int n = (c & 0xE0) == 0xC0   ? 1
                  : (c & 0xF0) == 0xE0 ? 2
                  : (c & 0xF8) == 0xF0 ? 3
                                       : 0;
    if (n == 0) return false;
    uint32_t cp = c & (0x3F >> n);
    if (i + n >= s.size()) return false;  // cut short
    for (int k = 1; k <= n; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

TEST(TruncatedRelayoutErrorTest, CutsAtAWholeCharacterOfAnyWidth) {
  // 2-, 3- and 4-byte characters after 0 to 3 ASCII bytes, so that the
  // limit falls on every byte of a character.
  for (const std::string ch : {"\u00e9", "\u20ac", "\U0001F600"}) {
    for (int lead = 0; lead < 4; ++lead) {
      std::string error(lead, 'x');
      while (error.size() < 10'000) error += ch;
      ASSERT_TRUE(IsUtf8(error));
      const std::string cut = TruncatedRelayoutError(error);
      SCOPED_TRACE(absl::StrCat(ch.size(), "-byte characters after ", lead));
      EXPECT_LE(cut.size(), kMaxRelayoutErrorBytes);
      EXPECT_GE(cut.size(), kMaxRelayoutErrorBytes - ch.size() + 1);
      EXPECT_TRUE(IsUtf8(cut));
      ASSERT_TRUE(absl::EndsWith(cut, "..."));
      EXPECT_TRUE(absl::StartsWith(error, cut.substr(0, cut.size() - 3)));
    }
  }
  // At the limit it is left alone; one byte more is cut.
  const std::string at(kMaxRelayoutErrorBytes, 'a');
  EXPECT_EQ(TruncatedRelayoutError(at), at);
  EXPECT_EQ(TruncatedRelayoutError(at + "b"),
            std::string(kMaxRelayoutErrorBytes - 3, 'a') + "...");
}

TEST(DiffMigLayoutTest, KeepsByProfileAndStart) {
  const std::vector<MigSpot> current = {
      {"1g.10gb", 0}, {"1g.10gb", 1}, {"2g.20gb", 2}, {"3g.40gb", 4}};
  v1::MigLayout plan;
  *plan.add_slices() = Slice("MIG-a", "1g.10gb", 0);
  *plan.add_slices() = Slice("", "1g.10gb", 2);  // was 2g.20gb
  *plan.add_slices() = Slice("", "1g.10gb", 3);
  *plan.add_slices() = Slice("MIG-b", "3g.40gb", 4);
  ASSERT_OK_AND_ASSIGN(MigLayoutDiff diff, DiffMigLayout(current, plan));
  EXPECT_THAT(diff.keep,
              ElementsAre(MigSpot{"1g.10gb", 0}, MigSpot{"3g.40gb", 4}));
  EXPECT_THAT(diff.destroy,
              ElementsAre(MigSpot{"1g.10gb", 1}, MigSpot{"2g.20gb", 2}));
  EXPECT_THAT(diff.create,
              ElementsAre(MigSpot{"1g.10gb", 2}, MigSpot{"1g.10gb", 3}));

  v1::MigLayout bad;
  *bad.add_slices() = Slice("", "", 0);
  EXPECT_THAT(DiffMigLayout(current, bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("mig_plan.slices[0] has no profile")));
  bad.mutable_slices(0)->set_profile("1g.10gb");
  bad.mutable_slices(0)->set_start(-1);
  EXPECT_THAT(DiffMigLayout(current, bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("mig_plan.slices[0].start -1 is negative")));
  // An empty plan destroys everything.
  ASSERT_OK_AND_ASSIGN(MigLayoutDiff empty,
                       DiffMigLayout(current, v1::MigLayout()));
  EXPECT_EQ(empty.destroy.size(), 4u);
}

TEST(SetMigRelayoutLabelTest, OnlyTheFlagSetsTheLabel) {
  std::map<std::string, std::string> labels = {{"pool", "h100"}};
  EXPECT_FALSE(SetMigRelayoutLabel(true, labels));
  EXPECT_THAT(labels, UnorderedElementsAre(
                          Pair("pool", "h100"),
                          Pair("accelsched.io/mig-relayout", "enabled")));
  EXPECT_TRUE(SetMigRelayoutLabel(false, labels));
  EXPECT_THAT(labels, ElementsAre(Pair("pool", "h100")));
  EXPECT_FALSE(SetMigRelayoutLabel(false, labels));
}

// The real accelsched-agent, loading the fake NVML, against
// RecordingScheduler.
class AgentBinaryTest : public testing::Test {
 protected:
  AgentBinaryTest() {
    ::setenv("FAKE_NVML_SCENARIO", scenario_.c_str(), 1);
    std::filesystem::create_directories(empty_);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&scheduler_);
    server_ = builder.BuildAndStart();
  }
  ~AgentBinaryTest() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    server_->Shutdown();
  }

  void StartAgent(const std::string& interval,
                  const std::vector<std::string>& extra) {
    std::vector<std::string> args = {
        ACCELSCHED_AGENT_PATH,
        absl::StrCat("--server=127.0.0.1:", port_),
        "--node_name=gpu-node-1",
        "--interval=" + interval,
        "--max_backoff=200ms",
        std::string("--nvml_library=") + FAKE_NVML_PATH,
        "--sys_dir=" + empty_,
        "--dev_dir=" + empty_,
        "--allocatable=none",
        "--labels=pool=h100"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    ASSERT_EQ(
        ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ),
        0);
    posix_spawn_file_actions_destroy(&actions);
  }
  std::string Log() const { return ReadFile(log_); }

  TempDir dir_;
  std::string scenario_ = dir_.File("scenario");
  std::string empty_ = dir_.File("empty");
  std::string log_ = dir_.File("agent.log");
  RecordingScheduler scheduler_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  pid_t pid_ = -1;
};

bool HasRelayoutLabel(const v1::Node& node) {
  return node.labels().contains("accelsched.io/mig-relayout");
}

TEST_F(AgentBinaryTest, AppliesAPlanAndRegistersTheNewSlicesAtOnce) {
  WriteFile(scenario_, SevenSlices());
  scheduler_.SetPlan("GPU-h100", FourAndA3g(1));
  // An hour between passes: a second registration can only be the one
  // right after the re-layout.
  StartAgent("1h", {"--allow_mig_relayout"});
  ASSERT_TRUE(scheduler_.WaitFor([](const RecordingScheduler& s) {
    return s.registered().size() >= 2 && s.heartbeats().size() >= 2;
  })) << Log();
  const std::vector<v1::Node> registered = scheduler_.registered();
  EXPECT_THAT(
      registered[0].labels(),
      UnorderedElementsAre(Pair("accelsched.io/mig-relayout", "enabled"),
                           Pair("pool", "h100")));
  ASSERT_EQ(registered[0].devices_size(), 1);
  EXPECT_EQ(registered[0].devices(0).mig_slices_size(), 7);
  ASSERT_EQ(registered[1].devices_size(), 1);
  EXPECT_THAT(
      SliceTexts(registered[1].devices(0)),
      ElementsAre("MIG-0 1g.10gb@0", "MIG-1 1g.10gb@1", "MIG-2 1g.10gb@2",
                  "MIG-3 1g.10gb@3", "MIG-h100-2-4 3g.40gb@4"));
  EXPECT_TRUE(HasRelayoutLabel(registered[1]));
  for (const v1::HeartbeatRequest& h : scheduler_.heartbeats()) {
    EXPECT_THAT(h.mig_relayout_failures(), IsEmpty());
  }
  EXPECT_THAT(Log(), HasSubstr("MIG re-layout of GPU-h100 (generation 1) "
                               "applied: 4 kept, 3 destroyed, 1 created"));
}

TEST_F(AgentBinaryTest, AFailureGoesOutInTheNextHeartbeatOnce) {
  WriteFile(scenario_,
            "gpu uuid=GPU-whole name=\"NVIDIA H100 80GB HBM3\" "
            "memory_mib=81559\n");
  v1::MigLayout plan;
  plan.set_generation(9);
  *plan.add_slices() = Slice("", "7g.80gb", 0);
  scheduler_.SetPlan("GPU-whole", plan);
  StartAgent("50ms", {"--allow_mig_relayout"});
  auto with_failure = [](const RecordingScheduler& s) {
    int n = 0;
    for (const v1::HeartbeatRequest& h : s.heartbeats()) {
      n += h.mig_relayout_failures_size();
    }
    return n;
  };
  ASSERT_TRUE(scheduler_.WaitFor([&](const RecordingScheduler& s) {
    return with_failure(s) > 0;
  })) << Log();
  const size_t at = scheduler_.heartbeats().size();
  ASSERT_TRUE(scheduler_.WaitFor([&](const RecordingScheduler& s) {
    return s.heartbeats().size() >= at + 3;
  })) << Log();
  EXPECT_EQ(with_failure(scheduler_), 1) << "sent once, never retried";
  for (const v1::HeartbeatRequest& h : scheduler_.heartbeats()) {
    if (h.mig_relayout_failures_size() == 0) continue;
    ASSERT_TRUE(h.mig_relayout_failures().contains("GPU-whole"));
    const v1::MigRelayoutFailure& f = h.mig_relayout_failures().at("GPU-whole");
    EXPECT_EQ(f.generation(), 9u);
    EXPECT_EQ(f.error(),
              "GPU-whole is not in MIG mode (the agent never changes MIG "
              "mode)");
  }
}

TEST_F(AgentBinaryTest, APlanUnderTheMarginIsRefusedUntouched) {
  const std::string before = SevenSlices();
  WriteFile(scenario_, before);
  v1::MigLayout plan = FourAndA3g(4);
  plan.mutable_deadline()->set_seconds(
      absl::ToUnixSeconds(absl::Now() + absl::Minutes(10)));
  scheduler_.SetPlan("GPU-h100", plan);
  StartAgent("50ms", {"--allow_mig_relayout", "--mig_relayout_margin=11m"});
  ASSERT_TRUE(scheduler_.WaitFor([](const RecordingScheduler& s) {
    for (const v1::HeartbeatRequest& h : s.heartbeats()) {
      if (h.mig_relayout_failures_size() > 0) return true;
    }
    return false;
  })) << Log();
  for (const v1::HeartbeatRequest& h : scheduler_.heartbeats()) {
    if (h.mig_relayout_failures_size() == 0) continue;
    const v1::MigRelayoutFailure& f = h.mig_relayout_failures().at("GPU-h100");
    EXPECT_EQ(f.generation(), 4u);
    EXPECT_THAT(f.error(), AllOf(HasSubstr("the plan's deadline "),
                                 HasSubstr("away, under the 11m margin "
                                           "(--mig_relayout_margin): not "
                                           "started")));
  }
  EXPECT_EQ(ReadFile(scenario_), before) << "NVML was changed";
}

TEST_F(AgentBinaryTest, ANegativeMarginIsRefused) {
  WriteFile(scenario_, SevenSlices());
  StartAgent("50ms", {"--allow_mig_relayout", "--mig_relayout_margin=-1s"});
  int status = 0;
  ASSERT_EQ(::waitpid(pid_, &status, 0), pid_);
  pid_ = -1;
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_THAT(Log(), HasSubstr("--mig_relayout_margin -1s must not be "
                               "negative"));
  EXPECT_THAT(scheduler_.registered(), IsEmpty());
}

TEST_F(AgentBinaryTest, WithoutTheFlagPlansAreIgnoredAndTheLabelLeftOut) {
  const std::string before = SevenSlices();
  WriteFile(scenario_, before);
  scheduler_.SetPlan("GPU-h100", FourAndA3g(1));
  StartAgent("50ms", {"--labels=pool=h100,accelsched.io/mig-relayout=enabled"});
  ASSERT_TRUE(scheduler_.WaitFor([](const RecordingScheduler& s) {
    return s.heartbeats().size() >= 5;
  })) << Log();
  EXPECT_EQ(ReadFile(scenario_), before) << "NVML was changed";
  const std::vector<v1::Node> registered = scheduler_.registered();
  ASSERT_EQ(registered.size(), 1u);
  EXPECT_FALSE(HasRelayoutLabel(registered[0]));
  EXPECT_EQ(registered[0].devices(0).mig_slices_size(), 7);
  for (const v1::HeartbeatRequest& h : scheduler_.heartbeats()) {
    EXPECT_THAT(h.mig_relayout_failures(), IsEmpty());
  }
  EXPECT_THAT(Log(),
              AllOf(HasSubstr("label accelsched.io/mig-relayout left "
                              "out"),
                    HasSubstr("ignoring the server's MIG layout plans")));
}

}  // namespace
}  // namespace accelsched::agent
