#!/usr/bin/env bash
# Slurm on the multi-host test cluster (test/cluster/cluster.sh): real Slurm (Debian's 22.05)
# and MUNGE, no stand-in.
#
# - slurmctld runs on the management side: in the cluster's switch namespace, which gets an
#   address on the management network (10.91.3.254, netc), under the hostname "ctl";
# - one slurmd runs in every host namespace, as node hI (its UTS hostname), with its own
#   spool directory, pid file, log and TmpFS (SlurmdSpoolDir etc. end in %n);
# - one munged serves them all: its socket is a file, and a file's Unix socket is reached
#   from any network namespace (only abstract sockets belong to one), so one key and one
#   daemon, in the switch namespace, authenticate every host;
# - slurmd enters its host's network namespace with nsenter, not `ip netns exec`: the latter
#   mounts a sysfs of its own without /sys/fs/cgroup, and Slurm 22.05's slurmd refuses to
#   start without a cgroup file system ("Unable to initialize cgroup plugin") even though
#   this configuration uses no cgroup (proctrack/linuxproc, task/none). Jobs therefore see
#   the machine's /sys; their network is the host's.
# Everything lives in the cluster's state directory (CLUSTER_DIR/slurm) and namespaces:
# slurm_down (or the cluster's own down) kills every daemon and removes it all.
#
# As a library, after cluster.sh and cluster_up:
#   . test/cluster/slurm.sh
#   slurm_up                             # daemons started, every node idle (bounded in time)
#   slurm_client h0 sbatch --wait -N 3 job.sh
#   slurm_node_state h2                  # idle, allocated, down*, ...
#   slurm_down                           # every daemon killed, spool and state removed
# As a command, on a cluster made by `eval "$(test/cluster/cluster.sh up 3)"`:
#   test/cluster/slurm.sh up | down | status | run HOST CMD... | check | install-deps
# docs/slurm.md explains what works on it and why.

SLURM_SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SLURM_SELF=$SLURM_SRC_DIR/slurm.sh
if ! declare -F cluster_up >/dev/null; then
    # shellcheck source=test/cluster/cluster.sh
    . "$SLURM_SRC_DIR/cluster.sh"
fi

SLURM_CTL_HOST=ctl
SLURM_CTL_HOSTPART=254          # the controller's address: 10.91.<netc>.254
SLURM_NODE_CPUS=${SLURM_NODE_CPUS:-4}   # per node: room for replacements beside 2 ranks
# Slurm's daemons and what runs a job step; slurm_down kills these by name, in the
# cluster's namespaces only.
SLURM_DAEMONS="slurmd slurmstepd slurmctld slurmscriptd munged"
SLURM_PACKAGES=(slurmctld slurmd slurm-client munge libpmix-dev)

slurm_say() { printf 'slurm: %s\n' "$*" >&2; }

slurm_dir() { echo "$CLUSTER_DIR/slurm"; }

# The controller's address on the management network.
slurm_ctl_addr() {
    echo "10.91.$(cluster_net_number "$CLUSTER_MANAGEMENT_NET").$SLURM_CTL_HOSTPART"
}

# slurm_unavailable: prints why Slurm cannot run here and returns 0; returns 1 if it can.
slurm_unavailable() {
    local tool why
    if why=$(cluster_unavailable); then echo "$why"; return 0; fi
    for tool in slurmctld slurmd slurmstepd sbatch srun sinfo scontrol munged nsenter; do
        command -v "$tool" >/dev/null 2>&1 || {
            echo "'$tool' is missing (test/cluster/slurm.sh install-deps installs Slurm)"; return 0; }
    done
    return 1
}

