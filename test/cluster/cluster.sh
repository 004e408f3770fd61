#!/usr/bin/env bash
# A multi-host test cluster on one machine: hosts are network namespaces, each with its own
# hostname (a UTS namespace), on two data networks (neta, netb) and one management network
# (netc) that PRRTE's daemons use, so that a cut data network does not cut the launcher.
# Every network is a bridge in a switch namespace; a host reaches it through a veth pair
# whose host end carries the network's name. Nothing is made in the root namespace, and
# every address exists only inside namespaces of the cluster itself.
#
# mpirun runs inside host h0 and starts PRRTE's daemons on the other hosts through the ssh
# launcher, with an agent (plm_ssh_agent) that enters the host's namespaces instead of
# opening an ssh connection. Each host also has a disk of its own: one directory, the same
# path on every host (cluster_node_local_dir), whose contents are the host's (a bind mount
# in a mount namespace of the host's processes), for node-local files that die with it.
#
# As a library (tests, benches):
#   . test/cluster/cluster.sh
#   cluster_up 3                 # h0 h1 h2; removed again at exit, INT or TERM
#   cluster_mpirun "$OMPI_PREFIX/bin/mpirun" [mpirun options] -np 6 PROGRAM [ARGS]
#   cluster_cut h1 neta; cluster_heal h1; cluster_kill_host h2; ...
#   cluster_down
# As a command:
#   eval "$(test/cluster/cluster.sh up 3)"      # sets OMPIRES_CLUSTER
#   test/cluster/cluster.sh mpirun "$OMPI_PREFIX/bin/mpirun" -np 6 hostname
#   test/cluster/cluster.sh down
# `test/cluster/cluster.sh help` lists every command; docs/cluster.md explains the rest.

# ---- naming -------------------------------------------------------------------------------
# Namespaces are named ompires-OWNER-RAND-hI (hosts) and ompires-OWNER-RAND-sw (the switch).
# OWNER is the process the cluster belongs to (0: none, made by hand): a cluster whose owner
# is gone is a leftover that the next cluster_up, or `down-all`, removes.
CLUSTER_NS_PREFIX=ompires-
CLUSTER_NETS=(neta netb netc)          # data, data, management
CLUSTER_MANAGEMENT_NET=netc
CLUSTER_DATA_NETS=neta,netb
CLUSTER_MAX_HOSTS=200
CLUSTER_SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLUSTER_SELF=$CLUSTER_SRC_DIR/cluster.sh

# Addresses: network k (1-based position in CLUSTER_NETS) is 10.91.k.0/24, host hI is .I+1.
# The same private subnets in two clusters never meet: each cluster has its own namespaces.
cluster_net_number() { # NET -> 1, 2, 3
    local k
    for k in "${!CLUSTER_NETS[@]}"; do
        [ "${CLUSTER_NETS[$k]}" = "$1" ] && { echo $((k + 1)); return 0; }
    done
    echo "cluster: unknown network '$1' (networks: ${CLUSTER_NETS[*]})" >&2
    return 1
}

cluster_say() { printf 'cluster: %s\n' "$*" >&2; }

# ---- state of the current cluster ----------------------------------------------------------
# CLUSTER_ID, CLUSTER_HOSTS (count), CLUSTER_DIR (state directory: cluster.env, the agent),
# CLUSTER_IPTABLES (the iptables that works in a namespace here). Commands find the cluster
# through OMPIRES_CLUSTER (its state directory), which cluster_up exports.
CLUSTER_ID=
CLUSTER_HOSTS=0
CLUSTER_DIR=
CLUSTER_IPTABLES=iptables

cluster_state_dir() { echo "${TMPDIR:-/tmp}/${CLUSTER_NS_PREFIX}$1"; }

# shellcheck disable=SC2120 # DIR is for libraries attaching to a cluster made elsewhere
cluster_load() { # [DIR]: read the cluster whose state directory is DIR (default $OMPIRES_CLUSTER)
    local dir=${1:-${OMPIRES_CLUSTER:-}}
    if [ -z "$dir" ]; then
        cluster_say "no cluster: run 'eval \"\$($CLUSTER_SELF up N)\"' or set OMPIRES_CLUSTER"
        return 1
    fi
    if [ ! -f "$dir/cluster.env" ]; then
        cluster_say "no cluster in '$dir' (was it taken down?)"
        return 1
    fi
    # shellcheck source=/dev/null
    . "$dir/cluster.env"
    CLUSTER_DIR=$dir
}

