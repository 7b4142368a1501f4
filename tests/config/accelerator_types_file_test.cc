#include "config/accelerator_types_file.h"

#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/accelerator_types_test_util.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace accelsched {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(AcceleratorTypesFileTest, AnOperatorFileAddsTypesAndTopologies) {
  auto parsed = BuiltinPlus(kAcmeTypes);
  ASSERT_OK(parsed);
  const auto registry = *parsed;
  const AcceleratorType* acme = registry->Find("acme x1");
  ASSERT_NE(acme, nullptr);
  EXPECT_EQ(acme->device_class, DeviceClass::kNvidiaGpu);
  EXPECT_EQ(acme->resource_name, "acme.com/x1");
  EXPECT_EQ(acme->memory_bytes, int64_t{64} << 30);
  ASSERT_NE(acme->mig.Find("2g.32gb"), nullptr);
  EXPECT_EQ(acme->mig.Find("2g.32gb")->starts, (std::vector<int>{0, 2}));
  EXPECT_TRUE(registry->Find("v5p")->FindTopology("2x2x6"));
  EXPECT_EQ(registry->types().size(),
            BuiltinAcceleratorTypes()->types().size() + 1);
}

TEST(AcceleratorTypesFileTest, SyntaxErrorsNameTheLineAndColumn) {
  EXPECT_THAT(
      BuiltinPlus("types {\n  canonical_model: \"x\"\n  colour: 3\n}\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               StartsWith("ops.textproto:3:9: ")));
  // protobuf reports a bad enum value where it stands after reading it.
  EXPECT_THAT(BuiltinPlus("types {\n  device_class: PURPLE_GPU\n}\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith("ops.textproto:3:1: "),
                             HasSubstr("\"PURPLE_GPU\""))));
  EXPECT_THAT(BuiltinPlus("types {"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("ops.textproto:1:")));
}

TEST(AcceleratorTypesFileTest, RefusedEntriesNameTheirLineAndField) {
  const std::string text = std::string(kAcmeTypes) + R"pb(
    types { canonical_model: "acme-x2" aliases: "H100" }
  )pb";
  // The line the third entry begins on, counted from 1.
  const size_t third = text.find("types { canonical_model: \"acme-x2\"");
  const int line = 1 + std::count(text.begin(), text.begin() + third, '\n');
  EXPECT_GT(line, 20);
  EXPECT_THAT(BuiltinPlus(text),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat("ops.textproto:", line,
                                    ": types[2] (acme-x2): aliases[0] "
                                    "\"H100\" already names nvidia-h100")));
  EXPECT_THAT(
      BuiltinPlus(
          "types { canonical_model: \"acme-x3\" mig_profiles { name: "
          "\"1g.1gb\" memory_slices: 1 compute_slices: 1 starts: 0 } }"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("ops.textproto:1: types[0] (acme-x3): "
                         "mig_memory_slices 0 is out of range")));
}

TEST(AcceleratorTypesFileTest, LoadReadsTheFileOrSaysWhyNot) {
  TempDir dir;
  const std::string path = dir.File("types.textproto");
  std::ofstream(path) << kAcmeTypes;
  auto loaded = LoadAcceleratorTypes(path);
  ASSERT_OK(loaded);
  EXPECT_NE((*loaded)->Find("acme-x1"), nullptr);

  EXPECT_THAT(LoadAcceleratorTypes(dir.File("")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cannot read")));

  auto builtin = LoadAcceleratorTypes("");
  ASSERT_OK(builtin);
  EXPECT_EQ(*builtin, BuiltinAcceleratorTypes());

  EXPECT_THAT(
      LoadAcceleratorTypes(dir.File("absent")),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr(dir.File("absent"))));
  std::ofstream(path) << "types { canonical_model: \"BAD\" }";
  EXPECT_THAT(
      LoadAcceleratorTypes(path),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(path + ":1: types[0] (BAD): canonical_model")));
}

