/*
 * ompi-resilience: pml/dr2 paths over the BML (see pml_dr2_btlpath.h).
 */
#include "ompi_config.h"

#include <string.h>

#include "ompi/mca/bml/base/base.h"
#include "opal/mca/base/mca_base_var.h"

#include "pml_dr2.h"
#include "pml_dr2_btlpath.h"
#include "pml_dr2_from.h"
#include "pml_dr2_locality.h"
#include "pml_dr2_nic.h"
#include "pml_dr2_peer.h"
#include "pml_dr2_vfrag.h"

/* Whether large fragments go to this BTL in place (its descriptor holds our header and
 * points at the payload where it lies) rather than copied into a buffer of its own. Only
 * btl/tcp, whose prepare_src takes the payload's address from the convertor and keeps
 * nothing else of it (opal/mca/btl/tcp/btl_tcp.c, mca_btl_tcp_prepare_src): the convertor
 * can live on our stack. Other BTLs that send in place were not read for this. */
static bool path_sends_in_place(const mca_btl_base_module_t *btl)
{
    return (btl->btl_flags & MCA_BTL_FLAGS_SEND_INPLACE) && NULL != btl->btl_prepare_src
           && 0 == strcmp(btl->btl_component->btl_version.mca_component_name, "tcp");
}

static void path_init(mca_pml_dr2_peer_t *peer, int index, mca_bml_base_btl_t *bml_btl)
{
    mca_pml_dr2_path_t *path = &peer->paths[index];

    path->peer = peer;
    path->bml_btl = bml_btl;
    path->index = index;
    path->state = &peer->path_state[index];
    pml_dr2_path_init(path->state, &mca_pml_dr2.path_params);
    path->tx_handed = 0;
    path->tx_completed = 0;
    path->wdog_completed_seen = 0;
    path->wdog_since_us = 0;
    path->wdog_expired = false;
    path->alive_asked_us = 0;
    path->btl_error = false;
    path->no_wire = !pml_dr2_checksum_on_btl(
        PML_DR2_CHECKSUM_AUTO, bml_btl->btl->btl_component->btl_version.mca_component_name);
    path->names_sender = mca_pml_dr2_btl_names_sender(bml_btl->btl);
    path->in_place = path_sends_in_place(bml_btl->btl) && !path->names_sender;
}

/* Weights from the bandwidth each path's BTL advertises (btl_<name>_bandwidth; btl/tcp per
 * interface; btl/ofi none: pml_dr2_locality.h). */
static void paths_weigh(mca_pml_dr2_peer_t *peer)
{
    double advertised[PML_DR2_PATH_MAX], weight[PML_DR2_PATH_MAX];

    for (int i = 0; i < peer->npaths; i++) {
        advertised[i] = (double) peer->paths[i].bml_btl->btl->btl_bandwidth;
    }
    pml_dr2_path_weights(advertised, peer->npaths, weight);
    for (int i = 0; i < peer->npaths; i++) {
        peer->path_state[i].weight = weight[i];
    }
}

/* A path of the peer went down or came up: which stand by may change (pml_dr2_locality.h). */
static void paths_relocate(mca_pml_dr2_peer_t *peer)
{
    int standing_by = pml_dr2_paths_apply_locality(peer->path_state, peer->npaths);

    if (standing_by > 0 || mca_pml_dr2.verbose >= 10) {
        for (int i = 0; i < peer->npaths; i++) {
            DR2_VERBOSE(10, "pml:dr2: path %d to %s: %s", i,
                        OMPI_NAME_PRINT(&peer->proc->super.proc_name),
                        !peer->path_state[i].up ? "down"
                        : peer->path_state[i].standby ? "stands by while a nearer path of its kind is up"
                                                      : "takes traffic");
        }
    }
}

