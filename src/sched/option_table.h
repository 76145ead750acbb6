// The table of scheduler options: every knob of SchedulerOptions (sched/options.h) that a user
// sets, once, with its name, its kind, its range, its help line and how it reads and writes the
// field. Every driver reads the options through it: `migsched simulate|compare|sweep|report`
// make their flags from it (--NAME, cli/sim_flags.h) and the config files of `migsched serve`,
// the Slurm controller and the Kubernetes extender read their `scheduler:` mapping with it
// (io/scheduler_options_yaml.h), so that the names, the ranges and the error messages are the
// same everywhere. Adding an option is one entry of SchedulerOptionTable() (sched/option_table.cc).
//
// Thread-safety: the table is built once and never changes; reading it is thread-safe.
#ifndef MIGSCHED_SCHED_OPTION_TABLE_H_
#define MIGSCHED_SCHED_OPTION_TABLE_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sched/options.h"

namespace migsched {

enum class OptionKind {
  kNumber,   // a finite double within the entry's range
  kInteger,  // a decimal integer within the entry's range
  kBool,     // on | off (also true | false, yes | no)
  kChoice,   // one of the entry's choices
  kString,   // any non-empty text (a name checked later, e.g. a static layout)
};

struct SchedulerOptionSpec {
  // kebab-case: the command-line flag without "--" and the config key (a config may also
  // write it in snake_case: max_skip_seconds).
  std::string name;
  OptionKind kind = OptionKind::kNumber;
  // What a value must be, completing "must be ...": "a finite number >= 0", "an integer in
  // 1..2147483647", "one of off, head, queue", "on/off, true/false or yes/no".
  std::string rule;
  std::string help;                  // one or two sentences, for --help and the printed config
  std::vector<std::string> choices;  // kChoice: the accepted values, in the order listed
  // Parses `text` into its field of `o`. kInvalidArgument "must be <rule>, got '<text>'".
  std::function<Status(std::string_view text, SchedulerOptions* o)> set;
  // The field's value of `o` as a config or a command line writes it (set(get(o)) is a no-op).
  std::function<std::string(const SchedulerOptions& o)> get;
  // kNumber: a negative value means "off" (a JSON form shows it as null).
  bool negative_is_off = false;
  // The bit of ExplicitOptions set when the option is given (a policy's registry defaults
  // apply only to the options not given); nullptr: no policy has defaults of its own for it.
  bool ExplicitOptions::*given = nullptr;

  // set(), then the `given` bit.
  Status Apply(std::string_view text, SchedulerOptions* o, ExplicitOptions* explicit_set) const;
};

// Every option, in the order --help and the printed configs list them.
const std::vector<SchedulerOptionSpec>& SchedulerOptionTable();

// The entry named `name` in kebab-case or snake_case, or nullptr.
const SchedulerOptionSpec* FindSchedulerOption(std::string_view name);

// An option that was renamed, by its old name (kebab-case or snake_case): its old name and what
// to write now, for the refusal of the old name on the command line and in a config (e.g.
// "speculative-moves is now defrag-passes (on: always, off: while-waiting)"); nullopt for a name
// that is not an old one. The renames (docs/migration.md "Flags"): speculative-moves on|off became
// defrag-passes always|while-waiting on 2026-12-05.
std::optional<std::string> RenamedSchedulerOption(std::string_view old_name);
// The old names of RenamedSchedulerOption, kebab-case.
const std::vector<std::string>& RenamedSchedulerOptionNames();

// "threshold, frag-objective, ..." (kebab-case, table order): for "unknown key" messages.
std::string SchedulerOptionNames();

// Whether every option of the table has the same value in `a` and `b` (by get()).
bool SameTableOptions(const SchedulerOptions& a, const SchedulerOptions& b);

}  // namespace migsched

#endif  // MIGSCHED_SCHED_OPTION_TABLE_H_
