/*
 * ompi-resilience: pml/dr2 sender-side timers (a vfrag's ACK timeout, a rendezvous waiting
 * for its go-ahead), failover of a path's vfrags to the paths still up, and messages
 * abandoned (a revoked communicator, a failed peer).
 */
#include "ompi_config.h"

#include <string.h>

#include "pml_dr2_ackmask.h"
#include "pml_dr2_vfrag_shared.h"

/* ---- timers ---------------------------------------------------------------------------- */

static void resend_rndv(mca_pml_dr2_txmsg_t *msg)
{
    mca_pml_dr2_vfrag_t fake;

    /* The RNDV vfrag is gone (acknowledged); rebuild its one fragment from the message. */
    memset(&fake, 0, sizeof(fake));
    fake.msg = msg;
    fake.id = msg->msg_id;
    fake.kind = PML_DR2_HDR_RNDV;
    fake.nfrags = 1;
    /* each resend on the next path: one silently dead, not known to be (nothing else of
     * ours crossed it since), must not leave the RNDV unanswered until the retry limit */
    fake.path = (uint8_t) mca_pml_dr2_path_live(msg->peer,
                                                (int) (msg->match_retries % msg->peer->npaths));
    if (OMPI_SUCCESS
        == mca_pml_dr2_txfrag_send(msg->peer, &fake, 0,
                         PML_DR2_HDR_FLAG_RETRANSMIT | PML_DR2_HDR_FLAG_ACK_NOW)) {
        mca_pml_dr2.counters.retransmits++;
    }
}

/* Stamp the vfrags waiting for their timer with the clock just read. They were sent (or
 * acknowledged in part) since the last progress call: they are among the newest, so the
 * peer's list is walked from its end. */
static void arm_timers(uint64_t now)
{
    mca_pml_dr2_peer_t *peer = mca_pml_dr2.arm_list, *next;

    mca_pml_dr2.arm_list = NULL;
    for (; NULL != peer; peer = next) {
        opal_list_item_t *item = opal_list_get_last(&peer->tx_unacked);
        uint32_t unseen = peer->to_arm;

        next = peer->arm_next;
        peer->on_arm_list = false;
        while (unseen > 0 && item != opal_list_get_end(&peer->tx_unacked)) {
            mca_pml_dr2_vfrag_t *v = (mca_pml_dr2_vfrag_t *) item;
            if (0 == v->deadline_us) {
                unseen--;
                if (mca_pml_dr2_path_locally_complete(&peer->paths[v->path], v->local_mark)) {
                    if (0 == v->sent_at_us) {
                        v->sent_at_us = now; /* first transmission left: the RTT sample's start */
                    }
                    v->armed_at_us = now;
                    v->deadline_us = now + path_backoff_us(peer, v->path, v->retries);
                    arm_deadline(v->deadline_us);
                    peer->to_arm--;
                }
            }
            item = opal_list_get_prev(item);
        }
        if (peer->to_arm > 0) {
            mca_pml_dr2_peer_need_arming(peer); /* still queued in the BTL: look again */
        }
    }
}

/* A vfrag of a peer with several paths up expired its timer: is its path cut? Where no
 * other path has shown the peer alive since the vfrag left, they are asked (the answer
 * counts at the vfrag's next expiry), so that a peer idle on its other paths does not hold
 * the failover to the full pml_dr2_path_retry_budget. */
static bool path_silence_says_down(mca_pml_dr2_peer_t *peer, const mca_pml_dr2_vfrag_t *v,
                                   uint64_t now)
{
    if (pml_dr2_path_timeout_says_down(peer->path_state, peer->npaths, v->path, v->retries,
                                       v->armed_at_us, now, &mca_pml_dr2.path_params)) {
        return true;
    }
    if (mca_pml_dr2.path_params.evidence_budget > 0
        && v->retries + 1 >= mca_pml_dr2.path_params.evidence_budget
        && peer->path_state[v->path].last_ack_us < v->armed_at_us) {
        (void) mca_pml_dr2_paths_ask_alive(peer, v->path, v->armed_at_us, now);
    }
    return false;
}