cluster_require() { [ -n "$CLUSTER_ID" ] || cluster_load; }

cluster_ns() { # HOST -> its namespace (HOST: hI, I, or any of its addresses)
    local i
    i=$(cluster_host_index "$1") || return 1
    echo "${CLUSTER_NS_PREFIX}$CLUSTER_ID-h$i"
}

cluster_switch_ns() { echo "${CLUSTER_NS_PREFIX}$CLUSTER_ID-sw"; }

cluster_host_index() { # HOST -> I; HOST is hI, I, or an address 10.91.k.(I+1)
    local h=$1 i=""
    cluster_require || return 1
    case "$h" in
        h[0-9]*) i=${h#h} ;;
        [0-9]|[0-9][0-9]|[0-9][0-9][0-9]) i=$h ;;
        10.91.[1-9].[0-9]*)
            local k=${h#10.91.}
            k=${k%%.*}
            [ "$k" -le ${#CLUSTER_NETS[@]} ] && [[ "${h##*.}" =~ ^[0-9]+$ ]] && i=$((${h##*.} - 1)) ;;
    esac
    if ! [[ "$i" =~ ^[0-9]+$ ]] || [ "$i" -ge "$CLUSTER_HOSTS" ]; then
        cluster_say "no host '$h' in this cluster (h0 .. h$((CLUSTER_HOSTS - 1)))"
        return 1
    fi
    echo "$((10#$i))"
}

cluster_addr() { # HOST NET -> the host's address on NET
    local i k
    i=$(cluster_host_index "$1") || return 1
    k=$(cluster_net_number "$2") || return 1
    echo "10.91.$k.$((i + 1))"
}

# --host for mpirun: h0 by its hostname (what prterun on h0 calls itself), the others by
# their management address (they have no name a resolver knows). Addresses do not depend on
# the cluster, so with COUNT this works before cluster_up (a test's arguments are built
# before it knows whether it will run).
cluster_hosts_arg() { # SLOTS [COUNT]: "h0:SLOTS,10.91.3.2:SLOTS,..." for the first COUNT hosts
    local slots=${1:-} count=${2:-} i list k
    if ! [[ "$slots" =~ ^[1-9][0-9]*$ ]] || ! [[ "$count" =~ ^[0-9]*$ ]]; then
        cluster_say "cluster_hosts_arg SLOTS [COUNT]: numbers, SLOTS at least 1 (got '$slots' '$count')"
        return 2
    fi
    if [ -z "$count" ]; then
        cluster_require || return 1
        count=$CLUSTER_HOSTS
    fi
    if [ "$count" -lt 1 ] || { [ -n "$CLUSTER_ID" ] && [ "$count" -gt "$CLUSTER_HOSTS" ]; }; then
        cluster_say "cannot list $count hosts: the cluster has $CLUSTER_HOSTS"
        return 1
    fi
    k=$(cluster_net_number "$CLUSTER_MANAGEMENT_NET")
    list="h0:$slots"
    for ((i = 1; i < count; i++)); do list="$list,10.91.$k.$((i + 1)):$slots"; done
    echo "$list"
}

# ---- can it run here? ----------------------------------------------------------------------
# cluster_unavailable: prints why the cluster cannot run here and returns 0, or returns 1
# (it can). Checks what cluster_up needs, by trying it.
cluster_unavailable() {
    local tool probe
    [ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)"; return 0; }
    for tool in ip unshare hostname perl iptables mount; do
        command -v "$tool" >/dev/null 2>&1 || {
            echo "'$tool' is missing (test/cluster/cluster.sh install-deps installs it)"; return 0; }
    done
    # named as a cluster of this shell's, so that a probe cut short is removed as a leftover
    probe=${CLUSTER_NS_PREFIX}$$-$(printf '%04x' $((RANDOM % 65536)))-probe
    ip netns add "$probe" 2>/dev/null || { echo "cannot make a network namespace (ip netns add)"; return 0; }
    if ! ip netns exec "$probe" unshare --uts -- true 2>/dev/null; then
        ip netns del "$probe"
        echo "cannot make a UTS namespace (unshare --uts)"
        return 0
    fi
    if ! ip netns exec "$probe" unshare --mount --propagation private -- \
            mount --bind / /mnt 2>/dev/null; then
        ip netns del "$probe"
        echo "cannot bind-mount in a mount namespace (unshare --mount, mount --bind)"
        return 0
    fi
    if ! cluster_pick_iptables "$probe" >/dev/null; then
        ip netns del "$probe"
        echo "neither iptables nor iptables-legacy works inside a network namespace"
        return 0
    fi
    ip netns del "$probe"
    return 1
}

# iptables is iptables-nft on Debian 12; a kernel without nf_tables may still have the
# legacy backend. Prints the first that can list its rules inside namespace NS.
cluster_pick_iptables() { # NS
    local cmd
    for cmd in iptables iptables-legacy; do
        command -v "$cmd" >/dev/null 2>&1 || continue
        if ip netns exec "$1" "$cmd" -w -S >/dev/null 2>&1; then echo "$cmd"; return 0; fi
    done
    return 1
}

# Debian packages the cluster needs: iptables is not installed on a fresh machine.
cluster_install_deps() {
    local missing=() pkg cmd pkg_cmd
    for pkg_cmd in iproute2:ip util-linux:unshare hostname:hostname iptables:iptables perl-base:perl \
                   mount:mount; do
        pkg=${pkg_cmd%%:*} cmd=${pkg_cmd#*:}
        command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" != 0 ]; then
        cluster_say "not root: cannot install ${missing[*]} (the cluster tests will be skipped)"
        return 0
    fi
    cluster_say "installing ${missing[*]}"
    if ! DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 \
           || ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2; then
        cluster_say "could not install ${missing[*]}"
        return 1
    fi
}

# ---- up and down ---------------------------------------------------------------------------
# cluster_up N [--owner PID] [--no-trap]: make hosts h0..h(N-1) and make them the current
# cluster (exports OMPIRES_CLUSTER). The owner defaults to this shell ($$); unless --no-trap,
# the cluster is taken down when this shell exits or gets INT/TERM (the traps for those
# signals are replaced). On failure nothing is left behind.
cluster_up() {
    local n=${1:-} owner=$$ trap=1 why
    shift || true
    while [ $# -gt 0 ]; do
        case "$1" in
            --owner) owner=${2:?--owner PID}; shift 2 ;;
            --no-trap) trap=0; shift ;;
            *) cluster_say "cluster_up: unknown option '$1'"; return 2 ;;
        esac
    done
    if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt "$CLUSTER_MAX_HOSTS" ]; then
        cluster_say "cluster_up N: N must be a number of hosts from 1 to $CLUSTER_MAX_HOSTS (got '$n')"
        return 2
    fi
    if why=$(cluster_unavailable); then cluster_say "cannot run here: $why"; return 1; fi
    if [ -n "$CLUSTER_ID" ] && [ -d "$CLUSTER_DIR" ]; then
        cluster_say "a cluster ($CLUSTER_ID) is already up in this shell; take it down first"
        return 1
    fi
    cluster_remove_leftovers
    # A fresh id: the random part is retried while its namespace name is taken.
    local id sw tries
    for ((tries = 0; tries < 20; tries++)); do
        id=$owner-$(printf '%04x' $((RANDOM % 65536)))
        sw=${CLUSTER_NS_PREFIX}$id-sw
        ip netns add "$sw" 2>/dev/null && break
        id=
    done
    [ -n "$id" ] || { cluster_say "could not make a switch namespace"; return 1; }
    CLUSTER_ID=$id CLUSTER_HOSTS=$n CLUSTER_DIR=$(cluster_state_dir "$id")
    if [ "$trap" = 1 ]; then
        trap 'cluster_down' EXIT
        trap 'cluster_down; exit 130' INT
        trap 'cluster_down; exit 143' TERM
    fi
    if ! cluster_build "$n"; then
        cluster_say "bringing the cluster up failed; removing what was made"
        cluster_down
        return 1
    fi
    export OMPIRES_CLUSTER=$CLUSTER_DIR
}

