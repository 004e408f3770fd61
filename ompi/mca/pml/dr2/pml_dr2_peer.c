/*
 * ompi-resilience: pml/dr2 peers: lookup, sending on a path, ACK coalescing, fault
 * injection (see pml_dr2_peer.h).
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/bml/base/base.h"
#include "opal/datatype/opal_convertor.h"

#include "pml_dr2.h"
#include "pml_dr2_from.h"
#include "pml_dr2_inject.h"
#include "pml_dr2_local.h"
#include "pml_dr2_peer.h"
#include "pml_dr2_recvfrag.h"
#include "pml_dr2_vfrag.h"

static void peer_construct(mca_pml_dr2_peer_t *peer)
{
    peer->proc = NULL;
    peer->bml_endpoint = NULL;
    peer->failed = false;
    peer->failure_handled = false;
    peer->closing = false;
    peer->gone = false;
    peer->npaths = 0;
    peer->rx_path = 0;
    peer->eager_limit_min = 0;
    peer->max_send_min = 0;
    peer->max_payload = 1;
    peer->tx_crc = true;
    peer->crosses_wire = false;
    peer->eager_limit = 0;
    peer->tx_local = false;
    peer->tx_next_id = 0;
    pml_dr2_id_guard_clear(&peer->tx_id_guard);
    OBJ_CONSTRUCT(&peer->tx_unacked, opal_list_t);
    OBJ_CONSTRUCT(&peer->tx_blocked, opal_list_t);
    OBJ_CONSTRUCT(&peer->tx_await_match, opal_list_t);
    /* the window is a registered parameter, checked before any peer exists */
    peer->tx_slots = calloc(mca_pml_dr2.window, sizeof(*peer->tx_slots));
    peer->tx_pending = 0;
    /* The receiver always keeps the largest window: it only has to be at least as large
     * as the sender's flow-control window (mca_pml_dr2.window), whatever that is. */
    (void) pml_dr2_window_init(&peer->rx_window, PML_DR2_WINDOW_MAX, 0);
    OBJ_CONSTRUCT(&peer->rx_vfrags, opal_hash_table_t);
    opal_hash_table_init(&peer->rx_vfrags, 256);
    OBJ_CONSTRUCT(&peer->rx_msgs, opal_hash_table_t);
    opal_hash_table_init(&peer->rx_msgs, 256);
    peer->nacks = 0;
    peer->acks_since = 0;
    peer->acks_lazy = false;
    pml_dr2_copy_choice_init(&peer->tx_copy);
    peer->nacks_in = 0;
    peer->acks_in_since = 0;
    peer->ka_awaited = peer->ka_heard = false;
    peer->ka_probes = 0;
    peer->ka_next_us = 0;
    peer->to_arm = 0;
    peer->on_arm_list = false;
    peer->arm_next = NULL;
    peer->has_work = false;
    peer->work_prev = peer->work_next = NULL;
}

static void peer_destruct(mca_pml_dr2_peer_t *peer)
{
    OBJ_DESTRUCT(&peer->tx_unacked);
    OBJ_DESTRUCT(&peer->tx_blocked);
    OBJ_DESTRUCT(&peer->tx_await_match);
    free(peer->tx_slots);
    OBJ_DESTRUCT(&peer->rx_vfrags);
    OBJ_DESTRUCT(&peer->rx_msgs);
}

OBJ_CLASS_INSTANCE(mca_pml_dr2_peer_t, opal_list_item_t, peer_construct, peer_destruct);

void mca_pml_dr2_peer_map_endpoints(mca_pml_dr2_peer_t *peer)
{
    mca_bml_base_btl_array_t *arrays[2];

    if (NULL == peer->bml_endpoint) {
        return;
    }
    arrays[0] = &peer->bml_endpoint->btl_eager;
    arrays[1] = &peer->bml_endpoint->btl_send;
    for (int a = 0; a < 2; a++) {
        size_t n = mca_bml_base_btl_array_get_size(arrays[a]);
        for (size_t i = 0; i < n; i++) {
            mca_bml_base_btl_t *bml_btl = mca_bml_base_btl_array_get_index(arrays[a], i);
            uint64_t key = (uint64_t) (uintptr_t) bml_btl->btl_endpoint;
            (void) opal_hash_table_set_value_uint64(&mca_pml_dr2.peer_by_endpoint, key, peer);
        }
    }
}

