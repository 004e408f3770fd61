/*
 * ompi-resilience: pml/dr2 receive-side decisions.
 *
 * Pure logic, no MPI. Everything the receiver decides about a data fragment (MATCH, RNDV
 * or FRAG) whose header the codec accepted, before and after its payload is placed:
 *
 *   1. pml_dr2_rx_classify(): given the duplicate window and what we know of the message
 *      the header names (looked up by pml_dr2_rx_msg_key()), the fragment is a DUPLICATE
 *      (answer with an ACK), of an UNKNOWN message (drop silently), REJECTed (it
 *      contradicts our state), the first fragment of a NEW message (create it, then go on
 *      as for ACCEPT) or ACCEPTed: where it goes (vfrag, index, offset) is in the decision.
 *   2. pml_dr2_rx_vfrag_check(): against the record of its vfrag, if there is one (vfrags
 *      of several fragments have one from their first fragment to their completion): a
 *      fragment already held is a DUPLICATE, one that disagrees with the record is
 *      REJECTed; one to place may need a new record (need_record).
 *   3. after the payload was placed and its checksum verified: pml_dr2_rx_frag_intact()
 *      updates the record, marks the window when the vfrag is complete and says which ACK
 *      to send; pml_dr2_rx_frag_corrupt() gives the NACK.
 *
 * What is guaranteed to the caller (and checked by test/fuzz/fuzz_dr2_rx.c): an ACCEPTed
 * fragment's payload [offset, offset + frag_len) lies within the message's own msg_len (the
 * one recorded when the message was created, not the one in this header); a message never
 * counts more bytes than its length; its index is below its vfrag's fragment count (<= 64);
 * a vfrag is marked in the window only when every one of its fragments was placed intact,
 * and a fragment of a marked vfrag is never accepted again; every ACK or NACK mask is
 * non-empty and names only fragments of the vfrag.
 */
#ifndef PML_DR2_RXCHECK_H
#define PML_DR2_RXCHECK_H

#include <stdint.h>

#include "pml_dr2_hdr.h"
#include "pml_dr2_window.h"

/* What the receiver knows of a message: the fields the checks need. */
typedef struct {
    uint32_t msg_id;         /* vfrag id of its MATCH or RNDV */
    uint64_t msg_len;        /* from its MATCH or RNDV */
    uint64_t bytes_received; /* payload bytes placed intact so far */
    int32_t tag;
    uint8_t rndv;    /* a rendezvous message */
    uint8_t has_req; /* bound to a receive request (rendezvous: we gave the go-ahead) */
} pml_dr2_rx_msg_view_t;

/* A vfrag of several fragments being received (single-fragment vfrags have none). */
typedef struct {
    uint32_t id;
    uint8_t nfrags;
    uint64_t mask; /* fragments placed intact */
    uint32_t msg_id;
} pml_dr2_rx_vfrag_t;

typedef enum {
    PML_DR2_RX_ACCEPT = 0,  /* place the payload */
    PML_DR2_RX_NEW_MSG,     /* MATCH or RNDV of a message we do not know yet: create it */
    PML_DR2_RX_DUPLICATE,   /* drop; answer with ack_mask (ack_flags) if non-zero */
    PML_DR2_RX_UNKNOWN_MSG, /* FRAG of no message we know (its MATCH was lost): drop */
    PML_DR2_RX_REJECT,      /* contradicts our state: drop, count as malformed */
} pml_dr2_rx_verdict_t;

typedef enum {
    PML_DR2_RX_WHY_OK = 0,
    PML_DR2_RX_WHY_WINDOW,         /* DUPLICATE: its vfrag is complete (or too old) */
    PML_DR2_RX_WHY_FRAG_HELD,      /* DUPLICATE: this fragment of its vfrag is held */
    PML_DR2_RX_WHY_NO_MSG,         /* UNKNOWN_MSG */
    PML_DR2_RX_WHY_MSG_MISMATCH,   /* kind, length or tag differ from the message's */
    PML_DR2_RX_WHY_RNDV_LAYOUT,    /* a new RNDV with several fragments or more than eager data */
    PML_DR2_RX_WHY_EAGER_TOO_LONG, /* a new eager message larger than we buffer */
    PML_DR2_RX_WHY_NOT_ASKED,      /* rendezvous data before our go-ahead */
    PML_DR2_RX_WHY_BAD_LAYOUT,     /* a FRAG in the place of a MATCH, or in a RNDV's vfrag */
    PML_DR2_RX_WHY_VFRAG_MISMATCH, /* fragment count or message differ from the vfrag's */
    PML_DR2_RX_WHY_VFRAG_SINGLE,   /* "one fragment" while the vfrag has several */
    PML_DR2_RX_WHY_OVERCOUNT,      /* more bytes than the message holds */
    PML_DR2_RX_NUM_WHY
} pml_dr2_rx_reason_t;

