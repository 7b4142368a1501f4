// The scheduler's allocation half, and its load and commit plumbing.
#include "core/scheduler.h"

#include <cstdio>
#include <set>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/allocation_request.h"
#include "core/node_validation.h"
#include "core/page_token.h"
#include "core/placement.h"
#include "core/status_macros.h"

namespace accelsched {
namespace {

absl::string_view StateName(AllocationState s) {
  switch (s) {
    case AllocationState::kActive:
      return "ACTIVE";
    case AllocationState::kReleased:
      return "RELEASED";
    case AllocationState::kExpired:
      return "EXPIRED";
    case AllocationState::kPending:
      return "PENDING";
    case AllocationState::kUnspecified:
      break;
  }
  return "UNSPECIFIED";
}

// GetAllocation's answer when the allocation's last write failed.
absl::Status NotWritten(const std::string& id) {
  return absl::UnavailableError(
      absl::StrCat("allocation ", id, " was not written; retry"));
}

absl::Status AllocationNotFound(const AllocationKey& key) {
  return absl::NotFoundError(
      key.allocation_id.empty()
          ? absl::StrCat("no allocation has request_id \"", key.request_id,
                         "\"")
          : absl::StrCat("allocation \"", key.allocation_id, "\" not found"));
}

}  // namespace

Scheduler::Scheduler(Store* store, const Clock* clock,
                     std::shared_ptr<const AcceleratorRegistry> registry,
                     Options options)
    : store_(store),
      clock_(clock),
      options_(options),
      events_(options.watch_buffer),
      registry_(std::move(registry)),
      committer_(std::make_unique<GroupCommitter>(
          store, &events_,
          [this](const absl::Status& s) { OnCommitFailure(s); },
          GroupCommitter::Options{options.commit_mode,
                                  options.max_commit_batch})) {}

Scheduler::~Scheduler() { committer_.reset(); }

absl::Status Scheduler::Load() {
  ASSIGN_OR_RETURN(const uint64_t sequence, store_->LoadEventSequence());
  committer_->set_last_event_sequence(sequence);
  absl::MutexLock lock(&mu_);
  return LoadLocked();
}

absl::Status Scheduler::LoadLocked() {
  ASSIGN_OR_RETURN(std::vector<Node> nodes, store_->LoadNodes());
  ASSIGN_OR_RETURN(std::vector<StoredAllocation> allocations,
                   store_->LoadAllocations());
  nodes_.clear();
  owner_.clear();
  tpu_slices_.clear();
  index_ = CapacityIndex();
  allocations_.clear();
  unit_owner_.clear();
  by_request_.clear();
  expiry_.clear();
  ended_.clear();
  for (StoredAllocation& stored : allocations) {
    Allocation& a = stored.allocation;
    if (a.live()) {
      for (const std::string& unit : stored.units) unit_owner_[unit] = a.id;
      expiry_.insert({a.expires_at, a.id});
    } else {
      ended_.insert({a.ended_at, a.id});
    }
    // Ids sort by creation, so the last one seen per request is its newest.
    auto [it, inserted] = by_request_.try_emplace(a.request_id, a.id);
    if (!inserted && a.id > it->second) it->second = a.id;
    std::string id = a.id;
    allocations_.emplace(
        std::move(id), Record{std::move(a), std::move(stored.units), nullptr});
  }
  const std::shared_ptr<const AcceleratorRegistry> registry = this->registry();
  for (Node& node : nodes) {
    for (Device& d : node.devices) {
      const AcceleratorType* model = registry->Find(d.model);
      if (model == nullptr) {
        return absl::DataLossError(absl::StrCat(
            "stored device \"", d.id, "\" has model \"", d.model,
            "\", which the accelerator-type registry does not know (add it "
            "with --accelerator_types)"));
      }
      d.canonical_model = model->canonical_model;
      d.device_class = model->device_class;
      // As ReplaceRegistry refuses a registry that no longer fits a device,
      // start-up refuses one too.
      if (absl::Status fits = ValidateDeviceGeometry(*model, d, "device");
          !fits.ok()) {
        return absl::DataLossError(absl::StrCat(
            "stored device \"", d.id, "\" of node \"", node.name,
            "\" does not fit the accelerator-type registry: ", fits.message()));
      }
    }
    IndexNode(node);
    std::string name = node.name;
    nodes_.emplace(std::move(name), std::move(node));
  }
  for (const auto& [name, node] : nodes_) RefreshUnits(name, {});
  return absl::OkStatus();
}

void Scheduler::OnCommitFailure(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  // Queued writes were applied in memory on top of the failed ones: fail them
  // too, and rebuild memory from what the store holds, the only state anyone
  // was told of.
  committer_->FailQueued(status);
  absl::Status reload = LoadLocked();
  if (!reload.ok()) {
    std::fprintf(stderr,
                 "accelsched: reloading state after a failed commit: %s\n",
                 std::string(reload.ToString()).c_str());
  }
}

std::shared_ptr<GroupCommitter::Ticket> Scheduler::Commit(Write write) {
  return committer_->Enqueue(std::move(write.mutations),
                             std::move(write.events));
}

void Scheduler::Complete(absl::StatusOr<Queued<bool>> queued,
                         StatusCallback done) const {
  Complete<bool>(std::move(queued),
                 [done = std::move(done)](absl::StatusOr<bool> r) mutable {
                   std::move(done)(r.status());
                 });
}

EligibilityRules Scheduler::RulesAt(absl::Time now) const {
  return EligibilityRules{now, options_.heartbeat_timeout};
}

std::string Scheduler::NewAllocationId(absl::Time now) {
  // Time first, so ids sort by creation; a counter and random bits keep them
  // unique across restarts and within one microsecond. absl::BitGen is not
  // thread-safe, and schedulers in one process (tests) share no lock.
  thread_local absl::BitGen id_bits;
  return absl::StrFormat("a-%013x-%04x%04x", absl::ToUnixMicros(now),
                         ++id_counter_ & 0xffff,
                         absl::Uniform<uint32_t>(id_bits) & 0xffff);
}

const Scheduler::Record* Scheduler::FindRecord(const AllocationKey& key) const {
  std::string id = key.allocation_id;
  if (id.empty()) {
    auto it = by_request_.find(key.request_id);
    if (it == by_request_.end()) return nullptr;
    id = it->second;
  }
  auto it = allocations_.find(id);
  return it == allocations_.end() ? nullptr : &it->second;
}

void Scheduler::EndLocked(Record& record, AllocationState state,
                          absl::string_view reason, absl::Time now,
                          Write& write) {
  Allocation& a = record.allocation;
  expiry_.erase({a.expires_at, a.id});
  a.state = state;
  a.end_reason = std::string(reason);
  a.ended_at = now;
  ended_.insert({now, a.id});
  std::set<std::string> nodes;
  for (const std::string& unit : record.units) {
    unit_owner_.erase(unit);
    index_.SetAllocation(unit, "");
  }
  for (const AllocatedDevice& d : a.devices) nodes.insert(d.node);
  write.mutations.push_back(PutAllocationMutation{a, record.units});
  for (const std::string& node : nodes) DropReleasedRemovedDevices(node, write);
  write.events.push_back(Event{state == AllocationState::kExpired
                                   ? Event::Type::kExpired
                                   : Event::Type::kReleased,
                               now, a, a.node, a.end_reason, 0});
}

std::shared_ptr<GroupCommitter::Ticket> Scheduler::ExpireDueLocked(
    absl::Time now, int* expired) {
  Write write;
  std::vector<Record*> ended;
  while (!expiry_.empty() && expiry_.begin()->first <= now) {
    Record& record = allocations_.find(expiry_.begin()->second)->second;
    EndLocked(record, AllocationState::kExpired, kReasonExpired, now, write);
    ended.push_back(&record);
  }
  if (expired != nullptr) *expired = static_cast<int>(ended.size());
  if (ended.empty()) return nullptr;
  auto ticket = Commit(std::move(write));
  for (Record* record : ended) record->ticket = ticket;
  return ticket;
}

Allocation Scheduler::Draft(const AllocationRequest& request,
                            const MatchSpec& spec,
                            const std::vector<const Unit*>& units) const {
  Allocation a;
  a.request_id = request.request_id;
  a.node = units.front()->home;
  a.tenant = request.tenant;
  a.priority = request.priority;
  a.device_class = spec.device_class;
  a.requested_models = spec.models;
  a.model = units.front()->pool.model;
  a.partition = spec.partition;
  a.count = spec.count;
  a.unpartitioned = request.partition_kind == PartitionKind::kUnpartitioned;
  a.container_name = request.container_name;
  std::set<std::string> hosts;
  for (const Unit* u : units) {
    a.devices.insert(a.devices.end(), u->devices.begin(), u->devices.end());
    for (const AllocatedDevice& d : u->devices) hosts.insert(d.node);
  }
  // Under mu_ the registry knows every model in the catalog (ReplaceRegistry
  // checks that under mu_).
  const AcceleratorType& type = *registry()->Find(a.model);
  if (type.resource_name != DefaultResourceName(type.device_class)) {
    a.resource_name = type.resource_name;
  }
  for (const std::string& host : hosts) {
    a.targets.push_back(PlacementTargetOf(nodes_.find(host)->second, type));
  }
  return a;
}

absl::StatusOr<Allocation> Scheduler::Allocate(
    const AllocationRequest& request) {
  return Await(QueueAllocate(request));
}

void Scheduler::Allocate(const AllocationRequest& request,
                         Callback<Allocation> done) {
  Complete(QueueAllocate(request), std::move(done));
}

absl::StatusOr<Scheduler::Queued<Allocation>> Scheduler::QueueAllocate(
    const AllocationRequest& request) {
  ASSIGN_OR_RETURN(
      MatchSpec spec,
      ValidateAllocationRequest(*registry(), request, options_.max_lease));
  // Expiries queued on the way commit before this call's write (in queue
  // order); the flush after the lock is released sees to them on every path.
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  Allocation a;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    ExpireDueLocked(now, nullptr);
    if (const Record* existing = FindRecord({"", request.request_id});
        existing != nullptr && existing->allocation.live()) {
      const Allocation& e = existing->allocation;
      // The resolved request: the same models in any spelling and order are
      // the same request. Unpartitioned picks the same devices as no
      // partition value but gives the pod another placement.
      const bool unpartitioned =
          request.partition_kind == PartitionKind::kUnpartitioned;
      if (e.device_class != spec.device_class ||
          e.requested_models != spec.models || e.partition != spec.partition ||
          e.count != spec.count || e.unpartitioned != unpartitioned) {
        return absl::AlreadyExistsError(absl::StrCat(
            "request_id \"", request.request_id, "\" already holds allocation ",
            e.id, " for ", e.count, " x ",
            RequestUnitName(e.device_class, e.requested_models, e.partition),
            "; a retry must ask for the same accelerator and count"));
      }
      // A retry: the same allocation, once it is durable.
      a = e;
      ticket = existing->ticket;
    } else {
      RETURN_IF_ERROR(CheckSatisfiable(index_, spec));
      std::optional<std::vector<const Unit*>> units =
          Match(index_, nodes_, spec, RulesAt(now));
      if (!units.has_value()) {
        return absl::ResourceExhaustedError(
            accelsched::Explain(index_, nodes_, spec, RulesAt(now)).summary);
      }
      a = Draft(request, spec, *units);
      a.id = NewAllocationId(now);
      a.state = AllocationState::kActive;
      a.created_at = now;
      a.expires_at =
          now + (request.lease == absl::ZeroDuration() ? options_.default_lease
                                                       : request.lease);
      Record record;
      for (const Unit* u : *units) record.units.push_back(u->key);
      for (const std::string& key : record.units) {
        unit_owner_[key] = a.id;
        index_.SetAllocation(key, a.id);
      }
      record.allocation = a;
      expiry_.insert({a.expires_at, a.id});
      by_request_[a.request_id] = a.id;
      Write write;
      write.mutations.push_back(PutAllocationMutation{a, record.units, true});
      write.events.push_back(
          Event{Event::Type::kAllocated, now, a, a.node, "", 0});
      ticket = Commit(std::move(write));
      record.ticket = ticket;
      allocations_.emplace(a.id, std::move(record));
    }
  }
  return Queued<Allocation>{std::move(a), std::move(ticket)};
}

