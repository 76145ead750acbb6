#include "daemon/job_table.h"

#include <algorithm>

namespace migsched {

void JobTable::AddStored(const DaemonJobRecord& r) {
  Entry& e = entries_[r.id];
  e.job.reset();
  e.current = r;
  e.visible = r;
  e.version = 1;
  e.visible_version = 1;
  if (!r.idempotency_key.empty()) by_key_[r.idempotency_key] = r.id;
}

void JobTable::AddStored(const DaemonJobRecord& r, Job job) {
  AddStored(r);
  entries_[r.id].job = std::move(job);
}

const Job* JobTable::JobOf(DaemonJobId id) const {
  auto it = entries_.find(id);
  return it == entries_.end() || !it->second.job ? nullptr : &*it->second.job;
}

DaemonJobRecord* JobTable::Current(DaemonJobId id) {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second.current;
}

const DaemonJobRecord* JobTable::Current(DaemonJobId id) const {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second.current;
}

const DaemonJobRecord* JobTable::Visible(DaemonJobId id) const {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second.visible;
}

uint64_t JobTable::Update(const DaemonJobRecord& r) {
  Entry& e = entries_[r.id];
  e.current = r;
  return ++e.version;
}

void JobTable::Committed(const DaemonJobRecord& r, uint64_t version) {
  auto it = entries_.find(r.id);
  if (it == entries_.end()) return;  // pruned meanwhile
  if (version <= it->second.visible_version) return;
  it->second.visible = r;
  it->second.visible_version = version;
}

void JobTable::Erase(DaemonJobId id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  if (!it->second.current.idempotency_key.empty())
    by_key_.erase(it->second.current.idempotency_key);
  entries_.erase(it);
}

DaemonJobId JobTable::ByKey(const std::string& key) const {
  auto it = by_key_.find(key);
  return it == by_key_.end() ? 0 : it->second;
}

JobPage JobTable::List(const JobQuery& q) const {
  JobPage page;
  const int limit = std::clamp(q.limit, 1, 1000);
  for (auto it = entries_.upper_bound(q.after); it != entries_.end(); ++it) {
    const DaemonJobRecord& r = it->second.visible;
    if (q.state && r.state != *q.state) continue;
    if (q.kind && r.kind != *q.kind) continue;
    if (!q.owner_prefix.empty() && !r.owner().starts_with(q.owner_prefix)) continue;
    if (static_cast<int>(page.jobs.size()) == limit) {
      page.next = page.jobs.back().id;
      break;
    }
    page.jobs.push_back(r);
  }
  return page;
}

std::vector<DaemonJobId> JobTable::Live() const {
  std::vector<DaemonJobId> out;
  for (const auto& [id, e] : entries_) {
    if (!IsTerminal(e.current.state)) out.push_back(id);
  }
  return out;
}

std::vector<DaemonJobId> JobTable::LiveAllocationsOf(const std::string& owner) const {
  std::vector<DaemonJobId> out;
  for (const auto& [id, e] : entries_) {
    if (e.current.kind == JobKind::kAllocation && e.current.owner() == owner &&
        !IsTerminal(e.current.state)) {
      out.push_back(id);
    }
  }
  return out;
}

std::vector<DaemonJobId> JobTable::EndedBefore(double before) const {
  std::vector<DaemonJobId> out;
  for (const auto& [id, e] : entries_) {
    if (IsTerminal(e.visible.state) && IsTerminal(e.current.state) && e.visible.ended_at < before) {
      out.push_back(id);
    }
  }
  return out;
}

std::map<std::string, int64_t> JobTable::CountByState() const {
  std::map<std::string, int64_t> out;
  for (JobState s : AllJobStates()) out[std::string(JobStateName(s))] = 0;
  for (const auto& [id, e] : entries_) ++out[std::string(JobStateName(e.visible.state))];
  return out;
}

}  // namespace migsched
