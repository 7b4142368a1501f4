// Node.allocatable as the agent reads it: Kubernetes quantities, the Node
// object of --kube_node_file, the machine minus a reserve, the last good
// reading kept, and the flags of the real binary (--once).
#include "agent/node_allocatable.h"

#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/files.h"
#include "agent/kube_quantity.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace accelsched::agent {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kKi = 1024, kMi = kKi * 1024, kGi = kMi * 1024;
constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text;
  std::filesystem::rename(path + ".tmp", path);
}

v1::NodeResources Resources(int64_t cpu_milli, int64_t memory_bytes,
                            int32_t pods) {
  v1::NodeResources r;
  r.set_cpu_milli(cpu_milli);
  r.set_memory_bytes(memory_bytes);
  r.set_pods(pods);
  return r;
}

MATCHER_P(EqualsProto, expected, "") {
  *result_listener << arg.ShortDebugString();
  return google::protobuf::util::MessageDifferencer::Equals(arg, expected);
}

struct QuantityCase {
  const char* text;
  QuantityScale scale;
  int64_t want;
};

TEST(ParseQuantityTest, EverySuffixDecimalAndExponentAsKubernetesCounts) {
  constexpr QuantityScale kUnits = QuantityScale::kUnits;
  constexpr QuantityScale kMilli = QuantityScale::kMilli;
  const QuantityCase cases[] = {
      // cpu, as MilliValue.
      {"8", kMilli, 8000},
      {"7910m", kMilli, 7910},
      {"0.5", kMilli, 500},
      {".5", kMilli, 500},
      {"1.", kMilli, 1000},
      {"+2", kMilli, 2000},
      {"0.1m", kMilli, 1},  // rounded up, quantity.go's own example
      {"1.0001", kMilli, 1001},
      {"100u", kMilli, 1},
      {"250n", kMilli, 1},
      {"2e-3", kMilli, 2},
      {"1k", kMilli, 1000000},
      // memory and pods, as Value.
      {"0", kUnits, 0},
      {"-0", kUnits, 0},
      {"0.0Gi", kUnits, 0},
      {"007", kUnits, 7},
      {"110", kUnits, 110},
      {"128974848", kUnits, 128974848},
      {"129e6", kUnits, 129000000},
      {"129E6", kUnits, 129000000},
      {"1e+3", kUnits, 1000},
      {"1E-3", kUnits, 1},  // rounded up
      {"12e-1", kUnits, 2},
      {"1e-40", kUnits, 1},
      {"1n", kUnits, 1},
      {"1u", kUnits, 1},
      {"1m", kUnits, 1},
      {"1500m", kUnits, 2},
      {"1k", kUnits, 1000},
      {"1M", kUnits, 1000000},
      {"1G", kUnits, 1000000000},
      {"1.G", kUnits, 1000000000},
      {"1T", kUnits, 1000000000000},
      {"1P", kUnits, 1000000000000000},
      {"1E", kUnits, 1000000000000000000},  // exa, not an exponent
      {"65536Ki", kUnits, 65536 * kKi},
      {"123Mi", kUnits, 123 * kMi},
      {"64Gi", kUnits, 64 * kGi},
      {"1Ti", kUnits, 1024 * kGi},
      {"1Pi", kUnits, int64_t{1} << 50},
      {"1Ei", kUnits, int64_t{1} << 60},
      {"1.5Gi", kUnits, 1536 * kMi},
      {"0.5Ki", kUnits, 512},
      {"1.1Ki", kUnits, 1127},  // 1126.4, rounded up
      {"0.000000000000000000001Ki", kUnits, 1},
  };
  for (const QuantityCase& c : cases) {
    EXPECT_THAT(ParseQuantity("q", c.text, c.scale, kNoMax),
                IsOkAndHolds(c.want))
        << c.text;
  }
}

