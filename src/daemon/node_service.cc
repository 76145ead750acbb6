#include "daemon/node_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/job.h"
#include "daemon/commit_wait.h"
#include "daemon/json_text.h"
#include "nodeapi/request_json.h"

namespace migsched {
namespace {

// Whether `b` asks again for the stored allocation `stored` (an owner left out in `b` was filled
// in from the reservation it bound, and `anchors` may have come from that reservation too).
bool SameAllocation(const DaemonJobRecord& stored, const AllocationRequest& b) {
  const AllocationRequest& a = stored.allocation;
  const bool same_anchors =
      a.anchors == b.anchors || (a.anchors && !b.anchors && !stored.bound_reservation.empty());
  if ((a.owner != b.owner && !b.owner.empty()) || a.reservation != b.reservation ||
      a.reservation_prefix != b.reservation_prefix || a.name != b.name || !same_anchors ||
      a.instances.size() != b.instances.size()) {
    return false;
  }
  for (size_t i = 0; i < a.instances.size(); ++i) {
    if (a.instances[i].gpu != b.instances[i].gpu ||
        a.instances[i].profile != b.instances[i].profile ||
        a.instances[i].start != b.instances[i].start) {
      return false;
    }
  }
  return true;
}

}  // namespace

// ---------------------------------------------------------------- views

GpuView NodeService::GpuViewOf(int g) const {
  const GpuState& gs = model_->cluster().gpu(g);
  GpuView v;
  v.index = model_->nvml(g);
  v.uuid = model_->uuid(g);
  v.model = gs.model().name();
  v.placement_units = gs.model().placement_units();
  for (const Instance& in : gs.instances()) {
    InstanceView iv;
    const Profile& p = gs.model().profile(in.profile);
    iv.profile = p.name;
    iv.start = in.start;
    iv.size = p.size();
    if (const BackendInstance* live = sync_->Live(g, in.start);
        live != nullptr && live->profile_id == p.id) {
      iv.mig_uuid = live->mig_uuid;
      iv.gi_id = live->gi_id;
    }
    iv.busy = in.busy();
    if (in.busy()) {
      switch (in.holder) {
        case Holder::kJob: {
          const DaemonJobRecord* r = jobs_->Current(in.job);
          const bool allocation = r != nullptr && r->kind == JobKind::kAllocation;
          iv.holder = allocation ? HolderKind::kAllocation : HolderKind::kJob;
          iv.job = in.job;
          if (allocation) iv.owner = r->owner();
          // §4 step 2: an allocation its owner never moves, or a job of ours that cannot leave.
          if (r != nullptr) {
            iv.anchors = allocation ? r->allocation.anchors
                                    : Anchors(r->request.migratable, r->request.latency_sensitive);
          }
          break;
        }
        case Holder::kReservation: {
          iv.holder = HolderKind::kReservation;
          if (const HeldReservation* res = reservations_.FindByHold(in.job); res != nullptr) {
            iv.owner = res->record.owner;
            iv.expires_at = res->record.expires_at;
            iv.anchors = res->record.anchors;
          }
          break;
        }
        case Holder::kPlaceholder:
          iv.holder = HolderKind::kPlaceholder;
          break;
      }
    }
    v.anchored = v.anchored || iv.anchors;
    v.instances.push_back(std::move(iv));
  }
  v.utilisation = gs.utilization();
  v.frag_cost = gs.fragcost();
  v.lazy = gs.lazy(model_->options().threshold);
  v.draining = model_->cluster().drained(g);
  v.unreachable = model_->unreachable(g);
  v.needs_reset = model_->needs_reset(g);
  v.refusing = sync_->refusing(g);
  v.pcie = sync_->Pcie(g);
  // Free room per base profile: create its placements in ascending start on a
  // scratch copy while they fit (same-size placements: the greedy count is the most).
  for (int p : gs.model().base_profiles()) {
    GpuState scratch = gs;
    int n = 0;
    for (const Placement& pl : gs.model().profile(p).placements) {
      if (scratch.Create(p, pl.start).ok()) ++n;
    }
    v.free_instances[gs.model().profile(p).name] = n;
  }
  return v;
}

std::vector<GpuView> NodeService::Gpus() const {
  StateLock lock(state_mu_);
  std::vector<GpuView> out;
  for (int g = 0; g < model_->size(); ++g) out.push_back(GpuViewOf(g));
  return out;
}

void NodeService::FillNode(NodeView* n) const {
  n->boot_id = model_->boot_id();
  n->generation = model_->generation();
  n->time = Unix();
  n->policy = model_->policy_name();
  n->options = model_->options();
  for (int g = 0; g < model_->size(); ++g) n->gpus.push_back(GpuViewOf(g));
  for (const HeldReservation* r : reservations_.WithPrefix(""))
    n->reservations.push_back(ViewOf(*r));
}

JobInstance NodeService::InstanceAt(const InstanceRef& ref) const {
  return DescribeInstance(*model_, *sync_, ref);
}

std::vector<JobInstance> NodeService::InstancesOf(DaemonJobId id) const {
  return DescribeInstancesOf(*model_, *sync_, id);
}

// ---------------------------------------------------------------- reservations

StatusOr<std::vector<InstanceRef>> NodeService::ResolvePlacements(
    const std::vector<PlacementRef>& specs) const {
  std::vector<InstanceRef> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    const PlacementRef& s = specs[i];
    StatusOr<InstanceRef> ref = model_->Resolve(s.gpu, s.profile, s.start);
    if (!ref.ok()) return ref.status().WithPrefix(fmt::format("placement {}", i));
    const GpuModel& m = model_->cluster().gpu(ref->gpu).model();
    if (m.SlotOf(ref->profile, ref->start) < 0) {
      std::string starts;
      for (int slot : m.SlotsOfProfile(ref->profile)) {
        starts += fmt::format("{}{}", starts.empty() ? "" : ", ", m.slots()[slot].start);
      }
      return InvalidArgumentError(
          fmt::format("placement {}: start {} is not a placement of {} on GPU {} (starts: {})", i,
                      s.start, s.profile, s.gpu, starts));
    }
    for (const InstanceRef& o : out) {
      if (o.gpu == ref->gpu) {
        const uint64_t a = m.slots()[m.SlotOf(o.profile, o.start)].unit_mask;
        const uint64_t b = m.slots()[m.SlotOf(ref->profile, ref->start)].unit_mask;
        if (a & b) {
          return InvalidArgumentError(fmt::format("placements overlap: {}@{} and {}@{} on GPU {}",
                                                  m.profile(o.profile).name, o.start, s.profile,
                                                  s.start, s.gpu));
        }
      }
    }
    out.push_back(*ref);
  }
  return out;
}

