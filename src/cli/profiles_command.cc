// `migsched profiles [--gpu NAME] [--json]`: the GPU catalog as a table per
// model, or as one JSON document (an array of models in the catalog file
// format, docs/formats/catalog.md).
#include <fmt/format.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/gpu_model.h"
#include "io/catalog_loader.h"

namespace migsched::cli {
namespace {

struct ProfilesOptions {
  std::string gpu;
  bool json = false;
};

// Placements as nvidia-smi mig -lgipp prints them: "{0,2,4}:2".
std::string FormatPlacements(const Profile& p) {
  std::vector<int> starts;
  for (const Placement& pl : p.placements) starts.push_back(pl.start);
  return fmt::format("{{{}}}:{}", fmt::join(starts, ","), p.size());
}

void PrintModel(const GpuModel& m, std::ostream& out) {
  const GpuModel::Spec& s = m.spec();
  out << fmt::format("{}\n", m.name());
  out << fmt::format("  short names:      {}\n", fmt::join(m.short_names(), ", "));
  out << fmt::format("  aliases:          {}\n", fmt::join(m.aliases(), ", "));
  out << fmt::format("  confirmed:        {}\n",
                     m.confirmed() ? "yes (placements observed)"
                                   : "NO - placements inferred, not observed; verify with "
                                     "nvidia-smi mig -lgipp");
  out << fmt::format("  compute slices:   {}\n", m.compute_slices());
  out << fmt::format("  memory slices:    {}\n", m.memory_slices());
  out << fmt::format("  placement units:  {}\n", m.placement_units());
  out << fmt::format("  PCIe bandwidth:   {} GB/s\n", m.pcie_max_gbps());
  out << fmt::format(
      "  slots:            {} (base profile, placement) pairs over {} base profiles\n",
      m.slots().size(), m.base_profiles().size());
  std::vector<std::string> orders;
  for (const auto& [pname, order] : s.driver_default_orders) {
    orders.push_back(fmt::format("{}: {}", pname, fmt::join(order, ",")));
  }
  out << fmt::format("  driver default:   {} start first{}{}\n",
                     s.driver_default_highest_first ? "highest" : "lowest",
                     orders.empty() ? "" : "; ", fmt::join(orders, "; "));
  for (const auto& [lname, layout] : s.static_layouts) {
    std::vector<std::string> parts;
    for (const auto& [pname, start] : layout) parts.push_back(fmt::format("{}@{}", pname, start));
    out << fmt::format("  static layout:    {}: {}\n", lname, fmt::join(parts, " "));
  }

  const std::vector<std::string> header = {"PROFILE", "ID",  "COMPUTE",    "MEMORY",
                                           "MEMORY",  "MAX", "PLACEMENTS", "VARIANT"};
  const std::vector<std::string> header2 = {"",    "",          "SLICES",        "SLICES",
                                            "MiB", "INSTANCES", "{starts}:size", "OF"};
  std::vector<std::vector<std::string>> rows = {header, header2};
  for (const Profile& p : m.profiles()) {
    rows.push_back({p.name, p.id < 0 ? "-" : std::to_string(p.id), std::to_string(p.compute_slices),
                    std::to_string(p.memory_slices), std::to_string(p.memory_mib),
                    std::to_string(p.max_instances), FormatPlacements(p),
                    p.variant_of.empty() ? "-" : p.variant_of});
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  out << "\n";
  for (const auto& row : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < row.size(); ++c) {
      // Text columns left-aligned, numbers right-aligned.
      bool left = c == 0 || c >= 6;
      std::string cell =
          left ? fmt::format("{:<{}}", row[c], width[c]) : fmt::format("{:>{}}", row[c], width[c]);
      line += cell;
      if (c + 1 < row.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

int RunProfiles(const ProfilesOptions& opt, Context& ctx) {
  StatusOr<const Catalog*> catalog = ctx.catalog();
  if (!catalog.ok()) {
    *ctx.err << "migsched profiles: " << catalog.status().message() << "\n";
    return 1;
  }
  std::vector<const GpuModel*> models;
  if (opt.gpu.empty()) {
    models = (*catalog)->models();
  } else {
    StatusOr<const GpuModel*> m = (*catalog)->Find(opt.gpu);
    if (!m.ok()) {
      *ctx.err << "migsched profiles: --gpu: " << m.status().message() << "\n";
      return 1;
    }
    models.push_back(*m);
  }
  if (opt.json) {
    nlohmann::ordered_json doc = nlohmann::ordered_json::array();
    for (const GpuModel* m : models) doc.push_back(GpuModelToJson(*m));
    *ctx.out << doc.dump(2) << "\n";
    return 0;
  }
  for (size_t i = 0; i < models.size(); ++i) {
    if (i > 0) *ctx.out << "\n";
    PrintModel(*models[i], *ctx.out);
  }
  return 0;
}

}  // namespace

void RegisterProfilesCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto opt = std::make_shared<ProfilesOptions>();
  CLI::App* sub = app.add_subcommand(
      "profiles",
      "List the GPU models of the catalog with their MIG profiles and placements "
      "(placements as nvidia-smi prints them: {starts}:size, in placement units)");
  sub->add_option("--gpu", opt->gpu,
                  "Only this GPU model (canonical name, short name such as A100-40GB, or the name "
                  "nvidia-smi prints; case-insensitive)");
  sub->add_flag("--json", opt->json,
                "Print one JSON document: an array of models in the catalog file format");
  sub->callback([opt, &ctx, exit_code] { *exit_code = RunProfiles(*opt, ctx); });
}

}  // namespace migsched::cli
