#include "core/cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>

#include "core/text.h"

namespace migsched {

namespace {
// The most GPUs a cluster spec may name, each part and all together.
constexpr int64_t kMaxClusterGpus = 1000000;
}  // namespace

StatusOr<std::vector<const GpuModel*>> ParseClusterSpec(std::string_view spec,
                                                        const Catalog& catalog) {
  std::vector<const GpuModel*> out;
  if (TrimBlanks(spec).empty())
    return InvalidArgumentError("empty cluster spec (expected e.g. 4xA100-40GB)");
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view part = TrimBlanks(spec.substr(pos, comma - pos));
    pos = comma + 1;
    if (part.empty())
      return InvalidArgumentError(fmt::format("cluster spec '{}': empty part", spec));
    size_t x = part.find_first_of("xX");
    int count = 1;
    std::string_view name = part;
    if (x != std::string_view::npos && x > 0) {
      std::string_view num = TrimBlanks(part.substr(0, x));
      // Digits before the 'x' are a count, however large, and a sign before them makes no
      // count either (a count out of range is refused as such, not read as part of a model
      // name). Blanks around the 'x' are allowed: "4x A100 40GB" is how outputs name a cluster.
      const bool signed_count = !num.empty() && (num.front() == '-' || num.front() == '+');
      const std::string_view digits = signed_count ? num.substr(1) : num;
      if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos) {
        int n = 0;
        auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
        count = !signed_count && ec == std::errc() && p == digits.data() + digits.size() ? n : -1;
        name = TrimBlanks(part.substr(x + 1));
      }
    }
    if (count <= 0 || count > kMaxClusterGpus) {
      return InvalidArgumentError(
          fmt::format("cluster spec part '{}': GPU count must be in 1..1000000", part));
    }
    // The whole cluster too (regression: trial_cluster_total_unbounded: fifty parts of a million
    // GPUs each passed every part's check and ended in std::bad_alloc after 8 GB).
    if (static_cast<int64_t>(out.size()) + count > kMaxClusterGpus) {
      return InvalidArgumentError(
          fmt::format("cluster spec: {} GPUs or more in all; at most {} in a cluster",
                      static_cast<int64_t>(out.size()) + count, kMaxClusterGpus));
    }
    auto model = catalog.Find(name);
    if (!model.ok()) return model.status().WithPrefix(fmt::format("cluster spec part '{}'", part));
    out.insert(out.end(), count, *model);
    if (comma == spec.size()) break;
  }
  return out;
}

Cluster::Cluster(const std::vector<const GpuModel*>& models, ConfigTableCache* tables) {
  gpus_.reserve(models.size());
  for (const GpuModel* m : models) {
    gpus_.emplace_back(*m, tables->Get(*m));
    total_compute_slices_ += m->compute_slices();
    if (std::find(models_.begin(), models_.end(), m) == models_.end()) models_.push_back(m);
  }
  flags_.assign(gpus_.size(), 0);
  anchored_.assign(gpus_.size(), 0);
  keys_.resize(gpus_.size());
  int max_cs = 0;
  for (const GpuModel* m : models_) max_cs = std::max(max_cs, m->compute_slices());
  bucket_stride_ = max_cs + 1;
  free_buckets_.resize(models_.size() * bucket_stride_);
  model_index_.resize(gpus_.size());
  bucket_of_.assign(gpus_.size(), -1);
  bucket_pos_.assign(gpus_.size(), -1);
  all_.reserve(gpus_.size());
  for (int i = 0; i < size(); ++i) {
    model_index_[i] = static_cast<int>(
        std::find(models_.begin(), models_.end(), &gpus_[i].model()) - models_.begin());
    keys_[i] = GroupKey(gpus_[i]);
    Join(i);
    all_.push_back(i);
  }
}

const std::vector<int>& Cluster::RepresentativesWithFree(int model_index, int free) const {
  static const std::vector<int> kNone;
  if (model_index < 0 || model_index >= static_cast<int>(models_.size()) || free < 0 ||
      free >= bucket_stride_) {
    return kNone;
  }
  return free_buckets_[model_index * bucket_stride_ + free];
}

void Cluster::IndexRepresentative(int gpu) {
  if (flags_[gpu] != 0) return;  // a reserved or drained GPU offers no candidates
  const int b = model_index_[gpu] * bucket_stride_ + gpus_[gpu].free_compute_slices();
  bucket_of_[gpu] = b;
  bucket_pos_[gpu] = static_cast<int>(free_buckets_[b].size());
  free_buckets_[b].push_back(gpu);
}

void Cluster::UnindexRepresentative(int gpu) {
  const int b = bucket_of_[gpu];
  if (b < 0) return;
  std::vector<int>& bucket = free_buckets_[b];
  const int pos = bucket_pos_[gpu];
  bucket[pos] = bucket.back();  // swap-remove: the order is free
  bucket_pos_[bucket[pos]] = pos;
  bucket.pop_back();
  bucket_of_[gpu] = -1;
  bucket_pos_[gpu] = -1;
}

void Cluster::InsertRepresentative(int gpu) {
  representatives_.insert(std::lower_bound(representatives_.begin(), representatives_.end(), gpu),
                          gpu);
  IndexRepresentative(gpu);
}

void Cluster::EraseRepresentative(int gpu) {
  representatives_.erase(std::lower_bound(representatives_.begin(), representatives_.end(), gpu));
  UnindexRepresentative(gpu);
}

