// SIGHUP for the long-running commands (serve, slurm-controller, k8s-extender, k8s-agent): the
// terminal or ssh session that started one in the foreground has closed. They keep running, as
// a service must: SIGHUP's default action would end one at once, with nothing logged and no
// orderly stop. Nothing is reloaded on SIGHUP (a config change needs a restart); the command says
// so in its log.
//
// Thread-safety: every function may be called from any thread; the handler is
// async-signal-safe (it only counts).
#ifndef MIGSCHED_CLI_HANGUP_H_
#define MIGSCHED_CLI_HANGUP_H_

namespace migsched::cli {

// Installs the SIGHUP handler: a caught signal, not SIG_IGN, so that the jobs and commands these
// services start get the default action back at execve.
void KeepRunningOnHangup();

// The SIGHUPs since the last call (0 when none), and a warning logged for them when there were
// any. Called from a service's ordinary loop, never from the handler.
int LogHangups();

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_HANGUP_H_