Status NodeService::Conflict(const InstanceRef& ref) const {
  const NvmlIndex nvml = model_->nvml(ref.gpu);
  if (model_->cluster().drained(ref.gpu)) {
    const std::string why = model_->unreachable(ref.gpu);
    return FailedPreconditionError(why.empty()
                                       ? fmt::format("GPU {} is drained", nvml)
                                       : fmt::format("GPU {} is unreachable: {}", nvml, why));
  }
  const GpuState& g = model_->cluster().gpu(ref.gpu);
  const GpuModel& m = g.model();
  const uint64_t units = m.slots()[m.SlotOf(ref.profile, ref.start)].unit_mask;
  for (const Instance& in : g.instances()) {
    if (!in.busy() || !(m.slots()[in.slot].unit_mask & units)) continue;
    std::string who = in.HolderString();
    if (in.holder == Holder::kReservation) {
      if (const HeldReservation* r = reservations_.FindByHold(in.job); r != nullptr) {
        who = fmt::format("reservation '{}'", r->record.owner);
      }
    } else if (in.holder == Holder::kJob) {
      const DaemonJobRecord* r = jobs_->Current(in.job);
      if (r != nullptr && r->kind == JobKind::kAllocation) {
        who = fmt::format("allocation {} of '{}'", in.job, r->owner());
      }
    } else {
      who = "an instance being destroyed (its destroy answered \"in use\")";
    }
    return FailedPreconditionError(fmt::format("GPU {}: {}@{} overlaps {}@{}, held by {}", nvml,
                                               m.profile(ref.profile).name, ref.start,
                                               m.profile(in.profile).name, in.start, who));
  }
  return Status();
}

