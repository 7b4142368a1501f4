#include "core/book/allocation_ids.h"

#include "absl/random/random.h"
#include "absl/strings/str_format.h"

namespace accelsched {

std::string AllocationIds::Next(absl::Time now) {
  // absl::BitGen is not thread-safe, and id makers in one process (tests)
  // share no lock.
  thread_local absl::BitGen id_bits;
  return absl::StrFormat("a-%013x-%04x%04x", absl::ToUnixMicros(now),
                         ++counter_ & 0xffff,
                         absl::Uniform<uint32_t>(id_bits) & 0xffff);
}

}  // namespace accelsched
