/*
 * ompi-resilience: pml/dr2 keepalive: a peer we wait for that has gone silent is probed.
 *
 * A process learns that a peer is unreachable from its own fragments going unacknowledged
 * (pml_dr2_retry_limit). A process that only waits, a receive posted or a rendezvous'
 * data expected from the peer and nothing of its own in flight to it, would never learn:
 * after a silent cut of every network between them it would wait for ever. So, when
 * pml_dr2_retry_limit is set: a peer that is awaited (a posted receive names it, or a
 * message from it is being received; a receive from any source names no peer), to which
 * nothing of ours is in flight, and from which nothing arrived for one ACK timeout, is sent
 * a probe (pml_dr2_btlpath.h) on a live path, then again at the doubling intervals of a
 * vfrag's timer. Anything that arrives from it ends the probing. When as many probes as
 * pml_dr2_retry_limit went unanswered, the peer is unreachable, as after that many ACK
 * timeouts of a vfrag: a process failure under ULFM, else the job ends.
 *
 * The cost: without pml_dr2_retry_limit nothing (no probe, no check). With it, progress
 * reads the clock on one call in MCA_PML_DR2_CLOCK_PASSES even when no timer is armed, a
 * check every MCA_PML_DR2_KEEPALIVE_TICK_US (a walk over the posted receives), and, while
 * a peer we wait for is silent, a 20-byte probe per interval.
 */
#ifndef MCA_PML_DR2_KEEPALIVE_H
#define MCA_PML_DR2_KEEPALIVE_H

#include "pml_dr2.h"

BEGIN_C_DECLS

/* Between two keepalive checks, microseconds. */
#define MCA_PML_DR2_KEEPALIVE_TICK_US 10000

/* Keepalive check, from progress when mca_pml_dr2.next_keepalive_us is due. Returns the
 * probes sent. */
int mca_pml_dr2_keepalive_check(uint64_t now_us);

END_C_DECLS

#endif /* MCA_PML_DR2_KEEPALIVE_H */