ReservationView NodeService::ViewOf(const HeldReservation& r) const {
  ReservationView v;
  v.record = r.record;
  for (const InstanceRef& ref : r.refs) {
    v.instances.push_back(InstanceAt(ref));
    v.gpu_uuids.push_back(model_->uuid(ref.gpu));
  }
  return v;
}

StatusOr<ReserveResult> NodeService::Reserve(const ReservationRequest& typed) {
  const ReservationRequest req = WithCanonicalProfiles(typed);
  if (req.owner.empty()) return InvalidArgumentError("field 'owner' must not be empty");
  if (req.placements.empty() || static_cast<int>(req.placements.size()) > kMaxJobCount) {
    return InvalidArgumentError(
        fmt::format("field 'placements' must hold 1 to {} placements, got {}", kMaxJobCount,
                    req.placements.size()));
  }
  const double ttl = req.ttl_s > 0 ? req.ttl_s : config_->reservation_ttl_s;
  if (!(ttl <= config_->reservation_max_ttl_s)) {
    return InvalidArgumentError(
        fmt::format("field 'ttl_s' must be at most {} (reservation_max_ttl_s), got {}",
                    config_->reservation_max_ttl_s, req.ttl_s));
  }
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> done = promise->get_future();
  bool created = true;
  {
    StateLock lock(state_mu_);
    RETURN_IF_ERROR(host_->Accepting());
    ASSIGN_OR_RETURN(std::vector<InstanceRef> refs, ResolvePlacements(req.placements));
    std::vector<PlacementRef> placements;
    for (const InstanceRef& ref : refs) {
      placements.push_back({model_->nvml(ref.gpu),
                            model_->cluster().gpu(ref.gpu).model().profile(ref.profile).name,
                            ref.start});
    }
    if (HeldReservation* existing = reservations_.Find(req.owner); existing != nullptr) {
      auto sorted = [](std::vector<PlacementRef> v) {
        std::sort(v.begin(), v.end(), [](const PlacementRef& a, const PlacementRef& b) {
          return std::tie(a.gpu, a.start, a.profile) < std::tie(b.gpu, b.start, b.profile);
        });
        return v;
      };
      if (sorted(existing->record.placements) != sorted(placements)) {
        return FailedPreconditionError(
            fmt::format("reservation '{}' holds other placements; release it first (DELETE "
                        "/v1/reservations/{})",
                        req.owner, req.owner));
      }
      if (!existing->ready) {
        return UnavailableError(
            fmt::format("reservation '{}' is being made; try again", req.owner));
      }
      // Renewal (its owner may say anew whether the job anchors).
      created = false;
      existing->record.expires_at = Unix() + ttl;
      if (existing->record.anchors != req.anchors) {
        existing->record.anchors = req.anchors;
        model_->Touch();  // the view changed
      }
      host_->Persist({StoreOp::PutReservation(existing->record)}, /*retry=*/true,
                     [promise](const Status& st) { promise->set_value(st); });
    } else {
      for (const InstanceRef& ref : refs) RETURN_IF_ERROR(Conflict(ref));
      HeldReservation res;
      res.record.owner = req.owner;
      res.record.placements = placements;
      res.record.created_at = Unix();
      res.record.expires_at = res.record.created_at + ttl;
      res.record.anchors = req.anchors;
      res.refs = refs;
      res.hold_id = reservations_.NextHoldId();
      ASSIGN_OR_RETURN(Plan plan,
                       model_->scheduler().Hold(Holder::kReservation, res.hold_id, refs));
      const std::string owner = req.owner;
      const JobId hold = res.hold_id;
      reservations_.Put(std::move(res));
      model_->Touch();
      // Create-at-reserve: the instances are made now, so that binding them
      // later (a Slurm prolog, kubelet's Allocate) cannot fail on the hardware.
      sync_->Execute(plan, [this, owner, hold,
                            promise](const Status& st) MIGSCHED_REQUIRES(kStateLock) {
        HeldReservation* r = reservations_.Find(owner);
        if (r == nullptr || r->hold_id != hold) {
          promise->set_value(UnavailableError(
              fmt::format("reservation '{}' was released while it was being made", owner)));
          return;
        }
        if (!st.ok()) {
          DropReservation(owner, "its instances could not be made");
          promise->set_value(
              st.code() == StatusCode::kUnavailable ? st : FailedPreconditionError(st.message()));
          return;
        }
        host_->Persist(
            {StoreOp::PutReservation(r->record)}, /*retry=*/false,
            [this, owner, hold, promise](const Status& cst) MIGSCHED_REQUIRES(kStateLock) {
              HeldReservation* r = reservations_.Find(owner);
              if (cst.ok() && r != nullptr && r->hold_id == hold) {
                r->ready = true;
                spdlog::info("reservation '{}': held until {:.0f}", owner, r->record.expires_at);
              } else if (r != nullptr && r->hold_id == hold) {
                DropReservation(owner, "it could not be stored");
              }
              promise->set_value(cst);
            });
      });
    }
  }
  Status st = WaitForCommit(done, fmt::format("reservation '{}'", req.owner));
  if (!st.ok()) return st;
  StateLock lock(state_mu_);
  const HeldReservation* r = reservations_.Find(req.owner);
  if (r == nullptr) return UnavailableError(fmt::format("reservation '{}' is gone", req.owner));
  return ReserveResult{ViewOf(*r), created};
}

