// The NodeDaemons (cluster/node_daemons.h) of the controller and the hooks: the
// configured node daemons, by name, over their HTTP API with their tokens.
//
// Thread-safety: calls for different nodes may run concurrently.
#ifndef MIGSCHED_SLURM_DAEMON_NODES_H_
#define MIGSCHED_SLURM_DAEMON_NODES_H_

#include <memory>

#include "cluster/node_daemons.h"
#include "slurm/controller_config.h"

namespace migsched::slurm {

// One client per configured node (config.nodes: url and token). A node that
// is not configured is kNotFound. Tokens are read once, here; an unreadable
// token file makes that node's calls kUnavailable with the reason.
StatusOr<std::unique_ptr<NodeDaemons>> NewDaemonNodes(const ControllerConfig& config);

}  // namespace migsched::slurm

#endif  // MIGSCHED_SLURM_DAEMON_NODES_H_