TEST(ParseQuantityTest, MalformedNegativeAndTooLargeAreInvalid) {
  const struct {
    const char* text;
    const char* why;
  } cases[] = {
      {"", "expected a number"},
      {".", "expected a number"},
      {"+", "expected a number"},
      {"-Ki", "expected a number"},
      {"Gi", "expected a number"},
      {"1K", "unknown suffix \"K\""},  // kilo is k
      {"1ki", "unknown suffix \"ki\""},
      {"1GB", "unknown suffix \"GB\""},
      {"1 Gi", "unknown suffix \" Gi\""},
      {"1Gi ", "unknown suffix \"Gi \""},
      {"1.2.3", "unknown suffix \".3\""},
      {"1,5", "unknown suffix \",5\""},
      {"0x10", "unknown suffix \"x10\""},
      {"1e", "unknown suffix \"e\""},
      {"1ee3", "unknown suffix \"ee3\""},
      {"1e3.5", "unknown suffix \"e3.5\""},
      {"1e+", "unknown suffix \"e+\""},
      {"1e4294967296", "unknown suffix"},  // outside int32
      {"1m5", "unknown suffix \"m5\""},
      {"-1", "negative"},
      {"-0.5", "negative"},
      {"-1Gi", "negative"},
      {"1e19", "is more than"},
      {"99999999999999999999", "is more than"},
      {"16Ei", "is more than"},
      {"1e400", "is more than"},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(ParseQuantity("status.allocatable.memory", c.text,
                              QuantityScale::kUnits, kNoMax),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("status.allocatable.memory"),
                               HasSubstr(c.why))))
        << c.text;
  }
  // The server's limits: 4 PiB of memory, 100,000 cores.
  EXPECT_THAT(ParseQuantity("m", "4Pi", QuantityScale::kUnits, kMaxMemoryBytes),
              IsOkAndHolds(kMaxMemoryBytes));
  EXPECT_THAT(
      ParseQuantity("m", "4097Ti", QuantityScale::kUnits, kMaxMemoryBytes),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("\"4097Ti\" is more than 4503599627370496,")));
  EXPECT_THAT(ParseQuantity("c", "100k", QuantityScale::kMilli, kMaxCpuMilli),
              IsOkAndHolds(kMaxCpuMilli));
  EXPECT_THAT(ParseQuantity("c", "100001", QuantityScale::kMilli, kMaxCpuMilli),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is more than 100000000 milli")));
  // A non-printable byte is escaped in the message.
  EXPECT_THAT(ParseQuantity("q", "1\n", QuantityScale::kUnits, kNoMax),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"1\\n\" is not a Kubernetes quantity")));
}

// A Node object as `kubectl get node gpu-node-1 -o json` prints it, cut
// down.
std::string NodeJson(const std::string& allocatable,
                     const std::string& name = "gpu-node-1",
                     const std::string& kind = "Node") {
  return absl::StrCat(R"({
    "apiVersion": "v1",
    "kind": ")",
                      kind, R"(",
    "metadata": {"name": ")",
                      name, R"(", "labels": {"nvidia.com/gpu.present": "true"}},
    "spec": {"podCIDR": "10.0.3.0/24"},
    "status": {
        "capacity": {"cpu": "8", "memory": "65843296Ki", "pods": "110"},
        "allocatable": {)",
                      allocatable, R"(},
        "images": [{"names": ["registry.k8s.io/pause:3.9"], "sizeBytes": 321520}]
    }
})");
}

constexpr char kAllocatable[] =
    R"("cpu": "7910m", "ephemeral-storage": "47093746742",
       "hugepages-1Gi": "0", "hugepages-2Mi": "0",
       "memory": "60055456Ki", "nvidia.com/gpu": "8", "pods": "110")";

TEST(KubeNodeAllocatableTest, ReadsCpuMemoryAndPodsOfStatusAllocatable) {
  EXPECT_THAT(
      KubeNodeAllocatable(NodeJson(kAllocatable), "node.json", "gpu-node-1"),
      IsOkAndHolds(EqualsProto(Resources(7910, 60055456 * kKi, 110))));
  // pods absent: not limited.
  EXPECT_THAT(KubeNodeAllocatable(NodeJson(R"("cpu": "0.5", "memory": "64Gi")"),
                                  "f", ""),
              IsOkAndHolds(EqualsProto(Resources(500, 64 * kGi, 0))));
}

