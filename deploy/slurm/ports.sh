# TCP ports for the services of deploy/slurm/local-cluster.sh, sourced by it.
#
# Several local clusters may come up at once on one machine (the end-to-end
# tests run them in parallel). A port that /proc/net/tcp shows free can still
# be chosen by two of them before either binds it, so every choice is also
# recorded in a registry folder shared by all of them: one file per port,
# named after the port and holding the cluster's DIR, created with O_EXCL
# (bash's noclobber), so that exactly one cluster gets each port. `down`
# releases the cluster's ports. An entry whose cluster left no running
# process and that is older than ten minutes (a cluster that was never taken
# down) is taken over.
#
#   reserve_port DIR     prints a port from [PORT_MIN, PORT_MAX] that no
#                        socket uses and no other cluster holds, recorded for
#                        DIR; fails (exit status 1, a message on stderr) when
#                        none is left
#   release_ports DIR    forgets every port recorded for DIR
#
# The range lies below Linux's default ephemeral range (32768-60999), where an
# outgoing connection could take a port between the choice and the bind.
# Environment: MIGSCHED_PORT_REGISTRY (default ${TMPDIR:-/tmp}/migsched-local-ports),
# MIGSCHED_PORT_MIN and MIGSCHED_PORT_MAX (default 20000 and 31999).

port_registry="${MIGSCHED_PORT_REGISTRY:-${TMPDIR:-/tmp}/migsched-local-ports}"
port_min="${MIGSCHED_PORT_MIN:-20000}"
port_max="${MIGSCHED_PORT_MAX:-31999}"

# The local ports of every TCP socket, as four hex digits.
used_ports() {
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk 'NR > 1 { split($2, a, ":"); print a[2] }'
}

# port_entry_stale FILE: true if FILE's cluster runs no process and FILE is
# older than ten minutes.
port_entry_stale() {
  local owner pid f
  [ -n "$(find "$1" -mmin +10 2>/dev/null)" ] || return 1
  owner=$(cat "$1" 2>/dev/null) || return 0
  for f in "$owner"/pids/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null) || continue
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && return 1
  done
  return 0
}

reserve_port() {
  local owner=$1 p try span=$((port_max - port_min + 1)) used
  mkdir -p "$port_registry" 2>/dev/null || true
  chmod 1777 "$port_registry" 2>/dev/null || true
  [ -d "$port_registry" ] && [ -w "$port_registry" ] ||
    { echo "local-cluster: port registry $port_registry is not a writable folder" >&2; return 1; }
  used=" $(used_ports | tr '\n' ' ') "
  # Random tries first, then every port in order, so that a nearly full range
  # still finds its last free port.
  for ((try = 0; try < 200 + span; try++)); do
    if ((try < 200)); then
      p=$((port_min + (RANDOM * 32768 + RANDOM) % span))
    else
      p=$((port_min + try - 200))
    fi
    [[ "$used" == *" $(printf '%04X' "$p") "* ]] && continue
    if [ -e "$port_registry/$p" ] && port_entry_stale "$port_registry/$p"; then
      rm -f "$port_registry/$p"
    fi
    if (set -C; echo "$owner" >"$port_registry/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  echo "local-cluster: no free TCP port in $port_min-$port_max" >&2
  return 1
}

release_ports() {
  local owner=$1 f
  for f in "$port_registry"/*; do
    [ -f "$f" ] || continue
    [ "$(cat "$f" 2>/dev/null)" = "$owner" ] && rm -f "$f"
  done
  return 0
}
