// libFuzzer: the device-name normaliser on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/name_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  const accelsched::ModelInfo* m = accelsched::FindModel(s);
  // A hit must be a row of the table, and its canonical name must find it
  // again.
  if (m != nullptr && accelsched::FindModel(m->canonical) != m)
    __builtin_trap();
  return 0;
}
