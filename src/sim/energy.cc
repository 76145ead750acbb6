#include "sim/energy.h"

namespace migsched {

EnergyEstimate EstimateEnergy(const std::vector<ModelUsage>& usage, double makespan_s,
                              int64_t completed_jobs) {
  constexpr double kJoulesPerKwh = 3.6e6;
  EnergyEstimate e;
  double joules = 0;
  for (const ModelUsage& u : usage) {
    const GpuModel::Spec::Power* p = u.model->power();
    if (p == nullptr) return e;
    joules += p->idle_w * u.gpus * makespan_s + p->per_active_slice_w * u.busy_slice_seconds;
  }
  e.energy_kwh = joules / kJoulesPerKwh;
  if (*e.energy_kwh > 0) e.jobs_per_kwh = static_cast<double>(completed_jobs) / *e.energy_kwh;
  return e;
}

EnergyMeter::EnergyMeter(const Cluster& cluster) {
  for (const GpuModel* m : cluster.models()) usage_.push_back({m, 0, 0.0});
  for (int g = 0; g < cluster.size(); ++g) {
    for (ModelUsage& u : usage_) u.gpus += u.model == &cluster.gpu(g).model();
  }
  busy_.assign(usage_.size(), 0);
}

void EnergyMeter::Close(double until_s) {
  if (!started_ || until_s <= t_) return;
  for (size_t i = 0; i < usage_.size(); ++i)
    usage_[i].busy_slice_seconds += busy_[i] * (until_s - t_);
  t_ = until_s;
}

void EnergyMeter::Sample(double time_s, const std::vector<int>& busy_slices_by_model) {
  Close(time_s);
  started_ = true;
  t_ = time_s;
  for (size_t i = 0; i < busy_.size() && i < busy_slices_by_model.size(); ++i) {
    busy_[i] = busy_slices_by_model[i];
  }
}

void EnergyMeter::Finish(double end_s) { Close(end_s); }

}  // namespace migsched
