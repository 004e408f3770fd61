/*
 * ompi-resilience: pml/dr2 fragments on the wire, sender side: a vfrag's fragments packed
 * into BTL segments (header, payload copied with its CRC32C, the ACKs we owe the peer
 * riding along), and the EAGER and TINY forms of a small message. The formats are in
 * pml_dr2_hdr.h.
 */
#include "ompi_config.h"

#include <string.h>

#include "pml_dr2_crc.h"
#include "pml_dr2_vfrag_shared.h"

typedef struct {
    const mca_pml_dr2_vfrag_t *v;
    unsigned index;
    uint8_t flags;
    int acks;  /* queued ACKs of the peer to piggyback (the first `inline_ack` in the header) */
    int inline_ack; /* EAGER: 1 if the peer's first queued ACK rides inside the header */
} frag_ctx_t;

static inline uint32_t frag_payload_len(const mca_pml_dr2_vfrag_t *v, unsigned index)
{
    uint64_t start = (uint64_t) index * v->msg->frag_len;
    uint64_t left;

    if (start >= v->len) {
        return 0;
    }
    left = v->len - start;
    return left < v->msg->frag_len ? (uint32_t) left : v->msg->frag_len;
}

/* The matching envelope of message msg, whose first vfrag is `id` (MATCH, RNDV, EAGER,
 * TINY); the lengths are the caller's. */
static inline void txmsg_envelope(const mca_pml_dr2_txmsg_t *msg, uint32_t id,
                                  pml_dr2_match_hdr_t *match)
{
    match->ctx = msg->ctx;
    match->epoch = msg->epoch;
    match->src = msg->src;
    match->tag = msg->tag;
    match->seq = msg->seq;
    match->vfrag = id;
}

static inline uint32_t copy_payload_way(pml_dr2_copy_way_t way, unsigned char *dst,
                                        const unsigned char *src, uint32_t len)
{
    if (PML_DR2_COPY_SEPARATE == way) {
        /* The checksum of the source first (the caller's buffer, in this core's cache),
         * then one memcpy of the whole payload: memcpy's string moves write into the
         * BTL's buffer without the stalls of vector stores, but only in one long run
         * (cut into 4 KiB pieces they stall too), and checksumming the copy after it
         * reads lines the string moves did not leave in L1 (1 MiB: 48-49 us against
         * 52-54 on cores sharing no cache, 26-28 against 36-38 on cores sharing one). */
        uint32_t crc = pml_dr2_crc32c(PML_DR2_CRC32C_INIT, src, len);

        mca_pml_dr2.counters.copy_separate++;
        memcpy(dst, src, len);
        return crc;
    }
    return pml_dr2_crc32c_copy(PML_DR2_CRC32C_INIT, dst, src, len);
}

/* A fragment's payload into the BTL's buffer, and its CRC: the way pml_dr2_copy says, or,
 * under auto, the way the peer's copy choice has measured to be cheaper
 * (pml_dr2_copychoice.h: on cores that share no cache the fused stores stall). */
static uint32_t copy_payload_with_crc(mca_pml_dr2_peer_t *peer, unsigned char *dst,
                                      const unsigned char *src, uint32_t len)
{
    pml_dr2_copy_choice_t *choice = &peer->tx_copy;
    bool timed = choice->probing;
    opal_timer_t start = 0;
    uint32_t crc;

    if (PML_DR2_COPY_AUTO != mca_pml_dr2.copy_way) {
        return copy_payload_way((pml_dr2_copy_way_t) mca_pml_dr2.copy_way, dst, src, len);
    }
    if (len < PML_DR2_COPY_CHOICE_MIN) {
        return copy_payload_way(PML_DR2_COPY_FUSED, dst, src, len);
    }
    if (timed) {
        start = opal_timer_base_get_cycles();
    }
    crc = copy_payload_way((pml_dr2_copy_way_t) choice->way, dst, src, len);
    pml_dr2_copy_choice_record(choice, timed ? opal_timer_base_get_cycles() - start : 0, len);
    if (timed && !choice->probing) {
        mca_pml_dr2.counters.copy_probes++;
        DR2_VERBOSE(10, "pml:dr2: copy to %s: %s (per KiB: fused %" PRIu64 ", separate %" PRIu64
                    " ticks)", OMPI_NAME_PRINT(&peer->proc->super.proc_name),
                    PML_DR2_COPY_SEPARATE == choice->way ? "separate" : "fused",
                    choice->best_cost[PML_DR2_COPY_FUSED],
                    choice->best_cost[PML_DR2_COPY_SEPARATE]);
    }
    return crc;
}