TEST(KubeNodeAllocatableTest, RefusalsNameTheFileAndTheField) {
  const struct {
    std::string json;
    const char* message;
  } cases[] = {
      {"{\"kind\": \"Node\",", "node.json: not JSON at byte "},
      {NodeJson(kAllocatable) + "{}", "node.json: not JSON"},
      {NodeJson(kAllocatable, "gpu-node-1", "List"),
       "not a Node object (kind \"List\")"},
      {R"({"metadata": {"name": "gpu-node-1"}})", "not a Node object"},
      {NodeJson(kAllocatable, "gpu-node-2"),
       "metadata.name is \"gpu-node-2\", not this agent's node "
       "\"gpu-node-1\""},
      {R"({"kind": "Node", "metadata": {"name": "gpu-node-1"}})",
       "node.json: status.allocatable is missing"},
      {NodeJson(R"("memory": "64Gi", "pods": "110")"),
       "node.json: status.allocatable.cpu is missing"},
      {NodeJson(R"("cpu": "8", "pods": "110")"),
       "status.allocatable.memory is missing"},
      {NodeJson(R"("cpu": 8, "memory": "64Gi")"),
       "status.allocatable.cpu must be a string"},
      {NodeJson(R"("cpu": "8", "memory": "64GB")"),
       "node.json: status.allocatable.memory \"64GB\" is not a Kubernetes "
       "quantity: unknown suffix \"GB\""},
      {NodeJson(R"("cpu": "-8", "memory": "64Gi")"),
       "status.allocatable.cpu \"-8\" is not a Kubernetes quantity: "
       "negative"},
      {NodeJson(R"("cpu": "8", "memory": "64Gi", "pods": "1e6")"),
       "status.allocatable.pods \"1e6\" is more than 100000"},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(
        KubeNodeAllocatable(c.json, "node.json", "gpu-node-1"),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.json;
  }
}

TEST(NodeAllocatableTest, KubernetesFileIsReReadAndTheLastGoodValueKept) {
  TempDir dir;
  NodeAllocatable::Options options;
  options.source = NodeAllocatable::Source::kKubernetes;
  options.node_name = "gpu-node-1";
  options.kube_node_file = dir.File("node.json");
  NodeAllocatable allocatable(options);

  // Not written yet: nothing to register.
  NodeAllocatable::Reading r = allocatable.Read();
  EXPECT_EQ(r.allocatable, std::nullopt);
  EXPECT_THAT(r.error,
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("cannot read " + options.kube_node_file +
                                 ": No such file or directory")));

  WriteFile(options.kube_node_file, NodeJson(kAllocatable));
  r = allocatable.Read();
  EXPECT_OK(r.error);
  ASSERT_TRUE(r.allocatable.has_value());
  EXPECT_THAT(*r.allocatable,
              EqualsProto(Resources(7910, 60055456 * kKi, 110)));
  EXPECT_THAT(r.notice, IsEmpty());

  // A malformed edit keeps the last good value, and says why.
  WriteFile(options.kube_node_file,
            NodeJson(R"("cpu": "7.9 cores", "memory": "64Gi")"));
  r = allocatable.Read();
  EXPECT_THAT(r.error, StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("status.allocatable.cpu")));
  ASSERT_TRUE(r.allocatable.has_value());
  EXPECT_EQ(r.allocatable->cpu_milli(), 7910);

  // A new value (the kubelet's reserve changed) is read the next pass.
  WriteFile(options.kube_node_file,
            NodeJson(R"("cpu": "7", "memory": "60Gi", "pods": "64")"));
  r = allocatable.Read();
  EXPECT_OK(r.error);
  EXPECT_THAT(*r.allocatable, EqualsProto(Resources(7000, 60 * kGi, 64)));

  // The file gone: the last value stays.
  std::filesystem::remove(options.kube_node_file);
  r = allocatable.Read();
  EXPECT_THAT(r.error, StatusIs(absl::StatusCode::kNotFound, testing::_));
  EXPECT_THAT(*r.allocatable, EqualsProto(Resources(7000, 60 * kGi, 64)));
}

constexpr char kMeminfo[] =
    "MemTotal:       65843296 kB\n"
    "MemFree:        50214552 kB\n"
    "MemAvailable:   61620520 kB\n"
    "HugePages_Total:       0\n";

class MachineTest : public testing::Test {
 protected:
  MachineTest() {
    std::filesystem::create_directories(proc_);
    WriteFile(proc_ + "/meminfo", kMeminfo);
    options_.source = NodeAllocatable::Source::kMachine;
    options_.proc_dir = proc_;
    options_.reserve = {1500, 3584 * kMi, 0};
    options_.online_cpus = [this]() -> absl::StatusOr<int64_t> {
      return cpus_;
    };
  }

  TempDir dir_;
  std::string proc_ = dir_.File("proc");
  absl::StatusOr<int64_t> cpus_ = 16;
  NodeAllocatable::Options options_;
};

