// libFuzzer: MIG layout validation on arbitrary layouts, checked against a
// brute-force model.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/accelerator_types_file.h"
#include "core/accelerators/mig_geometry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accelsched;
  if (size < 1) return 0;
  static const std::vector<const AcceleratorType*> gpus = [] {
    std::vector<const AcceleratorType*> out;
    for (const AcceleratorType& t : BuiltinAcceleratorTypes()->types()) {
      if (t.has_mig()) out.push_back(&t);
    }
    return out;
  }();
  const AcceleratorType& gpu = *gpus[data[0] % gpus.size()];
  const MigGeometry& geometry = gpu.mig;
  std::vector<MigPlacement> layout;
  std::vector<std::string> names;
  names.reserve(size);
  // Each pair of bytes: a profile (an index, or an unknown name) and a start
  // slot.
  for (size_t i = 1; i + 1 < size; i += 2) {
    const size_t p = data[i] % (geometry.profiles.size() + 1);
    names.push_back(p < geometry.profiles.size()
                        ? std::string(geometry.profiles[p].name)
                        : std::string("9g.bogus"));
    layout.push_back({names.back(), static_cast<int8_t>(data[i + 1])});
  }
  const bool valid =
      ValidateMigLayout(geometry, gpu.canonical_model, layout).ok();
  // The model: every profile known, every start allowed, no slot used twice,
  // no profile more often than its max_instances, compute fits.
  bool expected = true;
  int compute = 0;
  std::map<std::string, int> instances;
  std::vector<bool> used(geometry.memory_slices, false);
  for (const MigPlacement& m : layout) {
    const MigProfile* p = geometry.Find(m.profile);
    if (p == nullptr || std::find(p->starts.begin(), p->starts.end(),
                                  m.start) == p->starts.end()) {
      expected = false;
      break;
    }
    for (int s = m.start; s < m.start + p->memory_slices; ++s) {
      if (s >= geometry.memory_slices || used[s]) expected = false;
      if (s < geometry.memory_slices) used[s] = true;
    }
    compute += p->compute_slices;
    if (++instances[p->name] > p->max_instances && p->max_instances > 0) {
      expected = false;
    }
  }
  if (compute > geometry.compute_slices) expected = false;
  if (valid != expected) __builtin_trap();
  return 0;
}