# Debian's Slurm and MUNGE (and Debian's PMIx, which slurmd's mpi/pmix plugin loads, for
# srun --mpi=pmix). Their services are not started here: only slurm_up starts daemons.
slurm_install_deps() {
    local missing=() pkg
    for pkg in "${SLURM_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        slurm_say "cannot install ${missing[*]} (not root, or no apt-get):" \
                  "the Slurm tests will be skipped"
        return 0
    fi
    slurm_say "installing ${missing[*]}"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
             "${missing[@]}" >&2; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${missing[@]}" >&2 || { slurm_say "could not install ${missing[*]}"; return 1; }
    fi
}

slurm_write_conf() { # DIR
    local dir=$1 i nodes="h[0-$((CLUSTER_HOSTS - 1))]" k
    k=$(cluster_net_number "$CLUSTER_MANAGEMENT_NET")
    [ "$CLUSTER_HOSTS" = 1 ] && nodes=h0
    {
        cat <<EOF
# Written by test/cluster/slurm.sh for cluster $CLUSTER_ID.
ClusterName=ompires
SlurmctldHost=$SLURM_CTL_HOST($(slurm_ctl_addr))
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
# %n: every host shares /tmp, and srun --mpi=pmix makes directories named after the step
TmpFS=$dir/tmp/%n
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
# the node's CPUs as written below, not the machine's 2 cores
SlurmdParameters=config_overrides
# a node lost and back (its slurmd started again) returns to service by itself
ReturnToService=2
# a lost node is DOWN about 25 s after its loss: two pings of ~12 s each fail
SlurmdTimeout=5
# scancel: SIGKILL 5 s after SIGTERM (Slurm's default: 30)
KillWait=5
EOF
        for ((i = 0; i < CLUSTER_HOSTS; i++)); do
            echo "NodeName=h$i NodeAddr=10.91.$k.$((i + 1)) CPUs=$SLURM_NODE_CPUS RealMemory=1" \
                 "State=UNKNOWN"
        done
        echo "PartitionName=main Nodes=$nodes Default=YES MaxTime=INFINITE State=UP"
    } >"$dir/slurm.conf"
}

# slurm_client HOST CMD...: a Slurm command (sbatch, salloc, srun, sinfo, ...) on HOST.
slurm_client() {
    local host=$1
    shift
    slurm_require || return 1
    SLURM_CONF=$(slurm_dir)/slurm.conf cluster_exec "$host" "$@"
}

# Slurm is up on the current cluster (Slurm's commands wait a minute for a missing
# configuration file before they give up).
slurm_require() {
    cluster_require || return 1
    [ -f "$(slurm_dir)/slurm.conf" ] && return 0
    slurm_say "Slurm is not up on cluster $CLUSTER_ID (test/cluster/slurm.sh up)"
    return 1
}

# slurm_start_slurmd HOST: slurmd as node HOST, in HOST's network namespace (nsenter: see
# the top of this file) and a UTS namespace named after it. It forks into the background.
slurm_start_slurmd() {
    local i ns
    i=$(cluster_host_index "$1") || return 1
    ns=$(cluster_ns "h$i")
    timeout 20 nsenter --net="/run/netns/$ns" unshare --uts -- \
        sh -c 'hostname "$0" && exec slurmd -f "$1" -N "$0"' "h$i" "$(slurm_dir)/slurm.conf"
}