int mca_pml_dr2_timers_check(uint64_t now)
{
    mca_pml_dr2_peer_t *peer;
    uint64_t next = UINT64_MAX;
    int work = 0;

    if (NULL != mca_pml_dr2.arm_list) {
        arm_timers(now);
    }
    if (now < mca_pml_dr2.next_deadline_us) {
        return 0;
    }
    OPAL_LIST_FOREACH (peer, &mca_pml_dr2.peers, mca_pml_dr2_peer_t) {
        mca_pml_dr2_vfrag_t *v;
        mca_pml_dr2_txmsg_t *msg;

        if (peer->failed) {
            continue;
        }
        if (peer->nacks_in > 0) {
            /* what has been acknowledged cannot time out */
            mca_pml_dr2_vfrag_ack_deferred(peer);
        }
        OPAL_LIST_FOREACH (v, &peer->tx_unacked, mca_pml_dr2_vfrag_t) {
            if (0 == v->sent || 0 == v->deadline_us) {
                continue; /* not on the wire yet, or not armed yet: nothing to time */
            }
            if (v->deadline_us <= now) {
                uint64_t resend = pml_dr2_ackmask_full(v->nfrags) & ~v->acked & v->sent
                                  & ~v->pending;
                mca_pml_dr2.counters.timeouts++;
                v->retries++;
                if (peer->npaths > 1 && mca_pml_dr2_paths_up(peer) > 1
                    && path_silence_says_down(peer, v, now)) {
                    /* a silent cut: the path goes, its vfrags (this one too) are resent on
                     * the others at once; the peer's retry limit is not involved */
                    char why[200];
                    snprintf(why, sizeof(why),
                             "a vfrag unacknowledged for %" PRIu64 " us (%u timeouts of %u us "
                             "and more, pml_dr2_path_%s_budget)%s",
                             now - v->armed_at_us, v->retries,
                             (unsigned) path_backoff_us(peer, v->path, 0),
                             v->retries >= mca_pml_dr2.path_params.retry_budget ? "retry"
                                                                                : "evidence",
                             v->retries >= mca_pml_dr2.path_params.retry_budget
                                 ? "" : " while another path showed the peer alive");
                    mca_pml_dr2_path_down(peer, v->path, why);
                    work++;
                    continue;
                }
                if (mca_pml_dr2.retry_limit > 0 && v->retries > (uint32_t) mca_pml_dr2.retry_limit
                    && mca_pml_dr2_paths_up(peer) <= 1) {
                    mca_pml_dr2_peer_unreachable(peer->proc, "no acknowledgement within the retry limit");
                    break;
                }
                v->fast_resent = 0;
                if (peer->paths[v->path].wdog_expired) {
                    /* the transport has not sent what it already holds for the peer (see
                     * mca_pml_dr2_watchdog_check): a resend would only queue behind it. The
                     * expiry still counts towards the retry limit. */
                    resend = 0;
                }
                /* Probe, do not flood: resend only the highest missing fragment, with
                 * ACK_NOW. The receiver's answer shows every other gap, which the fast
                 * retransmit path then fills; after a lost tail that is all there is. */
                if (0 != resend) {
                    uint64_t probe = pml_dr2_ackmask_bit(63 - __builtin_clzll(resend));
                    /* ...and the MATCH/RNDV if it is missing: without it the receiver
                     * knows no message and drops every other fragment unanswered */
                    if (PML_DR2_HDR_FRAG != v->kind) {
                        probe |= resend & pml_dr2_ackmask_bit(0);
                    }
                    resend = probe;
                }
                vfrag_add_pending(peer, v, resend);
                v->deadline_us = now + path_backoff_us(peer, v->path, v->retries);
                work++;
            }
            if (v->deadline_us < next) {
                next = v->deadline_us;
            }
        }
        if (peer->failed) {
            continue;
        }
        if (OPAL_UNLIKELY(peer->npaths > 1 && mca_pml_dr2_paths_up(peer) < peer->npaths)) {
            work += mca_pml_dr2_paths_probe(peer, now, &next);
        }
        OPAL_LIST_FOREACH (msg, &peer->tx_await_match, mca_pml_dr2_txmsg_t) {
            if (msg->match_deadline_us <= now) {
                msg->match_retries++;
                /* A receiver that holds the RNDV answers each resend (MATCHED once it
                 * matched, a plain ACK until then), however long it takes to post the
                 * receive; one that answers none is as unreachable as one that does not
                 * acknowledge data (a path that died after the RNDV was acknowledged). */
                if (mca_pml_dr2.retry_limit > 0
                    && ++msg->match_unanswered > (uint32_t) mca_pml_dr2.retry_limit) {
                    mca_pml_dr2_peer_unreachable(peer->proc,
                                                 "no answer to a rendezvous within the retry limit");
                    break;
                }
                resend_rndv(msg);
                msg->match_deadline_us = now + backoff_us(peer, msg->match_retries + 2);
                work++;
            }
            if (msg->match_deadline_us < next) {
                next = msg->match_deadline_us;
            }
        }
        mca_pml_dr2_peer_push(peer);
    }
    mca_pml_dr2.next_deadline_us = next;
    return work;
}

