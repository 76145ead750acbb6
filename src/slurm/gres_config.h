// The slurm.conf and gres.conf lines of a MIG cluster run by migsched
// (`migsched slurm config`, docs/slurm.md): typed, count-only GRES
// `mig:<profile>:<count>` whose counts are, per node, the most instances of
// each profile its GPUs can hold at once (cluster/capacity.h). The controller
// publishes lower counts at run time (`scontrol update NodeName=...
// Gres=...`); these are the ceilings it never exceeds.
//
// Every node (and placeholder) also carries the type kPadType (see there):
// Slurm drains a node whose slurmd registers while jobs use its MIG GRES if
// the node's *total* MIG count differs from the one it found at the last
// registration, so the controller keeps the total constant with it.
//
// Besides the real nodes the lines declare placeholder nodes in State=FUTURE
// holding the same ceilings: while the controller publishes 0 somewhere,
// Slurm still accepts a MIG job at submit (a count no node has now is
// otherwise refused with "Requested node configuration is not available")
// and lets it pend instead of marking it BadConstraints. A job that spans N
// nodes needs N placeholders: there is one per real node unless told
// otherwise. The MIG partition is declared State=DOWN: the controller sets it
// UP only after it has published (the gate).
//
// Thread-safety: pure functions (the table cache is the caller's).
#ifndef MIGSCHED_SLURM_GRES_CONFIG_H_
#define MIGSCHED_SLURM_GRES_CONFIG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/capacity.h"
#include "core/config_table.h"
#include "core/gpu_model.h"
#include "core/status.h"

