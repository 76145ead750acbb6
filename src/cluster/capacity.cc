#include "cluster/capacity.h"

#include <algorithm>

namespace migsched {

int MaxInstancesAtOnce(const GpuModel& model, const ConfigTable& table, int profile) {
  const int base = model.BaseOf(profile);
  const std::vector<int>& bases = model.base_profiles();
  const int term = static_cast<int>(std::find(bases.begin(), bases.end(), base) - bases.begin());
  return std::min(table.Feasible(kEmptyConfig, term), model.profile(profile).max_instances);
}

std::vector<ProfileCapacity> NodeCapacity(const std::vector<const GpuModel*>& gpus,
                                          ConfigTableCache* tables) {
  std::vector<ProfileCapacity> out;
  for (const GpuModel* m : gpus) {
    const ConfigTable& table = tables->Get(*m);
    for (int p = 0; p < static_cast<int>(m->profiles().size()); ++p) {
      const int n = MaxInstancesAtOnce(*m, table, p);
      const std::string& name = m->profile(p).name;
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const ProfileCapacity& c) { return c.profile == name; });
      if (it == out.end()) {
        out.push_back({name, n});
      } else {
        it->count += n;
      }
    }
  }
  return out;
}

}  // namespace migsched