/* The checksum policy is decided per BTL (pml_dr2_checksum_on_btl), but a fragment may be
 * resent on any of the peer's paths: if any path crosses a wire or a bus, every payload to
 * that peer carries a CRC. (BML gives a peer only the BTLs of its highest exclusivity, so
 * in practice its paths are all of one kind: sm, or tcp on several networks.) */
static void peer_choose_checksum(mca_pml_dr2_peer_t *peer)
{
    peer->tx_crc = false;
    peer->crosses_wire = false;
    for (int i = 0; i < peer->npaths; i++) {
        const char *btl = peer->paths[i].bml_btl->btl->btl_component->btl_version.mca_component_name;
        bool crc = pml_dr2_checksum_on_btl(mca_pml_dr2.checksum_in_use, btl);
        DR2_VERBOSE(10, "pml:dr2: peer %s path %d over btl %s: payload checksum %s",
                    OMPI_NAME_PRINT(&peer->proc->super.proc_name), i, btl, crc ? "crc32c" : "none");
        peer->tx_crc = peer->tx_crc || crc;
        /* A TINY carries no ACK, so in a ping-pong every message costs a segment more for
         * its ACK. In shared memory that is a fast-box slot, cheaper than EAGER's second
         * cache line; over a network it is a send of its own (tcp: a system call, the
         * stack, a wakeup at the peer): 8-64 B across two simulated hosts took 6.5 us as
         * TINY against ob1's 5.2, EAGER 5.2-5.35 (docs/bench/dr2-cluster-analysis.md). */
        if (!peer->paths[i].no_wire) {
            peer->crosses_wire = true;
        }
    }
    peer->tx_local = peer->npaths > 0 && !peer->crosses_wire && mca_pml_dr2_local_enabled();
}

/* pml_dr2_frag_size, capped by the smallest largest send of the peer's paths less our
 * header. */
static uint32_t peer_compute_max_payload(const mca_pml_dr2_peer_t *peer)
{
    size_t max = peer->max_send_min;
    size_t payload = mca_pml_dr2.frag_size;

    if (max > PML_DR2_HDR_MAX_LEN && max - PML_DR2_HDR_MAX_LEN < payload) {
        payload = max - PML_DR2_HDR_MAX_LEN;
    }
    if (payload > UINT32_MAX) {
        payload = UINT32_MAX;
    }
    return payload > 0 ? (uint32_t) payload : 1;
}

/* mca_pml_dr2_peer_eager_limit's value, once the paths and crosses_wire are set. */
static size_t peer_compute_eager_limit(const mca_pml_dr2_peer_t *peer)
{
    size_t limit = mca_pml_dr2.eager_limit;

    if (0 == limit) {
        limit = peer->eager_limit_min;
        if (limit < MCA_PML_DR2_EAGER_LIMIT_FLOOR) {
            limit = MCA_PML_DR2_EAGER_LIMIT_FLOOR;
        }
        /* In shared memory the go-ahead's round trip is a microsecond: the BTL's limit. */
        if (peer->crosses_wire && limit < MCA_PML_DR2_WIRE_EAGER_LIMIT_MIN) {
            limit = MCA_PML_DR2_WIRE_EAGER_LIMIT_MIN;
        }
    }
    return limit < MCA_PML_DR2_EAGER_LIMIT_MAX ? limit : MCA_PML_DR2_EAGER_LIMIT_MAX;
}

mca_pml_dr2_peer_t *mca_pml_dr2_peer_get(struct ompi_proc_t *proc)
{
    mca_pml_dr2_peer_t *peer = NULL;
    mca_bml_base_endpoint_t *ep;

    if (OPAL_SUCCESS
        == opal_hash_table_get_value_uint64(&mca_pml_dr2.peer_by_proc,
                                            (uint64_t) (uintptr_t) proc, (void **) &peer)) {
        return peer;
    }
    ep = mca_bml_base_get_endpoint(proc);
    if (NULL == ep || 0 == mca_bml_base_btl_array_get_size(&ep->btl_eager)) {
        return NULL;
    }
    peer = OBJ_NEW(mca_pml_dr2_peer_t);
    if (NULL == peer) {
        return NULL;
    }
    if (NULL == peer->tx_slots) {
        OBJ_RELEASE(peer);
        return NULL;
    }
    OBJ_RETAIN(proc);
    peer->proc = proc;
    peer->bml_endpoint = ep;
    mca_pml_dr2_paths_init(peer);
    peer->max_payload = peer_compute_max_payload(peer);
    peer_choose_checksum(peer);
    peer->eager_limit = peer_compute_eager_limit(peer); /* after crosses_wire is known */
    opal_list_append(&mca_pml_dr2.peers, &peer->super);
    (void) opal_hash_table_set_value_uint64(&mca_pml_dr2.peer_by_proc, (uint64_t) (uintptr_t) proc,
                                            peer);
    mca_pml_dr2_peer_map_endpoints(peer);
    mca_pml_dr2_from_add_peer(peer);
    return peer;
}