absl::StatusOr<Allocation> Scheduler::Release(const AllocationKey& key) {
  return Await(QueueRelease(key));
}

void Scheduler::Release(const AllocationKey& key, Callback<Allocation> done) {
  Complete(QueueRelease(key), std::move(done));
}

absl::StatusOr<Scheduler::Queued<Allocation>> Scheduler::QueueRelease(
    const AllocationKey& key) {
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  Allocation a;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    ExpireDueLocked(now, nullptr);
    const Record* found = FindRecord(key);
    if (found == nullptr) return AllocationNotFound(key);
    Record& record = allocations_.find(found->allocation.id)->second;
    if (record.allocation.live()) {
      Write write;
      EndLocked(record, AllocationState::kReleased, kReasonReleased, now,
                write);
      record.ticket = Commit(std::move(write));
    }
    a = record.allocation;
    ticket = record.ticket;
  }
  return Queued<Allocation>{std::move(a), std::move(ticket)};
}

absl::StatusOr<Allocation> Scheduler::RenewLease(
    absl::string_view allocation_id, absl::Duration lease) {
  return Await(QueueRenewLease(allocation_id, lease));
}

void Scheduler::RenewLease(absl::string_view allocation_id,
                           absl::Duration lease, Callback<Allocation> done) {
  Complete(QueueRenewLease(allocation_id, lease), std::move(done));
}

