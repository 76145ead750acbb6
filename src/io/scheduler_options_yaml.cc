#include "io/scheduler_options_yaml.h"

#include <fmt/format.h>

#include <map>
#include <sstream>

#include "io/yaml_errors.h"
#include "sched/metrics.h"
#include "sched/option_table.h"
#include "sched/policies/policies.h"
#include "sched/policy.h"

namespace migsched {
namespace {

// `text` split into comment lines of at most `width` characters, each "<pad># ".
std::string Comment(const std::string& text, const std::string& pad, size_t width) {
  std::istringstream words(text);
  std::string out, line, w;
  while (words >> w) {
    if (!line.empty() && pad.size() + 2 + line.size() + 1 + w.size() > width) {
      out += pad + "# " + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + w;
  }
  if (!line.empty()) out += pad + "# " + line + "\n";
  return out;
}

}  // namespace

StatusOr<SchedulerConfig> ReadSchedulerYaml(const YAML::Node& node, const std::string& origin,
                                            const std::string& key) {
  SchedulerConfig c;
  SchedulerOptions given_values;
  if (node.IsDefined() && !node.IsNull()) {
    if (!node.IsMap()) {
      return YamlErrorAt(
          origin, node, fmt::format("key '{}' must be a mapping, got {}", key, YamlKindName(node)));
    }
    std::map<std::string, std::string> seen;  // option name (kebab-case) -> the key as written
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) return YamlErrorAt(origin, kv.first, "keys must be plain strings");
      const std::string name = kv.first.Scalar();
      const std::string full = key + "." + name;
      const SchedulerOptionSpec* spec = FindSchedulerOption(name);
      if (name != "policy" && spec == nullptr) {
        if (auto renamed = RenamedSchedulerOption(name)) {
          return YamlErrorAt(origin, kv.first, fmt::format("unknown key '{}': {}", full, *renamed));
        }
        return YamlErrorAt(
            origin, kv.first,
            fmt::format("unknown key '{}' (known: policy, {})", full, SchedulerOptionNames()));
      }
      // One option written twice (max-skip-seconds and max_skip_seconds; YAML itself refuses
      // nothing here): which one wins would be a guess, so neither does.
      const std::string canonical = spec == nullptr ? "policy" : spec->name;
      if (auto [it, fresh] = seen.emplace(canonical, name); !fresh) {
        return YamlErrorAt(
            origin, kv.first,
            fmt::format("{} is given twice (as '{}' and '{}'); keep one", full, it->second, name));
      }
      if (!kv.second.IsScalar()) {
        return YamlErrorAt(
            origin, YamlValueMark(kv.first, kv.second),
            fmt::format("{} must be {}, got {}", full,
                        spec == nullptr ? "a policy name" : spec->rule, YamlKindName(kv.second)));
      }
      const std::string text = kv.second.Scalar();
      if (spec == nullptr) {
        c.policy = text;
        continue;
      }
      Status st = spec->Apply(text, &given_values, &c.given);
      if (!st.ok()) {
        return YamlErrorAt(origin, YamlValueMark(kv.first, kv.second),
                           fmt::format("{} {}", full, st.message()));
      }
    }
  }
  StatusOr<SchedulerOptions> options = PolicyOptions(c.policy, given_values, c.given);
  if (!options.ok()) {
    return InvalidArgumentError(
        fmt::format("{}: {}.policy: {}", origin, key, options.status().message()));
  }
  c.options = *options;
  if (Status st = c.options.Validate(); !st.ok()) {
    return InvalidArgumentError(fmt::format("{}: {}: {}", origin, key, st.message()));
  }
  if (auto m = ParseMetric(c.options.metric); !m.ok()) {
    return InvalidArgumentError(
        fmt::format("{}: {}.metric: {}", origin, key, m.status().message()));
  }
  // What MakePolicy refuses for the pair (migration on for a policy that never creates
  // instances) is refused here, before a daemon or a controller starts on the file.
  if (StatusOr<std::unique_ptr<PlacementPolicy>> p = MakePolicy(c.policy, c.options); !p.ok()) {
    return InvalidArgumentError(fmt::format("{}: {}: {}", origin, key, p.status().message()));
  }
  return c;
}

StatusOr<SchedulerConfig> ParseSchedulerYaml(const std::string& text, const std::string& origin,
                                             const std::string& key) {
  RETURN_IF_ERROR(CheckQuotesClosedOnTheirLine(origin, text));
  try {
    return ReadSchedulerYaml(text.empty() ? YAML::Node() : YAML::Load(text), origin, key);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("{}: {}: not valid YAML: {}", origin, key, e.msg));
  }
}

StatusOr<std::string> DefaultSchedulerYaml(std::string_view policy, int indent) {
  ASSIGN_OR_RETURN(const PolicyInfo* info, FindPolicy(policy));
  ASSIGN_OR_RETURN(const SchedulerOptions o,
                   PolicyOptions(policy, SchedulerOptions{}, ExplicitOptions{}));
  const std::string pad(static_cast<size_t>(std::max(0, indent)), ' ');
  constexpr size_t kWidth = 100;
  std::string out = "scheduler:\n";
  out += Comment(info->summary, pad, kWidth);
  out += fmt::format("{}policy: {}\n", pad, policy);
  for (const SchedulerOptionSpec& s : SchedulerOptionTable()) {
    out += Comment(fmt::format("{} ({})", s.help, s.rule), pad, kWidth);
    std::string value = s.get(o);
    if (s.name == "static-layout" && value == kBestForMix) {
      // The simulator's default for `static` is chosen from the workload's mix known in advance,
      // which a running scheduler never has (a daemon refuses it): the section prints the catalog
      // layout every bundled model has (a trial's printed config for `static` did not start).
      out += Comment(fmt::format("{} (the simulator's default for {}) needs the workload's mix "
                                 "in advance; a daemon runs a catalog layout",
                                 kBestForMix, policy),
                     pad, kWidth);
      value = SchedulerOptions().static_layout;
    }
    out += fmt::format("{}{}: {}\n", pad, s.name, value);
  }
  return out;
}

}  // namespace migsched