/* Every data header has one length: a fragment's payload follows it at that offset. */
_Static_assert(PML_DR2_HDR_MATCH_LEN == PML_DR2_HDR_MAX_LEN
                   && PML_DR2_HDR_FRAG_LEN == PML_DR2_HDR_MAX_LEN,
               "fill_fragment and send_fragment_in_place put the payload at PML_DR2_HDR_MAX_LEN");

/* The header of fragment ctx->index of its vfrag, its data checksum left to the caller;
 * the payload's length is returned and its offset in the message put in *off. */
static uint32_t fragment_header(const frag_ctx_t *ctx, pml_dr2_hdr_t *hdr, uint64_t *off)
{
    const mca_pml_dr2_vfrag_t *v = ctx->v;
    const mca_pml_dr2_txmsg_t *msg = v->msg;
    uint32_t flen = frag_payload_len(v, ctx->index);

    *off = v->offset + (uint64_t) ctx->index * msg->frag_len;
    memset(hdr, 0, sizeof(*hdr));
    hdr->flags = ctx->flags;
    if (0 == ctx->index && PML_DR2_HDR_FRAG != v->kind) {
        hdr->type = v->kind;
        hdr->flags |= msg->match_flags;
        txmsg_envelope(msg, v->id, &hdr->match);
        hdr->match.frag_count = v->nfrags;
        hdr->match.msg_len = msg->msg_len;
    } else {
        hdr->type = PML_DR2_HDR_FRAG;
        hdr->frag.msg_id = msg->msg_id;
        hdr->frag.vfrag = v->id;
        hdr->frag.frag_index = (uint8_t) ctx->index;
        hdr->frag.frag_count = v->nfrags;
        hdr->frag.offset = *off;
        hdr->frag.msg_len = msg->msg_len;
    }
    hdr->frag_len = flen;
    hdr->data_crc = 0;
    if (!msg->peer->tx_crc) {
        hdr->flags |= PML_DR2_HDR_FLAG_NO_DATA_CRC;
    }
    return flen;
}

/* Pack fragment `index` of a vfrag (header + payload) into a BTL segment. The message's
 * data is always contiguous here (user buffer or packed copy): the payload is copied and
 * checksummed by copy_payload_with_crc. */
static size_t fill_fragment(void *vctx, unsigned char *buf, size_t len)
{
    frag_ctx_t *ctx = vctx;
    mca_pml_dr2_txmsg_t *msg = ctx->v->msg;
    unsigned char *payload = buf + PML_DR2_HDR_MAX_LEN;
    pml_dr2_hdr_t hdr;
    uint64_t off;
    uint32_t flen = fragment_header(ctx, &hdr, &off);

    if (flen > 0) {
        if (msg->peer->tx_crc) {
            hdr.data_crc = copy_payload_with_crc(msg->peer, payload, msg->contig + off, flen);
        } else {
            memcpy(payload, msg->contig + off, flen);
        }
    }
    (void) pml_dr2_hdr_encode(&hdr, buf, PML_DR2_HDR_MAX_LEN);
    if (ctx->acks > 0) {
        /* headers are packed back to back: the receiver reads the ACKs after the data */
        return PML_DR2_HDR_MAX_LEN + flen
               + mca_pml_dr2_peer_encode_acks(msg->peer, 0, ctx->acks,
                                              buf + PML_DR2_HDR_MAX_LEN + flen,
                                              len - PML_DR2_HDR_MAX_LEN - flen);
    }
    return PML_DR2_HDR_MAX_LEN + flen;
}

/* Fragments from this size go in place where they may (goes_in_place). Smaller ones (the
 * short last fragment of a message) are copied as before: the copy saved would be small
 * against the convertor and the second segment that sending in place costs. */
#define MCA_PML_DR2_IN_PLACE_MIN 32768

