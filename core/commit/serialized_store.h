// A Store whose calls are serialised by a mutex, for an owner that calls it
// from more than one thread: the scheduler loads from the store while its
// group committer may be applying (a reload retried by a sweep after the store
// came back).
#ifndef ACCELSCHED_CORE_COMMIT_SERIALIZED_STORE_H_
#define ACCELSCHED_CORE_COMMIT_SERIALIZED_STORE_H_

#include "absl/synchronization/mutex.h"
#include "core/commit/store.h"

namespace accelsched {

class SerializedStore final : public Store {
 public:
  // `store` is not owned and must outlive this.
  explicit SerializedStore(Store* store) : store_(store) {}

  absl::StatusOr<std::vector<Node>> LoadNodes() override {
    absl::MutexLock lock(&mu_);
    return store_->LoadNodes();
  }
  absl::StatusOr<std::vector<StoredAllocation>> LoadAllocations() override {
    absl::MutexLock lock(&mu_);
    return store_->LoadAllocations();
  }
  absl::StatusOr<uint64_t> LoadEventSequence() override {
    absl::MutexLock lock(&mu_);
    return store_->LoadEventSequence();
  }
  // Holds the lock throughout: no Apply between its reads.
  absl::StatusOr<StoredState> Load() override {
    absl::MutexLock lock(&mu_);
    return store_->Load();
  }
  absl::Status Apply(absl::Span<const Mutation> mutations) override {
    absl::MutexLock lock(&mu_);
    return store_->Apply(mutations);
  }

 private:
  absl::Mutex mu_;
  Store* const store_ ABSL_PT_GUARDED_BY(mu_);
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_COMMIT_SERIALIZED_STORE_H_