void mca_pml_dr2_paths_init(mca_pml_dr2_peer_t *peer)
{
    /* Every BTL the BML may send on to this peer. The send array holds only the BTLs of
     * the highest exclusivity (sm alone to a process on the same host, never sm and tcp),
     * so the paths are alternatives of one kind. */
    mca_bml_base_btl_array_t *btls = &peer->bml_endpoint->btl_send;
    size_t n = mca_bml_base_btl_array_get_size(btls);

    if (0 == n) {
        btls = &peer->bml_endpoint->btl_eager;
        n = mca_bml_base_btl_array_get_size(btls);
    }
    peer->npaths = 0;
    peer->eager_limit_min = SIZE_MAX;
    peer->max_send_min = SIZE_MAX;
    for (size_t i = 0; i < n && peer->npaths < PML_DR2_PATH_MAX; i++) {
        mca_bml_base_btl_t *bml_btl = mca_bml_base_btl_array_get_index(btls, i);
        mca_btl_base_module_t *btl = bml_btl->btl;

        mca_pml_dr2_path_t *path = &peer->paths[peer->npaths];
        size_t prefix, eager_limit, max_send;

        path_init(peer, peer->npaths++, bml_btl);
        /* what a segment of ours may hold, after the FROM header where it needs one */
        prefix = path->names_sender ? PML_DR2_HDR_FROM_LEN : 0;
        eager_limit = btl->btl_eager_limit > prefix ? btl->btl_eager_limit - prefix : 0;
        max_send = btl->btl_max_send_size > prefix ? btl->btl_max_send_size - prefix : 0;
        if (eager_limit < peer->eager_limit_min) {
            peer->eager_limit_min = eager_limit;
        }
        if (max_send < peer->max_send_min) {
            peer->max_send_min = max_send;
        }
        DR2_VERBOSE(10, "pml:dr2: path %d to %s: btl %s (eager %zu, max send %zu%s)",
                    peer->npaths - 1, OMPI_NAME_PRINT(&peer->proc->super.proc_name),
                    btl->btl_component->btl_version.mca_component_name, eager_limit, max_send,
                    path->names_sender ? ", segments name their sender" : "");
    }
    if (n > PML_DR2_PATH_MAX) {
        DR2_VERBOSE(1, "pml:dr2: %zu BTLs reach %s: only the first %d are used as paths", n,
                    OMPI_NAME_PRINT(&peer->proc->super.proc_name), PML_DR2_PATH_MAX);
    }
    paths_weigh(peer);
    mca_pml_dr2_nic_place_paths(peer);
}

int mca_pml_dr2_path_of_endpoint(const mca_pml_dr2_peer_t *peer,
                                 const struct mca_btl_base_endpoint_t *ep)
{
    for (int i = 0; i < peer->npaths; i++) {
        if (peer->paths[i].bml_btl->btl_endpoint == ep) {
            return i;
        }
    }
    return 0;
}

int mca_pml_dr2_path_of_btl(const mca_pml_dr2_peer_t *peer, const struct mca_btl_base_module_t *btl)
{
    for (int i = 0; i < peer->npaths; i++) {
        if (peer->paths[i].bml_btl->btl == btl) {
            return i;
        }
    }
    return 0;
}

int mca_pml_dr2_paths_up(const mca_pml_dr2_peer_t *peer)
{
    return pml_dr2_path_count_up(peer->path_state, peer->npaths);
}

int mca_pml_dr2_path_instead_of_stuck(const mca_pml_dr2_peer_t *peer, int index,
                                      uint64_t bytes)
{
    unsigned stuck = 1u << index;

    for (int i = 0; i < peer->npaths; i++) {
        stuck |= peer->paths[i].wdog_expired ? 1u << i : 0;
    }
    return pml_dr2_path_pick_avoiding(peer->path_state, peer->npaths, bytes, stuck);
}

int mca_pml_dr2_path_pick(mca_pml_dr2_peer_t *peer, uint64_t bytes)
{
    int i;

    if (OPAL_LIKELY(1 == peer->npaths)) {
        return 0;
    }
    i = pml_dr2_path_pick(peer->path_state, peer->npaths, bytes);
    return i >= 0 ? i : 0;
}

int mca_pml_dr2_path_live(mca_pml_dr2_peer_t *peer, int index)
{
    if (OPAL_LIKELY(index < peer->npaths && peer->path_state[index].up)) {
        return index;
    }
    return mca_pml_dr2_path_pick(peer, 0);
}

/* The probe timer of a down path counts as an armed timer: progress reads the clock. */
static void probe_timer_start(const pml_dr2_path_state_t *state)
{
    mca_pml_dr2.timers_armed++;
    if (state->next_probe_us < mca_pml_dr2.next_deadline_us) {
        mca_pml_dr2.next_deadline_us = state->next_probe_us;
    }
}

void mca_pml_dr2_path_down(mca_pml_dr2_peer_t *peer, int index, const char *why)
{
    mca_pml_dr2_path_t *path = &peer->paths[index];
    int left;

    if (peer->failed || !pml_dr2_path_fail(path->state, mca_pml_dr2_now_us(),
                                           &mca_pml_dr2.path_params)) {
        return;
    }
    mca_pml_dr2.path_counters.downs[index]++;
    probe_timer_start(path->state);
    left = mca_pml_dr2_paths_up(peer);
    DR2_VERBOSE(1, "pml:dr2: path %d to %s (btl %s) is down: %s; %d of %d paths left", index,
                OMPI_NAME_PRINT(&peer->proc->super.proc_name),
                path->bml_btl->btl->btl_component->btl_version.mca_component_name, why, left,
                peer->npaths);
    if (0 == left) {
        mca_pml_dr2_peer_unreachable(peer->proc, why);
        return;
    }
    paths_relocate(peer); /* a path standing by for this one takes over */
    mca_pml_dr2_vfrag_reroute(peer, index);
}