absl::StatusOr<Scheduler::Queued<Allocation>> Scheduler::QueueRenewLease(
    absl::string_view allocation_id, absl::Duration lease) {
  if (lease < absl::ZeroDuration() || lease > options_.max_lease) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease ", absl::FormatDuration(lease), " is out of range [0, ",
        absl::FormatDuration(options_.max_lease), "]"));
  }
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  Allocation a;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    ExpireDueLocked(now, nullptr);
    auto it = allocations_.find(allocation_id);
    if (it == allocations_.end()) {
      return AllocationNotFound({std::string(allocation_id), ""});
    }
    Record& record = it->second;
    if (!record.allocation.live()) {
      return absl::FailedPreconditionError(
          absl::StrCat("allocation ", allocation_id, " is ",
                       StateName(record.allocation.state),
                       "; only an ACTIVE lease "
                       "can be renewed"));
    }
    expiry_.erase({record.allocation.expires_at, record.allocation.id});
    record.allocation.expires_at =
        now + (lease == absl::ZeroDuration() ? options_.default_lease : lease);
    expiry_.insert({record.allocation.expires_at, record.allocation.id});
    Write write;
    write.mutations.push_back(
        PutAllocationMutation{record.allocation, record.units});
    record.ticket = Commit(std::move(write));
    a = record.allocation;
    ticket = record.ticket;
  }
  return Queued<Allocation>{std::move(a), std::move(ticket)};
}

