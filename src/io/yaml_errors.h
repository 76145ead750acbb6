// Messages about a YAML config file's nodes, shared by the readers of config files
// (daemon/config.h, io/scheduler_options_yaml.h, slurm/controller_config.h, k8s/config.h).
//
// Thread-safety: reentrant.
#ifndef MIGSCHED_IO_YAML_ERRORS_H_
#define MIGSCHED_IO_YAML_ERRORS_H_

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace migsched {

// kInvalidArgument "<origin>:<line>: <what>", the line of `node` (1-based; omitted when yaml-cpp
// does not know it).
Status YamlErrorAt(const std::string& origin, const YAML::Node& node, const std::string& what);
// The same at `mark`.
Status YamlErrorAt(const std::string& origin, const YAML::Mark& mark, const std::string& what);

// Where a message about the value of the mapping entry `key: value` points: the value's mark, or
// the key's for an empty value (`threshold:` with nothing after it, or any null). yaml-cpp marks an
// empty value where the next token begins, which is the next key's line or past the end of the
// file, not the line the user wrote.
YAML::Mark YamlValueMark(const YAML::Node& key, const YAML::Node& value);

// For a reader whose handlers see a mapping entry's value without its key: Note() each entry as
// the walk reaches it; MarkOf(node) is then YamlValueMark(key, node) for a value noted, and
// node.Mark() for any other node.
class YamlEntryMarks {
 public:
  void Note(const YAML::Node& key, const YAML::Node& value);
  YAML::Mark MarkOf(const YAML::Node& node) const;

 private:
  // The empty values noted (each the node itself, compared with YAML::Node::is) and their keys'
  // marks; a value with text keeps its own mark and is not kept here.
  std::vector<std::pair<YAML::Node, YAML::Mark>> empty_values_;
};

// What `node` is, for "must be X, got <kind>": "nothing (null)", "a scalar", "a list",
// "a mapping", "an undefined node".
std::string_view YamlKindName(const YAML::Node& node);

// OK, or kInvalidArgument for the first key of the mapping `map` written twice, at the second:
// "<origin>:<line>: key '<prefix>.<key>' is given twice (lines A and B); keep one" ("(both on
// line A)" in a flow mapping; omitted when yaml-cpp does not know the lines). yaml-cpp accepts a
// repeated key and keeps both entries; a reader that walks the entries would take the last, a
// lookup the first, so which one counts would be a guess: each reader of a mapping of config keys
// calls this first. Keys are compared as written; a reader with other spellings of one key
// (scheduler_options_yaml.h) checks those itself. `map` must be a mapping of scalar keys (others
// are skipped).
Status CheckNoRepeatedKey(const std::string& origin, const YAML::Node& map,
                          const std::string& prefix);

// OK, or kInvalidArgument "<origin>:<line>: the quoted value that opens at column C is not closed
// on its line; close it (a value of this file is written on one line)" for the first quoted
// scalar ('...' or "...") of `text` that does not end on the line where it begins. YAML lets a
// quoted scalar run over lines, and yaml-cpp also takes one left open to the end of the file: a
// missing closing quote then swallowed every key after it without a word (a trial's `node_name:
// "n1` took `on_shutdown: drain` into the node's name). No config key of ours takes a value over
// several lines, so the readers of config files call this before parsing. Quotes are looked for
// where a scalar may begin (a line's start, after `- `, `: `, `? `, and in a flow collection after
// `[`, `{` or `,`); an apostrophe inside a plain value (`note: it's`), a comment and the lines of
// a block scalar (`|`, `>`) are text.
Status CheckQuotesClosedOnTheirLine(const std::string& origin, std::string_view text);

}  // namespace migsched

#endif  // MIGSCHED_IO_YAML_ERRORS_H_
