// A controller source that reaches the daemon through one of its own headers.
#include "cluster/node_state.h"