bool mca_pml_dr2_path_btl_error(struct ompi_proc_t *proc, struct mca_btl_base_module_t *btl)
{
    mca_pml_dr2_peer_t *peer = NULL;

    if (OPAL_SUCCESS
        != opal_hash_table_get_value_uint64(&mca_pml_dr2.peer_by_proc, (uint64_t) (uintptr_t) proc,
                                            (void **) &peer)) {
        return false;
    }
    if (peer->npaths < 2) {
        return false;
    }
    for (int i = 0; i < peer->npaths; i++) {
        if (peer->paths[i].bml_btl->btl == btl) {
            peer->paths[i].btl_error = true;
            mca_pml_dr2.path_errors_pending = true;
            return true;
        }
    }
    return false;
}

void mca_pml_dr2_path_unreachable(mca_pml_dr2_peer_t *peer, int index)
{
    if (peer->npaths < 2) {
        mca_pml_dr2_peer_unreachable(peer->proc, "the BTL reports it unreachable");
        return;
    }
    peer->paths[index].btl_error = true;
    mca_pml_dr2.path_errors_pending = true;
}

void mca_pml_dr2_paths_handle_errors(void)
{
    mca_pml_dr2_peer_t *peer;

    mca_pml_dr2.path_errors_pending = false;
    OPAL_LIST_FOREACH (peer, &mca_pml_dr2.peers, mca_pml_dr2_peer_t) {
        for (int i = 0; i < peer->npaths; i++) {
            if (peer->paths[i].btl_error) {
                peer->paths[i].btl_error = false;
                mca_pml_dr2_path_down(peer, i, "the BTL reports an error");
            }
        }
    }
}

/* Give btl/tcp's variable `name` the value `value` unless the user set it (or it does not
 * exist: btl/tcp not loaded, or an Open MPI without ompi-resilience's patches). */
static void set_btl_tcp_default(const char *name, int value)
{
    mca_base_var_source_t source;
    const int *current = NULL;
    int index = mca_base_var_find("opal", "btl", "tcp", name);

    if (index < 0 || OPAL_SUCCESS != mca_base_var_get_value(index, &current, &source, NULL)) {
        DR2_VERBOSE(5, "pml:dr2: no btl_tcp_%s (btl/tcp not loaded, or an Open MPI without "
                       "ompi-resilience's patches 0018-0020)", name);
        return;
    }
    /* btl/tcp's own variables (exclusivity) are not registered settable: this process's
     * default is ours to give as much as the user's */
    if (MCA_BASE_VAR_SOURCE_DEFAULT == source
        && OPAL_SUCCESS == mca_base_var_set_flag(index, MCA_BASE_VAR_FLAG_SETTABLE, true)
        && OPAL_SUCCESS
               == mca_base_var_set_value(index, &value, sizeof(value), MCA_BASE_VAR_SOURCE_SET,
                                         NULL)) {
        DR2_VERBOSE(5, "pml:dr2: btl_tcp_%s %d", name, value);
    } else {
        DR2_VERBOSE(5, "pml:dr2: btl_tcp_%s kept at %d", name, *current);
    }
}

/* Two things btl/tcp does for ob1 that keep a network unused after it came back:
 * - A silent cut leaves each connection through it retransmitting its oldest segment at
 *   doubling intervals, and everything written after it, the path's probes included, waits
 *   behind it: a network back after a minute would carry nothing until the connection's
 *   next retransmission, up to a minute later (measured: 18 s of cut, the next
 *   retransmission 13 s away at the heal). Bounding the backoff bounds that wait.
 * - A connection that failed (reset, timed out) is never made again, so the probes of its
 *   path would fail for the rest of the job; dr2 recovers what the connection lost, so it
 *   lets btl/tcp connect again.
 * And one that keeps a job whose network was cut for good from ending: closing a
 * connection, btl/tcp waits for room for its goodbye in the send buffer, which a cut left
 * full, until the network moves again. dr2 ends a job over such a cut (its peers declared
 * failed), so it bounds that wait.
 * And one that keeps btl/tcp from being a path at all beside a faster BTL: the BML gives a
 * peer only the BTLs of the highest exclusivity, and btl/tcp's (100) is below that of the
 * BTLs for other NICs (btl/ofi: 1024, MCA_BTL_EXCLUSIVITY_DEFAULT, which it sets whatever
 * btl_ofi_exclusivity says): with --mca btl tcp,ofi,self a peer on another host had the
 * ofi path alone. At 1024 btl/tcp is a path beside them (failover from the NIC to the
 * network, or the other way); btl/sm (65536) still reaches a process on the same host
 * alone. */