// What the registry reports (ToProto of each built-in type) is the text's
// entry exactly, with the defaults filled in: every field survives FromProto,
// the checks and ToProto.
TEST(AcceleratorTypesFileTest, EveryTypeIsReportedAsTheTextGivesIt) {
  v1::AcceleratorTypeRegistry text;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      std::string(BuiltinAcceleratorTypesText()), &text));
  ASSERT_EQ(static_cast<size_t>(text.types_size()),
            BuiltinAcceleratorTypes()->types().size());
  for (v1::AcceleratorType entry : text.types()) {
    if (entry.node_label_value().empty()) {
      entry.set_node_label_value(entry.canonical_model());
    }
    if (entry.resource_name().empty()) {
      entry.set_resource_name(std::string(
          DefaultResourceName(static_cast<DeviceClass>(entry.device_class()))));
    }
    const AcceleratorType* t =
        BuiltinAcceleratorTypes()->Find(entry.canonical_model());
    ASSERT_NE(t, nullptr) << entry.canonical_model();
    v1::AcceleratorType reported;
    ToProto(*t, &reported);
    std::string diff;
    google::protobuf::util::MessageDifferencer differencer;
    differencer.ReportDifferencesToString(&diff);
    EXPECT_TRUE(differencer.Compare(entry, reported))
        << entry.canonical_model() << ": " << diff;
  }
}

// An entry in list syntax has no location of its own: the error names the
// line of its first field.
TEST(AcceleratorTypesFileTest, ListSyntaxEntriesNameTheirFirstFieldsLine) {
  EXPECT_THAT(
      BuiltinPlus("types: [\n  { canonical_model: \"ok-1\" },\n"
                  "  { canonical_model: \"ok-2\" aliases: \"H100\" }\n]\n"
                  "types { canonical_model: \"ok-3\" }\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               StartsWith("ops.textproto:3: types[1] (ok-2): aliases[0]")));
}

// An entry that extends a built-in type: errors name the entry's own field,
// and the canonical name must be spelled as the registry spells it.
TEST(AcceleratorTypesFileTest, ExtendingEntriesAreCheckedAsWritten) {
  EXPECT_THAT(
      BuiltinPlus("types { canonical_model: \"nvidia-h100\" aliases: \"x\" "
                  "aliases: \"A100\" }"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("types[0] (nvidia-h100): aliases[1] \"A100\" "
                         "already names nvidia-tesla-a100")));
  EXPECT_THAT(
      BuiltinPlus("types { canonical_model: \"NVIDIA-H100\" aliases: \"x\" }"),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("canonical_model \"NVIDIA-H100\" must be lower-case")));
  EXPECT_THAT(
      BuiltinPlus("types { canonical_model: \"nvidia-h100\" "
                  "mig_memory_slices: 16 }"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("mig_memory_slices 16 differs from nvidia-h100's 8")));
  // A Flyte label entry of a known name is replaced.
  auto relabelled = BuiltinPlus(
      "types { canonical_model: \"nvidia-h100\" flyte_node_labels { name: "
      "\"H100\" node_label_value: \"h100-site\" } }");
  ASSERT_OK(relabelled);
  const AcceleratorType* h100 = (*relabelled)->Find("H100");
  int h100_entries = 0;
  for (const FlyteNodeLabel& f : h100->flyte_node_labels) {
    if (f.name == "H100") {
      ++h100_entries;
      EXPECT_EQ(f.node_label_value, "h100-site");
    }
  }
  EXPECT_EQ(h100_entries, 1);
  EXPECT_THAT(
      BuiltinPlus("types { canonical_model: \"nvidia-h100\" flyte_node_labels "
                  "{ name: \"B200\" node_label_value: \"x\" } }"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("flyte_node_labels[3].name \"B200\" is not a "
                         "spelling of nvidia-h100")));
}

}  // namespace
}  // namespace accelsched
