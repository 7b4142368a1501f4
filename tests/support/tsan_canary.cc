// Proves that the ThreadSanitizer job can fail, and that it understands
// absl::Mutex (which it does only when abseil itself was built with
// -fsanitize=thread). Built only in that job; see tests/CMakeLists.txt.
//   tsan_canary race    two threads increment a plain counter: TSan must
//                       report a data race (the test passes on that report).
//   tsan_canary mutex   the same under absl::Mutex: TSan must stay silent.
#include <cstdio>
#include <cstring>
#include <thread>

#include "absl/synchronization/mutex.h"

namespace {

constexpr int kIncrements = 100000;

int RacyCount() {
  int counter = 0;
  auto bump = [&counter] {
    for (int i = 0; i < kIncrements; ++i) ++counter;  // deliberately unguarded
  };
  std::thread a(bump);
  std::thread b(bump);
  a.join();
  b.join();
  return counter;
}

int GuardedCount() {
  absl::Mutex mu;
  int counter = 0;  // guarded by mu
  auto bump = [&] {
    for (int i = 0; i < kIncrements; ++i) {
      absl::MutexLock lock(&mu);
      ++counter;
    }
  };
  std::thread a(bump);
  std::thread b(bump);
  a.join();
  b.join();
  absl::MutexLock lock(&mu);
  return counter;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "race") == 0) {
    std::printf("canary: %d increments without a lock\n", RacyCount());
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "mutex") == 0) {
    std::printf("canary: %d increments under absl::Mutex\n", GuardedCount());
    return 0;
  }
  std::fprintf(stderr, "usage: tsan_canary race|mutex\n");
  return 2;
}
