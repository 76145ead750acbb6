#!/usr/bin/env bash
# A Slurm cluster with migsched on one machine, all on loopback under DIR
# (docs/slurm.md "Try it on one machine"):
#
#   deploy/slurm/local-cluster.sh up DIR [--nodes N] [--gpus 2xA100-40GB] [options]
#   . DIR/env && sbatch --gres=mig:3g.20gb:1 --wrap 'echo $CUDA_VISIBLE_DEVICES'
#   deploy/slurm/local-cluster.sh down DIR
#   deploy/slurm/local-cluster.sh restart DIR SERVICE [--kill]
#       SERVICE: slurmctld | controller | daemon-nI | slurmd-nI | node-nI. Stops it by PID
#       (SIGTERM, SIGKILL with --kill) and starts it again the way `up` does; a slurmd is
#       waited for until it has registered again, the controller until it serves its status
#       (it fails with the controller's words when the controller exits first). node-nI is a node "reboot": its slurmd and
#       node daemon stopped, the fake backend's MIG instances dropped (a reboot loses them),
#       both started again (the jobs' processes are not touched).
#
# `up` starts munged, slurmctld, N slurmd (nodes n1..nN), N node daemons
# (`migsched serve`, fake backend, each with the --gpus GPUs) and the
# controller (`migsched slurm controller`), writes DIR/env (SLURM_CONF and
# MIGSCHED_SLURM_CONFIG) and waits until the MIG partition `mig` is UP.
# `down` stops everything `up` started, by the PIDs it recorded in DIR/pids/,
# and leaves DIR (logs in DIR/log/) for a look afterwards.
#
# Options of `up`:
#   --nodes N          number of nodes (default 3)
#   --gpus SPEC        GPUs of each node (default 2xA100-40GB)
#   --migsched PATH    the migsched binary (default: build/bin/migsched of this checkout)
#   --no-controller    no node daemons and no controller: Slurm alone with the generated
#                      config (the partition stays DOWN)
#   --static           the baseline without migsched: the same GRES counts as static
#                      slurm.conf values, the partition UP, no hooks, no daemons, no controller
#   --policy NAME      the controller's scheduler policy (default full)
#   --controller-arg A extra argument for `migsched slurm controller` (repeatable)
#   --metric NAME      the controller's scheduler metric (default: the policy's)
#   --scheduler-option KEY=VALUE
#                      another scheduler option of the controller (a `migsched simulate`
#                      flag's name without the dashes; repeatable)
#   --migrate-after S  migration.after_s of the controller (default 60)
#   --min-runtime S    migration.min_runtime_s of the controller (default 120)
#   --timeout S        how long each wait may take, seconds (default 60)
#
# Needs root (Slurm's daemons run as root here, SlurmUser=root). Installs
# slurm-wlm and munge with apt-get where missing. Every wait is bounded.
set -euo pipefail

die() { echo "local-cluster: $*" >&2; exit 1; }
log() { echo "local-cluster: $*" >&2; }

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

