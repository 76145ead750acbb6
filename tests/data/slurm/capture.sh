#!/usr/bin/env bash
# Re-captures the Slurm outputs of this folder from a real local cluster
# (Debian 12's slurm-wlm 22.05): deploy/slurm/local-cluster.sh up --no-controller,
# hooks replaced by stubs (the prolog sleeps for the job named slowprolog),
# counts published by hand, then the jobs of README.md. Needs root. Job ids
# and times differ from run to run; the parser tests read only what the
# jobs below make certain.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
dir=$(mktemp -d /tmp/migsched-capture-XXXXXX)
"$repo/deploy/slurm/local-cluster.sh" up "$dir" --no-controller
trap '"$repo/deploy/slurm/local-cluster.sh" down "$dir"' EXIT
. "$dir/env"
printf '#!/bin/sh\n[ "$SLURM_JOB_NAME" = slowprolog ] && sleep 25\nexit 0\n' >"$dir/hooks/prolog-slurmctld"
printf '#!/bin/sh\nexit 0\n' >"$dir/hooks/epilog-slurmctld"
printf '#!/bin/sh\nexit 0\n' >"$dir/hooks/task-prolog"
gres() { echo "mig:1g.5gb:$1,mig:1g.5gb+me:0,mig:1g.10gb:0,mig:2g.10gb:0,mig:3g.20gb:$2,mig:4g.20gb:0,mig:7g.40gb:$3"; }
scontrol update NodeName=n1 Gres="$(gres 2 1 0)"
scontrol update NodeName=n2 Gres="$(gres 1 0 1)"
scontrol update NodeName=n3 Gres="$(gres 0 0 0)"
scontrol -o show partition mig >"$here/partition-down.txt"
scontrol update PartitionName=mig State=UP
scontrol -o show partition mig >"$here/partition-up.txt"
cd /tmp
sbatch -p mig -J a --gres=mig:1g.5gb:2 --requeue --comment=migratable=restart --wrap 'sleep 600'
sbatch -p mig -J b --gres=mig:3g.20gb:1 --comment=migratable=bogus --wrap 'sleep 600'
sbatch -p mig -J c -N2 --gres=mig:7g.40gb:1 --wrap 'sleep 600'
sbatch -p mig -J d --gres=mig:1g.5gb:1,mig:3g.20gb:1 -w n3 --wrap 'sleep 600' || true  # refused
sbatch -p mig -J e --gres=mig:2g.10gb:1 --exclude=n1 --wrap 'sleep 600'
sbatch -p mig -J f --gres=mig:7g.40gb:1 --wrap 'sleep 600'
sleep 3
sbatch -p mig -J g --gres=mig:4g.20gb:1 --wrap 'sleep 600'
sbatch -p mig -J h --gres=mig:1g.5gb:1 --requeue --wrap 'sleep 600'
sbatch -p mig -J nomig --wrap 'sleep 600'
sbatch -p mig -J done --wrap 'true'
sleep 3
scontrol hold 7
scontrol update JobId=7 AdminComment="migsched: can never run: test"
scontrol requeue 8
scontrol update NodeName=n3 Gres="$(gres 1 0 0)"
sbatch -p mig -J slowprolog --gres=mig:1g.5gb:1 -w n3 --wrap 'sleep 600'
sleep 2
squeue --json >"$here/squeue.json"
sinfo --json >"$here/sinfo.json"
for j in 1 7 8 11; do scontrol -o show job "$j" >"$here/scontrol-job-$j.txt"; done
scontrol update NodeName=n1 Gres="$(gres 2 1 1)"
scontrol update NodeName=n3 Gres="$(gres 1 0 1)"
sleep 3
scontrol update JobId=1 AdminComment="migsched: bound n1=MIG-1111|0|1g.5gb|0,MIG-2222|0|1g.5gb|1"
scontrol -o show job 3 >"$here/scontrol-job-3.txt"
scontrol -o show job 1 >"$here/scontrol-job-1-bound.txt"
squeue --json >"$here/squeue-multinode.json"
sinfo --json >"$here/sinfo-multinode.json"
