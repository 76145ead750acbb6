#include "cluster/node_daemons.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace migsched {

std::vector<NodeInput> ReadNodeStates(NodeDaemons* daemons, const std::vector<std::string>& nodes,
                                      int parallel) {
  std::vector<NodeInput> inputs(nodes.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < nodes.size();) {
      inputs[i].name = nodes[i];
      StatusOr<NodeView> st = daemons->State(nodes[i]);
      if (st.ok()) {
        inputs[i].state = std::move(*st);
        inputs[i].state->name = nodes[i];
      } else {
        inputs[i].error = st.status().message();
      }
    }
  };
  std::vector<std::thread> pool;
  const size_t n = std::min<size_t>(static_cast<size_t>(std::max(parallel, 1)), nodes.size());
  for (size_t k = 1; k < n; ++k) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return inputs;
}

}  // namespace migsched
