#include "io/workload_job.h"