cluster_build() { # N: the switch namespace exists; make the state, the bridges and the hosts
    local n=$1 sw i k ns net
    sw=$(cluster_switch_ns)
    mkdir -p "$CLUSTER_DIR" "$CLUSTER_DIR/node-local" || return 1
    CLUSTER_IPTABLES=$(cluster_pick_iptables "$sw") || return 1
    printf 'CLUSTER_ID=%s\nCLUSTER_HOSTS=%s\nCLUSTER_IPTABLES=%s\n' \
        "$CLUSTER_ID" "$CLUSTER_HOSTS" "$CLUSTER_IPTABLES" >"$CLUSTER_DIR/cluster.env"
    cluster_write_agent || return 1
    ip -n "$sw" link set lo up || return 1
    for net in "${CLUSTER_NETS[@]}"; do
        ip -n "$sw" link add "br-$net" type bridge || return 1
        ip -n "$sw" link set "br-$net" up || return 1
    done
    for ((i = 0; i < n; i++)); do
        ns=${CLUSTER_NS_PREFIX}$CLUSTER_ID-h$i
        mkdir -p "$(cluster_host_disk "h$i")" || return 1
        ip netns add "$ns" || return 1
        ip -n "$ns" link set lo up || return 1
        for net in "${CLUSTER_NETS[@]}"; do
            k=$(cluster_net_number "$net")
            # Both ends are made directly inside their namespaces: nothing appears in the
            # root namespace, not even for a moment.
            ip link add "$net" netns "$ns" type veth peer name "h$i-$net" netns "$sw" || return 1
            ip -n "$ns" addr add "10.91.$k.$((i + 1))/24" dev "$net" || return 1
            ip -n "$ns" link set "$net" up || return 1
            ip -n "$sw" link set "h$i-$net" master "br-$net" up || return 1
        done
    done
}