slurm_daemon_alive() { # PIDFILE
    local pid
    pid=$(cat "$1" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# slurm_wait_idle [SECONDS]: until every node is idle (default 60 s); 1, with the nodes'
# states and the logs' last lines, if not.
slurm_wait_idle() {
    local secs=${1:-60} t states
    for ((t = 0; t < secs * 2; t++)); do
        states=$(slurm_client h0 sinfo -h -N -o '%N %T' 2>/dev/null | sort -u)
        if [ -n "$states" ] && ! grep -qv ' idle$' <<<"$states"; then return 0; fi
        sleep 0.5
    done
    slurm_say "nodes not idle after $secs s: $(tr '\n' ' ' <<<"$states")"
    tail -n 5 "$(slurm_dir)"/log/*.log >&2 2>/dev/null
    return 1
}

# slurm_up: Slurm on the current cluster, every node idle; on failure nothing is left.
slurm_up() {
    local dir i why sw
    cluster_require || return 1
    if why=$(slurm_unavailable); then slurm_say "cannot run here: $why"; return 1; fi
    dir=$(slurm_dir)
    if [ -e "$dir" ]; then slurm_say "Slurm is already up on cluster $CLUSTER_ID"; return 1; fi
    mkdir -p "$dir"/{munge,key,ctld,run,log} || return 1
    for ((i = 0; i < CLUSTER_HOSTS; i++)); do
        mkdir -p "$dir/spool/h$i" "$dir/tmp/h$i" || return 1
    done
    # munged wants its key readable by its user only, and its socket's directory open to all
    chmod 700 "$dir/key" && chmod 755 "$dir/munge" || return 1
    head -c 1024 /dev/urandom >"$dir/key/munge.key" && chmod 400 "$dir/key/munge.key" || return 1
    slurm_write_conf "$dir" || return 1
    sw=$(cluster_switch_ns)
    if ! ip -n "$sw" addr add "$(slurm_ctl_addr)/24" dev "br-$CLUSTER_MANAGEMENT_NET" \
        || ! timeout 20 ip netns exec "$sw" munged --socket="$dir/munge/munge.socket" \
               --key-file="$dir/key/munge.key" --pid-file="$dir/run/munged.pid" \
               --log-file="$dir/log/munged.log" --seed-file="$dir/key/munged.seed" \
        || ! timeout 20 ip netns exec "$sw" unshare --uts -- \
               sh -c 'hostname "$0" && exec slurmctld -f "$1"' "$SLURM_CTL_HOST" "$dir/slurm.conf"; then
        slurm_say "the controller did not start (logs: $dir/log)"
        tail -n 5 "$dir"/log/*.log >&2 2>/dev/null
        slurm_down
        return 1
    fi
    for ((i = 0; i < CLUSTER_HOSTS; i++)); do
        if ! slurm_start_slurmd "h$i"; then
            slurm_say "slurmd on h$i did not start"
            slurm_down
            return 1
        fi
    done
    slurm_wait_idle 60 || { slurm_down; return 1; }
}

# The processes of Slurm and MUNGE in the cluster's namespaces ("PID NAME" lines).
slurm_daemon_pids() {
    local ns p name
    for ns in $(cluster_namespaces_of "$CLUSTER_ID"); do
        for p in $(ip netns pids "$ns" 2>/dev/null); do
            name=$(cat "/proc/$p/comm" 2>/dev/null) || continue
            case " $SLURM_DAEMONS " in *" $name "*) echo "$p $name" ;; esac
        done
    done
}

# slurm_signal_daemons SIGNAL: SIGNAL to every Slurm and MUNGE process of the cluster; 0
# once none is left (waiting at most 5 s).
slurm_signal_daemons() {
    local t pids
    pids=$(slurm_daemon_pids | cut -d' ' -f1)
    # shellcheck disable=SC2086
    [ -n "$pids" ] && kill "-$1" $pids 2>/dev/null
    for ((t = 0; t < 50; t++)); do
        [ -z "$(slurm_daemon_pids)" ] && return 0
        sleep 0.1
    done
    return 1
}

# slurm_down: every Slurm and MUNGE process of the cluster killed (and what jobs left on its
# hosts), the controller's address removed, the spool and state deleted. Idempotent.
slurm_down() {
    local rc=0
    [ -n "$CLUSTER_ID" ] || return 0
    # SIGTERM first (they write their state and leave), SIGKILL what is left after 5 s
    if ! slurm_signal_daemons TERM; then
        cluster_reap >/dev/null 2>&1 # the hosts: what jobs left, daemons still alive
        if ! slurm_signal_daemons KILL; then
            slurm_say "still alive: $(slurm_daemon_pids | tr '\n' ' ')"
            rc=1
        fi
    fi
    cluster_reap >/dev/null 2>&1 || rc=1
    ip -n "$(cluster_switch_ns)" addr del "$(slurm_ctl_addr)/24" dev "br-$CLUSTER_MANAGEMENT_NET" \
        2>/dev/null
    rm -rf "$(slurm_dir)"
    return $rc
}

slurm_node_state() { # NODE: its state as sinfo says it (idle, allocated, down*, ...)
    slurm_client h0 sinfo -h -N -n "$1" -o %T 2>/dev/null | head -n 1
}

# slurm_wait_node_state NODE PATTERN SECONDS: until NODE's state matches PATTERN (grep -E).
slurm_wait_node_state() {
    local node=$1 pattern=$2 secs=$3 t state=""
    for ((t = 0; t < secs * 2; t++)); do
        state=$(slurm_node_state "$node")
        grep -qE "$pattern" <<<"$state" && return 0
        sleep 0.5
    done
    slurm_say "$node is '$state', not '$pattern', after $secs s"
    return 1
}

# slurm_reset: between tests: every job cancelled, what jobs left on the hosts killed, every
# node's slurmd running again (a test may have killed a host) and every node idle.
slurm_reset() {
    local i ns p name rc=0
    slurm_client h0 scancel --quiet --user=root 2>/dev/null
    for ((i = 0; i < CLUSTER_HOSTS; i++)); do
        ns=$(cluster_ns "h$i")
        for p in $(ip netns pids "$ns" 2>/dev/null); do
            name=$(cat "/proc/$p/comm" 2>/dev/null) || continue
            [ "$name" = slurmd ] || kill -KILL "$p" 2>/dev/null
        done
    done
    for ((i = 0; i < CLUSTER_HOSTS; i++)); do
        slurm_daemon_alive "$(slurm_dir)/run/slurmd-h$i.pid" && continue
        slurm_start_slurmd "h$i" || rc=1
    done
    slurm_wait_idle 90 || rc=1
    return $rc
}

# slurm_app_pids HOST: the MPI processes running on HOST (what a node's agent would tell of
# a preemption notice; PRRTE's daemon is not one of them).
slurm_app_pids() {
    local p
    for p in $(cluster_pids "$1"); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK=' && echo "$p"
    done
}

slurm_status() {
    slurm_require || return 1
    echo "Slurm on cluster $CLUSTER_ID: $(slurm_dir)"
    slurm_client h0 sinfo -N -l
    slurm_client h0 squeue
    slurm_daemon_pids
}

slurm_main() {
    local cmd=${1:-help}
    shift || true
    case "$cmd" in
        check|install-deps|help|-h|--help) ;;
        *) cluster_load || exit 1 ;;
    esac
    case "$cmd" in
        up) slurm_up ;;
        down) slurm_down ;;
        status) slurm_status ;;
        reset) slurm_reset ;;
        run) [ $# -ge 2 ] || { slurm_say "run HOST CMD..."; exit 2; }; slurm_client "$@" ;;
        check) local why; if why=$(slurm_unavailable); then echo "$why"; exit 1; fi ;;
        install-deps) slurm_install_deps ;;
        help|-h|--help)
            cat <<EOF
usage: slurm.sh COMMAND      (on the cluster of \$OMPIRES_CLUSTER: test/cluster/cluster.sh up N)
  up              slurmctld and munged on the management side, slurmd on every host
  down            every Slurm and MUNGE daemon killed, spool and state removed
  status          nodes, jobs, daemons
  reset           cancel every job, restart lost slurmds, wait until every node is idle
  run HOST CMD... a Slurm command on HOST (sbatch, salloc, srun, sinfo, scontrol, ...)
  check           exit 0 if Slurm can run here, else print why, exit 1
  install-deps    apt-get install ${SLURM_PACKAGES[*]}
EOF
            ;;
        *) slurm_say "unknown command '$cmd'"; exit 2 ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    slurm_main "$@"
fi
