#include "slurm/gres_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "core/text.h"
#include "slurm/hostlist.h"

namespace migsched::slurm {
bool IsSlurmName(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

namespace {

Status Validate(const std::vector<NodeGroup>& groups, const GresConfigOptions& o,
                ConfigTableCache* tables) {
  if (groups.empty()) return InvalidArgumentError("no nodes given");
  if (!IsSlurmName(o.gres_name)) {
    return InvalidArgumentError(
        fmt::format("GRES name '{}': use letters, digits, '_', '-' or '.' only", o.gres_name));
  }
  if (!IsSlurmName(o.partition)) {
    return InvalidArgumentError(
        fmt::format("partition name '{}': use letters, digits, '_', '-' or '.' only", o.partition));
  }
  if (!IsSlurmName(o.placeholder_prefix)) {
    return InvalidArgumentError(
        fmt::format("placeholder prefix '{}': use letters, digits, '_', '-' or '.' only",
                    o.placeholder_prefix));
  }
  // What goes into slurm.conf as written stays on its line, and a path stays one word (Slurm
  // reads a value up to a blank) (regressions: trial_node_attrs_wrote_a_line_of_its_own,
  // trial_hooks_dir_unquoted: "CPUs=4\nSlurmUser=root" added a SlurmUser line; a hooks dir with
  // a blank or a quote was written as it was).
  for (const char c : o.node_attrs) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return InvalidArgumentError(fmt::format(
          "--node-attrs '{}': a line break or control character would start a slurm.conf line "
          "of its own; give the attributes on one line",
          OneLine(o.node_attrs)));
    }
  }
  if (o.hooks_dir.empty() || o.hooks_dir.find_first_of(" \t\n\r\"'#\\") != std::string::npos ||
      std::any_of(o.hooks_dir.begin(), o.hooks_dir.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return InvalidArgumentError(fmt::format(
        "--hooks-dir '{}': slurm.conf takes a path without blanks, quotes, '#' or '\\'; choose "
        "such a directory",
        OneLine(o.hooks_dir)));
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < groups.size(); ++i) {
    const NodeGroup& g = groups[i];
    if (g.nodes.empty()) return InvalidArgumentError(fmt::format("node group {}: no nodes", i + 1));
    if (g.gpus.empty()) {
      return InvalidArgumentError(fmt::format("nodes {}: no GPUs", CompressHostlist(g.nodes)));
    }
    for (const std::string& n : g.nodes) {
      if (!seen.insert(n).second) {
        return InvalidArgumentError(fmt::format("node '{}' is given twice", n));
      }
      if (n.rfind(o.placeholder_prefix, 0) == 0) {
        return InvalidArgumentError(
            fmt::format("node '{}' starts with the placeholder prefix '{}' (--placeholder-prefix)",
                        n, o.placeholder_prefix));
      }
    }
  }
  // Every profile of the cluster, and Slurm's number for each.
  std::vector<std::string> names;
  for (const NodeGroup& g : groups) {
    for (const ProfileCapacity& c : NodeCapacity(g.gpus, tables)) {
      if (std::find(names.begin(), names.end(), c.profile) == names.end()) {
        names.push_back(c.profile);
      }
    }
  }
  for (const std::string& skip : o.skip_profiles) {
    if (std::find(names.begin(), names.end(), skip) == names.end()) {
      return InvalidArgumentError(
          fmt::format("skip profile '{}': no GPU of these nodes has it "
                      "(profiles: {})",
                      skip, fmt::join(names, ", ")));
    }
  }
  std::erase_if(names, [&](const std::string& n) {
    return std::find(o.skip_profiles.begin(), o.skip_profiles.end(), n) != o.skip_profiles.end();
  });
  names.emplace_back(kPadType);  // last: a clash names the profile first
  for (size_t i = 0; i < names.size(); ++i) {
    for (size_t j = i + 1; j < names.size(); ++j) {
      if (SlurmGresId(names[i]) == SlurmGresId(names[j])) {
        return InvalidArgumentError(fmt::format(
            "profiles '{}' and '{}' have the same Slurm GRES type id (0x{:08x}): Slurm would "
            "count them as one type; leave one out (--skip-profiles)",
            names[i], names[j], SlurmGresId(names[i])));
      }
    }
  }
  return Status::Ok();
}

size_t NumNodes(const std::vector<NodeGroup>& groups) {
  size_t n = 0;
  for (const NodeGroup& g : groups) n += g.nodes.size();
  return n;
}

// The placeholders' counts: per profile the largest count of any group.
std::vector<ProfileCapacity> PlaceholderGres(const std::vector<NodeGroup>& groups,
                                             const GresConfigOptions& o, ConfigTableCache* tables) {
  std::vector<ProfileCapacity> out;
  for (const NodeGroup& g : groups) {
    for (const ProfileCapacity& c : GroupGres(g, tables, o.skip_profiles)) {
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const ProfileCapacity& o) { return o.profile == c.profile; });
      if (it == out.end()) {
        out.push_back(c);
      } else {
        it->count = std::max(it->count, c.count);
      }
    }
  }
  return out;
}

