/*
 * ompi-resilience: pml/dr2 segments that name their sender (the FROM header, pml_dr2_hdr.h).
 *
 * dr2 tells which peer a segment comes from by the BTL endpoint it arrived from: ACKs,
 * NACKs and FRAGs name no sender, they belong to a peer. btl.h lets a BTL deliver without an
 * endpoint ("May be NULL if the endpoint is not readily available for this BTL"), and
 * btl/ofi always does: it posts its receives for any source and never asks libfabric where
 * a message came from (Open MPI 5.0.7, btl_ofi_frag.c, mca_btl_ofi_recv_frag); btl/uct does
 * the same. Over btl/ofi every dr2 segment was dropped "from an unknown endpoint (nil)" and
 * the first message waited for ever (both ranks in ompi_request_wait_completion, gdb).
 *
 * On such a BTL every segment dr2 sends starts with a FROM header that carries the sender's
 * process name; the receiver finds the peer by that name and the path by the BTL module
 * that delivered the segment (one module per network or NIC, as for btl/tcp). 16 bytes per
 * segment: 0.4 % of btl/ofi's 4 KiB. A BTL that gives its endpoints (read for this: tcp, sm,
 * self, smcuda, usnic) carries no FROM.
 */
#ifndef MCA_PML_DR2_FROM_H
#define MCA_PML_DR2_FROM_H

#include "pml_dr2.h"

BEGIN_C_DECLS

struct mca_pml_dr2_peer_t;

/* Segments dr2 sends on this BTL start with a FROM header, and those it receives from it
 * must. The same answer in every process for the same BTL component. */
bool mca_pml_dr2_btl_names_sender(const mca_btl_base_module_t *btl);

/* Our FROM header, encoded once (mca_pml_dr2_from_init): PML_DR2_HDR_FROM_LEN bytes. */
extern unsigned char mca_pml_dr2_from_self[PML_DR2_HDR_FROM_LEN];
void mca_pml_dr2_from_init(void);

/* A peer was set up: segments naming its process find it. */
void mca_pml_dr2_from_add_peer(struct mca_pml_dr2_peer_t *peer);

/* The peer named by the FROM header that starts the segment (len bytes), or NULL: damaged
 * (counted as a header error), or a process dr2 has no peer for (counted as an unknown
 * endpoint). */
struct mca_pml_dr2_peer_t *mca_pml_dr2_from_sender(const unsigned char *seg, size_t len);

END_C_DECLS

#endif /* MCA_PML_DR2_FROM_H */