# The launch agent PRRTE runs instead of ssh: a script with this cluster's state directory in
# it (plm_ssh_agent is split at spaces and colons, so it is one path with neither).
cluster_write_agent() {
    printf '#!/bin/sh\nOMPIRES_CLUSTER=%s exec %s agent "$@"\n' "$CLUSTER_DIR" "$CLUSTER_SELF" \
        >"$CLUSTER_DIR/agent" && chmod +x "$CLUSTER_DIR/agent"
}

cluster_namespaces_of() { # ID: the namespaces of cluster ID
    ip netns list 2>/dev/null | awk -v p="${CLUSTER_NS_PREFIX}$1-" 'index($1, p) == 1 { print $1 }'
}

cluster_kill_ns() { # NS: SIGKILL every process in network namespace NS, until none is left
    local tries pids
    for ((tries = 0; tries < 50; tries++)); do
        pids=$(ip netns pids "$1" 2>/dev/null)
        [ -z "$pids" ] && return 0
        # shellcheck disable=SC2086
        kill -KILL $pids 2>/dev/null
        sleep 0.1
    done
    cluster_say "processes still alive in $1 after SIGKILL: $(ip netns pids "$1" 2>/dev/null | tr '\n' ' ')"
    return 1
}

cluster_remove() { # ID: kill everything in cluster ID's namespaces, delete them and its state
    local ns rc=0
    for ns in $(cluster_namespaces_of "$1"); do
        cluster_kill_ns "$ns" || rc=1
        ip netns del "$ns" || rc=1
    done
    rm -rf "$(cluster_state_dir "$1")"
    return $rc
}

# cluster_down: take the current cluster down (idempotent; safe from a trap).
cluster_down() {
    [ -n "$CLUSTER_ID" ] || return 0
    local id=$CLUSTER_ID
    cluster_remove "$id"
    CLUSTER_ID='' CLUSTER_HOSTS=0 CLUSTER_DIR=''
    [ "${OMPIRES_CLUSTER:-}" = "$(cluster_state_dir "$id")" ] && unset OMPIRES_CLUSTER
    return 0
}

cluster_ids() { # every cluster id of this harness on the machine
    ip netns list 2>/dev/null | awk -v p="$CLUSTER_NS_PREFIX" 'index($1, p) == 1 { print $1 }' \
        | sed -n "s/^${CLUSTER_NS_PREFIX}\([0-9]*-[0-9a-f]*\)-[a-z0-9]*\$/\1/p" | sort -u
}

# Leftovers: clusters whose owner process is gone (a test killed with SIGKILL cannot run its
# trap). A cluster made by hand (owner 0) or whose owner lives is left alone unless FORCE.
cluster_remove_leftovers() { # [--force]
    local id owner
    for id in $(cluster_ids); do
        owner=${id%%-*}
        if [ "${1:-}" != --force ]; then
            [ "$owner" = 0 ] && continue
            kill -0 "$owner" 2>/dev/null && continue
        fi
        cluster_say "removing cluster $id"
        cluster_remove "$id"
    done
}

# ---- running things on hosts ---------------------------------------------------------------
# Each host's disk: the directory cluster_node_local_dir shows, on that host, what
# cluster_host_disk HOST holds (elsewhere the same path is an empty directory). A lost host
# loses its disk when a test removes that directory.
cluster_node_local_dir() { cluster_require && echo "$CLUSTER_DIR/node-local"; }
cluster_host_disk() { # HOST: where HOST's node-local files are, seen from outside the cluster
    local i
    i=$(cluster_host_index "$1") || return 1
    echo "$CLUSTER_DIR/disk/h$i"
}