mca_pml_dr2_peer_t *mca_pml_dr2_peer_from_endpoint(struct mca_btl_base_endpoint_t *ep)
{
    /* one-entry cache in front of the hash table: traffic comes in runs from one peer */
    static struct mca_btl_base_endpoint_t *last_ep = NULL;
    static mca_pml_dr2_peer_t *last_peer = NULL;
    mca_pml_dr2_peer_t *peer = NULL;

    if (OPAL_LIKELY(ep == last_ep && NULL != ep)) {
        return last_peer;
    }
    peer = mca_pml_dr2_peer_lookup_endpoint(ep);
    if (NULL != peer) {
        last_ep = ep;
        last_peer = peer;
    }
    return peer;
}

mca_pml_dr2_peer_t *mca_pml_dr2_peer_lookup_endpoint(struct mca_btl_base_endpoint_t *ep)
{
    mca_pml_dr2_peer_t *peer = NULL;

    if (OPAL_SUCCESS
        == opal_hash_table_get_value_uint64(&mca_pml_dr2.peer_by_endpoint, (uint64_t) (uintptr_t) ep,
                                            (void **) &peer)) {
        return peer;
    }
    /* An endpoint the BML created after we mapped the peer (a lazily added proc, a BTL
     * that reconnected): remap everyone once and look again. */
    mca_pml_dr2_peer_t *p;
    OPAL_LIST_FOREACH (p, &mca_pml_dr2.peers, mca_pml_dr2_peer_t) {
        mca_pml_dr2_peer_map_endpoints(p);
    }
    if (OPAL_SUCCESS
        == opal_hash_table_get_value_uint64(&mca_pml_dr2.peer_by_endpoint, (uint64_t) (uintptr_t) ep,
                                            (void **) &peer)) {
        return peer;
    }
    return NULL;
}

static void work_list_add(mca_pml_dr2_peer_t *peer)
{
    peer->work_prev = NULL;
    peer->work_next = mca_pml_dr2.work_list;
    if (NULL != peer->work_next) {
        peer->work_next->work_prev = peer;
    }
    mca_pml_dr2.work_list = peer;
    peer->has_work = true;
    mca_pml_dr2.peers_with_work++;
}

static void work_list_remove(mca_pml_dr2_peer_t *peer)
{
    if (NULL != peer->work_prev) {
        peer->work_prev->work_next = peer->work_next;
    } else {
        mca_pml_dr2.work_list = peer->work_next;
    }
    if (NULL != peer->work_next) {
        peer->work_next->work_prev = peer->work_prev;
    }
    peer->work_prev = peer->work_next = NULL;
    peer->has_work = false;
    mca_pml_dr2.peers_with_work--;
}

void mca_pml_dr2_peer_work_changed(mca_pml_dr2_peer_t *peer, bool work)
{
    if (work) {
        work_list_add(peer);
    } else {
        work_list_remove(peer);
    }
}

/* ---- sending on a path ------------------------------------------------------------ */

size_t mca_pml_dr2_peer_rndv_data_max(mca_pml_dr2_peer_t *peer)
{
    size_t limit = peer->eager_limit_min;

    if (limit <= PML_DR2_HDR_MAX_LEN) {
        return 0;
    }
    limit -= PML_DR2_HDR_MAX_LEN;
    /* what a receiver accepts in a RNDV (pml_dr2_rx_classify) */
    return limit < MCA_PML_DR2_EAGER_LIMIT_MAX ? limit : MCA_PML_DR2_EAGER_LIMIT_MAX;
}

/* The BTL is done with one of our descriptors (sent, failed or never taken). */
static inline void send_descriptor_done(mca_pml_dr2_path_t *path)
{
    (void) OPAL_THREAD_ADD_FETCH64(&path->tx_completed, 1);
}

