// The accelerator-type registry: what the compiled-in registry adds to
// start-up (parse the text with protobuf's TextFormat, check and index every
// type), and name resolution against registries of growing size (one hash
// lookup after case folding, so the same cost at 10,000 types as at the
// built-in ~50).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "config/accelerator_types_file.h"

namespace accelsched {
namespace {

void BM_LoadBuiltinRegistry(benchmark::State& state) {
  for (auto _ : state) {
    AcceleratorTypeSetBuilder builder;
    absl::Status s = AddAcceleratorTypesText(BuiltinAcceleratorTypesText(),
                                             "builtin", builder);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    auto registry = std::move(builder).Build();
    benchmark::DoNotOptimize(registry);
  }
  state.counters["types"] =
      static_cast<double>(BuiltinAcceleratorTypes()->types().size());
}
BENCHMARK(BM_LoadBuiltinRegistry)->Unit(benchmark::kMillisecond);

// The built-in types plus `extra` made-up ones of three aliases each.
std::shared_ptr<const AcceleratorTypeSet> Registry(int extra) {
  AcceleratorTypeSetBuilder builder(*BuiltinAcceleratorTypes());
  for (int i = 0; i < extra; ++i) {
    AcceleratorType t;
    t.canonical_model = absl::StrCat("synthetic-", i);
    t.device_class = DeviceClass::kAmdGpu;
    t.aliases = {absl::StrCat("Synthetic ", i), absl::StrCat("SYN", i),
                 absl::StrCat("Vendor Synthetic Accelerator ", i)};
    if (!builder.Add(std::move(t)).ok()) return nullptr;
  }
  return std::move(builder).Build();
}

// Resolves the spellings requests and nodes use (aliases in another case,
// padded product names) of the built-in types, in a registry with
// state.range(0) more types.
void BM_FindModel(benchmark::State& state) {
  const auto registry = Registry(static_cast<int>(state.range(0)));
  std::vector<std::string> spellings;
  for (const AcceleratorType& t : BuiltinAcceleratorTypes()->types()) {
    for (const std::string& a : t.aliases) {
      spellings.push_back(absl::AsciiStrToUpper(a));
    }
    spellings.push_back(" " + t.canonical_model + " ");
  }
  size_t i = 0;
  for (auto _ : state) {
    const AcceleratorType* t = registry->Find(spellings[i]);
    benchmark::DoNotOptimize(t);
    if (++i == spellings.size()) i = 0;
  }
  state.counters["types"] = static_cast<double>(registry->types().size());
}
BENCHMARK(BM_FindModel)->Arg(0)->Arg(10000);

}  // namespace
}  // namespace accelsched

BENCHMARK_MAIN();
