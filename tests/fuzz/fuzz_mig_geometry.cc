// libFuzzer: MIG layout validation on arbitrary layouts, checked against a
// brute-force model.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/mig_geometry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accelsched;
  if (size < 1) return 0;
  const auto families = AllMigFamilies();
  const MigFamily& family = families[data[0] % families.size()];
  std::vector<MigPlacement> layout;
  std::vector<std::string> names;
  names.reserve(size);
  // Each pair of bytes: a profile (an index, or an unknown name) and a start
  // slot.
  for (size_t i = 1; i + 1 < size; i += 2) {
    const size_t p = data[i] % (family.profiles.size() + 1);
    names.push_back(p < family.profiles.size()
                        ? std::string(family.profiles[p].name)
                        : std::string("9g.bogus"));
    layout.push_back({names.back(), static_cast<int8_t>(data[i + 1])});
  }
  const bool valid = ValidateMigLayout(family, layout).ok();
  // The model: every profile known, every start allowed, no slot used twice,
  // compute fits.
  bool expected = true;
  int compute = 0;
  std::vector<bool> used(family.memory_slices, false);
  for (const MigPlacement& m : layout) {
    const MigProfile* p = FindMigProfile(family, m.profile);
    if (p == nullptr || m.start < 0 || m.start >= 8 ||
        !((p->allowed_starts >> m.start) & 1)) {
      expected = false;
      break;
    }
    for (int s = m.start; s < m.start + p->memory_slices; ++s) {
      if (s >= family.memory_slices || used[s]) expected = false;
      if (s < family.memory_slices) used[s] = true;
    }
    compute += p->compute_slices;
  }
  if (compute > family.compute_slices) expected = false;
  if (valid != expected) __builtin_trap();
  return 0;
}
