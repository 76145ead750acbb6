// A controller's header that breaks the node-API rule: it reaches the daemon's
// store instead of the node API's vocabulary (nodeapi/api_types.h).
#include "daemon/job_store.h"