/* Completion callback of every descriptor we hand to a BTL. Never left NULL: BTLs call it
 * unconditionally on some paths (btl/tcp fails every fragment queued on an endpoint whose
 * connection attempt failed, e.g. to a peer that already left MPI_Finalize). Runs from BTL
 * progress, possibly in another thread and without our lock, or from inside btl_send. */
static void send_complete(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                          struct mca_btl_base_descriptor_t *des, int status)
{
    mca_pml_dr2_path_t *path = (mca_pml_dr2_path_t *) des->des_cbdata;
    mca_pml_dr2_peer_t *peer;

    (void) btl;
    (void) ep;
    if (mca_pml_dr2.sending_des == des) {
        mca_pml_dr2.sending_des_completed = true; /* completed inside btl_send */
    }
    if (mca_pml_dr2.closed) {
        return; /* finalize is past: the peers are gone, touch nothing */
    }
    peer = path->peer;
    if (OPAL_UNLIKELY(OPAL_SUCCESS != status) && peer->closing) {
        /* Teardown: the peer has left (its connection is refused): nothing sent to it
         * will be acknowledged any more, stop waiting for it. Outside teardown a lost
         * segment is recovered by the protocol and a broken path reported by the BTL's
         * error callback. */
        peer->gone = true;
    }
    send_descriptor_done(path);
}

/* Hand a filled descriptor to the BTL. On failure the descriptor is released, unless the
 * BTL already completed (and released) it itself. */
static int btl_send(mca_pml_dr2_path_t *path, mca_btl_base_descriptor_t *des)
{
    mca_bml_base_btl_t *bml_btl = path->bml_btl;
    bool completed;
    int rc;

    des->des_cbfunc = send_complete;
    des->des_cbdata = path;
    path->tx_handed++;
    mca_pml_dr2.sending_des = des;
    mca_pml_dr2.sending_des_completed = false;
    rc = mca_bml_base_send(bml_btl, des, MCA_PML_DR2_BTL_TAG);
    completed = mca_pml_dr2.sending_des_completed;
    mca_pml_dr2.sending_des = NULL;
    if (OPAL_LIKELY(0 == rc)) {
        return OMPI_SUCCESS; /* queued: its completion callback will come */
    }
    if (!completed) {
        /* 1: sent and done, no callback; < 0: not taken, still ours */
        send_descriptor_done(path);
        if (rc < 0) {
            mca_bml_base_free(bml_btl, des);
        }
    }
    return rc < 0 ? rc : OMPI_SUCCESS;
}

/* A descriptor of the path's BTL for a segment of up to `len` bytes, which go at *seg:
 * after the FROM header on a BTL that does not tell the receiver who sent it
 * (pml_dr2_from.h). Its length is set by segment_length. NULL if the BTL has none now. */