absl::StatusOr<Scheduler::Queued<Allocation>> Scheduler::FindDurable(
    const AllocationKey& key) const {
  absl::ReaderMutexLock lock(&mu_);
  const Record* record = FindRecord(key);
  if (record == nullptr) return AllocationNotFound(key);
  return Queued<Allocation>{record->allocation, record->ticket};
}

absl::StatusOr<Allocation> Scheduler::GetAllocation(
    const AllocationKey& key) const {
  absl::StatusOr<Queued<Allocation>> found = FindDurable(key);
  if (!found.ok()) return found.status();
  const std::string id = found->value.id;
  absl::StatusOr<Allocation> a = Await(std::move(found));
  if (!a.ok()) return NotWritten(id);
  return a;
}

void Scheduler::GetAllocation(const AllocationKey& key,
                              Callback<Allocation> done) const {
  absl::StatusOr<Queued<Allocation>> found = FindDurable(key);
  if (!found.ok()) {
    std::move(done)(found.status());
    return;
  }
  std::string id = found->value.id;
  Complete<Allocation>(
      std::move(found), [id = std::move(id), done = std::move(done)](
                            absl::StatusOr<Allocation> a) mutable {
        std::move(done)(a.ok() ? std::move(a) : NotWritten(id));
      });
}

absl::StatusOr<AllocationPage> Scheduler::ListAllocations(
    const AllocationFilter& filter, int page_size,
    absl::string_view page_token) const {
  ASSIGN_OR_RETURN(const PageRequest request,
                   ParsePageRequest(page_size, page_token));
  const std::string& after = request.after;
  page_size = request.size;
  AllocationPage page;
  absl::ReaderMutexLock lock(&mu_);
  auto it =
      after.empty() ? allocations_.begin() : allocations_.upper_bound(after);
  for (; it != allocations_.end(); ++it) {
    const Allocation& a = it->second.allocation;
    if (filter.state != AllocationState::kUnspecified &&
        a.state != filter.state) {
      continue;
    }
    if (!filter.tenant.empty() && a.tenant != filter.tenant) continue;
    if (!filter.node.empty() && !a.touches(filter.node)) continue;
    if (static_cast<int>(page.allocations.size()) == page_size) {
      page.next_page_token = EncodePageToken(page.allocations.back().id);
      break;
    }
    page.allocations.push_back(a);
  }
  return page;
}

