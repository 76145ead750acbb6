#include "io/scheduler_options_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "sched/option_table.h"

namespace migsched {
namespace {

std::string SnakeCase(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

}  // namespace

nlohmann::ordered_json SchedulerOptionsToJson(const SchedulerOptions& o) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const SchedulerOptionSpec& s : SchedulerOptionTable()) {
    const std::string key = SnakeCase(s.name);
    const std::string v = s.get(o);
    switch (s.kind) {
      case OptionKind::kNumber: {
        if (v.empty() || v.find_first_not_of("0123456789.-+eE") != std::string::npos) {
          j[key] = v;  // a word a number option also takes (limit-power: learned)
          break;
        }
        const double d = std::stod(v);
        j[key] = s.negative_is_off && d < 0 ? nlohmann::ordered_json(nullptr)
                                            : nlohmann::ordered_json(d);
        break;
      }
      case OptionKind::kInteger:
        j[key] = std::stoll(v);
        break;
      case OptionKind::kBool:
        j[key] = v == "on";
        break;
      case OptionKind::kChoice:
      case OptionKind::kString:
        j[key] = v;
        break;
    }
  }
  return j;
}

SchedulerOptions SchedulerOptionsFromJson(const nlohmann::json& j) {
  SchedulerOptions o;
  if (!j.is_object()) return o;
  for (const SchedulerOptionSpec& s : SchedulerOptionTable()) {
    auto it = j.find(SnakeCase(s.name));
    if (it == j.end()) continue;
    std::string text;
    if (it->is_null() && s.negative_is_off) {
      text = "-1";
    } else if (it->is_number_integer()) {
      text = fmt::format("{}", it->get<int64_t>());
    } else if (it->is_number()) {
      text = fmt::format("{}", it->get<double>());
    } else if (it->is_boolean()) {
      text = it->get<bool>() ? "on" : "off";
    } else if (it->is_string()) {
      text = it->get<std::string>();
    } else {
      continue;
    }
    (void)s.set(text, &o);  // a refused value keeps the default
  }
  return o;
}

}  // namespace migsched