TEST_F(MachineTest, MemTotalReadsKibibytes) {
  EXPECT_THAT(MemTotalBytes(proc_), IsOkAndHolds(65843296 * kKi));
  WriteFile(proc_ + "/meminfo", "MemFree: 1 kB\n");
  EXPECT_THAT(MemTotalBytes(proc_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("meminfo has no MemTotal line")));
  WriteFile(proc_ + "/meminfo", "MemTotal:  lots kB\n");
  EXPECT_THAT(MemTotalBytes(proc_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected \"MemTotal: <n> kB\"")));
  WriteFile(proc_ + "/meminfo", "MemTotal:  10 MB\n");
  EXPECT_THAT(MemTotalBytes(proc_),
              StatusIs(absl::StatusCode::kInvalidArgument, testing::_));
  WriteFile(proc_ + "/meminfo", "MemTotal:  99999999999999999 kB\n");
  EXPECT_THAT(MemTotalBytes(proc_),
              StatusIs(absl::StatusCode::kInvalidArgument, testing::_));
  EXPECT_THAT(MemTotalBytes(dir_.File("no-proc")),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("no-proc/meminfo: No such file")));
}

TEST_F(MachineTest, MachineMinusTheReserve) {
  NodeAllocatable allocatable(options_);
  NodeAllocatable::Reading r = allocatable.Read();
  EXPECT_OK(r.error);
  EXPECT_THAT(r.notice, IsEmpty());
  ASSERT_TRUE(r.allocatable.has_value());
  EXPECT_THAT(*r.allocatable,
              EqualsProto(Resources(14500, 65843296 * kKi - 3584 * kMi, 0)));

  options_.reserve = {0, 0, 110};
  EXPECT_THAT(*NodeAllocatable(options_).Read().allocatable,
              EqualsProto(Resources(16000, 65843296 * kKi, 110)));
}

TEST_F(MachineTest, AReserveLargerThanTheMachineLeavesZeroAndSaysSo) {
  cpus_ = 1;
  WriteFile(proc_ + "/meminfo", "MemTotal:  2097152 kB\n");  // 2 GiB
  NodeAllocatable::Reading r = NodeAllocatable(options_).Read();
  EXPECT_OK(r.error);
  EXPECT_THAT(*r.allocatable, EqualsProto(Resources(0, 0, 0)));
  EXPECT_THAT(r.notice,
              AllOf(HasSubstr("--reserved_cpu_milli=1500 is more than the "
                              "machine's 1000 cpu_milli"),
                    HasSubstr("--reserved_memory_bytes=3758096384 is more "
                              "than the machine's 2147483648 bytes")));
  std::string notice = "stale";
  EXPECT_THAT(MachineAllocatable(2, 4 * kGi, {1500, 3 * kGi, 8}, &notice),
              EqualsProto(Resources(500, kGi, 8)));
  EXPECT_THAT(notice, IsEmpty());
}

TEST_F(MachineTest, AFailedReadKeepsTheLastValue) {
  NodeAllocatable allocatable(options_);
  ASSERT_TRUE(allocatable.Read().allocatable.has_value());
  cpus_ = absl::InternalError("sysconf(_SC_NPROCESSORS_ONLN) failed: boom");
  NodeAllocatable::Reading r = allocatable.Read();
  EXPECT_THAT(r.error,
              StatusIs(absl::StatusCode::kInternal, HasSubstr("boom")));
  EXPECT_EQ(r.allocatable->cpu_milli(), 14500);
  cpus_ = 8;
  std::filesystem::remove(proc_ + "/meminfo");
  r = allocatable.Read();
  EXPECT_THAT(r.error, StatusIs(absl::StatusCode::kNotFound, testing::_));
  EXPECT_EQ(r.allocatable->cpu_milli(), 14500);
  WriteFile(proc_ + "/meminfo", kMeminfo);
  r = allocatable.Read();
  EXPECT_OK(r.error);
  EXPECT_EQ(r.allocatable->cpu_milli(), 6500);
}

TEST(MachineSourcesTest, ThisHostHasCpusAndMemory) {
  EXPECT_THAT(OnlineCpus(), IsOkAndHolds(testing::Gt(0)));
  EXPECT_THAT(MemTotalBytes("/proc"), IsOkAndHolds(testing::Gt(0)));
}

TEST(AllocatableSourceTest, AutoPicksKubernetesWithAFileElseTheMachine) {
  EXPECT_THAT(AllocatableSource("auto", true),
              IsOkAndHolds(NodeAllocatable::Source::kKubernetes));
  EXPECT_THAT(AllocatableSource("auto", false),
              IsOkAndHolds(NodeAllocatable::Source::kMachine));
  EXPECT_THAT(AllocatableSource("none", false),
              IsOkAndHolds(NodeAllocatable::Source::kNone));
  EXPECT_THAT(AllocatableSource("none", true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ignores --kube_node_file")));
  EXPECT_THAT(AllocatableSource("machine", false),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"machine\": expected auto or none")));
  NodeAllocatable::Options none;
  NodeAllocatable::Reading r = NodeAllocatable(none).Read();
  EXPECT_OK(r.error);
  EXPECT_EQ(r.allocatable, std::nullopt);
}