typedef struct {
    pml_dr2_rx_verdict_t verdict;
    pml_dr2_rx_reason_t reason;
    /* ACCEPT and NEW_MSG: where the payload goes */
    uint32_t vfrag;
    uint32_t msg_id;
    uint8_t index;  /* in the vfrag, < nfrags */
    uint8_t nfrags; /* 1 .. 64 */
    uint64_t offset;
    uint32_t len; /* payload bytes (hdr->frag_len) */
    uint64_t room; /* bytes the message can still count: msg_len - bytes_received */
    /* DUPLICATE: the ACK that answers it (mask 0: none) */
    uint64_t ack_mask;
    uint8_t ack_flags;
    /* ACCEPT from pml_dr2_rx_vfrag_check(): the vfrag has several fragments and no record
     * yet: create one (pml_dr2_rx_vfrag_init) before placing the payload */
    uint8_t need_record;
} pml_dr2_rx_decision_t;

/* After a fragment was placed: what to send, and whether its vfrag is now complete (its
 * record, if any, is then to be dropped). */
typedef struct {
    uint8_t ack_type; /* PML_DR2_HDR_ACK or PML_DR2_HDR_NACK; 0: nothing to send */
    uint64_t ack_mask;
    uint8_t vfrag_complete;
} pml_dr2_rx_outcome_t;

/* The message a data header belongs to: its own vfrag id for MATCH and RNDV, msg_id for
 * FRAG. */
uint32_t pml_dr2_rx_msg_key(const pml_dr2_hdr_t *hdr);

/* Step 1, for a data header accepted by the codec. `msg` is the message with id
 * pml_dr2_rx_msg_key(hdr), NULL if there is none; `eager_limit` the largest new eager
 * message accepted. Changes nothing. */
void pml_dr2_rx_classify(const pml_dr2_window_t *win, const pml_dr2_hdr_t *hdr,
                         const pml_dr2_rx_msg_view_t *msg, uint64_t eager_limit,
                         pml_dr2_rx_decision_t *d);

/* Step 2, for an ACCEPTed fragment (after NEW_MSG: once the message exists, with the
 * decision turned into ACCEPT by the caller, see pml_dr2_rx_new_msg_accept). `rv` is the
 * record of d->vfrag, NULL if there is none. Sets d->verdict (ACCEPT, DUPLICATE or REJECT),
 * d->reason, d->ack_mask and d->need_record. Changes nothing else.
 * A fragment not held yet whose length exceeds what the message can still count (d->room)
 * is REJECTed (OVERCOUNT): fragments that overlap others of the message, which no sender
 * produces, must not complete a receive before all of its bytes arrived. A fragment held
 * already stays a DUPLICATE (its ACK is repeated), whatever its length. */
void pml_dr2_rx_vfrag_check(const pml_dr2_rx_vfrag_t *rv, pml_dr2_rx_decision_t *d);

/* A new record for the vfrag of decision d (nothing received yet). */
void pml_dr2_rx_vfrag_init(pml_dr2_rx_vfrag_t *rv, const pml_dr2_rx_decision_t *d);

/* Turn a NEW_MSG decision into the ACCEPT of its first fragment, once the message exists. */
static inline void pml_dr2_rx_new_msg_accept(pml_dr2_rx_decision_t *d)
{
    d->verdict = PML_DR2_RX_ACCEPT;
    d->reason = PML_DR2_RX_WHY_OK;
}

/* Step 3: the payload was placed and is intact. `rv` is the vfrag's record (NULL for a
 * single-fragment vfrag); `hdr_flags` the header's flags (ACK_NOW). Updates the record,
 * marks the window when the vfrag is complete. */
void pml_dr2_rx_frag_intact(pml_dr2_window_t *win, pml_dr2_rx_vfrag_t *rv,
                            const pml_dr2_rx_decision_t *d, uint8_t hdr_flags,
                            pml_dr2_rx_outcome_t *out);

/* Step 3: the payload failed its checksum: NACK the fragment. Nothing is marked. */
void pml_dr2_rx_frag_corrupt(const pml_dr2_rx_decision_t *d, pml_dr2_rx_outcome_t *out);

/* Short names for logs and counters. */
const char *pml_dr2_rx_verdict_name(pml_dr2_rx_verdict_t verdict);
const char *pml_dr2_rx_reason_name(pml_dr2_rx_reason_t reason);

#endif /* PML_DR2_RXCHECK_H */
