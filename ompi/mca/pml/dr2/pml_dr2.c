/*
 * ompi-resilience: pml/dr2 module: the PML function table, process and communicator
 * management, progress, failures (see pml_dr2.h).
 */
#include "ompi_config.h"

#include <limits.h>
#include <stdlib.h>

#include "opal/class/opal_bitmap.h"
#include "opal/mca/base/mca_base_component_repository.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/show_help.h"

#include "ompi/errhandler/errhandler.h"
#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/pml/base/base.h"
#include "ompi/runtime/mpiruntime.h"
#include "ompi/runtime/params.h"
#include "ompi/mca/common/ompires/ompires_abi.h"
#include "ompi/mca/common/ompires/ompires_sigpipe.h"

#include "pml_dr2.h"
#include "pml_dr2_comm.h"
#include "pml_dr2_keepalive.h"
#include "pml_dr2_peer.h"
#include "pml_dr2_recvfrag.h"
#include "pml_dr2_vfrag.h"

mca_pml_dr2_t mca_pml_dr2 = {
    .super = {
        .pml_add_procs = mca_pml_dr2_add_procs,
        .pml_del_procs = mca_pml_dr2_del_procs,
        .pml_enable = mca_pml_dr2_enable,
        .pml_progress = mca_pml_dr2_progress,
        .pml_add_comm = mca_pml_dr2_add_comm,
        .pml_del_comm = mca_pml_dr2_del_comm,
        .pml_revoke_comm = mca_pml_dr2_revoke_comm,
        .pml_irecv_init = mca_pml_dr2_irecv_init,
        .pml_irecv = mca_pml_dr2_irecv,
        .pml_recv = mca_pml_dr2_recv,
        .pml_isend_init = mca_pml_dr2_isend_init,
        .pml_isend = mca_pml_dr2_isend,
        .pml_send = mca_pml_dr2_send,
        .pml_iprobe = mca_pml_dr2_iprobe,
        .pml_probe = mca_pml_dr2_probe,
        .pml_start = mca_pml_dr2_start,
        .pml_improbe = mca_pml_dr2_improbe,
        .pml_mprobe = mca_pml_dr2_mprobe,
        .pml_imrecv = mca_pml_dr2_imrecv,
        .pml_mrecv = mca_pml_dr2_mrecv,
        .pml_dump = mca_pml_dr2_dump,
        /* 16 bits would do for our header (32-bit ctx); ob1's limit keeps the classic
         * CID allocation identical */
        .pml_max_contextid = 65535,
        .pml_max_tag = INT_MAX,
        /* REQUIRE_WORLD: every process of the job is added (and its BTL endpoints mapped
         * to a peer) before the first message, so that a segment from any of them can be
         * attributed. No SUPPORTS_EXT_CID: communicator ids are then the same everywhere
         * and the 32-bit ctx of our header names a communicator on both sides. */
        .pml_flags = MCA_PML_BASE_FLAG_REQUIRE_WORLD,
        .pml_get_transports = NULL,
    },
};

static bool callbacks_registered = false;
static bool component_retained = false;
static bool failures_pending = false;

/* ---- failures ------------------------------------------------------------------------- */

void mca_pml_dr2_peer_unreachable(struct ompi_proc_t *proc, const char *why)
{
    mca_pml_dr2_peer_t *peer = NULL;

    if (OPAL_SUCCESS
            != opal_hash_table_get_value_uint64(&mca_pml_dr2.peer_by_proc, (uint64_t) (uintptr_t) proc,
                                                (void **) &peer)
        || peer->failed) {
        return;
    }
    DR2_VERBOSE(1, "pml:dr2: peer %s is unreachable: %s", OMPI_NAME_PRINT(&proc->super.proc_name),
                why);
    /* Stop sending at once; the rest (abandoning its messages, telling ULFM) happens in
     * progress, outside whatever dr2 frame noticed it. */
    peer->failed = true;
    failures_pending = true;
}

