#!/usr/bin/env bash
# Start a single-node SLURM cluster on 127.0.0.1 (Debian slurm-wlm + munge, as root, no systemd) and wait
# until `sinfo` shows the node idle. Idempotent: a running cluster is left as it is.
#   tests/cluster/start_slurm.sh          install (apt) if missing, configure, start
#   tests/cluster/start_slurm.sh --stop   stop the daemons
# The configuration is a minimal single-node one: proctrack/linuxproc, task/none, no accounting
# database (sacct then asks slurmctld, which keeps finished jobs for MinJobAge seconds).
set -euo pipefail

if [[ "${1:-}" == "--stop" ]]; then
    pkill -x slurmd || true
    pkill -x slurmctld || true
    pkill -x munged || true
    exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
    echo "start_slurm.sh: must run as root (munged, slurmctld and slurmd are started by hand)" >&2
    exit 3
fi

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    if ! command -v apt-get >/dev/null; then
        echo "start_slurm.sh: slurm-wlm and munge are not installed and apt-get is not available" >&2
        exit 3
    fi
    export DEBIAN_FRONTEND=noninteractive
    # another apt-get on the machine holds dpkg's lock: wait for it rather than fail at once (exit 100)
    apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
    apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends slurm-wlm munge >/dev/null
fi

NODE=$(hostname -s)
# the CPUs this machine gives us, not OMP_NUM_THREADS (nproc honours it, and the tests' processes set it to 1)
CPUS=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
# leave 2 GiB to the system; slurmd refuses to start when RealMemory exceeds what it sees
MEM=$(awk '/MemTotal/ {m = int($2 / 1024) - 2048; print (m > 1024 ? m : 1024)}' /proc/meminfo)

mkdir -p /etc/slurm /run/slurm /var/lib/slurm/slurmd /var/lib/slurm/slurmctld /var/log/slurm /run/munge
NEW_CONF=$(mktemp)
cat > "$NEW_CONF" <<CONF
ClusterName=dpiw
SlurmctldHost=${NODE}(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=300
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmdSpoolDir=/var/lib/slurm/slurmd
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=${NODE} NodeAddr=127.0.0.1 CPUs=${CPUS} RealMemory=${MEM} State=UNKNOWN
PartitionName=debug Nodes=${NODE} Default=YES MaxTime=INFINITE State=UP
CONF
if ! cmp -s "$NEW_CONF" /etc/slurm/slurm.conf; then
    # daemons started with another configuration (another CPU count) keep it, and a node that says fewer CPUs
    # than a job asks leaves the job pending for ever: stop them, they start below with this one
    pkill -x slurmd || true
    pkill -x slurmctld || true
    for _ in $(seq 50); do pgrep -x slurmctld >/dev/null || pgrep -x slurmd >/dev/null || break; sleep 0.2; done
    mv "$NEW_CONF" /etc/slurm/slurm.conf
    chmod 0644 /etc/slurm/slurm.conf
else
    rm -f "$NEW_CONF"
fi

if [[ ! -s /etc/munge/munge.key ]]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=128 status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
chmod 0700 /etc/munge && chmod 0400 /etc/munge/munge.key

pgrep -x munged >/dev/null || su -s /bin/sh munge -c /usr/sbin/munged
for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.2; done
munge -n | unmunge >/dev/null

pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd -N "$NODE"

for _ in $(seq 60); do
    state=$(sinfo -h -N -n "$NODE" -o %T 2>/dev/null || true)
    case "$state" in
        idle | mixed | allocated) echo "slurm: node $NODE $state (CPUs=$CPUS, RealMemory=${MEM} MB)"; exit 0 ;;
        down* | drain*) scontrol update NodeName="$NODE" State=RESUME 2>/dev/null || true ;;
    esac
    sleep 1
done
echo "start_slurm.sh: node $NODE did not become idle; sinfo says '${state:-nothing}'" >&2
tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