// The real binary's flags, through --once (no server).
class AgentOnceTest : public testing::Test {
 protected:
  AgentOnceTest() { std::filesystem::create_directories(empty_); }

  // Runs the agent with `flags`; its exit code, and stdout and stderr in
  // `output`.
  int Run(const std::vector<std::string>& flags, std::string& output) {
    std::string command = std::string("'") + ACCELSCHED_AGENT_PATH + "'";
    for (const std::string& f : flags) command += " '" + f + "'";
    command += " --node_name=gpu-node-1 --nvml_library= --sys_dir=" + empty_ +
               " --dev_dir=" + empty_ + " --once 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) {
      ADD_FAILURE() << "popen failed: " << std::strerror(errno);
      return -1;
    }
    output.clear();
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
      output.append(buffer, n);
    }
    const int status = ::pclose(pipe);
    if (status == -1 || !WIFEXITED(status)) {
      ADD_FAILURE() << "pclose: " << status;
      return -1;
    }
    return WEXITSTATUS(status);
  }

  // The JSON the agent printed, as a Node.
  static v1::Node Printed(const std::string& output) {
    v1::Node node;
    const size_t brace = output.find('{');
    EXPECT_NE(brace, std::string::npos) << output;
    if (brace == std::string::npos) return node;
    EXPECT_TRUE(
        google::protobuf::util::JsonStringToMessage(output.substr(brace), &node)
            .ok())
        << output;
    return node;
  }

  TempDir dir_;
  std::string empty_ = dir_.File("empty");
};

TEST_F(AgentOnceTest, FlagsChooseTheSource) {
  std::string out;
  const std::string file = dir_.File("node.json");
  WriteFile(file, NodeJson(kAllocatable));
  ASSERT_EQ(Run({"--kube_node_file=" + file}, out), 0) << out;
  EXPECT_THAT(Printed(out).allocatable(),
              EqualsProto(Resources(7910, 60055456 * kKi, 110)));

  const std::string proc = dir_.File("proc");
  std::filesystem::create_directories(proc);
  WriteFile(proc + "/meminfo", kMeminfo);
  ASSERT_EQ(Run({"--proc_dir=" + proc, "--reserved_memory_bytes=1073741824",
                 "--max_pods=32"},
                out),
            0)
      << out;
  const v1::Node machine = Printed(out);
  EXPECT_EQ(machine.allocatable().memory_bytes(), 65843296 * kKi - kGi);
  EXPECT_EQ(machine.allocatable().pods(), 32);
  EXPECT_GE(machine.allocatable().cpu_milli(), 0);

  ASSERT_EQ(Run({"--allocatable=none"}, out), 0) << out;
  EXPECT_FALSE(Printed(out).has_allocatable());

  // The file missing: the node is printed without allocatable, and the log
  // says why.
  ASSERT_EQ(Run({"--kube_node_file=" + dir_.File("absent.json")}, out), 0);
  EXPECT_FALSE(Printed(out).has_allocatable());
  EXPECT_THAT(out, HasSubstr("allocatable: NOT_FOUND: cannot read"));
}

TEST_F(AgentOnceTest, ConflictingOrInvalidFlagsExitOne) {
  std::string out;
  EXPECT_EQ(Run({"--allocatable=none", "--kube_node_file=/x"}, out), 1);
  EXPECT_THAT(out, HasSubstr("--allocatable=none ignores --kube_node_file"));
  EXPECT_EQ(Run({"--allocatable=kubernetes"}, out), 1);
  EXPECT_THAT(out, HasSubstr("expected auto or none"));
  EXPECT_EQ(Run({"--reserved_cpu_milli=-1"}, out), 1);
  EXPECT_THAT(out, HasSubstr("must not be negative"));
  EXPECT_EQ(Run({"--max_pods=100001"}, out), 1);
  EXPECT_THAT(out, HasSubstr("--max_pods must be 0 to 100000"));
}

TEST(ReadWholeFileTest, ErrorsCarryErrno) {
  TempDir dir;
  EXPECT_THAT(ReadWholeFile(dir.File("absent")),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("absent: No such file or directory")));
  // A directory opens but cannot be read.
  EXPECT_THAT(ReadWholeFile(dir.File("")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("Is a directory")));
  WriteFile(dir.File("f"), "text\n");
  EXPECT_THAT(ReadWholeFile(dir.File("f")),
              IsOkAndHolds(std::string("text\n")));
}

}  // namespace
}  // namespace accelsched::agent