static void handle_failures(void)
{
    mca_pml_dr2_peer_t *peer;

    failures_pending = false;
    OPAL_LIST_FOREACH (peer, &mca_pml_dr2.peers, mca_pml_dr2_peer_t) {
        if (!peer->failed || peer->failure_handled) {
            continue;
        }
        peer->failure_handled = true;
        mca_pml_dr2_peer_abort_all(peer, MPI_ERR_PROC_FAILED);
        peer->nacks = 0;
        mca_pml_dr2_peer_set_work(peer);
        if (ompi_mpi_state >= OMPI_MPI_STATE_FINALIZE_PAST_COMM_SELF_DESTRUCT) {
            continue;
        }
        if (ompi_ftmpi_enabled) {
            if (ompi_proc_is_active(peer->proc)) {
                ompi_errhandler_proc_failed(peer->proc);
            }
        } else {
            ompires_add_help_dir();
            opal_show_help("help-pml-dr2.txt", "peer-unreachable", true,
                           OMPI_NAME_PRINT(&peer->proc->super.proc_name),
                           mca_pml_dr2.retry_limit);
            ompi_mpi_errors_are_fatal_comm_handler(NULL, NULL, "pml dr2: peer unreachable");
        }
    }
}

static void error_handler(struct mca_btl_base_module_t *btl, int32_t flags, opal_proc_t *errproc,
                          char *btlinfo)
{
    if (mca_pml_dr2.closed) {
        return;
    }
    if (ompi_mpi_state >= OMPI_MPI_STATE_FINALIZE_PAST_COMM_SELF_DESTRUCT) {
        /* BTLs report peers leaving during a normal finalize: not an error, but do not
         * wait for acknowledgements from them any more */
        mca_pml_dr2_peer_t *peer = NULL;
        if (NULL != errproc) {
            mca_pml_dr2_enter();
            if (OPAL_SUCCESS
                == opal_hash_table_get_value_uint64(&mca_pml_dr2.peer_by_proc,
                                                    (uint64_t) (uintptr_t) errproc,
                                                    (void **) &peer)) {
                peer->gone = true;
            }
            mca_pml_dr2_leave();
        }
        return;
    }
    DR2_VERBOSE(1, "pml:dr2: the %s BTL reports an error for %s: %s",
                btl->btl_component->btl_version.mca_component_name,
                NULL == errproc ? "an unknown peer" : OMPI_NAME_PRINT(&errproc->proc_name),
                NULL == btlinfo ? "" : btlinfo);
    if (NULL != errproc) {
        /* one path of a peer that has several: taken out from progress, where the others
         * carry on (failover); the last one going makes the peer unreachable there */
        bool path_of_several;
        mca_pml_dr2_enter();
        path_of_several = mca_pml_dr2_path_btl_error((ompi_proc_t *) errproc, btl);
        mca_pml_dr2_leave();
        if (path_of_several) {
            return;
        }
    }
    if (ompi_ftmpi_enabled && NULL != errproc) {
        mca_pml_dr2_enter();
        mca_pml_dr2_peer_unreachable((ompi_proc_t *) errproc, "BTL error");
        mca_pml_dr2_leave();
        ompi_errhandler_proc_failed((ompi_proc_t *) errproc);
        return;
    }
    ompi_mpi_errors_are_fatal_comm_handler(NULL, NULL, btlinfo);
}

/* ---- processes ------------------------------------------------------------------------- */

int mca_pml_dr2_add_procs(struct ompi_proc_t **procs, size_t nprocs)
{
    opal_bitmap_t reachable;
    int rc;

    if (0 == nprocs) {
        return OMPI_SUCCESS;
    }
    rc = mca_pml_base_pml_check_selected("dr2", procs, nprocs);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (NULL == mca_bml.bml_add_procs) {
        return OMPI_ERR_UNREACH;
    }
    OBJ_CONSTRUCT(&reachable, opal_bitmap_t);
    rc = opal_bitmap_init(&reachable, (int) nprocs);
    if (OMPI_SUCCESS == rc) {
        rc = mca_bml.bml_add_procs(nprocs, procs, &reachable);
    }
    OBJ_DESTRUCT(&reachable);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    mca_pml_dr2_enter();
    for (size_t i = 0; i < nprocs; i++) {
        (void) mca_pml_dr2_peer_get(procs[i]);
    }
    mca_pml_dr2_leave();
    if (!callbacks_registered) {
        /* From now on the BTLs hold pointers to our code (the receive and error callbacks,
         * descriptor completion callbacks) until they close, which is after the PML
         * framework closed us: stay loaded until then (the repository unloads every
         * component at the very end of finalize). */
        if (!component_retained) {
            (void) mca_base_component_repository_retain_component("pml", "dr2");
            component_retained = true;
        }
        rc = mca_bml.bml_register(MCA_PML_DR2_BTL_TAG, mca_pml_dr2_recv_frag_callback, NULL);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        rc = mca_bml.bml_register_error(error_handler);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        callbacks_registered = true;
    }
    return OMPI_SUCCESS;
}

