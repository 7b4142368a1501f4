// The accelerator-type registry end to end: the real accelschedd with the
// operator's example file (deploy/accelerator-types.example.textproto),
// ListAcceleratorTypes, a made-up accelerator that registers, allocates and
// shows in /metrics without a rebuild, SIGHUP re-reads, and a bad file.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "config/accelerator_types_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/e2e_fixture.h"
#include "tests/support/http_client.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

class E2eRegistryTest : public E2eTest {
 protected:
  grpc::Status ListTypes(const std::string& name,
                         v1::ListAcceleratorTypesResponse* resp) {
    v1::ListAcceleratorTypesRequest req;
    req.set_name(name);
    return Call(&v1::AcceleratorScheduler::Stub::ListAcceleratorTypes, req,
                resp);
  }

  // Copies the example file where the test may rewrite it.
  std::string TypesFile() {
    const std::string path = dir_.File("types.textproto");
    std::filesystem::copy_file(ACCELSCHED_EXAMPLE_TYPES_PATH, path);
    return path;
  }

  // Sends SIGHUP and waits for the server's log line about it (the
  // `n`th such line since start).
  std::string Hup(int n) {
    EXPECT_EQ(kill(server_->pid(), SIGHUP), 0);
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (absl::Now() < deadline) {
      const std::string out = server_->output();
      size_t pos = 0;
      int seen = 0;
      std::string last;
      while ((pos = out.find("SIGHUP: ", pos)) != std::string::npos) {
        ++seen;
        const size_t end = out.find('\n', pos);
        last = out.substr(pos, end - pos);
        pos = end;
      }
      if (seen >= n) return last;
      absl::SleepFor(absl::Milliseconds(10));
    }
    ADD_FAILURE() << "no SIGHUP line " << n << " in " << server_->output();
    return "";
  }
};

v1::Node AcmeNode() {
  v1::Node n;
  n.set_name("acme-0");
  v1::Device* d = AddGpu(&n, "GPU-acme-0", "Acme X1", 0);
  d->set_mig_enabled(true);
  for (int start : {0, 2}) {
    v1::MigSlice* s = d->add_mig_slices();
    s->set_id(absl::StrCat("MIG-acme-", start));
    s->set_profile("2g.32gb");
    s->set_start(start);
  }
  return n;
}