void NodeService::DropReservation(const std::string& owner, const std::string& why) {
  HeldReservation* r = reservations_.Find(owner);
  if (r == nullptr) return;
  if (model_->scheduler().HeldBy(Holder::kReservation, r->hold_id) != nullptr) {
    StatusOr<Plan> plan = model_->scheduler().ReleaseHold(Holder::kReservation, r->hold_id);
    if (plan.ok()) {
      sync_->Execute(*plan, nullptr);
    } else {
      spdlog::error("reservation '{}': {}", owner, plan.status().message());
    }
  }
  const bool stored = r->ready;
  reservations_.Erase(owner);
  model_->Touch();
  spdlog::info("reservation '{}' released: {}", owner, why);
  if (stored) host_->Persist({StoreOp::DeleteReservation(owner)}, /*retry=*/true, nullptr);
}

std::vector<ReservationView> NodeService::ListReservations(const std::string& prefix) const {
  StateLock lock(state_mu_);
  std::vector<ReservationView> out;
  for (const HeldReservation* r : reservations_.WithPrefix(prefix)) out.push_back(ViewOf(*r));
  std::sort(out.begin(), out.end(), [](const ReservationView& a, const ReservationView& b) {
    return a.record.owner < b.record.owner;
  });
  return out;
}

StatusOr<ReservationView> NodeService::GetReservation(const std::string& owner) const {
  StateLock lock(state_mu_);
  const HeldReservation* r = reservations_.Find(owner);
  if (r == nullptr || !r->ready) return NotFoundError(fmt::format("no reservation '{}'", owner));
  return ViewOf(*r);
}

Status NodeService::ReleaseReservation(const std::string& owner) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> done = promise->get_future();
  {
    StateLock lock(state_mu_);
    const HeldReservation* r = reservations_.Find(owner);
    if (r == nullptr || !r->ready) return NotFoundError(fmt::format("no reservation '{}'", owner));
    RETURN_IF_ERROR(host_->Accepting());
    DropReservation(owner, "released by its owner");
    host_->Persist({}, /*retry=*/true, [promise](const Status& st) { promise->set_value(st); });
    host_->Wake();
  }
  return WaitForCommit(done, fmt::format("the release of reservation '{}'", owner));
}

void NodeService::ExpireReservations() {
  for (const std::string& owner : reservations_.Expired(Unix())) {
    DropReservation(owner, "expired");
  }
}

// ---------------------------------------------------------------- allocations

StatusOr<DaemonJobRecord> NodeService::VisibleRecord(DaemonJobId id) const {
  StateLock lock(state_mu_);
  const DaemonJobRecord* r = jobs_->Visible(id);
  if (r == nullptr) return NotFoundError(fmt::format("no allocation {}", id));
  return *r;
}