/* Peers whose data may still need acknowledging: not failed and not known to have left. */
static bool peer_may_answer(mca_pml_dr2_peer_t *peer)
{
    return !peer->failed && !peer->gone && ompi_proc_is_active(peer->proc);
}

static size_t unacked_vfrags(void)
{
    mca_pml_dr2_peer_t *peer;
    size_t n = 0;

    OPAL_LIST_FOREACH (peer, &mca_pml_dr2.peers, mca_pml_dr2_peer_t) {
        if (peer_may_answer(peer)) {
            n += opal_list_get_size(&peer->tx_unacked) + opal_list_get_size(&peer->tx_blocked);
        }
    }
    return n;
}

/* Descriptors the BTLs still hold for peers being torn down, except for peers that are
 * known to be gone (a BTL may keep a descriptor queued on a dead connection for ever). */
static size_t closing_inflight(void)
{
    mca_pml_dr2_peer_t *peer;
    size_t n = 0;

    OPAL_LIST_FOREACH (peer, &mca_pml_dr2.peers, mca_pml_dr2_peer_t) {
        if (peer->closing && !peer->gone && ompi_proc_is_active(peer->proc)) {
            n += (size_t) mca_pml_dr2_peer_inflight(peer);
        }
    }
    return n;
}

/* Called by MPI_Finalize (after the runtime's barrier, so every process has stopped
 * communicating) before the BML deletes the endpoints. Ordered teardown:
 *  1. give the last eager data a bounded chance to be acknowledged (needed when
 *     finalize does not synchronise, harmless otherwise); a peer that already left is
 *     recognised by its BTL failing our sends (send_complete, error_handler);
 *  2. stop: the peers send nothing more (no retransmission, no ACK, no timer), and
 *     whatever they still send us is dropped (recv_segment ignores failed peers);
 *  3. let the BTLs complete the descriptors they hold for us (bounded), so that none of
 *     them completes after the endpoints are gone.
 * Only then the BML deletes the endpoints. */
int mca_pml_dr2_del_procs(struct ompi_proc_t **procs, size_t nprocs)
{
    uint64_t give_up;

    /* Step 1 learns that a peer has left from the BTL failing our sends to it; over TCP
     * on Linux that failure is SIGPIPE, fatal by default (ompires_sigpipe.h). */
    (void) ompires_ignore_sigpipe_if_default();
    mca_pml_dr2_enter();
    for (size_t i = 0; i < nprocs; i++) {
        mca_pml_dr2_peer_t *peer = NULL;
        if (OPAL_SUCCESS
            == opal_hash_table_get_value_uint64(&mca_pml_dr2.peer_by_proc,
                                                (uint64_t) (uintptr_t) procs[i], (void **) &peer)) {
            peer->closing = true;
        }
    }
    mca_pml_dr2_leave();

    /* 1. */
    give_up = mca_pml_dr2_now_us() + 2 * (uint64_t) mca_pml_dr2.ack_timeout_max_us;
    for (;;) {
        size_t left;
        mca_pml_dr2_enter();
        left = unacked_vfrags();
        mca_pml_dr2_leave();
        if (0 == left || mca_pml_dr2_now_us() > give_up) {
            break;
        }
        opal_progress();
    }

    /* 2. */
    mca_pml_dr2_enter();
    for (size_t i = 0; i < nprocs; i++) {
        mca_pml_dr2_peer_t *peer = NULL;
        if (OPAL_SUCCESS
            == opal_hash_table_get_value_uint64(&mca_pml_dr2.peer_by_proc,
                                                (uint64_t) (uintptr_t) procs[i], (void **) &peer)) {
            /* the BML endpoint is about to go: nothing may be sent any more */
            peer->failed = true;
            peer->failure_handled = true;
            mca_pml_dr2_peer_abort_all(peer, MPI_ERR_PROC_FAILED); /* disarms its timers */
            peer->nacks = 0;
            mca_pml_dr2_peer_set_work(peer);
        }
    }
    mca_pml_dr2_leave();

    /* 3. */
    give_up = mca_pml_dr2_now_us() + (uint64_t) mca_pml_dr2.ack_timeout_max_us;
    for (;;) {
        size_t left;
        mca_pml_dr2_enter();
        left = closing_inflight();
        mca_pml_dr2_leave();
        if (0 == left || mca_pml_dr2_now_us() > give_up) {
            break;
        }
        opal_progress();
    }

    if (NULL != mca_bml.bml_del_procs) {
        return mca_bml.bml_del_procs(nprocs, procs);
    }
    return OMPI_SUCCESS;
}