/* ---- failover ---------------------------------------------------------------------------- */

void mca_pml_dr2_vfrag_reroute(mca_pml_dr2_peer_t *peer, int from)
{
    mca_pml_dr2_vfrag_t *v;
    unsigned long resent = 0;
    int moved = 0;

    OPAL_LIST_FOREACH (v, &peer->tx_unacked, mca_pml_dr2_vfrag_t) {
        uint64_t resend;
        if (v->path != from) {
            continue;
        }
        mca_pml_dr2_vfrag_move(peer, v, mca_pml_dr2_path_pick(peer, vfrag_wire_bytes(v)));
        /* a fresh start on the new path: its own retry budget, its own timing */
        v->retries = 0;
        v->fast_resent = 0;
        v->sent_at_us = 0;
        if (0 != v->deadline_us) {
            v->deadline_us = UINT64_MAX; /* no timer until it is sent again (vfrag_rearm) */
        }
        resend = v->sent & ~v->acked & ~v->pending;
        resent += (unsigned long) pml_dr2_ackmask_count(resend);
        vfrag_add_pending(peer, v, resend);
        v->retransmitted = true; /* Karn: an ACK may be of either transmission */
        moved++;
    }
    DR2_VERBOSE(1, "pml:dr2: %d vfrags of path %d to %s moved to the paths still up, %lu "
                "fragments resent", moved, from, OMPI_NAME_PRINT(&peer->proc->super.proc_name),
                resent);
    mca_pml_dr2_peer_push(peer);
}

/* ---- abandoning messages ---------------------------------------------------------------- */

void mca_pml_dr2_txmsg_abort(mca_pml_dr2_txmsg_t *msg, int error)
{
    mca_pml_dr2_peer_t *peer = msg->peer;
    mca_pml_dr2_vfrag_t *v, *next;

    OPAL_LIST_FOREACH_SAFE (v, next, &peer->tx_unacked, mca_pml_dr2_vfrag_t) {
        if (v->msg != msg) {
            continue;
        }
        vfrag_leave_flight(peer, v);
        pml_dr2_path_unassign(&peer->path_state[v->path], vfrag_wire_bytes(v));
        vfrag_free(v);
    }
    mca_pml_dr2_txmsg_finish(msg, error);
    mca_pml_dr2_peer_set_work(peer);
    if (!peer->failed) {
        mca_pml_dr2_txmsg_schedule_blocked(peer);
    }
}

void mca_pml_dr2_peer_abort_all(mca_pml_dr2_peer_t *peer, int error)
{
    peer->nacks_in = 0; /* for messages about to be abandoned */
    while (!opal_list_is_empty(&peer->tx_unacked)) {
        mca_pml_dr2_vfrag_t *v = (mca_pml_dr2_vfrag_t *) opal_list_get_first(&peer->tx_unacked);
        mca_pml_dr2_txmsg_abort(v->msg, error);
    }
    while (!opal_list_is_empty(&peer->tx_blocked)) {
        mca_pml_dr2_txmsg_abort((mca_pml_dr2_txmsg_t *) opal_list_get_first(&peer->tx_blocked),
                                error);
    }
    while (!opal_list_is_empty(&peer->tx_await_match)) {
        mca_pml_dr2_txmsg_abort((mca_pml_dr2_txmsg_t *) opal_list_get_first(&peer->tx_await_match),
                                error);
    }
}