StatusOr<SubmitResult> NodeService::Allocate(const AllocationRequest& typed,
                                             const std::string& key) {
  const AllocationRequest req = WithCanonicalProfiles(typed);
  if (req.owner.empty() && req.reservation.empty() && req.reservation_prefix.empty()) {
    return InvalidArgumentError(
        "field 'owner' is required (it may be left out only when binding a reservation: then it "
        "is the reservation's owner key)");
  }
  if (static_cast<int>(req.instances.size()) > kMaxJobCount) {
    return InvalidArgumentError(
        fmt::format("field 'instances' holds at most {} instances", kMaxJobCount));
  }
  if (req.instances.empty() && req.reservation.empty()) {
    return InvalidArgumentError(
        "give 'instances' (profiles or placements), or a 'reservation' whose placements to take");
  }
  if (!req.reservation.empty() && !req.reservation_prefix.empty()) {
    return InvalidArgumentError("give only one of 'reservation' and 'reservation_prefix'");
  }
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> done = promise->get_future();
  DaemonJobId id = 0;
  {
    StateLock lock(state_mu_);
    RETURN_IF_ERROR(host_->Accepting());
    if (!key.empty()) {
      keys_->Wait(state_mu_, key);
      if (DaemonJobId first = jobs_->ByKey(key); first != 0) {
        const DaemonJobRecord* v = jobs_->Visible(first);
        if (v->kind == JobKind::kAllocation && SameAllocation(*v, req)) {
          return SubmitResult{*v, true};
        }
        return FailedPreconditionError(
            fmt::format("idempotency key '{}' was used for another request ({} {})", key,
                        JobKindName(v->kind), first));
      }
    }
    Scheduler& sched = model_->scheduler();
    // Which placements, and from which reservation.
    std::vector<InstanceRef> where;
    const HeldReservation* from = nullptr;
    const bool exact = !req.instances.empty() && req.instances.front().exact();
    std::vector<PlacementRef> placements;
    for (const RequestedInstance& s : req.instances) {
      if (s.exact() != exact || (s.exact() && s.start < 0)) {
        return InvalidArgumentError(
            "every instance gives either a profile alone or an exact placement (gpu, profile, "
            "start)");
      }
      if (s.profile.empty()) return InvalidArgumentError("every instance needs a 'profile'");
      if (exact) placements.push_back(s.placement());
    }
    if (exact) {
      ASSIGN_OR_RETURN(where, ResolvePlacements(placements));
    }
    // The reservations it may bind.
    std::vector<const HeldReservation*> candidates;
    if (!req.reservation.empty()) {
      const HeldReservation* r = reservations_.Find(req.reservation);
      if (r == nullptr || !r->ready) {
        return NotFoundError(fmt::format("no reservation '{}'", req.reservation));
      }
      candidates.push_back(r);
    } else if (!req.reservation_prefix.empty()) {
      candidates = reservations_.WithPrefix(req.reservation_prefix);
    }
    std::vector<InstanceRef> take;
    if (!candidates.empty() || !req.reservation.empty() || !req.reservation_prefix.empty()) {
      // One reservation supplies every instance: the first (oldest) that can.
      for (const HeldReservation* r : candidates) {
        std::vector<InstanceRef> left = r->refs;
        std::vector<InstanceRef> got;
        bool ok = true;
        if (req.instances.empty()) {
          got = left;
        } else {
          for (size_t i = 0; i < req.instances.size() && ok; ++i) {
            auto match =
                std::find_if(left.begin(), left.end(),
                             [&](const InstanceRef& ref) MIGSCHED_REQUIRES(kStateLock) {
                               if (exact) return ref == where[i];
                               const GpuModel& m = model_->cluster().gpu(ref.gpu).model();
                               return m.profile(ref.profile).name == req.instances[i].profile;
                             });
            if (match == left.end()) {
              ok = false;
            } else {
              got.push_back(*match);
              left.erase(match);
            }
          }
        }
        if (ok) {
          from = r;
          take = got;
          break;
        }
      }
      if (from == nullptr) {
        std::string wanted;
        for (const RequestedInstance& s : req.instances) {
          wanted += (wanted.empty() ? "" : ", ") +
                    (exact ? fmt::format("{}@{} on GPU {}", s.profile, s.start, s.gpu) : s.profile);
        }
        std::string held;
        for (const HeldReservation* r : candidates)
          held += (held.empty() ? "" : ", ") + r->record.owner;
        return FailedPreconditionError(
            fmt::format("no reservation {} holds {} (reservations: {})",
                        req.reservation.empty() ? fmt::format("under '{}'", req.reservation_prefix)
                                                : fmt::format("'{}'", req.reservation),
                        wanted.empty() ? "its placements" : wanted, held.empty() ? "none" : held));
      }
    }
    // Bound for a job that can never leave (its own word, or its reservation's): it anchors
    // (§4 step 2), placed and registered as such; otherwise its engine may move it, though the
    // daemon never does.
    const bool anchors = req.anchors || (from != nullptr && from->record.anchors);
    Job job;
    job.name = req.name;
    job.count = static_cast<int>(from != nullptr ? take.size() : req.instances.size());
    job.migratable = Migratable::kNone;
    job.moved_by_owner = !anchors;
    id = host_->NextJobId();
    Decision d;
    if (from != nullptr) {
      job.profile =
          model_->cluster().gpu(take.front().gpu).model().profile(take.front().profile).name;
      ASSIGN_OR_RETURN(d, sched.BindHold(Holder::kReservation, from->hold_id,
                                         static_cast<JobId>(id), job, take));
    } else if (exact) {
      for (const InstanceRef& ref : where) RETURN_IF_ERROR(Conflict(ref));
      // Given placements, of any profiles: the job names none itself.
      ASSIGN_OR_RETURN(d, sched.PlaceAt(static_cast<JobId>(id), job, where));
    } else {
      // Profiles only: the daemon's policy chooses, now (allocations do not queue).
      std::set<std::string> profiles;
      for (const RequestedInstance& s : req.instances) profiles.insert(s.profile);
      if (profiles.size() != 1) {
        return InvalidArgumentError(
            "instances given by profile alone must all be of one profile (give placements "
            "otherwise)");
      }
      job.profile = *profiles.begin();
      JobRequest probe;
      probe.profile = job.profile;
      probe.count = job.count;
      probe.command = {"-"};
      RETURN_IF_ERROR(ValidateJobRequest(probe));
      RETURN_IF_ERROR(model_->CheckOffered(job));
      RETURN_IF_ERROR(sched.CheckCanEverRun(job));
      StatusOr<std::optional<Decision>> placed = sched.TryPlace(static_cast<JobId>(id), job);
      if (!placed.ok()) return placed.status();
      if (!placed->has_value()) {
        return FailedPreconditionError(fmt::format(
            "no room for {} now (allocations do not queue: reserve placements, or retry)",
            job.RequestString()));
      }
      d = std::move(**placed);
    }
    DaemonJobRecord r = NewJobRecord(id, JobKind::kAllocation, Unix());
    r.allocation = req;
    // No owner given: the allocation belongs to the owner of the reservation it
    // binds (a device plugin that knows only the profile, docs/api.md).
    if (r.allocation.owner.empty()) r.allocation.owner = from->record.owner;
    r.allocation.anchors = anchors;
    r.idempotency_key = key;
    r.instances = InstancesOf(id);
    std::vector<StoreOp> reservation_ops;
    if (from != nullptr) {
      r.bound_reservation = from->record.owner;
      HeldReservation* res = reservations_.Find(from->record.owner);
      // The placements taken leave the reservation; one with none left is gone.
      std::vector<PlacementRef> left;
      std::vector<InstanceRef> left_refs;
      for (size_t i = 0; i < res->refs.size(); ++i) {
        if (std::find(take.begin(), take.end(), res->refs[i]) == take.end()) {
          left.push_back(res->record.placements[i]);
          left_refs.push_back(res->refs[i]);
        }
      }
      if (left.empty()) {
        reservation_ops.push_back(StoreOp::DeleteReservation(res->record.owner));
        reservations_.Erase(res->record.owner);
      } else {
        res->record.placements = left;
        res->refs = left_refs;
        reservation_ops.push_back(StoreOp::PutReservation(res->record));
      }
      model_->Touch();
    }
    keys_->Begin(key);
    jobs_->Update(r);  // current only: visible once stored
    sync_->Execute(d.plan, [this, id, key, reservation_ops,
                            promise](const Status& st) MIGSCHED_REQUIRES(kStateLock) {
      DaemonJobRecord* rec = jobs_->Current(id);
      if (rec == nullptr) return;
      std::vector<StoreOp> ops = reservation_ops;
      Status moved;
      if (st.ok()) {
        rec->instances = InstancesOf(id);
        moved = TransitionJob(*rec, JobState::kRunning, Unix());
      } else {
        // A failed bind: recorded as failed, its instances (and the
        // reservation it consumed) let go; never a stuck GPU.
        host_->ReleaseInstances(id);
        moved = TransitionJob(*rec, JobState::kFailed, Unix());
        if (moved.ok()) rec->reason = "bind failed: " + st.message();
      }
      if (!moved.ok()) spdlog::error("{}", moved.message());
      const DaemonJobRecord copy = *rec;
      ops.push_back(StoreOp::InsertJob(copy));
      nlohmann::json detail = {{"state", std::string(JobStateName(copy.state))},
                               {"owner", copy.owner()}};
      if (!copy.reason.empty()) detail["reason"] = copy.reason;
      ops.push_back(StoreOp::Event(id, Unix(), "allocated", JsonText(detail)));
      host_->Persist(std::move(ops), /*retry=*/true,
                     [this, id, copy, key, st, promise](const Status& cst)
                         MIGSCHED_REQUIRES(kStateLock) {
                           keys_->End(key);
                           if (cst.ok()) {
                             jobs_->Erase(id);
                             jobs_->AddStored(copy);
                           }
                           promise->set_value(!st.ok() ? st : cst);
                         });
    });
  }
  Status st = WaitForCommit(done, fmt::format("allocation {}", id));
  if (!st.ok()) {
    return Status(st.code() == StatusCode::kUnavailable ? StatusCode::kUnavailable
                                                        : StatusCode::kFailedPrecondition,
                  fmt::format("allocation {}: {}", id, st.message()));
  }
  ASSIGN_OR_RETURN(DaemonJobRecord rec, VisibleRecord(id));
  return SubmitResult{rec, false};
}