void mca_pml_dr2_paths_tune_tcp(unsigned rto_max_ms, unsigned goodbye_timeout_ms)
{
    if (0 != rto_max_ms) {
        set_btl_tcp_default("rto_max_ms", (int) rto_max_ms);
    }
    set_btl_tcp_default("reconnect", 1);
    set_btl_tcp_default("goodbye_timeout_ms", (int) goodbye_timeout_ms);
    set_btl_tcp_default("exclusivity", MCA_BTL_EXCLUSIVITY_DEFAULT);
}

/* A probe (PROBE) or its answer (PROBE_REPLY) on path `path`. */
static int send_probe_hdr(mca_pml_dr2_peer_t *peer, int path, uint8_t flag, uint32_t seq,
                          uint64_t mask)
{
    unsigned char buf[PML_DR2_HDR_ACK_LEN];
    pml_dr2_ack_hdr_t ack = {.vfrag = seq, .mask = mask};
    size_t len = pml_dr2_hdr_pack_ack(PML_DR2_HDR_ACK, flag, &ack, buf, sizeof(buf));

    return 0 == len ? OMPI_ERROR : mca_pml_dr2_peer_send_small(peer, path, buf, len);
}

int mca_pml_dr2_paths_probe(mca_pml_dr2_peer_t *peer, uint64_t now_us, uint64_t *next)
{
    int sent = 0;

    for (int i = 0; i < peer->npaths; i++) {
        pml_dr2_path_state_t *state = &peer->path_state[i];
        if (state->up) {
            continue;
        }
        if (pml_dr2_path_probe_due(state, now_us)) {
            uint32_t seq = pml_dr2_path_probe_sent(state, now_us, &mca_pml_dr2.path_params);
            /* a BTL that refuses it (its connection failed for good) leaves the path down */
            (void) send_probe_hdr(peer, i, PML_DR2_HDR_FLAG_PROBE, seq, (uint64_t) i + 1);
            mca_pml_dr2.path_counters.probes[i]++;
            sent++;
        }
        if (state->next_probe_us < *next) {
            *next = state->next_probe_us;
        }
    }
    return sent;
}

bool mca_pml_dr2_paths_ask_alive(mca_pml_dr2_peer_t *peer, int silent, uint64_t since_us,
                                 uint64_t now_us)
{
    mca_pml_dr2_path_t *path = &peer->paths[silent];
    int slowest;

    if (pml_dr2_path_others_alive_since(peer->path_state, peer->npaths, silent, since_us)) {
        return true;
    }
    slowest = pml_dr2_path_slowest(peer->path_state, peer->npaths, silent);
    if (now_us - path->alive_asked_us
        < pml_dr2_path_backoff_us(&peer->path_state[slowest], 0, &mca_pml_dr2.path_params)) {
        return false; /* asked within the last ACK timeout: the answers are on their way */
    }
    path->alive_asked_us = now_us;
    for (int i = 0; i < peer->npaths; i++) {
        pml_dr2_path_state_t *state = &peer->path_state[i];
        if (i != silent && state->up) {
            /* the id of the path's latest probe: should the path go down before the answer
             * comes, the answer is not taken for one to a probe of that down period */
            (void) send_probe_hdr(peer, i, PML_DR2_HDR_FLAG_PROBE, state->probe_seq,
                                  (uint64_t) i + 1);
            mca_pml_dr2.path_counters.probes[i]++;
        }
    }
    return false;
}

void mca_pml_dr2_path_probe_received(mca_pml_dr2_peer_t *peer, int arrival,
                                     const pml_dr2_hdr_t *hdr)
{
    uint64_t index = hdr->ack.mask - 1;

    if (hdr->flags & PML_DR2_HDR_FLAG_PROBE) {
        /* answer on the path it came on: the answer then proves that path both ways */
        (void) send_probe_hdr(peer, arrival, PML_DR2_HDR_FLAG_PROBE_REPLY, hdr->ack.vfrag,
                              hdr->ack.mask);
        return;
    }
    if (index >= (uint64_t) peer->npaths) {
        mca_pml_dr2.counters.malformed++;
        return;
    }
    if (pml_dr2_path_probe_answered(&peer->path_state[index], hdr->ack.vfrag,
                                    mca_pml_dr2_now_us(), &mca_pml_dr2.path_params)) {
        mca_pml_dr2.path_counters.ups[index]++;
        mca_pml_dr2.timers_armed--; /* its probe timer */
        peer->paths[index].wdog_expired = false;
        DR2_VERBOSE(1, "pml:dr2: path %d to %s (btl %s) is up again: %d of %d paths up",
                    (int) index, OMPI_NAME_PRINT(&peer->proc->super.proc_name),
                    peer->paths[index].bml_btl->btl->btl_component->btl_version.mca_component_name,
                    mca_pml_dr2_paths_up(peer), peer->npaths);
        paths_relocate(peer); /* a path that stood in for it stands by again */
    }
}