absl::StatusOr<ExplainResult> Scheduler::Explain(
    const AllocationRequest& request) const {
  ASSIGN_OR_RETURN(
      MatchSpec spec,
      ValidateAllocationRequest(*registry(), request, options_.max_lease));
  ExplainResult result;
  absl::ReaderMutexLock lock(&mu_);
  const EligibilityRules rules = RulesAt(clock_->Now());
  result.explanation = accelsched::Explain(index_, nodes_, spec, rules);
  absl::Status satisfiable = CheckSatisfiable(index_, spec);
  if (!satisfiable.ok()) {
    absl::StrAppend(&result.explanation.summary, "; ", satisfiable.message());
    return result;
  }
  std::optional<std::vector<const Unit*>> units =
      Match(index_, nodes_, spec, rules);
  if (!units.has_value()) return result;
  result.feasible = true;
  result.would_allocate = Draft(request, spec, *units);
  return result;
}

absl::StatusOr<int> Scheduler::Sweep() {
  std::vector<std::shared_ptr<GroupCommitter::Ticket>> tickets;
  int expired = 0;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    if (auto t = ExpireDueLocked(now, &expired))
      tickets.push_back(std::move(t));
    Write write;
    while (!ended_.empty() &&
           ended_.begin()->first + options_.retention < now) {
      const std::string id = ended_.begin()->second;
      ended_.erase(ended_.begin());
      auto it = allocations_.find(id);
      auto req = by_request_.find(it->second.allocation.request_id);
      if (req != by_request_.end() && req->second == id) by_request_.erase(req);
      allocations_.erase(it);
      write.mutations.push_back(DeleteAllocationMutation{id});
    }
    if (!write.mutations.empty()) tickets.push_back(Commit(std::move(write)));
  }
  for (const auto& t : tickets) RETURN_IF_ERROR(committer_->Wait(t));
  return expired;
}

std::map<std::string, int64_t> Scheduler::ActiveByTenant() const {
  absl::ReaderMutexLock lock(&mu_);
  std::map<std::string, int64_t> out;
  for (const auto& [time, id] : expiry_) {
    ++out[allocations_.find(id)->second.allocation.tenant];
  }
  return out;
}

}  // namespace accelsched
