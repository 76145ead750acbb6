// `migsched profiles [--gpu NAME] [--summary] [--json]`: the GPU catalog.
//
// Text: where the catalog was loaded from (folder, how it was found, files),
// a one-line-per-model summary saying which models' placements are confirmed
// by a driver listing and which are inferred, then each model's profile table
// (unless --summary). --gpu: that model's table only, with its file (with
// --summary: that model's summary line only). --json:
// one JSON document, an array of models in the catalog file format
// (docs/formats/catalog.md), nothing else on stdout.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
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
  bool summary = false;
};

// Placements as nvidia-smi mig -lgipp prints them: "{0,2,4}:2".
std::string FormatPlacements(const Profile& p) {
  std::vector<int> starts;
  for (const Placement& pl : p.placements) starts.push_back(pl.start);
  return fmt::format("{{{}}}:{}", fmt::join(starts, ","), p.size());
}

// Rows as aligned columns, two spaces apart, trailing blanks removed. Columns
// in `right` are right-aligned (numbers), the others left-aligned.
void PrintColumns(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right,
                  const std::string& indent, std::ostream& out) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      const bool r = c < right.size() && right[c];
      line += r ? fmt::format("{:>{}}", row[c], width[c]) : fmt::format("{:<{}}", row[c], width[c]);
      if (c + 1 < row.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

std::string PlacementsStatus(const GpuModel& m) {
  return m.confirmed() ? "yes (placements observed in a driver listing)"
                       : "NO - placements inferred, not observed; verify with nvidia-smi mig "
                         "-lgipp (migsched serve uses the driver's own placements)";
}

void PrintModel(const GpuModel& m, const std::string& file, std::ostream& out) {
  const GpuModel::Spec& s = m.spec();
  out << fmt::format("{}\n", m.name());
  if (!file.empty()) out << fmt::format("  catalog file:     {}\n", file);
  out << fmt::format("  short names:      {}\n", fmt::join(m.short_names(), ", "));
  out << fmt::format("  aliases:          {}\n", fmt::join(m.aliases(), ", "));
  if (!m.pci_device_ids().empty()) {
    out << fmt::format("  PCI device ids:   {}\n", fmt::join(m.pci_device_ids(), ", "));
  }
  out << fmt::format("  confirmed:        {}\n", PlacementsStatus(m));
  out << fmt::format("  evidence:         {}\n", m.placements_evidence().empty()
                                                     ? "not stated in the catalog file"
                                                     : m.placements_evidence());
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

  std::vector<std::vector<std::string>> rows = {
      {"PROFILE", "ID", "COMPUTE", "MEMORY", "MEMORY", "MAX", "PLACEMENTS", "VARIANT"},
      {"", "", "SLICES", "SLICES", "MiB", "INSTANCES", "{starts}:size", "OF"}};
  for (const Profile& p : m.profiles()) {
    rows.push_back({p.name, p.id < 0 ? "-" : std::to_string(p.id), std::to_string(p.compute_slices),
                    std::to_string(p.memory_slices), std::to_string(p.memory_mib),
                    std::to_string(p.max_instances), FormatPlacements(p),
                    p.variant_of.empty() ? "-" : p.variant_of});
  }
  out << "\n";
  PrintColumns(rows, {false, true, true, true, true, true, false, false}, "  ", out);
}

// Where the catalog came from: one line per source.
void PrintSources(const std::vector<CatalogSource>& sources, size_t models, std::ostream& out) {
  out << fmt::format("GPU catalog: {} model{}\n", models, models == 1 ? "" : "s");
  out << DescribeCatalogSources(sources, "  ");
}

void PrintSummary(const std::vector<const GpuModel*>& models, std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {
      {"MODEL", "SHORT NAME", "COMPUTE", "UNITS", "PROFILES", "PLACEMENTS", "NVIDIA-SMI NAMES"}};
  int inferred = 0;
  for (const GpuModel* m : models) {
    inferred += !m->confirmed();
    rows.push_back({m->name(), m->short_names().empty() ? "-" : m->short_names().front(),
                    std::to_string(m->compute_slices()), std::to_string(m->placement_units()),
                    std::to_string(m->profiles().size()), m->confirmed() ? "confirmed" : "inferred",
                    m->aliases().empty() ? "-" : fmt::format("{}", fmt::join(m->aliases(), ", "))});
  }
  PrintColumns(rows, {false, false, true, true, true, false, false}, "", out);
  if (inferred > 0) {
    out << fmt::format(
        "{} of {} models have inferred placements: no driver listing (nvidia-smi mig -lgipp) "
        "confirms them. `migsched profiles --gpu NAME` says what each is inferred from; "
        "migsched serve replaces them with what the driver reports.\n",
        inferred, models.size());
  }
}

int RunProfiles(const ProfilesOptions& opt, Context& ctx) {
  StatusOr<const Catalog*> catalog = ctx.catalog();
  if (!catalog.ok()) {
    *ctx.err << "migsched profiles: " << catalog.status().message() << "\n";
    return 1;
  }
  const std::vector<const GpuModel*> all = (*catalog)->models();
  // Each catalog file holds one model, loaded in order: the i-th model came from the i-th file.
  std::vector<std::string> files;
  for (const CatalogSource& s : ctx.catalog_sources()) {
    files.insert(files.end(), s.files.begin(), s.files.end());
  }
  auto file_of = [&](const GpuModel* m) {
    const size_t i = std::find(all.begin(), all.end(), m) - all.begin();
    return i < files.size() ? files[i] : std::string();
  };
  std::vector<const GpuModel*> models;
  if (opt.gpu.empty()) {
    models = all;
  } else {
    StatusOr<const GpuModel*> m = (*catalog)->Find(opt.gpu);
    if (!m.ok()) {
      *ctx.err << "migsched profiles: " << m.status().message() << "\n";
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
  if (opt.gpu.empty()) {
    PrintSources(ctx.catalog_sources(), all.size(), *ctx.out);
    *ctx.out << "\n";
  }
  // The summary: every model's line, or with --gpu and --summary that model's alone.
  if (opt.gpu.empty() || opt.summary) {
    PrintSummary(models, *ctx.out);
    if (opt.summary) return 0;
  }
  for (size_t i = 0; i < models.size(); ++i) {
    if (i > 0 || opt.gpu.empty()) *ctx.out << "\n";
    PrintModel(*models[i], file_of(models[i]), *ctx.out);
  }
  return 0;
}

}  // namespace

void RegisterProfilesCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto opt = std::make_shared<ProfilesOptions>();
  CLI::App* sub = app.add_subcommand(
      "profiles",
      "List the GPU models of the catalog: where the catalog was loaded from, which models' "
      "placements are confirmed by a driver listing and which are inferred, and each model's "
      "MIG profiles and placements (as nvidia-smi prints them: {starts}:size, in placement "
      "units)");
  sub->add_option("--gpu", opt->gpu,
                  "Only this GPU model (canonical name, short name such as A100-40GB, or the name "
                  "nvidia-smi prints; case-insensitive)");
  sub->add_flag("--summary", opt->summary,
                "Only where the catalog comes from and one line per model (with --gpu: that "
                "model's line only)");
  sub->add_flag("--json", opt->json,
                "Print one JSON document: an array of models in the catalog file format");
  sub->callback([opt, &ctx, exit_code] { *exit_code = RunProfiles(*opt, ctx); });
}

}  // namespace migsched::cli