StatusOr<DaemonJobRecord> NodeService::ReleaseAllocation(DaemonJobId id) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> done = promise->get_future();
  {
    StateLock lock(state_mu_);
    DaemonJobRecord* r = jobs_->Current(id);
    if (r == nullptr || r->kind != JobKind::kAllocation || jobs_->Visible(id) == nullptr) {
      return NotFoundError(fmt::format("no allocation {}", id));
    }
    if (IsTerminal(r->state)) {
      return FailedPreconditionError(
          fmt::format("allocation {} is already {}", id, JobStateName(r->state)));
    }
    RETURN_IF_ERROR(host_->Accepting());
    host_->FinishJob(*r, JobState::kReleased, std::nullopt, "released by its owner");
    host_->Persist({}, /*retry=*/true, [promise](const Status& st) { promise->set_value(st); });
    host_->Wake();
  }
  RETURN_IF_ERROR(WaitForCommit(done, fmt::format("the release of allocation {}", id)));
  return VisibleRecord(id);
}

StatusOr<std::vector<DaemonJobRecord>> NodeService::ReleaseAllocationsOf(const std::string& owner) {
  std::vector<DaemonJobId> ids;
  {
    StateLock lock(state_mu_);
    RETURN_IF_ERROR(host_->Accepting());
    ids = jobs_->LiveAllocationsOf(owner);
  }
  std::vector<DaemonJobRecord> out;
  for (DaemonJobId id : ids) {
    StatusOr<DaemonJobRecord> r = ReleaseAllocation(id);
    if (r.ok()) {
      out.push_back(*r);
    } else if (r.status().code() != StatusCode::kFailedPrecondition) {
      return r.status();  // already released meanwhile is fine; the rest is not
    }
  }
  return out;
}

}  // namespace migsched
