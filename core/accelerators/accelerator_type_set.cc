#include "core/accelerators/accelerator_type_set.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace accelsched {

const AcceleratorType* AcceleratorTypeSet::Find(
    absl::string_view spelling) const {
  auto it = index_.find(FoldSpelling(spelling));
  return it == index_.end() ? nullptr : &types_[it->second];
}

AcceleratorTypeSetBuilder::AcceleratorTypeSetBuilder(
    const AcceleratorTypeSet& base)
    : types_(base.types_.begin(), base.types_.end()), index_(base.index_) {}

absl::Status AcceleratorTypeSetBuilder::CheckAliasesFree(
    const std::vector<std::string>& aliases, size_t slot) const {
  for (size_t i = 0; i < aliases.size(); ++i) {
    auto it = index_.find(FoldSpelling(aliases[i]));
    if (it != index_.end() && it->second != slot) {
      return absl::InvalidArgumentError(
          absl::StrCat("aliases[", i, "] \"", aliases[i], "\" already names ",
                       types_[it->second].canonical_model));
    }
  }
  return absl::OkStatus();
}

absl::Status AcceleratorTypeSetBuilder::Add(AcceleratorType type) {
  const std::string key = FoldSpelling(type.canonical_model);
  // A canonical name is spelled one way: "NVIDIA-H100" is not an entry for
  // nvidia-h100 (nor a valid new name).
  if (key != type.canonical_model) {
    return absl::InvalidArgumentError(
        absl::StrCat("canonical_model \"", type.canonical_model,
                     "\" must be lower-case without surrounding spaces"));
  }
  size_t slot = types_.size();  // a new type unless it extends one
  AcceleratorType merged;
  if (auto it = index_.find(key); it != index_.end()) {
    const AcceleratorType& known = types_[it->second];
    if (known.canonical_model != key) {
      return absl::InvalidArgumentError(
          absl::StrCat("canonical_model \"", type.canonical_model,
                       "\" is already an alias of ", known.canonical_model));
    }
    slot = it->second;
    // The entry's own aliases, before merging, so that an error names its
    // index; the known ones are this type's already.
    RETURN_IF_ERROR(CheckAliasesFree(type.aliases, slot));
    merged = known;
    RETURN_IF_ERROR(ExtendType(merged, type));
    absl::Status valid = NormalizeAndValidateType(merged);
    if (!valid.ok()) {
      // Positions now count the known entries too.
      return absl::InvalidArgumentError(
          absl::StrCat("with the known ", key, " entries: ", valid.message()));
    }
  } else {
    merged = std::move(type);
    RETURN_IF_ERROR(NormalizeAndValidateType(merged));
    RETURN_IF_ERROR(CheckAliasesFree(merged.aliases, slot));
  }
  index_[key] = slot;
  for (const std::string& a : merged.aliases) index_[FoldSpelling(a)] = slot;
  if (slot == types_.size()) {
    types_.push_back(std::move(merged));
  } else {
    types_[slot] = std::move(merged);
  }
  return absl::OkStatus();
}

std::shared_ptr<const AcceleratorTypeSet>
AcceleratorTypeSetBuilder::Build() && {
  std::vector<size_t> order(types_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return types_[a].canonical_model < types_[b].canonical_model;
  });
  std::vector<size_t> new_slot(types_.size());
  auto types = std::shared_ptr<AcceleratorTypeSet>(new AcceleratorTypeSet());
  types->types_.reserve(types_.size());
  for (size_t i = 0; i < order.size(); ++i) {
    new_slot[order[i]] = i;
    types->types_.push_back(std::move(types_[order[i]]));
  }
  types->index_ = std::move(index_);
  for (auto& [spelling, slot] : types->index_) slot = new_slot[slot];
  return types;
}

}  // namespace accelsched
