#!/usr/bin/env bash
# Run a command next to a real single-node SLURM (munge + slurmctld + slurmd, no accounting) started for it.
# Usage: unshare --net tests/slurm/run_in_cluster.sh STATE_DIR COMMAND...
# Inside a private network namespace all SLURM traffic stays on this namespace's loopback; 127.0.0.2 is
# added because glibc's AI_ADDRCONFIG ignores 127.0.0.1 alone. The jobs read the
# configuration at /etc/slurm/slurm.conf (the job-step plugin drops SLURM_CONF). Daemons stop by their PID files.
set -euo pipefail
state=$(realpath "$1"); shift
mkdir -p "$state"/{spool,ctld}
ip link set lo up
ip addr add 127.0.0.2/8 dev lo 2>/dev/null || true

cpus=$(nproc)
memory=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
cat > "$state/slurm.conf" <<CONF
ClusterName=bnnrepro-test
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=300
EnforcePartLimits=ALL
DefMemPerCPU=500
MailProg=/bin/true
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
# The jobs need it at /etc/slurm/slurm.conf: a configuration found there is kept aside and put back at the end, and
# ours is removed then (left behind, it points every later `scontrol` at a controller that is gone: each snakemake
# call would wait 10 s for the SLURM executor plugin's `scontrol show config`).
mkdir -p /etc/slurm
if [ -e /etc/slurm/slurm.conf ] || [ -L /etc/slurm/slurm.conf ]; then mv /etc/slurm/slurm.conf "$state/slurm.conf.before"; fi
ln -s "$state/slurm.conf" /etc/slurm/slurm.conf

stop() {
  for pid_file in "$state/slurmd.pid" "$state/slurmctld.pid" /run/munge/munged.pid; do
    [ -f "$pid_file" ] || continue
    pid=$(cat "$pid_file")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -f /etc/slurm/slurm.conf
  if [ -e "$state/slurm.conf.before" ] || [ -L "$state/slurm.conf.before" ]; then
    mv "$state/slurm.conf.before" /etc/slurm/slurm.conf
  fi
}
trap stop EXIT

install -d -o munge -g munge /run/munge
runuser -u munge -- /usr/sbin/munged
slurmctld -i
slurmd -N localhost
for _ in $(seq 300); do
  sinfo -h -o %T 2>/dev/null | grep -q idle && break
  sleep 0.1
done
sinfo -h -o %T | grep -q idle || { echo "SLURM node did not become idle" >&2; cat "$state"/*.log >&2; exit 1; }
cat "$state/slurmctld.pid" "$state/slurmd.pid" /run/munge/munged.pid > "$state/started.pids"  # for the caller's checks
"$@"
