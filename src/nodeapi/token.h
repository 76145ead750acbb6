// The daemon's API token: a bearer token read from a file that
// the daemon creates with mode 0600 at first start, or given in the config.
//
// The token is 64 lowercase hex characters (32 random bytes from
// /dev/urandom). The daemon refuses its own token file when group or others may read or write it,
// or another user owns it: anyone who can read it can drive the daemon. A client (the CLI, the
// cluster controllers) may read one its group may read (a Kubernetes Secret shared through
// fsGroup), never one others may read or its group write.
//
// Thread-safety: free functions, no shared state.
#ifndef MIGSCHED_NODEAPI_TOKEN_H_
#define MIGSCHED_NODEAPI_TOKEN_H_

#include <string>
#include <string_view>

#include "core/status.h"

namespace migsched {

// The shortest token accepted (from a file or inline in the config): 32
// characters, e.g. 16 random bytes in hex. Shorter ones are guessable.
inline constexpr size_t kMinTokenLength = 32;

// OK if `token` may be used: at least kMinTokenLength characters, all of
// [0-9A-Za-z._~+/=-] (RFC 6750 token68). kInvalidArgument naming `origin`
// ("token file /x", "config key token") otherwise.
Status ValidateToken(std::string_view token, std::string_view origin);

// Reads the token from `path` (surrounding whitespace stripped). A symbolic
// link is followed (a Kubernetes Secret volume's files are links); the mode
// and file type checked are those of the file it names.
// Errors: kNotFound (no such file), kFailedPrecondition (mode allows others any access or the
// group to write or execute: the message says `chmod 600 <path>`; not a regular file),
// kInvalidArgument (ValidateToken: empty, too short, or characters outside
// [0-9A-Za-z._~+/=-]).
StatusOr<std::string> ReadTokenFile(const std::string& path);

// The clients' rule on a token file's mode (`mode`: its st_mode): kFailedPrecondition, naming
// `path` and saying `chmod 600`, when others may access it or its group write or execute it
// (its group may read it). ReadTokenFile's check, and the cluster controllers' (Slurm,
// Kubernetes extender and node agent: cluster/http_node_daemons.h NodeDaemonToken).
Status CheckClientTokenMode(const std::string& path, unsigned mode);

// Reads `path` if it exists (as ReadTokenFile); otherwise creates it with
// O_CREAT|O_EXCL and mode 0600 and writes a new random token followed by a
// newline. Two daemons racing: the loser reads the winner's file.
// Errors: as ReadTokenFile; kFailedPrecondition when the file (the one a link names) allows its
// group any access or is owned by another user than the caller's effective uid; kUnavailable when
// /dev/urandom or the file cannot be written (the message names the path and errno text).
StatusOr<std::string> LoadOrCreateTokenFile(const std::string& path);

// 64 hex characters from 32 bytes of /dev/urandom. kUnavailable if it cannot be read.
StatusOr<std::string> NewRandomToken();

// Compares in time that depends only on the lengths, not on where the strings
// differ (no early exit), so the API leaks no prefix of the token by timing.
bool TokensEqual(std::string_view a, std::string_view b);

}  // namespace migsched

#endif  // MIGSCHED_NODEAPI_TOKEN_H_