# cluster_host_cmd HOST: sets the array cluster_cmd to the command prefix that runs a command
# on HOST: in its network namespace, in a new UTS namespace named after it and a mount
# namespace where its disk is mounted at the node-local directory. Every part execs the
# next, so the command keeps the caller's pid (timeout's signals reach it).
cluster_host_cmd() {
    local i ns
    i=$(cluster_host_index "$1") || return 1
    ns=${CLUSTER_NS_PREFIX}$CLUSTER_ID-h$i
    cluster_cmd=(ip netns exec "$ns" unshare --uts --mount --propagation private -- sh -c
                 'hostname "$0" && mount --bind "$1" "$2" && shift 2 && exec "$@"' "h$i"
                 "$CLUSTER_DIR/disk/h$i" "$CLUSTER_DIR/node-local")
}

cluster_exec() { # HOST CMD [ARGS...]: run CMD on HOST
    local cluster_cmd
    cluster_host_cmd "$1" || return 1
    shift
    "${cluster_cmd[@]}" "$@"
}

# Called by PRRTE's ssh launcher as an ssh would be: AGENT HOST WORD..., the words forming one
# command line for the remote user's shell (the launcher quotes it for the shell it assumes:
# the local login shell).
cluster_agent() {
    local cluster_cmd host=$1 shell
    shift
    cluster_host_cmd "$host" || exit 255
    shell=$(getent passwd "$(id -u)" | cut -d: -f7)
    [ -x "${shell:-}" ] || shell=/bin/sh
    exec "${cluster_cmd[@]}" "$shell" -c "$*"
}

# The mpirun options that make a job span the cluster. What the caller already set is kept:
# --host/-H (default: every host, with ceil(np / hosts) slots each, so ranks fill h0 first,
# then h1, ...), --bind-to (default none: every simulated host would bind its first rank to
# core 0 of the one real machine), btl_tcp_if_include (default the data networks), and
# mpi_yield_when_idle (default 1 when np is more than this machine's cores, or unknown).
# The last is what mpirun does by itself on one oversubscribed node; here every simulated
# host looks undersubscribed to it, so ranks would spin and a message would wait for the
# scheduler to run its receiver: coll_allreduce np 4 on two hosts took 16 s, 4.5 s with it.
cluster_mpirun_options() { # MPIRUN-ARGS...: prints one option per line
    local np="" prev="" a slots has_host=0 has_bind=0 has_tcp_if=0 has_yield=0
    for a in "$@"; do
        case "$prev" in -np|-n|--np|-c) np=$a ;; esac
        case "$a" in
            --host|--host=*|-H|--hostfile|--hostfile=*|--machinefile|--machinefile=*) has_host=1 ;;
            --bind-to|--bind-to=*) has_bind=1 ;;
            *btl_tcp_if_include*|*btl_tcp_if_exclude*) has_tcp_if=1 ;;
            *mpi_yield_when_idle*) has_yield=1 ;;
        esac
        prev=$a
    done
    echo --prtemca; echo plm_ssh_agent; echo "$CLUSTER_DIR/agent"
    echo --prtemca; echo oob_tcp_if_include; echo "$CLUSTER_MANAGEMENT_NET"
    if [ $has_host = 0 ]; then
        slots=1
        [[ "$np" =~ ^[0-9]+$ ]] && [ "$np" -gt 0 ] && slots=$(((np + CLUSTER_HOSTS - 1) / CLUSTER_HOSTS))
        echo --host; cluster_hosts_arg "$slots"
    fi
    [ $has_bind = 1 ] || { echo --bind-to; echo none; }
    [ $has_tcp_if = 1 ] || { echo --mca; echo btl_tcp_if_include; echo "$CLUSTER_DATA_NETS"; }
    if [ $has_yield = 0 ] && { ! [[ "$np" =~ ^[0-9]+$ ]] || [ "$np" -gt "$(nproc)" ]; }; then
        echo --mca; echo mpi_yield_when_idle; echo 1
    fi
}

