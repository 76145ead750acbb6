// `migsched frag --gpu NAME --instances PROFILE@START[,...] [--json]`: the
// FragCost of one GPU whose busy instances are given (§2), with feasible and
// ideal counts per profile.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "cli/commands.h"
#include "core/config_table.h"
#include "core/instance_list.h"

namespace migsched::cli {
namespace {

struct FragOptions {
  std::string gpu;
  std::string instances;
  bool json = false;
};

// "A A A A B . C ." under "0 1 2 3 4 5 6 7": which instance holds each placement unit.
std::string SlotMap(const GpuModel& m, const std::vector<InstanceSpec>& instances) {
  std::string units, owners, legend;
  for (int u = 0; u < m.placement_units(); ++u) {
    units += fmt::format("{:>3}", u);
    char owner = '.';
    for (size_t i = 0; i < instances.size(); ++i) {
      const Slot& s = m.slots()[m.SlotOf(instances[i].profile, instances[i].start)];
      if (s.unit_mask & (uint64_t{1} << u)) owner = static_cast<char>('A' + i % 26);
    }
    owners += fmt::format("{:>3}", owner);
  }
  for (size_t i = 0; i < instances.size(); ++i) {
    legend += fmt::format("{}{}={}@{}", i == 0 ? "" : "  ", static_cast<char>('A' + i % 26),
                          m.profile(instances[i].profile).name, instances[i].start);
  }
  return fmt::format("  unit   {}\n  busy   {}\n  {}\n", units, owners,
                     legend.empty() ? "(no instances)" : legend);
}

int Run(const FragOptions& o, Context& ctx) {
  auto catalog = ctx.catalog();
  if (!catalog.ok()) {
    *ctx.err << "migsched frag: " << catalog.status().message() << "\n";
    return 1;
  }
  auto model = (*catalog)->Find(o.gpu);
  if (!model.ok()) {
    *ctx.err << "migsched frag: " << model.status().message() << "\n";
    return 1;
  }
  const GpuModel& m = **model;
  auto instances = ParseInstanceList(o.instances, m);
  if (!instances.ok()) {
    *ctx.err << "migsched frag: invalid --instances on " << m.name() << ": "
             << instances.status().message() << "\n";
    return 1;
  }
  auto table = ConfigTable::Build(m);
  auto state = MakeGpuState(m, *table, *instances, /*busy=*/true);
  if (!state.ok()) {
    *ctx.err << "migsched frag: " << state.status().message() << "\n";
    return 1;
  }
  const ConfigId c = state->busy_config();
  if (o.json) {
    nlohmann::ordered_json j;
    j["gpu"] = m.name();
    j["fragcost"] = table->FragCost(c);
    j["terms"] = nlohmann::ordered_json::object();
    for (int t = 0; t < table->num_terms(); ++t) {
      if (table->Ideal(c, t) == 0) continue;
      j["terms"][m.profile(m.base_profiles()[t]).name] = {{"feasible", table->Feasible(c, t)},
                                                          {"ideal", table->Ideal(c, t)}};
    }
    *ctx.out << j.dump(2) << "\n";
    return 0;
  }
  std::ostream& out = *ctx.out;
  out << fmt::format("GPU {} ({} compute slices, {} placement units)\n", m.name(),
                     m.compute_slices(), m.placement_units());
  out << SlotMap(m, *instances);
  out << fmt::format("FragCost {:.6f}\n\n", table->FragCost(c));
  out << fmt::format("  {:<12} {:>8} {:>6} {:>8}\n", "PROFILE", "FEASIBLE", "IDEAL", "RATIO");
  for (int t = 0; t < table->num_terms(); ++t) {
    const std::string& name = m.profile(m.base_profiles()[t]).name;
    const int ideal = table->Ideal(c, t);
    if (ideal == 0) {
      out << fmt::format("  {:<12} {:>8} {:>6} {:>8}\n", name, table->Feasible(c, t), 0,
                         "(no fit)");
    } else {
      out << fmt::format("  {:<12} {:>8} {:>6} {:>8.3f}\n", name, table->Feasible(c, t), ideal,
                         static_cast<double>(table->Feasible(c, t)) / ideal);
    }
  }
  out << "\nFEASIBLE: instances creatable together in the free placement units now.\n"
         "IDEAL: the most creatable if the same instances were ideally arranged.\n"
         "Profiles marked (no fit) lack capacity, not placement, and are left out of FragCost.\n";
  return 0;
}

}  // namespace

void RegisterFragCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto opts = std::make_shared<FragOptions>();
  CLI::App* cmd = app.add_subcommand("frag",
                                     "FragCost of one GPU with the given busy instances "
                                     "(docs/algorithms.md §2), with feasible and ideal "
                                     "counts per profile");
  cmd->add_option("--gpu", opts->gpu, "GPU model (name, short name or nvidia-smi name)")
      ->required();
  cmd->add_option("--instances", opts->instances,
                  "Busy instances, PROFILE@START[,PROFILE@START...], e.g. 1g.5gb@0,3g.20gb@4; "
                  "START in placement units; empty = no instances");
  cmd->add_flag("--json", opts->json,
                R"(Print {"gpu", "fragcost", "terms": {profile: {"feasible", "ideal"}}})");
  cmd->callback([opts, &ctx, exit_code] { *exit_code = Run(*opts, ctx); });
}

}  // namespace migsched::cli
