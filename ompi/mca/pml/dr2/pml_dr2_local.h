/*
 * ompi-resilience: pml/dr2 small messages to a peer reached through no wire.
 *
 * A process of the same node is reached through btl/sm (or self, itself): a copy through
 * shared memory, which loses, duplicates and reorders nothing, and corrupts nothing short
 * of a memory fault, which the copy a resend would come from shares. The reliability
 * protocol buys nothing there, and on a small message it is most of the cost: a vfrag with
 * its ACK timer, the checksums, an ACK segment back (1.2-1.5x ob1's latency on sm,
 * docs/bench/dr2-sm-2026-11-27).
 *
 * So under pml_dr2_checksum auto, a message of at most pml_dr2_local_max bytes to a peer
 * whose every path crosses no wire goes as a LOCAL header (pml_dr2_hdr.h): its envelope
 * and payload, no vfrag id, no checksum, no ACK. The send is complete when the BTL has
 * taken the segment (ob1's inline send). The receiver matches it by its sequence number
 * like any message, so it keeps MPI's order among the peer's messages however these
 * travelled. A LOCAL that arrives on a path that crosses a wire is malformed: dropped and
 * counted, never matched.
 *
 * Not used while fault injection is on (what it injects must be behind the protocol), and
 * never for a message whose envelope does not fit 16-bit fields.
 */
#ifndef MCA_PML_DR2_LOCAL_H
#define MCA_PML_DR2_LOCAL_H

#include "pml_dr2.h"
#include "pml_dr2_hdr.h"
#include "pml_dr2_peer.h"

BEGIN_C_DECLS

/* LOCALs may be sent: pml_dr2_checksum auto, pml_dr2_local_max > 0, no fault injection. */
static inline bool mca_pml_dr2_local_enabled(void)
{
    return MCA_PML_DR2_CHECKSUM_AUTO == mca_pml_dr2.checksum && mca_pml_dr2.local_max > 0
           && !mca_pml_dr2.inject_enabled && !(mca_pml_dr2.inject_nomem > 0.0);
}

/* The message of `len` bytes to `peer` may go as a LOCAL. */
static inline bool mca_pml_dr2_local_fits(const mca_pml_dr2_peer_t *peer, size_t len)
{
    return peer->tx_local && len <= mca_pml_dr2.local_max;
}

/* Send the message with envelope `match` (ctx, src, tag, seq) and `len` payload bytes as a
 * LOCAL, if mca_pml_dr2_local_fits (lock held). True if the BTL took it: the message is
 * sent and complete. With `must_leave`, only if it also left this process at once (not
 * queued in the BTL, where only this process's progress would move it): what a request
 * that completes on return needs. False if not sent (the caller sends it the ordinary
 * way, with the same sequence number). */
bool mca_pml_dr2_local_send(mca_pml_dr2_peer_t *peer, const pml_dr2_match_hdr_t *match,
                            const void *buf, uint32_t len, bool must_leave);

/* A LOCAL from `peer`, decoded (lock held). */
void mca_pml_dr2_local_receive(mca_pml_dr2_peer_t *peer, const pml_dr2_hdr_t *hdr,
                               const unsigned char *payload);

END_C_DECLS

#endif /* MCA_PML_DR2_LOCAL_H */