int mca_pml_dr2_enable(bool enable)
{
    mca_pml_dr2.enabled = enable;
    return OMPI_SUCCESS;
}

/* ---- progress ---------------------------------------------------------------------------- */

/* A progress call with something to do (see mca_pml_dr2_progress). Out of line: the
 * registers it saves would otherwise be pushed and popped by every idle call too (callgrind:
 * two thirds of an idle call's instructions were that prologue and epilogue). */
static __attribute__((noinline)) int progress_work(void)
{
    mca_pml_dr2_peer_t *peer;
    int work = 0;

    mca_pml_dr2_enter();
    if (mca_pml_dr2.path_errors_pending && 1 == mca_pml_dr2.depth) {
        mca_pml_dr2_paths_handle_errors(); /* may make a peer unreachable: before failures */
    }
    if (failures_pending && 1 == mca_pml_dr2.depth) {
        handle_failures();
    }
    /* Read the clock when vfrags wait to be armed (they take their send time from it),
     * otherwise on one call in MCA_PML_DR2_CLOCK_PASSES: a message waiting for its ACK keeps
     * a timer armed for its whole round trip, while a waiting process calls progress in a
     * tight loop, and a clock reading costs about as much as the rest of the idle call.
     * A timer then fires a few progress calls late: nothing next to its milliseconds. */
    if (mca_pml_dr2.timers_armed > 0
        && (NULL != mca_pml_dr2.arm_list
            || 0 == (mca_pml_dr2.progress_pass & (MCA_PML_DR2_CLOCK_PASSES - 1)))) {
        /* the one clock reading of this call */
        uint64_t now = mca_pml_dr2.now_us = mca_pml_dr2_now_us();
        if (now >= mca_pml_dr2.next_watchdog_us) {
            work += mca_pml_dr2_watchdog_check(now);
        }
        if (now >= mca_pml_dr2.next_keepalive_us) {
            work += mca_pml_dr2_keepalive_check(now);
        }
        if (now >= mca_pml_dr2.next_deadline_us) {
            /* a peer ULFM learnt is dead (from the runtime, not from us) stops here */
            OPAL_LIST_FOREACH (peer, &mca_pml_dr2.peers, mca_pml_dr2_peer_t) {
                if (!peer->failed && !ompi_proc_is_active(peer->proc)) {
                    mca_pml_dr2_peer_unreachable(peer->proc, "reported failed");
                }
            }
            work += mca_pml_dr2_timers_check(now);
        } else if (NULL != mca_pml_dr2.arm_list) {
            (void) mca_pml_dr2_timers_check(now); /* arms, nothing expires */
        }
    }
    if (mca_pml_dr2.peers_with_work > 0 && mca_pml_dr2.progress_pass >= mca_pml_dr2.work_due_pass) {
        mca_pml_dr2_peer_t *next;
        /* lowered again below by every peer still with work, and by set_work for any peer
         * that gets work meanwhile (a completion callback may send) */
        mca_pml_dr2.work_due_pass = UINT64_MAX;
        /* a peer leaves the list when its work is done, here or later: only ever itself */
        for (peer = mca_pml_dr2.work_list; NULL != peer; peer = next) {
            next = peer->work_next;
            if (peer->nacks_in > 0 && mca_pml_dr2.progress_pass - peer->acks_in_since >= 2) {
                /* one full progress call after they arrived: see mca_pml_dr2_peer_defer_ack */
                mca_pml_dr2_vfrag_ack_deferred(peer);
            }
            /* An ACK waits a few progress calls for a data segment to the peer to ride
             * on (a reply, in a ping-pong): then it goes alone. */
            if (peer->nacks > 0
                && mca_pml_dr2.progress_pass - peer->acks_since
                       >= mca_pml_dr2_peer_ack_wait(peer)) {
                mca_pml_dr2_peer_flush_acks(peer);
            }
            mca_pml_dr2_peer_push(peer);
            if (peer->has_work) {
                mca_pml_dr2_peer_note_work_due(peer);
            }
            work++;
        }
    }
    mca_pml_dr2_leave();
    return work;
}

