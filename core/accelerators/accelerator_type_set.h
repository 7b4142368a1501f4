// The set of accelerator types: every accelerator type accelsched knows, and
// the index from any spelling to its type. Built once from data (the built-in
// types, then an operator's file) and immutable afterwards, so one set is
// shared by every thread without locks; a reload builds a new one.
#ifndef ACCELSCHED_CORE_ACCELERATORS_ACCELERATOR_TYPE_SET_H_
#define ACCELSCHED_CORE_ACCELERATORS_ACCELERATOR_TYPE_SET_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/accelerators/accelerator_type.h"

namespace accelsched {

class AcceleratorTypeSet {
 public:
  AcceleratorTypeSet(const AcceleratorTypeSet&) = delete;
  AcceleratorTypeSet& operator=(const AcceleratorTypeSet&) = delete;

  // The type any spelling names (canonical name or alias; case-insensitive,
  // surrounding spaces ignored), or nullptr. One hash lookup.
  const AcceleratorType* Find(absl::string_view spelling) const;

  // Every type, in canonical_model order.
  absl::Span<const AcceleratorType> types() const { return types_; }

 private:
  friend class AcceleratorTypeSetBuilder;
  AcceleratorTypeSet() = default;

  std::vector<AcceleratorType> types_;
  // FoldSpelling(spelling) -> index in types_.
  absl::flat_hash_map<std::string, size_t> index_;
};

// Builds a set entry by entry, so that a loader can say which entry of
// its file is wrong. Not thread-safe.
class AcceleratorTypeSetBuilder {
 public:
  AcceleratorTypeSetBuilder() = default;
  // Starts from `base`'s types (an operator's file over the built-in ones).
  explicit AcceleratorTypeSetBuilder(const AcceleratorTypeSet& base);

  // Adds `type`, or, when its canonical_model is one already added, extends
  // that type (ExtendType). INVALID_ARGUMENT naming the field when
  // canonical_model is not lower-case without surrounding spaces or is an
  // alias of another type, when a spelling is another type's, when ExtendType
  // refuses the entry, or when the new type, or the extended one, fails
  // NormalizeAndValidateType (for an extended type the message begins "with
  // the known <model> entries: " and positions count the known entries too).
  // On error nothing is added.
  absl::Status Add(AcceleratorType type);

  std::shared_ptr<const AcceleratorTypeSet> Build() &&;

 private:
  // INVALID_ARGUMENT naming aliases[i] when a spelling names a type other
  // than the one at `slot` (types_.size() for a new type).
  absl::Status CheckAliasesFree(const std::vector<std::string>& aliases,
                                size_t slot) const;

  std::vector<AcceleratorType> types_;
  absl::flat_hash_map<std::string, size_t> index_;  // as the set's
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_ACCELERATORS_ACCELERATOR_TYPE_SET_H_
