#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, to run the workflow through the SLURM profile
# (profiles/slurm) without a real cluster: docs/cluster.md.
#
#   sudo scripts/slurm_local.sh start    # install (Debian/Ubuntu packages), configure, start
#   scripts/slurm_local.sh status        # daemons, sinfo
#   sudo scripts/slurm_local.sh stop     # stop slurmctld and slurmd (munged keeps running)
#
# Idempotent: `start` installs slurm-wlm and munge only when missing, rewrites
# /etc/slurm/slurm.conf only when it changes (a changed file restarts the daemons), and starts
# munged, slurmctld and slurmd only when they are not running. The node is this host, with
# the CPUs and memory `slurmd -C` finds; one partition, `local`, the default. There is no
# accounting database (no slurmdbd, no sacct): the profile queries job status with squeue,
# and MinJobAge keeps finished jobs visible to squeue and `scontrol show job` for an hour.
# slurmctld and slurmd run as root; processes are tracked through /proc and each job is
# bound to the CPUs it was given with sched_setaffinity (task/affinity): no cgroups needed.
set -euo pipefail

CONF_DIR=/etc/slurm
CONF=$CONF_DIR/slurm.conf
LOG_DIR=/var/log/slurm
STATE_DIR=/var/spool/slurmctld
SPOOL_DIR=/var/spool/slurmd
RUN_DIR=/run/slurm
PARTITION=local

die() { echo "slurm_local.sh: $*" >&2; exit 1; }

need_root() { [[ $(id -u) -eq 0 ]] || die "'$1' needs root (sudo $0 $1)"; }

running() {  # running <pidfile>: the process the pid file names is alive
  [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

install_packages() {
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
    && return
  command -v apt-get >/dev/null || die "slurmctld, slurmd or munged missing and no apt-get: \
install SLURM and MUNGE with this system's package manager"
  echo "installing slurm-wlm and munge"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
}

start_munge() {
  local key=/etc/munge/munge.key pidfile=/run/munge/munged.pid
  if [[ ! -s $key ]]; then
    dd if=/dev/urandom bs=1 count=1024 of=$key status=none
  fi
  chown munge:munge $key && chmod 400 $key
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  running $pidfile && return
  runuser -u munge -- munged --pid-file=$pidfile
}

write_conf() {  # prints "changed" when slurm.conf was (re)written
  local node new
  node=$(slurmd -C | head -n 1)  # NodeName=<host> CPUs=... RealMemory=<MiB>
  [[ $node == NodeName=* ]] || die "slurmd -C did not describe this node: $node"
  new=$(cat <<EOF
# Written by scripts/slurm_local.sh: a one-node cluster on $(hostname), no accounting.
ClusterName=local
SlurmctldHost=$(hostname)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE_DIR
SlurmdSpoolDir=$SPOOL_DIR
SlurmctldPidFile=$RUN_DIR/slurmctld.pid
SlurmdPidFile=$RUN_DIR/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=3600
ReturnToService=2
SchedulerType=sched/backfill
$node
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
)
  mkdir -p $CONF_DIR
  if [[ ! -f $CONF ]] || [[ $(cat $CONF) != "$new" ]]; then
    printf '%s\n' "$new" > $CONF
    echo changed
  fi
}

stop_daemon() {  # stop_daemon <name>: TERM the process of its pid file, wait up to 10 s
  local pidfile=$RUN_DIR/$1.pid
  running "$pidfile" || return 0
  kill "$(cat "$pidfile")"
  for _ in $(seq 50); do running "$pidfile" || return 0; sleep 0.2; done
  die "$1 (pid $(cat "$pidfile")) did not stop"
}

start() {
  need_root start
  install_packages
  start_munge
  mkdir -p $LOG_DIR $STATE_DIR $SPOOL_DIR $RUN_DIR
  if [[ $(write_conf) == changed ]]; then
    stop_daemon slurmd
    stop_daemon slurmctld
  fi
  running $RUN_DIR/slurmctld.pid || slurmctld
  running $RUN_DIR/slurmd.pid || slurmd
  for _ in $(seq 50); do  # the node registers within seconds
    if sinfo -h -N -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
      sinfo
      return
    fi
    sleep 0.2
  done
  scontrol update NodeName="$(hostname)" State=RESUME 2>/dev/null || true
  sinfo
  sinfo -h -N -o %t | grep -qE '^(idle|mix|alloc)' \
    || die "the node is not idle; see $LOG_DIR/slurmctld.log and $LOG_DIR/slurmd.log"
}

stop() {
  need_root stop
  stop_daemon slurmd
  stop_daemon slurmctld
}

status() {
  for daemon in slurmctld slurmd; do
    if running $RUN_DIR/$daemon.pid; then
      echo "$daemon: running (pid $(cat $RUN_DIR/$daemon.pid))"
    else
      echo "$daemon: stopped"
    fi
  done
  sinfo 2>/dev/null || true
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) die "usage: $0 start|stop|status" ;;
esac