# cluster_mpirun_cmd MPIRUN [OPTIONS...] PROGRAM [ARGS...]: sets the array cluster_cmd to
# the command that runs MPIRUN (a path, then the options every run takes, e.g. the test
# runner's "${mpirun[@]}") inside h0, across the cluster.
cluster_mpirun_cmd() {
    local opts=() line
    cluster_require || return 1
    [ $# -ge 1 ] || { cluster_say "cluster_mpirun MPIRUN [OPTIONS...] PROGRAM [ARGS...]"; return 2; }
    local mpirun=$1
    shift
    while IFS= read -r line; do opts+=("$line"); done < <(cluster_mpirun_options "$@")
    cluster_host_cmd h0 || return 1
    cluster_cmd+=("$mpirun" "${opts[@]}" "$@")
}

cluster_mpirun() { # MPIRUN [OPTIONS...] PROGRAM [ARGS...]: run it across the cluster
    local cluster_cmd
    cluster_mpirun_cmd "$@" || return
    "${cluster_cmd[@]}"
}

# ---- faults --------------------------------------------------------------------------------
cluster_iptables() { # HOST ARGS...: iptables inside HOST's namespace
    local ns
    ns=$(cluster_ns "$1") || return 1
    shift
    ip netns exec "$ns" "$CLUSTER_IPTABLES" -w "$@"
}

# cluster_cut_rules NET [PEER]: sets the array cut_rules to the two rule specs of a cut (one
# string each: INPUT, OUTPUT), word-split where they are used.
cluster_cut_rules() {
    local net=$1 peer=${2:-} from="" to="" a
    cluster_net_number "$net" >/dev/null || return 2
    if [ -n "$peer" ]; then
        a=$(cluster_addr "$peer" "$net") || return 2
        from="-s $a" to="-d $a"
    fi
    cut_rules=("INPUT -i $net $from -j DROP" "OUTPUT -o $net $to -j DROP")
}

# cluster_cut HOST NET [PEER]: HOST silently stops sending and receiving on NET (with PEER:
# only to and from PEER's address on NET). Packets are dropped: no error reaches anyone,
# as when a cable or a switch port dies.
cluster_cut() {
    local host=$1 rule cut_rules
    cluster_cut_rules "${2:-}" "${3:-}" || return
    for rule in "${cut_rules[@]}"; do
        # shellcheck disable=SC2086
        cluster_iptables "$host" -C $rule 2>/dev/null || cluster_iptables "$host" -I $rule || return 1
    done
}

# cluster_heal HOST [NET [PEER]]: undo cluster_cut; without NET every cut of HOST.
cluster_heal() {
    local host=$1 rule cut_rules
    if [ -z "${2:-}" ]; then
        cluster_iptables "$host" -F INPUT && cluster_iptables "$host" -F OUTPUT
        return
    fi
    cluster_cut_rules "$2" "${3:-}" || return
    for rule in "${cut_rules[@]}"; do
        # shellcheck disable=SC2086
        while cluster_iptables "$host" -C $rule 2>/dev/null; do
            cluster_iptables "$host" -D $rule || return 1
        done
    done
}

# cluster_dropped HOST [NET]: how many packets HOST's cuts dropped (in and out); tells a test
# that its traffic really met the cut.
cluster_dropped() {
    local host=$1 net=${2:-}
    { cluster_iptables "$host" -L INPUT -v -x -n; cluster_iptables "$host" -L OUTPUT -v -x -n; } \
        | awk -v net="$net" '$3 == "DROP" && (net == "" || $6 == net || $7 == net) { n += $1 } END { print n + 0 }'
}

# cluster_link_down HOST NET / cluster_link_up HOST NET: the host's interface goes down (up):
# unlike a cut, the host's own sends fail at once (no route), and its peers lose the link.
cluster_link_down() { cluster_link "$1" "${2:-}" down; }
cluster_link_up() { cluster_link "$1" "${2:-}" up; }
cluster_link() {
    local ns
    ns=$(cluster_ns "$1") || return 1
    cluster_net_number "$2" >/dev/null || return 2
    ip -n "$ns" link set "$2" "$3"
}

cluster_pids() { # HOST: the processes running on HOST
    local ns
    ns=$(cluster_ns "$1") || return 1
    ip netns pids "$ns"
}

# cluster_world_pid HOST W: the MPI process of MPI_COMM_WORLD rank W running on HOST.
cluster_world_pid() {
    local p
    for p in $(cluster_pids "$1"); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" \
            && { echo "$p"; return 0; }
    done
    return 1
}

# cluster_kill_host HOST: the host dies: SIGKILL to every process on it (its PRRTE daemon
# and ranks included), waiting until none is left. Its network stays as it was.
cluster_kill_host() {
    local ns
    ns=$(cluster_ns "$1") || return 1
    cluster_kill_ns "$ns"
}

# cluster_when FILE PATTERN SECONDS COMMAND...: wait until a line of FILE (a job's output,
# being written) matches PATTERN (grep -E), then run COMMAND: a fault at a chosen point of
# a job, e.g. cluster_when "$log" "^timeline rank [0-9]+ done 7 " 60 cluster_cut h1 neta.
# Returns COMMAND's status, or 1 without running it if PATTERN did not show within SECONDS.
cluster_when() {
    local file=$1 pattern=$2 secs=$3 t
    shift 3
    if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ $# -eq 0 ]; then
        cluster_say "cluster_when FILE PATTERN SECONDS COMMAND...: got '$file' '$pattern' '$secs' '$*'"
        return 2
    fi
    for ((t = 0; t < secs * 10; t++)); do
        grep -aqE -- "$pattern" "$file" 2>/dev/null && { "$@"; return; }
        sleep 0.1
    done
    cluster_say "'$pattern' did not appear in $file within $secs s: '$*' not run"
    return 1
}

# cluster_kill_host_when FILE PATTERN HOST [SECONDS]: HOST lost once PATTERN shows in FILE
# (default: within 60 s).
cluster_kill_host_when() {
    cluster_host_index "${3:-}" >/dev/null || return 2
    cluster_when "$1" "$2" "${4:-60}" cluster_kill_host "$3"
}

# cluster_reap: kill whatever is left on any host (between two tests).
cluster_reap() {
    local i rc=0
    cluster_require || return 1
    for ((i = 0; i < CLUSTER_HOSTS; i++)); do cluster_kill_host "h$i" || rc=1; done
    return $rc
}

# cluster_reset: every host as cluster_up left it: no process, no cut, every link up. Tests
# sharing one cluster call it between them, so that one test's faults never reach the next.
cluster_reset() {
    local i net rc=0
    cluster_require || return 1
    cluster_reap || rc=1
    for ((i = 0; i < CLUSTER_HOSTS; i++)); do
        cluster_heal "h$i" || rc=1
        for net in "${CLUSTER_NETS[@]}"; do cluster_link_up "h$i" "$net" || rc=1; done
    done
    return $rc
}

# cluster_tcp_probe FROM TO NET [SECONDS]: 0 when a TCP connection from FROM to TO's address
# on NET exchanges a line within SECONDS (default 10); prints what TO answered ("pong from
# hI"). Non-zero when it did not (a cut, a link down).
cluster_tcp_probe() {
    local from=$1 to=$2 net=$3 secs=${4:-10} addr out server port="" t rc cluster_cmd
    addr=$(cluster_addr "$to" "$net") || return 2
    cluster_host_index "$from" >/dev/null || return 2
    out=$(mktemp "${TMPDIR:-/tmp}/ompires-probe.XXXXXX")
    cluster_host_cmd "$to" || return 2
    "${cluster_cmd[@]}" perl "$CLUSTER_SRC_DIR/tcp-probe.pl" serve "$addr" $((secs + 5)) >"$out" &
    server=$!
    for ((t = 0; t < 200; t++)); do   # at most 10 s for perl to start and listen
        port=$(head -n 1 "$out")
        [ -n "$port" ] && break
        kill -0 "$server" 2>/dev/null || break
        sleep 0.05
    done
    if [ -z "$port" ]; then
        cluster_say "the probe server on $to ($addr) did not start"
        rc=2
    else
        cluster_exec "$from" perl "$CLUSTER_SRC_DIR/tcp-probe.pl" connect "$addr" "$port" "$secs"
        rc=$?
    fi
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
    rm -f "$out"
    return $rc
}

# ---- command line --------------------------------------------------------------------------
cluster_usage() {
    cat <<EOF
usage: cluster.sh COMMAND [ARGS]     (the cluster: \$OMPIRES_CLUSTER, set by up)
  up N [--owner PID]     make hosts h0..h(N-1); prints "export OMPIRES_CLUSTER=...": use
                         eval "\$(cluster.sh up N)". Owner: the process whose end makes
                         the cluster a leftover (default 0: none)
  down                   remove this cluster: its processes, namespaces, state
  down-all [--force]     remove leftovers of this harness (clusters whose owner is gone);
                         --force: every cluster of this harness, in use or not
  status                 hosts, addresses, processes, cuts
  run HOST CMD...        run CMD on HOST (hI) with its hostname
  mpirun MPIRUN [ARGS]   run MPIRUN (path to mpirun, then its options) on h0 across the
                         cluster; adds --host, --bind-to none, the agent, oob/btl interfaces
  hosts SLOTS [COUNT]    the --host value for the first COUNT hosts
  addr HOST NET          HOST's address on NET (neta, netb, netc)
  cut HOST NET [PEER]    drop everything HOST sends or receives on NET (to/from PEER only)
  heal HOST [NET [PEER]] undo cuts (all of HOST's without NET)
  dropped HOST [NET]     packets dropped by HOST's cuts
  link-down HOST NET     ip link set NET down on HOST;  link-up HOST NET: back up
  kill-host HOST         SIGKILL every process on HOST (its PRRTE daemon too)
  when FILE PATTERN S COMMAND [ARGS]  run this script's COMMAND (cut, kill-host, ...) once a
                         line of FILE matches PATTERN (grep -E); fails if not within S s
  reap                   kill every process left on any host
  reset                  reap, heal every cut, every link up: as after up
  pids HOST              processes on HOST
  disk HOST              the directory holding HOST's node-local files (seen on every host
                         at \$OMPIRES_CLUSTER/node-local, with that host's contents)
  probe FROM TO NET [S]  TCP exchange from FROM to TO over NET within S seconds (exit 0 if ok)
  check                  exit 0 if the cluster can run here, else print why, exit 1
  install-deps           apt-get install what is missing (iptables, iproute2, util-linux)
EOF
}

cluster_status() {
    local i net ns
    cluster_require || return 1
    echo "cluster $CLUSTER_ID: $CLUSTER_HOSTS hosts, state $CLUSTER_DIR, $CLUSTER_IPTABLES"
    for ((i = 0; i < CLUSTER_HOSTS; i++)); do
        ns=$(cluster_ns "h$i")
        printf 'h%s  %s ' "$i" "$ns"
        for net in "${CLUSTER_NETS[@]}"; do
            printf ' %s %s(%s)' "$net" "$(cluster_addr "h$i" "$net")" \
                "$(ip -n "$ns" -br link show "$net" 2>/dev/null | awk '{ print $2 }')"
        done
        printf '  processes %s  cut rules %s\n' "$(ip netns pids "$ns" | wc -l)" \
            "$(cluster_iptables "h$i" -S | grep -c DROP)"
    done
}

cluster_main() {
    local cmd=${1:-help}
    shift || true
    case "$cmd" in
        up|down-all|check|install-deps|help|-h|--help) ;;
        *) cluster_load || exit 1 ;;
    esac
    case "$cmd" in
        up)
            local n=${1:-}
            shift || true
            cluster_up "$n" --owner 0 --no-trap "$@" || exit 1
            echo "export OMPIRES_CLUSTER=$CLUSTER_DIR" ;;
        down) cluster_down ;;
        down-all) cluster_remove_leftovers "$@" ;;
        status) cluster_status ;;
        run) cluster_host_cmd "${1:?run HOST CMD...}" || exit 1; shift; exec "${cluster_cmd[@]}" "$@" ;;
        mpirun) cluster_mpirun_cmd "$@" || exit; exec "${cluster_cmd[@]}" ;;
        agent) cluster_agent "$@" ;;
        hosts) cluster_hosts_arg "$@" ;;
        addr) cluster_addr "$@" ;;
        cut) cluster_cut "$@" ;;
        heal) cluster_heal "$@" ;;
        dropped) cluster_dropped "$@" ;;
        link-down) cluster_link_down "$@" ;;
        link-up) cluster_link_up "$@" ;;
        kill-host) cluster_kill_host "$@" ;;
        when)
            [ $# -ge 4 ] || { cluster_usage >&2; exit 2; }
            cluster_when "$1" "$2" "$3" cluster_main "${@:4}" ;;
        reap) cluster_reap ;;
        reset) cluster_reset ;;
        pids) cluster_pids "$@" ;;
        disk) cluster_host_disk "$@" ;;
        probe) cluster_tcp_probe "$@" ;;
        check) local why; if why=$(cluster_unavailable); then echo "$why"; exit 1; fi ;;
        install-deps) cluster_install_deps ;;
        help|-h|--help) cluster_usage ;;
        *) cluster_say "unknown command '$cmd'"; cluster_usage >&2; exit 2 ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    cluster_main "$@"
fi