std::string Cluster::GroupKey(const GpuState& g) {
  std::string key;
  key.reserve(sizeof(const GpuModel*) + 4 * g.instances().size() + 1);  // one allocation
  key.append(reinterpret_cast<const char*>(&g.model()), sizeof(const GpuModel*));
  for (const Instance& in : g.instances()) {
    // A migration role changes the settled configuration and who may move (§6).
    const int32_t packed = (in.profile << 10) | (in.start << 3) |
                           (static_cast<int32_t>(in.migration) << 1) | (in.busy() ? 1 : 0);
    key.append(reinterpret_cast<const char*>(&packed), sizeof(packed));
  }
  return key;
}

void Cluster::Join(int gpu) {
  std::set<int>& members = groups_[keys_[gpu]];
  if (!members.empty() && gpu > *members.begin()) {
    members.insert(gpu);  // the representative stays
    return;
  }
  if (!members.empty()) EraseRepresentative(*members.begin());
  members.insert(gpu);
  InsertRepresentative(gpu);
}

void Cluster::Leave(int gpu) {
  auto it = groups_.find(keys_[gpu]);
  std::set<int>& members = it->second;
  const bool was_rep = *members.begin() == gpu;
  members.erase(gpu);
  if (!was_rep) return;
  EraseRepresentative(gpu);
  if (members.empty()) {
    groups_.erase(it);
  } else {
    InsertRepresentative(*members.begin());
  }
}

uint64_t Cluster::Serial::Next() {
  static std::atomic<uint64_t> next{0};
  return ++next;
}

bool Cluster::ChangedSince(const ChangeCursor& cursor, std::vector<int>* gpus) const {
  if (cursor.cluster != serial_.value || cursor.position < journal_base_ ||
      cursor.position > journal_base_ + journal_.size()) {
    return false;
  }
  gpus->insert(gpus->end(), journal_.begin() + (cursor.position - journal_base_), journal_.end());
  return true;
}

void Cluster::Journal(int gpu) {
  if (journal_.size() >= std::max<size_t>(4096, 4 * gpus_.size())) {
    journal_base_ += journal_.size();
    journal_.clear();
  }
  journal_.push_back(gpu);
}

void Cluster::SetGpu(int i, GpuState state) {
  Journal(i);
  busy_compute_slices_ += state.busy_compute_slices() - gpus_[i].busy_compute_slices();
  gpus_[i] = std::move(state);
  Rekey(i);
}

void Cluster::SetReserved(int gpu, bool reserved) {
  if (this->reserved(gpu) == reserved) return;
  flags_[gpu] =
      static_cast<char>(reserved ? flags_[gpu] | kReservedFlag : flags_[gpu] & ~kReservedFlag);
  num_reserved_ += reserved ? 1 : -1;
  Rekey(gpu);
}

void Cluster::SetDrained(int gpu, bool drained) {
  if (this->drained(gpu) == drained) return;
  flags_[gpu] =
      static_cast<char>(drained ? flags_[gpu] | kDrainedFlag : flags_[gpu] & ~kDrainedFlag);
  Rekey(gpu);
  Journal(gpu);
}

void Cluster::SetJobAnchored(JobId job, bool anchored, const std::vector<int>& holding) {
  if (anchored) {
    anchored_jobs_.insert(job);
  } else {
    anchored_jobs_.erase(job);
  }
  // Also when the registry already said so: a caller may name the GPUs of one job in turns.
  for (int gpu : holding) Rekey(gpu);
}

void Cluster::Rekey(int i) {
  std::string key = GroupKey(gpus_[i]);
  // A reserved or drained GPU offers no candidates: it must not stand for
  // a group of GPUs that do.
  if (flags_[i] != 0) key += static_cast<char>('R' + flags_[i]);
  char anchored = 0;
  if (!anchored_jobs_.empty()) {
    for (const Instance& in : gpus_[i].instances()) {
      if (in.runs_job() && anchored_jobs_.count(in.job) != 0) {
        anchored = 1;
        break;
      }
    }
  }
  if (anchored != anchored_[i]) {
    num_anchored_ += anchored ? 1 : -1;
    anchored_[i] = anchored;
  }
  if (anchored) key += 'A';
  if (key == keys_[i]) return;
  Leave(i);
  keys_[i] = std::move(key);
  Join(i);
}

double Cluster::FragmentationRate() const {
  if (gpus_.empty()) return 0;
  double sum = 0;
  for (const GpuState& g : gpus_) sum += g.fragcost();
  return sum / gpus_.size();
}

double Cluster::Utilization() const {
  return total_compute_slices_ == 0
             ? 0.0
             : static_cast<double>(busy_compute_slices()) / total_compute_slices_;
}

std::string Cluster::GpuName(int gpu) const {
  if (gpu >= 0 && gpu < static_cast<int>(names_.size()) && !names_[gpu].empty()) {
    return names_[gpu];
  }
  return fmt::format("GPU {}", gpu);
}

void Cluster::SetGpuName(int gpu, std::string name) {
  if (names_.size() < gpus_.size()) names_.resize(gpus_.size());
  names_[gpu] = std::move(name);
}

std::string Cluster::Describe() const {
  std::string s;
  size_t i = 0;
  while (i < gpus_.size()) {
    size_t j = i;
    while (j < gpus_.size() && &gpus_[j].model() == &gpus_[i].model()) ++j;
    if (!s.empty()) s += ", ";
    s += fmt::format("{}x {}", j - i, gpus_[i].model().name());
    i = j;
  }
  return s;
}

}  // namespace migsched