int mca_pml_dr2_progress(void)
{
    mca_pml_dr2.progress_pass++;
    /* The common cases, nothing to do or only timers that are not due for a clock reading
     * (see below), cost a few loads and no lock. */
    if ((0 == mca_pml_dr2.peers_with_work || mca_pml_dr2.progress_pass < mca_pml_dr2.work_due_pass)
        && !failures_pending && !mca_pml_dr2.path_errors_pending
        && (0 == mca_pml_dr2.timers_armed
            || (NULL == mca_pml_dr2.arm_list
                && 0 != (mca_pml_dr2.progress_pass & (MCA_PML_DR2_CLOCK_PASSES - 1))))) {
        return 0;
    }
    return progress_work();
}

/* ---- diagnostics ------------------------------------------------------------------------- */

int mca_pml_dr2_dump(struct ompi_communicator_t *comm, int verbose)
{
    mca_pml_dr2_comm_t *dcomm = (mca_pml_dr2_comm_t *) comm->c_pml_comm;
    mca_pml_dr2_counters_t *c = &mca_pml_dr2.counters;
    mca_pml_dr2_peer_t *peer;

    mca_pml_dr2_enter();
    opal_output(0, "pml:dr2: communicator %s (cid %u): %zu posted receives, %zu unexpected",
                comm->c_name, ompi_comm_get_local_cid(comm),
                NULL == dcomm ? (size_t) 0 : opal_list_get_size(&dcomm->posted),
                NULL == dcomm ? (size_t) 0 : opal_list_get_size(&dcomm->unexpected));
    opal_output(0,
                "pml:dr2: fragments sent %lu received %lu, retransmits %lu (fast %lu), "
                "timeouts %lu, acks %lu/%lu, nacks %lu/%lu, crc errors %lu, duplicates %lu, "
                "malformed %lu, unknown msg %lu, injected drop/corrupt/dup %lu/%lu/%lu",
                c->frags_sent, c->frags_received, c->retransmits, c->fast_retransmits, c->timeouts,
                c->acks_sent, c->acks_received, c->nacks_sent, c->nacks_received,
                c->data_crc_errors, c->duplicates, c->malformed, c->unknown_msg, c->injected_drop,
                c->injected_corrupt, c->injected_dup);
    OPAL_LIST_FOREACH (peer, &mca_pml_dr2.peers, mca_pml_dr2_peer_t) {
        if (verbose > 0 || !opal_list_is_empty(&peer->tx_unacked)) {
            opal_output(0,
                        "pml:dr2: peer %s%s: next vfrag %u, %zu unacked, %zu blocked, %zu awaiting "
                        "match, %d of %d paths up",
                        OMPI_NAME_PRINT(&peer->proc->super.proc_name), peer->failed ? " (failed)" : "",
                        peer->tx_next_id, opal_list_get_size(&peer->tx_unacked),
                        opal_list_get_size(&peer->tx_blocked),
                        opal_list_get_size(&peer->tx_await_match), mca_pml_dr2_paths_up(peer),
                        peer->npaths);
            for (int i = 0; i < peer->npaths; i++) {
                const pml_dr2_path_state_t *st = &peer->path_state[i];
                opal_output(0,
                            "pml:dr2:   path %d (btl %s): %s, srtt %u us, rto %u us, %" PRIu64
                            " bytes queued, %" PRIu64 " segments in the BTL",
                            i, peer->paths[i].bml_btl->btl->btl_component->btl_version.mca_component_name,
                            st->up ? "up" : "down", st->srtt_us, st->rto_us, st->queued_bytes,
                            mca_pml_dr2_path_inflight(&peer->paths[i]));
            }
        }
    }
    mca_pml_dr2_leave();
    return OMPI_SUCCESS;
}