usage() { sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

[ $# -ge 2 ] || usage
cmd=$1
dir=$2
shift 2
case "$dir" in /*) ;; *) dir="$(pwd)/$dir" ;; esac

nodes=3
gpus=2xA100-40GB
migsched="$repo/build/bin/migsched"
controller=1
static=0
policy=full
timeout_s=60
controller_args=()
metric=""
scheduler_options=()
migrate_after=60
min_runtime=120
kill_signal=TERM
service=""
if [ "$cmd" = restart ]; then
  [ $# -ge 1 ] || usage
  service=$1
  shift
fi
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --migsched) migsched=$2; shift 2 ;;
    --no-controller) controller=0; shift ;;
    --static) static=1; controller=0; shift ;;
    --policy) policy=$2; shift 2 ;;
    --controller-arg) controller_args+=("$2"); shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --metric) metric=$2; shift 2 ;;
    --scheduler-option)
      [[ "$2" =~ ^[a-z][a-z_-]*=[^[:space:]]+$ ]] || die "--scheduler-option takes KEY=VALUE, got '$2'"
      scheduler_options+=("$2"); shift 2 ;;
    --migrate-after) migrate_after=$2; shift 2 ;;
    --min-runtime) min_runtime=$2; shift 2 ;;
    --kill) kill_signal=KILL; shift ;;
    *) die "unknown option '$1' (see the top of $0)" ;;
  esac
done
[[ "$nodes" =~ ^[1-9][0-9]*$ ]] || die "--nodes must be a positive integer, got '$nodes'"
[[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive integer, got '$timeout_s'"

# wait_for SECONDS DESCRIPTION COMMAND...: runs COMMAND every 0.1 s until it
# succeeds; fails after SECONDS.
wait_for() {
  local limit=$1 what=$2
  shift 2
  local i
  for ((i = 0; i < limit * 10; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  die "timed out after ${limit}s waiting for $what (logs: $dir/log/)"
}

# free_port: a TCP port for this cluster (deploy/slurm/ports.sh).
. "$here/ports.sh"
free_port() { reserve_port "$dir" || die "no free TCP port found"; }

# start NAME COMMAND...: starts COMMAND in the background, its output in
# DIR/log/NAME.out, its PID in DIR/pids/NAME.pid.
start() {
  local name=$1
  shift
  "$@" >"$dir/log/$name.out" 2>&1 &
  echo $! >"$dir/pids/$name.pid"
}

# stop_pids FILE...: SIGTERM to the PIDs in the FILEs (all at once), SIGKILL
# to those still there after 10 s; the files are removed.
stop_pids() {
  local f pid i pids=()
  for f in "$@"; do
    [ -e "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    rm -f "$f"
    [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || continue
    kill -TERM "$pid" 2>/dev/null || true
    pids+=("$pid")
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  for ((i = 0; i < 100; i++)); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      log "PID $pid did not stop after SIGTERM; SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
}

# The PIDs of processes Slurm started for this cluster's jobs: slurmstepd
# and job processes, i.e. those whose environment has this cluster's
# SLURM_CONF and either is a slurmstepd or has a SLURM_JOB_ID.
cluster_pids() {
  local f p want="SLURM_CONF=$dir/slurm/slurm.conf"
  for f in $(grep -lszxF -- "$want" /proc/[0-9]*/environ); do
    p=${f#/proc/}
    p=${p%/environ}
    if grep -qszx 'SLURM_JOB_ID=[0-9]*' "$f" || tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null |
         grep -q '^slurmstepd:'; then
      echo "$p"
    fi
  done 2>/dev/null
}

down() {
  [ -d "$dir/pids" ] || die "$dir: not a local cluster (no pids/)"
  local f i pid
  # Jobs first: cancel them while slurmctld runs, and wait (bounded) until
  # none runs, so that no slurmstepd outlives its slurmd.
  if [ -e "$dir/pids/slurmctld.pid" ] && kill -0 "$(cat "$dir/pids/slurmctld.pid")" 2>/dev/null; then
    local conf="$dir/slurm/slurm.conf"
    SLURM_CONF=$conf squeue -h -o %A 2>/dev/null | SLURM_CONF=$conf xargs -r scancel 2>/dev/null ||
      true
    for ((i = 0; i < 150; i++)); do
      [ -z "$(SLURM_CONF=$conf squeue -h -t R,CG,CF -o %A 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  # The controller first (it would otherwise see the nodes go), then the node
  # daemons, the slurmd, slurmctld, munged; then whatever pid files Slurm's
  # daemons wrote themselves (the same processes, normally gone by then).
  stop_pids "$dir/pids/controller.pid"
  stop_pids "$dir"/pids/daemon-*.pid
  stop_pids "$dir"/pids/slurmd-*.pid
  stop_pids "$dir/pids/slurmctld.pid"
  stop_pids "$dir/pids/munged.pid"
  stop_pids "$dir"/slurm/slurmd-*.pid "$dir/slurm/slurmctld.pid" "$dir/munge/munged.pid"
  # Whatever Slurm left (a step whose slurmd went first): by PID, TERM then KILL.
  for pid in $(cluster_pids); do kill -TERM "$pid" 2>/dev/null || true; done
  for ((i = 0; i < 50; i++)); do
    [ -z "$(cluster_pids)" ] && break
    sleep 0.1
  done
  for pid in $(cluster_pids); do kill -KILL "$pid" 2>/dev/null || true; done
  release_ports "$dir"
  log "stopped (logs kept in $dir/log/)"
}

install_missing() {
  local missing=() p
  for p in slurm-wlm munge; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} (apt-get)"
    [ "$(id -u)" -eq 0 ] || die "installing packages needs root"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
}

up() {
  [ "$(id -u)" -eq 0 ] || die "up needs root: Slurm's daemons run as root here (SlurmUser=root)"
  [ -x "$migsched" ] || die "no migsched binary at $migsched (build it, or give --migsched)"
  [ -e "$dir/pids" ] && [ -n "$(ls -A "$dir/pids" 2>/dev/null)" ] &&
    die "$dir has a running cluster (pids/): run '$0 down $dir' first"
  install_missing
  mkdir -p "$dir/pids"
  echo "$migsched" >"$dir/migsched.path"
  ok=0
  trap 'if [ "$ok" != 1 ]; then log "up failed; stopping what it started"; down; fi' EXIT
  mkdir -p "$dir"/{munge,slurm/state,slurm/spool,log,pids,hooks,nodes}
  # DIR and the munge socket's folder let other users through (not read):
  # the daemons' jobs run as nobody in their state dirs' work folders, and
  # clients of other users reach munge's socket.
  chmod 711 "$dir" "$dir/munge"

  local ctld_port status_port
  ctld_port=$(free_port)
  status_port=$(free_port)  # the controller's /healthz, /metrics, /v1/status
  local node_list="n[1-$nodes]"
  [ "$nodes" -eq 1 ] && node_list=n1
  local slurmd_ports=() daemon_ports=() i
  for ((i = 1; i <= nodes; i++)); do
    slurmd_ports+=("$(free_port)")
    daemon_ports+=("$(free_port)")
  done

  # munge: a key and a socket of our own.
  dd if=/dev/urandom bs=1 count=1024 of="$dir/munge/munge.key" 2>/dev/null
  chmod 400 "$dir/munge/munge.key"
  start munged munged --foreground --force --key-file="$dir/munge/munge.key" \
    --socket="$dir/munge/munge.sock" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munge.seed"
  wait_for "$timeout_s" "munged's socket" test -S "$dir/munge/munge.sock"

  # slurm.conf: the base, then migsched's lines (or static counts).
  local gen="$dir/slurm/migsched-lines.txt"
  "$migsched" slurm config --nodes "$node_list" --gpus "$gpus" --partition mig \
    --hooks-dir "$dir/hooks" --write-hooks "$dir/hooks" \
    --controller-config "$dir/controller.yaml" --migsched "$migsched" \
    --slurm-conf "$dir/slurm/slurm.conf" \
    --node-attrs "NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=16 RealMemory=16000" \
    >"$gen" 2>"$dir/log/config.err" ||
    die "migsched slurm config failed: $(grep -v '^migsched: wrote' "$dir/log/config.err" | tail -n 5)"
  local conf="$dir/slurm/slurm.conf"
  cat >"$conf" <<EOF
# Written by deploy/slurm/local-cluster.sh: a one-machine test cluster.
ClusterName=migsched-local
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
# Listen on loopback only (Slurm binds every address unless told not to).
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/slurm/state
SlurmdSpoolDir=$dir/slurm/spool/slurmd-%n
SlurmctldPidFile=$dir/slurm/slurmctld.pid
SlurmdPidFile=$dir/slurm/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
MpiDefault=none
ReturnToService=2
# The nodes claim 16 CPUs whatever the machine has: no drain for "low CPU count".
SlurmdParameters=config_overrides
MailProg=/bin/true
EOF
  # The generated slurm.conf part, with one port per slurmd on the NodeName line.
  local ports_expr="Port=[${slurmd_ports[0]}"
  for ((i = 1; i < nodes; i++)); do ports_expr+=",${slurmd_ports[$i]}"; done
  ports_expr+="]"
  [ "$nodes" -eq 1 ] && ports_expr="Port=${slurmd_ports[0]}"
  sed -n '/^# ---- slurm.conf/,/^# ---- gres.conf/p' "$gen" | grep -v '^# ----' |
    sed "s/^NodeName=$(printf '%s' "$node_list" | sed 's/[][]/\\&/g') /&$ports_expr /" >>"$conf"
  sed -n '/^# ---- gres.conf/,$p' "$gen" | grep -v '^# ----' >"$dir/slurm/gres.conf"
  # slurmctld reads job_submit.lua beside slurm.conf.
  cp "$dir/hooks/job_submit.lua" "$dir/slurm/job_submit.lua"
  if [ "$static" -eq 1 ]; then
    # Static GRES: the same counts, the partition UP, no hooks.
    sed -i -e '/^PrologSlurmctld=/d' -e '/^EpilogSlurmctld=/d' -e '/^TaskProlog=/d' \
      -e '/^JobSubmitPlugins=/d' \
      -e 's/^\(PartitionName=.*\) State=DOWN/\1 State=UP/' "$conf"
  fi

  start slurmctld slurmctld -D -f "$conf"
  export SLURM_CONF="$conf"
  wait_for "$timeout_s" "slurmctld" scontrol ping
  for ((i = 1; i <= nodes; i++)); do
    start "slurmd-n$i" slurmd -D -f "$conf" -N "n$i"
  done
  nodes_idle() {
    local n
    n=$(sinfo -h -N -p mig -o '%N %t' 2>/dev/null | awk '$2 ~ /^(idle|mix|alloc)/' | wc -l)
    [ "$n" -ge "$nodes" ]
  }
  wait_for "$timeout_s" "$nodes slurmd to register" nodes_idle

  cat >"$dir/env" <<EOF
# . $dir/env  (written by deploy/slurm/local-cluster.sh)
export SLURM_CONF=$conf
export MIGSCHED_SLURM_CONFIG=$dir/controller.yaml
EOF

  if [ "$controller" -eq 1 ]; then
    # One node daemon per node, fake backend with the node's GPUs.
    for ((i = 1; i <= nodes; i++)); do
      local nd="$dir/nodes/n$i"
      mkdir -p "$nd/state"
      chmod 700 "$nd/state"  # the daemon refuses a state_dir others may read
      cat >"$nd/daemon.yaml" <<EOF
listen: "127.0.0.1:${daemon_ports[$((i - 1))]}"
state_dir: $nd/state
backend: fake
gpus: "$gpus"
scheduler:
  policy: $policy
EOF
      start "daemon-n$i" "$migsched" serve --config "$nd/daemon.yaml"
    done
    for ((i = 1; i <= nodes; i++)); do
      wait_for "$timeout_s" "node daemon n$i" test -s "$dir/nodes/n$i/state/token"
      wait_for "$timeout_s" "node daemon n$i" grep -q "listening on" "$dir/log/daemon-n$i.out"
    done
    {
      echo "# The controller of deploy/slurm/local-cluster.sh (docs/slurm.md)."
      echo "slurm:"
      echo "  partition: mig"
      echo "nodes:"
      for ((i = 1; i <= nodes; i++)); do
        echo "  - name: n$i"
        echo "    url: http://127.0.0.1:${daemon_ports[$((i - 1))]}"
        echo "    token_file: $dir/nodes/n$i/state/token"
      done
      echo "controller:"
      echo "  tick_ms: 200"
      echo "  log_file: $dir/log/controller.log"
      echo "  listen: 127.0.0.1:$status_port"
      echo "migration:"
      echo "  after_s: $migrate_after"
      echo "  min_runtime_s: $min_runtime"
      echo "scheduler:"
      echo "  policy: $policy"
      [ -n "$metric" ] && echo "  metric: $metric"
      for kv in ${scheduler_options[@]+"${scheduler_options[@]}"}; do echo "  ${kv%%=*}: ${kv#*=}"; done
    } >"$dir/controller.yaml"
    start controller "$migsched" slurm controller --config "$dir/controller.yaml" \
      ${controller_args[@]+"${controller_args[@]}"}
    partition_up() { scontrol -o show partition mig | grep -q ' State=UP '; }
    wait_for "$timeout_s" "the controller to open the partition" partition_up
  fi
  ok=1
  trap - EXIT
  log "up: $nodes nodes ($gpus each) under $dir; . $dir/env"
}

# stop_service NAME: stops what `up` started under NAME by its PID (SIGTERM,
# or SIGKILL with --kill) and waits until it is gone.
stop_service() {
  local f="$dir/pids/$1.pid" pid i
  [ -e "$f" ] || die "no $1 in $dir (pids/: $(ls "$dir/pids" | tr '\n' ' '))"
  pid=$(cat "$f")
  kill "-$kill_signal" "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && die "$1 (PID $pid) did not stop"
  return 0
}

# The time slurmctld last saw node $1's slurmd start (its registration).
slurmd_start_time() { scontrol show node "$1" 2>/dev/null | sed -n 's/.*SlurmdStartTime=\([^ ]*\).*/\1/p'; }

# start_slurmd NODE BEFORE: starts node NODE's slurmd as `up` does and waits
# until slurmctld shows a SlurmdStartTime other than BEFORE (it registered).
start_slurmd() {
  local n=$1 before=$2
  # SlurmdStartTime has one-second steps: a slurmd stopped and started within
  # the same second would look as if it had not registered yet.
  sleep 1
  start "slurmd-$n" slurmd -D -f "$SLURM_CONF" -N "$n"
  registered() { local t; t=$(slurmd_start_time "$n"); [ -n "$t" ] && [ "$t" != "$before" ]; }
  wait_for "$timeout_s" "slurmd of $n to register" registered
}

start_daemon() {
  local n=$1
  mv "$dir/log/daemon-$n.out" "$dir/log/daemon-$n.out.$(date +%s%N)" 2>/dev/null || true
  start "daemon-$n" "$migsched" serve --config "$dir/nodes/$n/daemon.yaml"
  wait_for "$timeout_s" "node daemon $n" grep -q "listening on" "$dir/log/daemon-$n.out"
}

# start_controller: starts the controller as `up` does and waits until it
# serves its status (a line "status on http" in its log after this start);
# one that exits first (e.g. a config error) fails the restart with its words.
start_controller() {
  local log_file="$dir/log/controller.log" lines i pid
  lines=$(wc -l <"$log_file" 2>/dev/null || echo 0)
  start controller "$migsched" slurm controller --config "$dir/controller.yaml"
  pid=$(cat "$dir/pids/controller.pid")
  for ((i = 0; i < timeout_s * 10; i++)); do
    tail -n +"$((lines + 1))" "$log_file" 2>/dev/null | grep -q 'status on http' && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      die "the controller exited at start: $(tail -n 5 "$dir/log/controller.out")"
    fi
    sleep 0.1
  done
  die "timed out after ${timeout_s}s waiting for the controller (logs: $dir/log/)"
}

# restart SERVICE: what `up` started under that name, stopped by its PID
# (SIGTERM, or SIGKILL with --kill) and started again the same way.
restart() {
  export SLURM_CONF="$dir/slurm/slurm.conf"
  migsched=$(cat "$dir/migsched.path")
  local n before
  case "$service" in
    slurmctld) stop_service slurmctld
               start slurmctld slurmctld -D -f "$SLURM_CONF"
               wait_for "$timeout_s" "slurmctld" scontrol ping ;;
    controller) stop_service controller
                start_controller ;;
    daemon-n*) n=${service#daemon-}
               stop_service "$service"
               start_daemon "$n" ;;
    slurmd-n*) n=${service#slurmd-}
               before=$(slurmd_start_time "$n")
               stop_service "$service"
               start_slurmd "$n" "$before" ;;
    node-n*) n=${service#node-}
             [ -e "$dir/pids/daemon-$n.pid" ] || die "no node $n with a node daemon in $dir"
             before=$(slurmd_start_time "$n")
             stop_service "slurmd-$n"
             stop_service "daemon-$n"
             # The fake backend keeps its instances in this file (they outlive a
             # daemon crash, as real ones do); a reboot loses them.
             rm -f "$dir/nodes/$n/state/fake-backend.json"
             start_daemon "$n"
             start_slurmd "$n" "$before" ;;
    *) die "cannot restart '$service' (slurmctld, controller, daemon-nI, slurmd-nI, node-nI)" ;;
  esac
  log "restarted $service"
}

case "$cmd" in
  up) up ;;
  down) down ;;
  restart) restart ;;
  *) usage ;;
esac
