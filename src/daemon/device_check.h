// The hardware check behind `migsched device-check` and scripts/device-check.sh
// (docs/mig-hardware.md "Checking a machine"): what the driver reports for every
// GPU, compared with the catalog, and, where allowed, one create and destroy of
// every profile at every placement through the backend the daemon uses, timed.
//
// Read-only unless `write` is set; even then a GPU is only written to when MIG
// mode is enabled with no change pending and no GPU instance exists on it (with
// MIG on, no process can use a GPU without a MIG device, so an instance-free GPU
// runs nothing). Each instance made is destroyed before the next is made; at the
// end the GPU's instances are listed again and anything the check made that is
// still there is destroyed again, so the GPU is left as found. It never changes
// the MIG mode and never resets a GPU (the backend cannot: docs/mig-hardware.md §8.4).
//
// Output: one record per line, `<kind> key=value …`, values with blanks or quotes
// in double quotes (JSON string escapes); the format is versioned (`format=1` on
// the first line) and documented in docs/mig-hardware.md. Lines starting with
// '#' are comments for people.
//
// Thread-safety: uses the backend from the calling thread only.
#ifndef MIGSCHED_DAEMON_DEVICE_CHECK_H_
#define MIGSCHED_DAEMON_DEVICE_CHECK_H_

#include <ostream>
#include <string>
#include <vector>

#include "core/catalog.h"
#include "daemon/mig_backend.h"

namespace migsched {

struct DeviceCheckOptions {
  bool write = false;             // create and destroy instances where allowed
  std::vector<std::string> gpus;  // NVML indices; empty = every GPU
  std::string driver_version;     // printed on the `driver` line ("" = unknown)
  std::string library;            // printed on the `driver` line
};

// Exit codes of RunDeviceCheck.
inline constexpr int kDeviceCheckOk = 0;           // the catalog matches and every write passed
inline constexpr int kDeviceCheckDifferences = 1;  // catalog differences (nothing failed)
inline constexpr int kDeviceCheckFailed = 2;       // a write failed, the GPU was not left as
                                                   // found, or the backend could not be read

// Runs the check on `backend`, writing the report to `out`; returns an exit code above.
int RunDeviceCheck(MigBackend* backend, const Catalog& catalog, const DeviceCheckOptions& options,
                   std::ostream& out);

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_DEVICE_CHECK_H_