/* ---- finalize ------------------------------------------------------------------------------ */

/* With pml_dr2_verbose >= 2, one line per process at MPI_Finalize saying what the network
 * did to it: a user sees whether dr2 repaired anything without reading MPI_T counters. */
static void log_counters(void)
{
    const mca_pml_dr2_counters_t *c = &mca_pml_dr2.counters;
    unsigned long hdr_errors = 0;

    for (int i = 1; i < PML_DR2_HDR_NUM_STATUS; i++) {
        hdr_errors += c->hdr_errors[i];
    }
    DR2_VERBOSE(2,
                "pml:dr2: fragments sent %lu (resent %lu, of which fast %lu; ACK timeouts %lu, "
                "local timeouts %lu), received %lu (payload CRC errors %lu, header errors %lu, "
                "duplicates %lu, malformed %lu); ACKs sent %lu, received %lu; NACKs sent %lu, "
                "received %lu; injected drop %lu, corrupt %lu, dup %lu; payloads copied "
                "separately %lu, copy-way probes %lu; sent in place %lu; sent without ACK over "
                "sm/self %lu",
                c->frags_sent, c->retransmits, c->fast_retransmits, c->timeouts, c->local_timeouts,
                c->frags_received, c->data_crc_errors, hdr_errors, c->duplicates, c->malformed,
                c->acks_sent, c->acks_received, c->nacks_sent, c->nacks_received,
                c->injected_drop, c->injected_corrupt, c->injected_dup, c->copy_separate,
                c->copy_probes, c->frags_in_place, c->local_sent);
    for (int i = 0; i < PML_DR2_PATH_MAX; i++) {
        const mca_pml_dr2_path_counters_t *pc = &mca_pml_dr2.path_counters;
        if (0 == pc->frags_sent[i] && 0 == pc->acks_sent[i] && 0 == pc->downs[i]) {
            continue;
        }
        DR2_VERBOSE(2,
                    "pml:dr2: path %d: fragments sent %lu (resent %lu), ACK segments %lu, "
                    "down %lu, up %lu, probes %lu",
                    i, pc->frags_sent[i], pc->retransmits[i], pc->acks_sent[i], pc->downs[i],
                    pc->ups[i], pc->probes[i]);
    }
}

int mca_pml_dr2_finalize(void)
{
    opal_list_item_t *item;

    log_counters();

    /* The BTLs outlive us (the BML closes after the PML). Our receive callback stays
     * registered, not NULL: btl/tcp, sm and self call it without checking. It and every
     * other callback of ours ignore everything from now on (this component stays loaded
     * until the BTLs are gone, see add_procs). */
    mca_pml_dr2_enter();
    mca_pml_dr2.closed = true;
    mca_pml_dr2.arm_list = NULL;
    mca_pml_dr2_leave();
    if (callbacks_registered && NULL != mca_bml.bml_register_error) {
        (void) mca_bml.bml_register_error(NULL);
    }
    callbacks_registered = false;
    mca_pml_dr2_enter();
    while (NULL != (item = opal_list_remove_first(&mca_pml_dr2.peers))) {
        mca_pml_dr2_peer_t *peer = (mca_pml_dr2_peer_t *) item;
        peer->failed = true;
        mca_pml_dr2_peer_release(peer);
        OBJ_RELEASE(peer->proc);
        OBJ_RELEASE(peer);
    }
    while (NULL != (item = opal_list_remove_first(&mca_pml_dr2.nocomm))) {
        mca_pml_dr2_rxmsg_release((mca_pml_dr2_rxmsg_t *) item);
    }
    while (NULL != (item = opal_list_remove_first(&mca_pml_dr2.deferred))) {
        OBJ_DESTRUCT(item);
        free(item);
    }
    mca_pml_dr2.depth--;
    OPAL_THREAD_UNLOCK(&mca_pml_dr2.lock);
    return OMPI_SUCCESS;
}