/* Whether fragment ctx->index goes in place: a large one, alone in its segment, from the
 * user's own buffer, with a checksum, on a path that sends in place (btl/tcp), without
 * fault injection (which changes the bytes it sends), and sent for the first time.
 * The send completes when every fragment is acknowledged, and the application may free its
 * buffer at once: no descriptor of ours may still read it then. A first transmission has
 * left btl/tcp before its acknowledgement can come back, unless that acknowledgement was
 * for a copy resent on another path; a resend is often still queued when the first
 * transmission's acknowledgement arrives (a timer fired while the ACK was on its way), so
 * resends are copies. Unmapped memory makes btl/tcp's write fail (EFAULT) and costs the
 * connection (test dr2/in-place-spurious-resends).
 * What remains is a first transmission stuck behind a silent cut while its resend crossed
 * another path (or one of a message abandoned under ULFM): it sends a fragment the
 * receiver already holds (a duplicate, dropped) or no longer wants, and bytes changed since
 * no longer match the checksum taken when it was handed over, so they are never delivered;
 * a buffer unmapped meanwhile fails that path's connection, which the path's probes
 * replace. Hence the user's buffer only (our own copies are freed when their message is
 * done, and our freed memory would be sent to the peer) and the checksum (without it
 * nothing tells changed bytes from the original). */
static inline bool goes_in_place(const mca_pml_dr2_peer_t *peer, const frag_ctx_t *ctx)
{
    const mca_pml_dr2_vfrag_t *v = ctx->v;

    return peer->paths[v->path].in_place && 0 == ctx->acks && peer->tx_crc
           && 0 == (ctx->flags & PML_DR2_HDR_FLAG_RETRANSMIT)
           && MCA_PML_DR2_OWN_NONE == v->msg->own && !mca_pml_dr2.inject_enabled
           && frag_payload_len(v, ctx->index) >= MCA_PML_DR2_IN_PLACE_MIN;
}

/* A fragment sent in place: its checksum is a read pass over the source, and the BTL
 * writes header and payload from where they lie (pml_dr2_peer_send_in_place). Saves the
 * copy into the BTL's buffer, about as much CPU per byte as one of the kernel's copies
 * (docs/bench/dr2-cluster-analysis.md). */
static int send_fragment_in_place(mca_pml_dr2_peer_t *peer, const frag_ctx_t *ctx)
{
    const mca_pml_dr2_txmsg_t *msg = ctx->v->msg;
    unsigned char head[PML_DR2_HDR_MAX_LEN];
    pml_dr2_hdr_t hdr;
    uint64_t off;
    uint32_t flen = fragment_header(ctx, &hdr, &off);

    if (peer->tx_crc) {
        hdr.data_crc = pml_dr2_crc32c(PML_DR2_CRC32C_INIT, msg->contig + off, flen);
    }
    (void) pml_dr2_hdr_encode(&hdr, head, sizeof(head));
    return mca_pml_dr2_peer_send_in_place(peer, ctx->v->path, head, sizeof(head),
                                          msg->contig + off, flen);
}

static inline bool is_eager_fragment(const mca_pml_dr2_vfrag_t *v, unsigned index)
{
    return 0 == index && PML_DR2_HDR_MATCH == v->kind && 1 == v->nfrags
           && v->len == v->msg->msg_len && mca_pml_dr2_txmsg_is_eager(v->msg);
}

/* The EAGER header of message `msg` (vfrag `id`) without an ACK inside: every field EAGER
 * has is set (the codec sets the lengths), so no memset. */
static inline void eager_hdr_start(pml_dr2_hdr_t *hdr, const mca_pml_dr2_txmsg_t *msg,
                                   uint32_t id, uint8_t flags)
{
    hdr->type = PML_DR2_HDR_EAGER;
    hdr->flags = flags;
    txmsg_envelope(msg, id, &hdr->match);
    hdr->piggy_ack.vfrag = 0;
    hdr->piggy_ack.mask = 0;
}