TEST_F(E2eRegistryTest, AnOperatorsTypeWorksWithoutARebuild) {
  const std::string types = TypesFile();
  ASSERT_TRUE(StartServer({"--accelerator_types=" + types}));

  // Listed, by any spelling, and among all the types.
  v1::ListAcceleratorTypesResponse one;
  grpc::Status s = ListTypes("ACME x1", &one);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(one.types_size(), 1);
  const v1::AcceleratorType& acme = one.types(0);
  EXPECT_EQ(acme.canonical_model(), "acme-x1");
  EXPECT_EQ(acme.device_class(), v1::NVIDIA_GPU);
  EXPECT_EQ(acme.memory_bytes(), int64_t{64} << 30);
  EXPECT_EQ(acme.resource_name(), "nvidia.com/gpu");
  ASSERT_EQ(acme.mig_profiles_size(), 2);
  EXPECT_EQ(acme.mig_profiles(0).name(), "2g.32gb");
  EXPECT_THAT(acme.mig_profiles(0).starts(), testing::ElementsAre(0, 2));
  v1::ListAcceleratorTypesResponse all;
  ASSERT_TRUE(ListTypes("", &all).ok());
  EXPECT_EQ(static_cast<size_t>(all.types_size()),
            BuiltinAcceleratorTypes()->types().size() + 1);
  for (int i = 1; i < all.types_size(); ++i) {
    EXPECT_LT(all.types(i - 1).canonical_model(),
              all.types(i).canonical_model());
  }
  v1::ListAcceleratorTypesResponse h100;
  ASSERT_TRUE(ListTypes("h100-sxm5-80gb", &h100).ok());
  EXPECT_EQ(h100.types(0).canonical_model(), "nvidia-h100");
  v1::ListAcceleratorTypesResponse none;
  s = ListTypes("acme-x9", &none);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("name \"acme-x9\""));

  // Registers, allocates, and is counted in /metrics.
  s = Register(AcmeNode());
  ASSERT_TRUE(s.ok()) << s.error_message();
  v1::Allocation a;
  s = Allocate(AllocateReq("acme-job", "acme-x1", 1, "2g.32gb"), &a);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(a.model(), "acme-x1");
  s = Allocate(AllocateReq("acme-bad", "acme-x1", 1, "1g.16gb"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("valid: 2g.32gb, 4g.64gb"));
  absl::StatusOr<std::string> metrics =
      HttpGet(server_->metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(*metrics,
              HasSubstr("accelsched_devices{device_class=\"NVIDIA_GPU\","
                        "model=\"acme-x1\",partition=\"2g.32gb\","
                        "state=\"allocated\"} 1"));

  // SIGHUP: a valid file takes effect for new requests.
  std::ofstream(types, std::ios::app)
      << "types { canonical_model: \"acme-x1\" aliases: \"Acme X1 Ultra\" }\n";
  EXPECT_THAT(Hup(1), HasSubstr("types in use"));
  ASSERT_TRUE(
      Allocate(AllocateReq("acme-ultra", "acme x1 ultra", 1, "2g.32gb")).ok());

  // An invalid file is refused with its line; the registry in use stays.
  std::ofstream(types, std::ios::app) << "types { colour: 1 }\n";
  EXPECT_THAT(Hup(2), AllOf(HasSubstr("accelerator types not changed"),
                            HasSubstr(types + ":")));
  EXPECT_TRUE(ListTypes("Acme X1 Ultra", &one).ok());

  // So is a file that would drop a type whose devices are registered.
  std::ofstream(types, std::ios::trunc) << "# nothing\n";
  EXPECT_THAT(Hup(3), HasSubstr("device \"GPU-acme-0\": model \"Acme X1\" "
                                "would no longer be known"));
  EXPECT_TRUE(ListTypes("acme-x1", &one).ok());

  // And the types survive a restart with the same file.
  std::filesystem::remove(types);
  std::filesystem::copy_file(ACCELSCHED_EXAMPLE_TYPES_PATH, types);
  EXPECT_EQ(server_->Stop(SIGKILL), 128 + SIGKILL);
  ASSERT_TRUE(StartServer({"--accelerator_types=" + types}));
  v1::GetAllocationRequest get;
  get.set_request_id("acme-job");
  v1::Allocation again;
  s = Call(&v1::AcceleratorScheduler::Stub::GetAllocation, get, &again);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(again.id(), a.id());
}

TEST_F(E2eRegistryTest, ABadFileStopsStartUpNamingItsLine) {
  const std::string types = dir_.File("bad.textproto");
  std::ofstream(types) << "# line 1\ntypes {\n  canonical_model: \"X 1\"\n}\n";
  std::string output;
  EXPECT_EQ(ServerProcess::RunToExit({"--db=" + db_, "--listen=127.0.0.1:0",
                                      "--metrics_listen=127.0.0.1:0",
                                      "--accelerator_types=" + types},
                                     &output),
            1);
  EXPECT_THAT(output, HasSubstr("--accelerator_types: " + types +
                                ":2: types[0] (X 1): canonical_model"));
  // Refused before the database is opened: none was created.
  EXPECT_FALSE(std::filesystem::exists(db_));
  std::ofstream(types, std::ios::trunc) << "types {\n  mig_profiles: 3\n}\n";
  EXPECT_EQ(ServerProcess::RunToExit({"--db=" + db_, "--listen=127.0.0.1:0",
                                      "--metrics_listen=127.0.0.1:0",
                                      "--accelerator_types=" + types},
                                     &output),
            1);
  EXPECT_THAT(output, HasSubstr(types + ":2:"));
  EXPECT_EQ(
      ServerProcess::RunToExit({"--db=" + db_, "--listen=127.0.0.1:0",
                                "--metrics_listen=127.0.0.1:0",
                                "--accelerator_types=" + dir_.File("absent")},
                               &output),
      1);
  EXPECT_THAT(output, HasSubstr("cannot open " + dir_.File("absent")));
}

// v5p-32: four hosts of four chips each, a shape past Google's common list.
TEST_F(E2eRegistryTest, AV5pSliceOfFourHostsRegistersAndAllocates) {
  ASSERT_TRUE(StartServer());
  for (int h = 0; h < 4; ++h) {
    v1::Node n =
        TpuHost(absl::StrCat("v5p-", h), absl::StrCat("chip-", h, "-"));
    for (v1::Device& d : *n.mutable_devices()) {
      d.set_tpu_slice_id("v5p-32");
      d.set_tpu_topology("2x2x4");
    }
    grpc::Status s = Register(n);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  v1::Allocation a;
  grpc::Status s = Allocate(AllocateReq("train", "V5P", 1, "2x2x4"), &a);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(a.devices_size(), 16);
  EXPECT_EQ(
      a.placement().node_selector().at("cloud.google.com/gke-tpu-topology"),
      "2x2x4");
}

}  // namespace
}  // namespace accelsched