namespace migsched::slurm {

// The GRES type that keeps a node's total MIG count constant: its configured
// count is the sum of the node's profile ceilings (so slurm.conf's and
// gres.conf's total is twice that), and the controller publishes for it
// whatever the profiles' counts leave of that total. Slurm 22.05 checks a
// registering slurmd's count-only GRES by the total alone
// (src/common/gres.c, _node_config_validate: "count changed and jobs are
// using them" marks the node INVAL and drains it when the total differs from
// the one found at the last registration while jobs hold any of it); per
// type it only resets the counts to gres.conf's, which the controller sees
// and publishes again. Not a MIG profile: a job that asks for it is held.
inline constexpr std::string_view kPadType = "migsched-pad";

// Nodes that have the same GPUs.
struct NodeGroup {
  std::vector<std::string> nodes;     // host names (expanded)
  std::vector<const GpuModel*> gpus;  // GPU 0, 1, ... of each node
  std::string gpus_spec;              // as written, e.g. "2xA100-40GB" (for comments)
};

struct GresConfigOptions {
  std::string gres_name = "mig";                     // the GRES name (GresTypes)
  std::string partition = "mig";                     // the gated partition
  std::string placeholder_prefix = "migsched-hold";  // names of the State=FUTURE placeholders
  int placeholders = -1;                             // how many; < 0: one per real node
  std::string node_attrs;  // appended to every NodeName line, e.g. "CPUs=64"
  std::string hooks_dir = "/usr/local/lib/migsched";  // where the hook scripts live
  std::string command_line;                           // the command that made the lines (a comment)
  std::vector<std::string> skip_profiles;  // profiles left out of the lines (--skip-profiles)
};

// The number Slurm identifies a GRES name or type by (its gres_build_id):
// the sum of the bytes, byte i shifted left by 8 * (i mod 4) bits, modulo
// 2^32. Slurm matches a job's request to a node's GRES by these numbers, so
// two types with the same number are one type to Slurm: "2g.48gb"
// (RTX PRO 6000) and "3g.47gb" (H100 NVL) are (0x3490ce6a; slurmctld merges
// their counts and warns "has 2 more configured than expected").
uint32_t SlurmGresId(std::string_view name);

// Whether `s` is a name this tool writes into Slurm's configuration and commands (a partition, a
// GRES name, a placeholder prefix): not empty; letters, digits, '_', '-' and '.' only.
bool IsSlurmName(std::string_view s);

// The per-node ceilings: NodeCapacity of the group's GPUs without the
// profiles in `skip` and those whose count is 0 (none in the bundled catalog).
std::vector<ProfileCapacity> GroupGres(const NodeGroup& group, ConfigTableCache* tables,
                                       const std::vector<std::string>& skip = {});

// `counts` and {kPadType, the sum of their counts}: what slurm.conf and
// gres.conf declare for a node.
std::vector<ProfileCapacity> WithPad(std::vector<ProfileCapacity> counts);

// "mig:1g.5gb:14,mig:1g.5gb+me:2,...": a Gres= value.
std::string FormatGres(const std::string& gres_name, const std::vector<ProfileCapacity>& counts);

// The slurm.conf lines: GresTypes, one NodeName line per group (hostlist
// expression as Slurm writes it), the placeholders, the partition (DOWN) and
// the three hooks. kInvalidArgument for no groups, a group without nodes or
// GPUs, a node name in two groups or equal to a placeholder, a GRES or
// partition name that is empty or has characters Slurm does not take
// (anything but letters, digits, '_', '-', '.'), an unknown name in
// skip_profiles, and two profiles of the cluster with the same SlurmGresId
// (naming both: leave one out with skip_profiles). The text ends with a
// newline.
StatusOr<std::string> SlurmConfLines(const std::vector<NodeGroup>& groups,
                                     const GresConfigOptions& options, ConfigTableCache* tables);

// The gres.conf lines: per group and profile (and kPadType)
// "NodeName=<hostlist> Name=mig Type=<profile> Count=<n>". Same errors.
StatusOr<std::string> GresConfLines(const std::vector<NodeGroup>& groups,
                                    const GresConfigOptions& options, ConfigTableCache* tables);

// job_submit.lua for Slurm's job_submit/lua plugin (`JobSubmitPlugins=lua`,
// the file beside slurm.conf): slurmctld runs it on every submission; for
// jobs of the MIG partition it
//   * spells each MIG profile as the catalog does (--gres=mig:3G.20GB:1 and
//     mig:MIG-3g.20gb:1 become mig:3g.20gb:1, what Slurm's types are);
//   * turns --gres=gpu:N and --gpus-per-node=N into the cluster's full-GPU
//     profile (--gres=mig:7g.40gb:N) when it has exactly one, and refuses
//     them otherwise, and always --gpus=N, --gpus-per-task and
//     --gpus-per-socket, saying what to write;
//   * turns -w/--nodelist of MIG nodes into --exclude of the other MIG
//     nodes (and at least as many nodes as named): Slurm would refuse a job
//     naming a node whose published counts are lower than it asks for now
//     ("Requested node configuration is not available"), the controller
//     places it on the named nodes.
// Other jobs pass untouched. Same errors as SlurmConfLines.
StatusOr<std::string> JobSubmitLua(const std::vector<NodeGroup>& groups,
                                   const GresConfigOptions& options, ConfigTableCache* tables);

// The hook scripts (file name -> content) that slurm.conf points at: the
// slurmctld ones exec `<migsched> slurm prolog|epilog --config <config>`, the
// task prolog (run as the job's user, who need not read the config)
// `<migsched> slurm task-prolog --gres-name <name>`; Slurm runs hooks with no
// arguments. Names: "prolog-slurmctld", "epilog-slurmctld", "task-prolog".
// `slurm_conf` (may be empty): exported as SLURM_CONF first, for a slurm.conf
// outside Slurm's default path (slurmctld runs its hooks without it).
std::vector<std::pair<std::string, std::string>> HookScripts(const std::string& migsched_binary,
                                                             const std::string& config_path,
                                                             const std::string& gres_name,
                                                             const std::string& slurm_conf = "");

}  // namespace migsched::slurm

#endif  // MIGSCHED_SLURM_GRES_CONFIG_H_