std::string Attrs(const GresConfigOptions& o) {
  return o.node_attrs.empty() ? "" : " " + o.node_attrs;
}

}  // namespace

uint32_t SlurmGresId(std::string_view name) {
  uint32_t id = 0;
  int shift = 0;
  for (char c : name) {
    id += static_cast<uint32_t>(static_cast<unsigned char>(c)) << shift;
    shift = (shift + 8) % 32;
  }
  return id;
}

std::vector<ProfileCapacity> GroupGres(const NodeGroup& group, ConfigTableCache* tables,
                                       const std::vector<std::string>& skip) {
  std::vector<ProfileCapacity> out = NodeCapacity(group.gpus, tables);
  std::erase_if(out, [&](const ProfileCapacity& c) {
    return c.count <= 0 || std::find(skip.begin(), skip.end(), c.profile) != skip.end();
  });
  return out;
}

std::vector<ProfileCapacity> WithPad(std::vector<ProfileCapacity> counts) {
  int sum = 0;
  for (const ProfileCapacity& c : counts) sum += c.count;
  counts.push_back({std::string(kPadType), sum});
  return counts;
}

std::string FormatGres(const std::string& gres_name, const std::vector<ProfileCapacity>& counts) {
  std::vector<std::string> parts;
  for (const ProfileCapacity& c : counts) {
    parts.push_back(fmt::format("{}:{}:{}", gres_name, c.profile, c.count));
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

StatusOr<std::string> SlurmConfLines(const std::vector<NodeGroup>& groups,
                                     const GresConfigOptions& o, ConfigTableCache* tables) {
  RETURN_IF_ERROR(Validate(groups, o, tables));
  std::string out;
  if (!o.command_line.empty()) out += fmt::format("# generated by: {}\n", o.command_line);
  out +=
      "# migsched: merge into slurm.conf (add to an existing GresTypes= list; put the\n"
      "# nodes' CPUs=, RealMemory= etc. on these NodeName lines, or in --node-attrs).\n";
  // `gpu` too: sbatch, salloc and srun check every --gres/--gpus name against GresTypes on the
  // client, before slurmctld runs job_submit.lua, and answer "Invalid generic resource (gres)
  // specification" for a name not listed. Listed, `--gres=gpu:N` reaches job_submit.lua, which
  // rewrites it to the full-GPU profile (or refuses it with what to write); no node here
  // publishes a `gpu` GRES, so nothing else changes.
  out += o.gres_name == "gpu" ? "GresTypes=gpu\n" : fmt::format("GresTypes={},gpu\n", o.gres_name);
  std::vector<std::string> all_nodes;
  for (const NodeGroup& g : groups) {
    if (!g.gpus_spec.empty()) out += fmt::format("# {} per node\n", g.gpus_spec);
    out += fmt::format("NodeName={} Gres={}{}\n", CompressHostlist(g.nodes),
                       FormatGres(o.gres_name, WithPad(GroupGres(g, tables, o.skip_profiles))),
                       Attrs(o));
    all_nodes.insert(all_nodes.end(), g.nodes.begin(), g.nodes.end());
  }
  const size_t placeholders =
      o.placeholders >= 0 ? static_cast<size_t>(o.placeholders) : NumNodes(groups);
  std::vector<std::string> holds;
  for (size_t i = 1; i <= placeholders; ++i)
    holds.push_back(fmt::format("{}{}", o.placeholder_prefix, i));
  if (!holds.empty()) {
    out +=
        "# Placeholders (never started): Slurm accepts and queues a MIG job even while\n"
        "# migsched publishes 0 for its profile on every real node. A job spanning N nodes\n"
        "# needs N of them; give them the real nodes' CPUs= and RealMemory=.\n";
    out +=
        fmt::format("NodeName={} Gres={}{} State=FUTURE\n", CompressHostlist(holds),
                    FormatGres(o.gres_name, WithPad(PlaceholderGres(groups, o, tables))), Attrs(o));
  }
  std::vector<std::string> members = all_nodes;
  members.insert(members.end(), holds.begin(), holds.end());
  out += "# The gate: DOWN until the migsched controller has published the counts.\n";
  out +=
      fmt::format("PartitionName={} Nodes={} State=DOWN\n", o.partition, CompressHostlist(members));
  out += "# migsched's hooks (never the node Prolog/Epilog: a failing one drains the node).\n";
  out += fmt::format("PrologSlurmctld={}/prolog-slurmctld\n", o.hooks_dir);
  out += fmt::format("EpilogSlurmctld={}/epilog-slurmctld\n", o.hooks_dir);
  out += fmt::format("TaskProlog={}/task-prolog\n", o.hooks_dir);
  out +=
      "# Profile spellings, whole-GPU requests and -w/--nodelist of MIG jobs: job_submit.lua\n"
      "# (written with --write-hooks) beside slurm.conf; add lua to an existing list.\n";
  out += "JobSubmitPlugins=lua\n";
  return out;
}

StatusOr<std::string> GresConfLines(const std::vector<NodeGroup>& groups,
                                    const GresConfigOptions& o, ConfigTableCache* tables) {
  RETURN_IF_ERROR(Validate(groups, o, tables));
  std::string out;
  if (!o.command_line.empty()) out += fmt::format("# generated by: {}\n", o.command_line);
  out += "# migsched: count-only MIG GRES (no File=: the MIG devices are made per job).\n";
  for (const NodeGroup& g : groups) {
    const std::string hosts = CompressHostlist(g.nodes);
    for (const ProfileCapacity& c : WithPad(GroupGres(g, tables, o.skip_profiles))) {
      out += fmt::format("NodeName={} Name={} Type={} Count={}\n", hosts, o.gres_name, c.profile,
                         c.count);
    }
  }
  return out;
}

StatusOr<std::string> JobSubmitLua(const std::vector<NodeGroup>& groups, const GresConfigOptions& o,
                                   ConfigTableCache* tables) {
  RETURN_IF_ERROR(Validate(groups, o, tables));
  static constexpr std::string_view kBody = R"lua(
local function split(s, sep)
  local out = {}
  for part in string.gmatch(s, "[^" .. sep .. "]+") do table.insert(out, part) end
  return out
end

-- "n[1-3,5],gpu01" -> {"n1", "n2", "n3", "n5", "gpu01"}; nil for another form.
local function expand(s)
  local parts, depth, cur = {}, 0, ""
  for i = 1, #s do
    local ch = s:sub(i, i)
    if ch == "[" then depth = depth + 1 elseif ch == "]" then depth = depth - 1 end
    if ch == "," and depth == 0 then
      table.insert(parts, cur)
      cur = ""
    else
      cur = cur .. ch
    end
  end
  if cur ~= "" then table.insert(parts, cur) end
  local out = {}
  for _, part in ipairs(parts) do
    local pre, body, post = part:match("^([^%[]*)%[([^%]]*)%](.*)$")
    if pre == nil then
      if part:find("[%[%]]") then return nil end
      table.insert(out, part)
    else
      if post:find("[%[%]]") then return nil end
      for _, r in ipairs(split(body, ",")) do
        local a, b = r:match("^(%d+)%-(%d+)$")
        if a ~= nil then
          for i = tonumber(a), tonumber(b) do
            table.insert(out, pre .. string.format("%0" .. #a .. "d", i) .. post)
          end
        elseif r:match("^%d+$") then
          table.insert(out, pre .. r .. post)
        else
          return nil
        end
      end
    end
  end
  return out
end

local function whole_gpu_hint()
  local hints = {}
  for _, p in ipairs(FULL) do table.insert(hints, "--gres=" .. GRES .. ":" .. p .. ":N") end
  return table.concat(hints, " or ")
end

-- The partition a job goes to: the one it names, or else the cluster's default (a job without
-- -p has job_desc.partition nil; where the MIG partition is the default its jobs are ours too).
local function partition_of(job_desc, part_list)
  if job_desc.partition ~= nil then return job_desc.partition end
  for name, p in pairs(part_list or {}) do
    if p.flag_default == 1 then return p.name or name end
  end
  return nil
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  if partition_of(job_desc, part_list) ~= PARTITION then return slurm.SUCCESS end
  for _, field in ipairs({"tres_per_job", "tres_per_task", "tres_per_socket"}) do
    local v = job_desc[field]
    if v ~= nil and v:find("gpu") then
      slurm.log_user("migsched: partition " .. PARTITION .. " has MIG instances, not gpu GRES: " ..
                     "--gpus, --gpus-per-task and --gpus-per-socket are not taken; ask for " ..
                     "whole GPUs per node as " .. whole_gpu_hint() .. " (and -N for more nodes)")
      return slurm.ERROR
    end
  end
  local mig = false
  local tpn = job_desc.tres_per_node
  if tpn ~= nil and tpn ~= "" then
    local out = {}
    -- A whole GPU (gpu:N) is the full-GPU profile: counted with an entry of that profile the
    -- user wrote beside it (--gres=mig:7g.40gb:1,gpu:1 asks for 2), not made a second entry,
    -- which the controller holds as the profile named twice (a spelling the user never wrote).
    local at, from_gpu = {}, {}
    local function add(profile, count, gpu)
      local i = at[profile]
      if i ~= nil and (gpu or from_gpu[i]) and tonumber(count) and tonumber(out[i]:match("[^:]+$")) then
        out[i] = "gres:" .. GRES .. ":" .. profile .. ":" ..
                 (tonumber(out[i]:match("[^:]+$")) + tonumber(count))
        from_gpu[i] = true
        return
      end
      table.insert(out, "gres:" .. GRES .. ":" .. profile .. ":" .. count)
      if at[profile] == nil then at[profile] = #out end
      if gpu then from_gpu[#out] = true end
    end
    for _, e in ipairs(split(tpn, ",")) do
      local f = split((e:gsub("^gres[:/]", "")), ":")
      if f[1] == "gpu" then
        if #f ~= 2 or #FULL ~= 1 then
          slurm.log_user("migsched: partition " .. PARTITION .. " has MIG instances, not gpu " ..
                         "GRES: ask for whole GPUs as " .. whole_gpu_hint())
          return slurm.ERROR
        end
        add(FULL[1], f[2], true)
        mig = true
      elseif f[1] == GRES and #f == 3 then
        local key = f[2]:lower():gsub("^mig%-", "")
        add(PROFILES[key] or f[2], f[3], false)
        mig = true
      else
        if f[1] == GRES then mig = true end
        table.insert(out, e)
      end
    end
    job_desc.tres_per_node = table.concat(out, ",")
  end
  -- -w/--nodelist: Slurm refuses a job whose named node publishes less than it asks for now.
  local req = job_desc.req_nodes
  if mig and req ~= nil and req ~= "" then
    local named = expand(req)
    if named == nil then return slurm.SUCCESS end
    local is_mig, want = {}, {}
    for _, n in ipairs(NODES) do is_mig[n] = true end
    for _, n in ipairs(named) do
      if not is_mig[n] then return slurm.SUCCESS end
      want[n] = true
    end
    local exc = {}
    if job_desc.exc_nodes ~= nil and job_desc.exc_nodes ~= "" then
      table.insert(exc, job_desc.exc_nodes)
    end
    for _, n in ipairs(NODES) do
      if not want[n] then table.insert(exc, n) end
    end
    job_desc.req_nodes = ""
    job_desc.exc_nodes = table.concat(exc, ",")
    local min = job_desc.min_nodes
    if min == nil or min >= slurm.NO_VAL or min < #named then job_desc.min_nodes = #named end
  end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end
)lua";
  std::vector<std::string> profiles, full, nodes;
  for (const NodeGroup& g : groups) {
    for (const ProfileCapacity& c : GroupGres(g, tables, o.skip_profiles)) {
      if (std::find(profiles.begin(), profiles.end(), c.profile) == profiles.end()) {
        profiles.push_back(c.profile);
      }
    }
    for (const GpuModel* m : g.gpus) {
      const std::string& name = m->profiles()[m->largest_profile()].name;
      const bool skipped =
          std::find(o.skip_profiles.begin(), o.skip_profiles.end(), name) != o.skip_profiles.end();
      if (!skipped && std::find(full.begin(), full.end(), name) == full.end()) full.push_back(name);
    }
    nodes.insert(nodes.end(), g.nodes.begin(), g.nodes.end());
  }
  auto quoted = [](const std::vector<std::string>& v) {
    std::vector<std::string> q;
    for (const std::string& s : v) q.push_back(fmt::format("\"{}\"", s));
    return fmt::format("{}", fmt::join(q, ", "));
  };
  std::string out;
  out += "-- job_submit.lua of migsched (Slurm's job_submit/lua plugin: JobSubmitPlugins=lua,\n";
  out += "-- this file beside slurm.conf). Written by `migsched slurm config`";
  out += o.command_line.empty() ? "" : ": " + o.command_line;
  out +=
      ".\n-- For jobs of the MIG partition: profile spellings, whole-GPU requests, -w/--nodelist\n";
  out += "-- (docs/slurm.md \"What users may write\"). Other jobs pass untouched.\n";
  out += fmt::format("local PARTITION = \"{}\"\nlocal GRES = \"{}\"\n", o.partition, o.gres_name);
  out += "local PROFILES = {";
  for (size_t i = 0; i < profiles.size(); ++i) {
    std::string key = profiles[i];
    for (char& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    out += fmt::format("{}[\"{}\"] = \"{}\"", i == 0 ? "" : ", ", key, profiles[i]);
  }
  out += "}\n";
  out += "local FULL = {" + quoted(full) + "}\n";
  out += "local NODES = {" + quoted(nodes) + "}\n";
  out += kBody;
  return out;
}

std::vector<std::pair<std::string, std::string>> HookScripts(const std::string& migsched_binary,
                                                             const std::string& config_path,
                                                             const std::string& gres_name,
                                                             const std::string& slurm_conf) {
  const std::string env =
      slurm_conf.empty() ? "" : fmt::format("export SLURM_CONF='{}'\n", slurm_conf);
  auto script = [&](const std::string& slurm_name, const std::string& hook,
                    const std::string& args) {
    return fmt::format(
        "#!/bin/sh\n"
        "# {} of migsched (written by `migsched slurm config --write-hooks`).\n"
        "{}exec '{}' slurm {} {}\n",
        slurm_name, env, migsched_binary, hook, args);
  };
  const std::string config = fmt::format("--config '{}'", config_path);
  return {{"prolog-slurmctld", script("PrologSlurmctld", "prolog", config)},
          {"epilog-slurmctld", script("EpilogSlurmctld", "epilog", config)},
          {"task-prolog", script("TaskProlog", "task-prolog", "--gres-name " + gres_name)}};
}

}  // namespace migsched::slurm
