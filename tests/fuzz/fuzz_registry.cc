// libFuzzer: the accelerator-type registry's loader and name lookup on
// arbitrary bytes. The bytes are an operator's file over the built-in types;
// then they are a name to look up.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/accelerator_types_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accelsched;
  const std::string s(reinterpret_cast<const char*>(data), size);
  static const auto builtin = BuiltinAcceleratorTypes();
  AcceleratorTypeSetBuilder builder(*builtin);
  const bool loaded = AddAcceleratorTypesText(s, "fuzz", builder).ok();
  const auto registry = std::move(builder).Build();
  for (const auto* r : {builtin.get(), registry.get()}) {
    const AcceleratorType* t = r->Find(s);
    // A hit must be a type of the registry, and its canonical name and every
    // alias must find it again.
    if (t != nullptr) {
      if (r->Find(t->canonical_model) != t) __builtin_trap();
      for (const std::string& a : t->aliases) {
        if (r->Find(a) != t) __builtin_trap();
      }
    }
  }
  // Whatever a file adds, every built-in spelling keeps its type.
  if (loaded) {
    for (const AcceleratorType& t : builtin->types()) {
      const AcceleratorType* now = registry->Find(t.canonical_model);
      if (now == nullptr || now->canonical_model != t.canonical_model) {
        __builtin_trap();
      }
    }
  }
  return 0;
}