size_t mca_pml_dr2_txfrag_pack_eager(const mca_pml_dr2_txmsg_t *msg, uint32_t id, uint8_t flags,
                                     int inline_ack, int acks, unsigned char *buf, size_t len)
{
    const mca_pml_dr2_peer_t *peer = msg->peer;
    pml_dr2_hdr_t hdr;
    size_t n;

    eager_hdr_start(&hdr, msg, id, flags);
    if (inline_ack) {
        hdr.piggy_ack.vfrag = peer->acks[0].vfrag;
        hdr.piggy_ack.mask = peer->acks[0].mask;
        hdr.flags |= peer->acks[0].flags & PML_DR2_HDR_FLAG_MATCHED;
    }
    n = pml_dr2_hdr_pack(&hdr, buf, len, msg->contig, (uint32_t) msg->msg_len);
    if (acks > inline_ack) {
        /* the ACKs that did not fit in the header follow it */
        n += mca_pml_dr2_peer_encode_acks(msg->peer, inline_ack, acks - inline_ack, buf + n,
                                          len - n);
    }
    return n;
}

size_t mca_pml_dr2_txfrag_pack_tiny(const mca_pml_dr2_txmsg_t *msg, uint32_t id,
                                    unsigned char *buf, size_t len)
{
    pml_dr2_match_hdr_t match;

    txmsg_envelope(msg, id, &match);
    return pml_dr2_hdr_pack_tiny_envelope(&match, buf, len, msg->contig, (uint32_t) msg->msg_len);
}

static size_t fill_eager(void *vctx, unsigned char *buf, size_t len)
{
    frag_ctx_t *ctx = vctx;

    return mca_pml_dr2_txfrag_pack_eager(ctx->v->msg, ctx->v->id, ctx->flags, ctx->inline_ack, ctx->acks, buf, len);
}

/* How many of the ACKs we owe the peer ride on a data segment of `len` bytes (`eager`: an
 * EAGER header, which holds one of them itself, in *inline_ack): as many as fit below the
 * BTL's eager size, so that a small segment stays small; large fragments go alone. */
int mca_pml_dr2_txfrag_acks_to_piggyback(mca_pml_dr2_peer_t *peer, size_t len, bool eager,
                                         int *inline_ack)
{
    size_t limit;
    int acks = 0;

    *inline_ack = 0;
    if (0 == peer->nacks) {
        return 0;
    }
    if (eager && PML_DR2_HDR_ACK == peer->acks[0].type
        && 0 == (peer->acks[0].flags & PML_DR2_HDR_FLAG_REVOKED)) { /* EAGER carries no REVOKED */
        *inline_ack = acks = 1;
    }
    limit = peer->eager_limit_min;
    if (len < limit) {
        int more = mca_pml_dr2_peer_acks_fitting(peer, limit - len);
        if (more > peer->nacks - *inline_ack) {
            more = peer->nacks - *inline_ack;
        }
        acks += more;
    }
    return acks;
}

int mca_pml_dr2_txfrag_send(mca_pml_dr2_peer_t *peer, const mca_pml_dr2_vfrag_t *v,
                            unsigned index, uint8_t flags)
{
    size_t len = PML_DR2_HDR_MAX_LEN + frag_payload_len(v, index);
    frag_ctx_t ctx = {v, index, flags, 0, 0};
    bool eager = is_eager_fragment(v, index);
    int rc;

    ctx.acks = mca_pml_dr2_txfrag_acks_to_piggyback(peer, len, eager, &ctx.inline_ack);
    len += (size_t) (ctx.acks - ctx.inline_ack) * PML_DR2_HDR_ACK_LEN;
    rc = OMPI_ERR_NOT_SUPPORTED;
    if (!eager && goes_in_place(peer, &ctx)) {
        rc = send_fragment_in_place(peer, &ctx);
        mca_pml_dr2.counters.frags_in_place += OMPI_SUCCESS == rc;
    }
    if (OMPI_ERR_NOT_SUPPORTED == rc) {
        rc = mca_pml_dr2_peer_send_segment(peer, v->path, len, 1 == v->nfrags,
                                           eager ? fill_eager : fill_fragment, &ctx);
    }
    if (OMPI_SUCCESS == rc) {
        mca_pml_dr2.counters.frags_sent++;
        mca_pml_dr2.path_counters.frags_sent[v->path]++;
        if (flags & PML_DR2_HDR_FLAG_RETRANSMIT) {
            mca_pml_dr2.path_counters.retransmits[v->path]++;
        }
        if (ctx.acks > 0) {
            mca_pml_dr2_peer_acks_sent(peer, ctx.acks);
        }
    }
    return rc;
}