static mca_btl_base_descriptor_t *segment_alloc(mca_pml_dr2_path_t *path, size_t len,
                                                unsigned char **seg)
{
    size_t prefix = path->names_sender ? PML_DR2_HDR_FROM_LEN : 0;
    mca_btl_base_descriptor_t *des = NULL;
    unsigned char *base;

    mca_bml_base_alloc(path->bml_btl, &des, MCA_BTL_NO_ORDER, prefix + len,
                       MCA_BTL_DES_FLAGS_PRIORITY | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (OPAL_UNLIKELY(NULL == des)) {
        return NULL;
    }
    base = des->des_segments->seg_addr.pval;
    if (OPAL_UNLIKELY(prefix > 0)) {
        memcpy(base, mca_pml_dr2_from_self, prefix);
    }
    *seg = base + prefix;
    return des;
}

/* The segment segment_alloc placed at `seg` is `len` bytes long. */
static inline void segment_length(mca_btl_base_descriptor_t *des, const unsigned char *seg,
                                  size_t len)
{
    des->des_segments->seg_len = (size_t) (seg - (unsigned char *) des->des_segments->seg_addr.pval)
                                 + len;
}

static int btl_send_copy(mca_pml_dr2_path_t *path, const unsigned char *buf, size_t len)
{
    unsigned char *seg;
    mca_btl_base_descriptor_t *des = segment_alloc(path, len, &seg);

    if (NULL == des) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    memcpy(seg, buf, len);
    segment_length(des, seg, len);
    return btl_send(path, des);
}

/* Fault injection between dr2 and the BTL, on a segment about to be sent: false if it is
 * to be dropped (lost on the way); may send an intact duplicate first, may flip one bit. */
static bool inject_faults(mca_pml_dr2_path_t *path, unsigned char *buf, size_t len)
{
    if (mca_pml_dr2_inject_roll(mca_pml_dr2.inject_drop)) {
        mca_pml_dr2.counters.injected_drop++;
        return false;
    }
    if (mca_pml_dr2_inject_roll(mca_pml_dr2.inject_dup)) {
        /* the duplicate is an intact copy; the original may still be corrupted */
        if (OMPI_SUCCESS == btl_send_copy(path, buf, len)) {
            mca_pml_dr2.counters.injected_dup++;
        }
    }
    if (len > 0 && mca_pml_dr2_inject_roll(mca_pml_dr2.inject_corrupt)) {
        uint64_t bit = mca_pml_dr2_inject_next() % (len * 8);
        buf[bit / 8] ^= (unsigned char) (1u << (bit % 8));
        mca_pml_dr2.counters.injected_corrupt++;
    }
    return true;
}

/* Small segments go by the BTL's immediate send (ob1 does the same for small eager
 * messages): built on the stack and copied once by the BTL (btl/sm: into the receiver's
 * fast box, which it polls more cheaply than its FIFO), with no descriptor to allocate and
 * no completion callback. Nothing is lost for reliability: every fragment's data stays in
 * its message until acknowledged, and a resend rebuilds the segment from there. */

static inline bool takes_immediate(const mca_pml_dr2_path_t *path, size_t len)
{
    const mca_btl_base_module_t *btl = path->bml_btl->btl;

    return len <= MCA_PML_DR2_SMALL_SEGMENT_MAX && NULL != btl->btl_sendi
           && len <= btl->btl_eager_limit && !path->names_sender;
}

/* The BTL's immediate send of `len` bytes at buf: OMPI_SUCCESS if the BTL took them (they
 * left), OMPI_ERR_WOULD_BLOCK if it did not take them now (nothing sent). */
static int send_immediate(mca_pml_dr2_path_t *path, unsigned char *buf, size_t len)
{
    mca_btl_base_descriptor_t *des = NULL;
    int rc = mca_bml_base_sendi(path->bml_btl, NULL, buf, len, 0, MCA_BTL_NO_ORDER,
                                MCA_BTL_DES_FLAGS_PRIORITY | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP,
                                MCA_PML_DR2_BTL_TAG, &des);

    if (OPAL_LIKELY(OPAL_SUCCESS == rc)) {
        return OMPI_SUCCESS;
    }
    if (NULL != des) {
        mca_bml_base_free(path->bml_btl, des); /* built but not queued: ours to release */
    }
    return OMPI_ERR_WOULD_BLOCK;
}

/* A segment built in `buf` (which fault injection may change): by the immediate send if
 * `immediate`, otherwise (or if the BTL does not take it now) copied into a descriptor. */
static int send_bytes(mca_pml_dr2_path_t *path, unsigned char *buf, size_t len, bool immediate)
{
    int rc;

    if (OPAL_UNLIKELY(mca_pml_dr2.inject_enabled) && !inject_faults(path, buf, len)) {
        return OMPI_SUCCESS;
    }
    if (OPAL_LIKELY(immediate) && OMPI_SUCCESS == send_immediate(path, buf, len)) {
        return OMPI_SUCCESS;
    }
    /* not taken now (the BTL is busy): the ordinary path, which queues or says "later" */
    rc = btl_send_copy(path, buf, len);
    if (OPAL_UNLIKELY(rc < 0)) {
        return OMPI_ERR_UNREACH == rc ? OMPI_ERR_UNREACH : OMPI_ERR_OUT_OF_RESOURCE;
    }
    return OMPI_SUCCESS;
}

int mca_pml_dr2_peer_send_small(mca_pml_dr2_peer_t *peer, int path, unsigned char *buf,
                                size_t len)
{
    mca_pml_dr2_path_t *p = &peer->paths[path];

    if (OPAL_UNLIKELY(peer->failed)) {
        return OMPI_ERR_UNREACH;
    }
    return send_bytes(p, buf, len, takes_immediate(p, len));
}

int mca_pml_dr2_peer_send_small_now(mca_pml_dr2_peer_t *peer, int path, unsigned char *buf,
                                    size_t len)
{
    mca_pml_dr2_path_t *p = &peer->paths[path];

    if (OPAL_UNLIKELY(peer->failed)) {
        return OMPI_ERR_UNREACH;
    }
    if (!takes_immediate(p, len)) {
        return OMPI_ERR_WOULD_BLOCK;
    }
    return send_immediate(p, buf, len);
}

int mca_pml_dr2_peer_send_segment(mca_pml_dr2_peer_t *peer, int path, size_t len,
                                  bool may_overtake, mca_pml_dr2_fill_fn_t fill, void *ctx)
{
    mca_pml_dr2_path_t *p = &peer->paths[path];
    mca_bml_base_btl_t *bml_btl = p->bml_btl;
    mca_btl_base_descriptor_t *des = NULL;
    unsigned char *buf;
    int rc;

    if (OPAL_UNLIKELY(peer->failed)) {
        return OMPI_ERR_UNREACH;
    }
    if (may_overtake && takes_immediate(p, len)) {
        unsigned char buf[MCA_PML_DR2_SMALL_SEGMENT_MAX];
        return send_bytes(p, buf, fill(ctx, buf, len), true);
    }
    des = segment_alloc(p, len, &buf);
    if (OPAL_UNLIKELY(NULL == des)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    len = fill(ctx, buf, len);
    segment_length(des, buf, len);

    /* Fault injection: one predictable branch when off. */
    if (OPAL_UNLIKELY(mca_pml_dr2.inject_enabled) && !inject_faults(p, buf, len)) {
        mca_bml_base_free(bml_btl, des);
        return OMPI_SUCCESS; /* lost on the way */
    }

    rc = btl_send(p, des);
    if (OPAL_UNLIKELY(rc < 0)) {
        return OMPI_ERR_UNREACH == rc ? OMPI_ERR_UNREACH : OMPI_ERR_OUT_OF_RESOURCE;
    }
    return OMPI_SUCCESS;
}

int mca_pml_dr2_peer_send_in_place(mca_pml_dr2_peer_t *peer, int path, const unsigned char *head,
                                   size_t hdr_len, const unsigned char *payload, size_t len)
{
    mca_pml_dr2_path_t *p = &peer->paths[path];
    mca_bml_base_btl_t *bml_btl = p->bml_btl;
    mca_btl_base_descriptor_t *des = NULL;
    opal_convertor_t convertor;
    size_t size = len;
    int rc;

    if (OPAL_UNLIKELY(peer->failed)) {
        return OMPI_ERR_UNREACH;
    }
    OBJ_CONSTRUCT(&convertor, opal_convertor_t);
    opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &ompi_mpi_byte.dt.super,
                                             len, payload, 0, &convertor);
    mca_bml_base_prepare_src(bml_btl, &convertor, MCA_BTL_NO_ORDER, hdr_len, &size,
                             MCA_BTL_DES_FLAGS_PRIORITY | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP, &des);
    OBJ_DESTRUCT(&convertor);
    if (OPAL_UNLIKELY(NULL == des)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (OPAL_UNLIKELY(size != len || des->des_segments[0].seg_len != hdr_len)) {
        mca_bml_base_free(bml_btl, des); /* not the layout the receiver expects: copy it */
        return OMPI_ERR_NOT_SUPPORTED;
    }
    memcpy(des->des_segments[0].seg_addr.pval, head, hdr_len);
    rc = btl_send(p, des);
    if (OPAL_UNLIKELY(rc < 0)) {
        return OMPI_ERR_UNREACH == rc ? OMPI_ERR_UNREACH : OMPI_ERR_OUT_OF_RESOURCE;
    }
    return OMPI_SUCCESS;
}

/* ---- local-completion watchdog ------------------------------------------------------- */

/* The path's transport has completed nothing of ours since path->wdog_since_us: for
 * pml_dr2_local_timeout_us, or for pml_dr2_path_stall_us while another path to the same
 * peer showed the peer alive (it reads, this path's transport does not move; if no other
 * path has shown that, they are asked, and the next check has the answer). */
static bool path_stuck(mca_pml_dr2_path_t *path, uint64_t now)
{
    mca_pml_dr2_peer_t *peer = path->peer;
    uint64_t stuck_us = now - path->wdog_since_us;

    if (stuck_us >= mca_pml_dr2.local_timeout_us) {
        return true;
    }
    return stuck_us >= mca_pml_dr2.path_stall_us && peer->npaths > 1
           && mca_pml_dr2_paths_up(peer) > 1
           && mca_pml_dr2_paths_ask_alive(peer, path->index, path->wdog_since_us, now);
}

/* One path's watchdog; true if it expired now. */
static bool path_watchdog(mca_pml_dr2_path_t *path, uint64_t now, bool we_were_away)
{
    mca_pml_dr2_peer_t *peer = path->peer;
    int64_t completed = path->tx_completed;

    if (0 == mca_pml_dr2_path_inflight(path) || completed != path->wdog_completed_seen
        || we_were_away) {
        /* nothing queued in the BTL, or it is moving: start over */
        path->wdog_completed_seen = completed;
        path->wdog_since_us = now;
        path->wdog_expired = false;
        return false;
    }
    if (path->wdog_expired || peer->failed || peer->closing || !path_stuck(path, now)) {
        return false;
    }
    path->wdog_expired = true;
    mca_pml_dr2.counters.local_timeouts++;
    DR2_VERBOSE(1,
                "pml:dr2: the transport to %s (path %d, btl %s) completed none of the %d "
                "segments it holds for us for %lu us (pml_dr2_local_timeout_us %u, "
                "pml_dr2_path_stall_us %u while another path delivers): its ACK timers stop "
                "waiting for them",
                OMPI_NAME_PRINT(&peer->proc->super.proc_name), path->index,
                path->bml_btl->btl->btl_component->btl_version.mca_component_name,
                (int) mca_pml_dr2_path_inflight(path),
                (unsigned long) (now - path->wdog_since_us), mca_pml_dr2.local_timeout_us,
                mca_pml_dr2.path_stall_us);
    return true;
}

int mca_pml_dr2_watchdog_check(uint64_t now)
{
    mca_pml_dr2_peer_t *peer;
    int work = 0;

    /* A BTL only completes sends while we call progress: after a long stretch without a
     * check (the application computed, or no timer made progress read the clock), it
     * cannot be blamed for what it did not complete meanwhile. */
    bool we_were_away = now - mca_pml_dr2.last_watchdog_us > mca_pml_dr2.local_timeout_us / 2;

    /* a quarter of the shorter timeout between checks: an expiry is seen at most 25 % late */
    mca_pml_dr2.next_watchdog_us = now + mca_pml_dr2.path_stall_us / 4 + 1;
    mca_pml_dr2.last_watchdog_us = now;
    OPAL_LIST_FOREACH (peer, &mca_pml_dr2.peers, mca_pml_dr2_peer_t) {
        bool expired = false;
        for (int i = 0; i < peer->npaths; i++) {
            expired |= path_watchdog(&peer->paths[i], now, we_were_away);
        }
        if (expired) {
            mca_pml_dr2_peer_need_arming(peer); /* the vfrags that waited get their timers now */
            work++;
        }
    }
    return work;
}

/* ---- ACK coalescing ------------------------------------------------------------------ */

void mca_pml_dr2_peer_queue_ack(mca_pml_dr2_peer_t *peer, uint8_t type, uint32_t vfrag,
                                uint64_t mask, uint8_t flags)
{
    if (0 == mask || peer->failed) {
        return;
    }
    for (int i = 0; i < peer->nacks; i++) {
        mca_pml_dr2_pending_ack_t *a = &peer->acks[i];
        if (a->vfrag == vfrag && a->type == type) {
            a->mask |= mask;
            a->flags |= flags;
            a->path = (uint8_t) peer->rx_path; /* the latest path that delivered */
            peer->acks_lazy = false;
            mca_pml_dr2_peer_set_work(peer); /* it waits less now */
            return;
        }
    }
    if (peer->nacks == MCA_PML_DR2_MAX_PENDING_ACKS) {
        mca_pml_dr2_peer_flush_acks(peer);
        if (peer->nacks == MCA_PML_DR2_MAX_PENDING_ACKS) {
            /* The BTL takes nothing right now: forget the oldest. ACKs are idempotent and
             * the sender's timer recovers a lost one. */
            memmove(&peer->acks[0], &peer->acks[1], sizeof(peer->acks[0]) * (peer->nacks - 1));
            peer->nacks--;
        }
    }
    mca_pml_dr2_peer_append_ack(peer, type, vfrag, mask, flags, false);
}

size_t mca_pml_dr2_peer_encode_acks(mca_pml_dr2_peer_t *peer, int first, int n,
                                    unsigned char *buf, size_t len)
{
    size_t off = 0;

    for (int i = first; i < first + n; i++) {
        const mca_pml_dr2_pending_ack_t *a = &peer->acks[i];
        pml_dr2_ack_hdr_t ack = {.vfrag = a->vfrag, .mask = a->mask};

        off += pml_dr2_hdr_pack_ack(a->type, a->flags, &ack, buf + off, len - off);
    }
    return off;
}

void mca_pml_dr2_peer_acks_sent(mca_pml_dr2_peer_t *peer, int n)
{
    for (int i = 0; i < n; i++) {
        if (PML_DR2_HDR_ACK == peer->acks[i].type) {
            mca_pml_dr2.counters.acks_sent++;
        } else {
            mca_pml_dr2.counters.nacks_sent++;
        }
    }
    if (n > 0) {
        if (n < peer->nacks) { /* usually all of them went: nothing to move */
            memmove(&peer->acks[0], &peer->acks[n], sizeof(peer->acks[0]) * (peer->nacks - n));
        }
        peer->nacks -= n;
        peer->acks_since = mca_pml_dr2.progress_pass;
    }
}

typedef struct {
    mca_pml_dr2_peer_t *peer;
    int first, count;
} ack_fill_ctx_t;

static size_t fill_acks(void *vctx, unsigned char *buf, size_t len)
{
    ack_fill_ctx_t *ctx = vctx;

    return mca_pml_dr2_peer_encode_acks(ctx->peer, ctx->first, ctx->count, buf, len);
}

/* Queued ACKs from `first` that go alone in one segment: the run of those that go back on
 * the same path (*path), at most `per_segment`. */
static int ack_run(mca_pml_dr2_peer_t *peer, int first, size_t per_segment, int *path)
{
    int n = 1;

    *path = mca_pml_dr2_path_live(peer, peer->acks[first].path);
    while (first + n < peer->nacks && (size_t) n < per_segment
           && mca_pml_dr2_path_live(peer, peer->acks[first + n].path) == *path) {
        n++;
    }
    return n;
}

void mca_pml_dr2_peer_flush_acks(mca_pml_dr2_peer_t *peer)
{
    size_t per_segment;
    int done = 0;

    if (0 == peer->nacks || peer->failed) {
        peer->nacks = 0;
        mca_pml_dr2_peer_set_work(peer);
        return;
    }
    per_segment = peer->eager_limit_min / PML_DR2_HDR_ACK_LEN;
    if (per_segment < 1) {
        per_segment = 1;
    }
    while (done < peer->nacks) {
        int path;
        ack_fill_ctx_t ctx = {peer, done, ack_run(peer, done, per_segment, &path)};
        if (OMPI_SUCCESS
            != mca_pml_dr2_peer_send_segment(peer, path, (size_t) ctx.count * PML_DR2_HDR_ACK_LEN,
                                             true, fill_acks, &ctx)) {
            break; /* keep the rest for the next progress call */
        }
        mca_pml_dr2.path_counters.acks_sent[path]++;
        done += ctx.count;
    }
    mca_pml_dr2_peer_acks_sent(peer, done);
    mca_pml_dr2_peer_set_work(peer);
}

/* ---- teardown ------------------------------------------------------------------------- */

void mca_pml_dr2_peer_release(mca_pml_dr2_peer_t *peer)
{
    uint32_t key;
    void *value, *node = NULL;

    mca_pml_dr2_peer_abort_all(peer, MPI_ERR_PROC_FAILED);
    /* receive side: vfrag records and messages nobody waits for any more */
    while (OPAL_SUCCESS
           == opal_hash_table_get_first_key_uint32(&peer->rx_vfrags, &key, &value, &node)) {
        opal_hash_table_remove_value_uint32(&peer->rx_vfrags, key);
        free(value);
        node = NULL;
    }
    /* Messages still in the table are owned by a communicator's queues (freed with it)
     * or by a receive that can no longer complete: only forget the index. */
    while (OPAL_SUCCESS
           == opal_hash_table_get_first_key_uint32(&peer->rx_msgs, &key, &value, &node)) {
        opal_hash_table_remove_value_uint32(&peer->rx_msgs, key);
        ((mca_pml_dr2_rxmsg_t *) value)->in_hash = false;
        node = NULL;
    }
    if (peer->has_work) {
        work_list_remove(peer);
    }
    peer->nacks = 0;
    peer->nacks_in = 0;
}
