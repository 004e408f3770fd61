/*
 * ompi-resilience: pml/dr2 paths by where their NIC is, and by what their BTL advertises.
 *
 * Pure logic, no MPI, no hwloc (pml_dr2_nic.c measures; this decides).
 *
 * Nearness. On a node with several NICs (two sockets, a NIC on each), a process bound to
 * the cores of one socket reaches its own socket's NIC directly and the other one across
 * the inter-socket link: the far NIC's traffic costs that link's bandwidth and latency, and
 * the other socket's memory controller. A NIC's distance from the process compares the CPUs
 * local to the NIC (hwloc: the cpuset of the NIC's nearest non-I/O ancestor) with the CPUs
 * the process may run on:
 *   NEAR    every CPU of the process is local to the NIC;
 *   PARTLY  some are (an unbound process, spread over both sockets: every NIC is PARTLY);
 *   FAR     none is;
 *   unknown the BTL does not say which device it uses, or hwloc does not know the device
 *           (a virtual interface, a topology without I/O devices).
 *
 * Rule. Among the paths to a peer, those of one kind (one BTL component: two btl/tcp
 * networks, two btl/ofi NICs) are alternatives of one another. A path stands by, taking no
 * new vfrag, while another path of its kind that is up has a NIC known to be nearer; the
 * nearest of a kind that are up share the traffic (by weight, pml_dr2_path.h). A path of
 * unknown distance never stands by and never makes another stand by, and paths of
 * different kinds never affect each other: nearness orders alternatives, it does not
 * compare a tcp path with an ofi path. A path standing by is up: it still answers probes
 * and carries ACKs of what arrives on it, its failure is still noticed, and it takes
 * traffic again as soon as the nearer paths of its kind are down (failover), then stands
 * by again once one of them is back.
 *
 * Weights. A path's weight is the bandwidth its BTL advertises (btl_<name>_bandwidth;
 * btl/tcp per interface). btl/ofi advertises none (0): next to a btl/tcp path of 10000
 * Mb/s it would get one vfrag in ten thousand. A path whose BTL advertises nothing weighs
 * as much as the heaviest path of the peer that does (all 1 when none does): the unknown
 * is taken as a peer of the best, and the unacknowledged bytes that the scheduling
 * measures correct a wrong guess.
 */
#ifndef PML_DR2_LOCALITY_H
#define PML_DR2_LOCALITY_H

#include <stdbool.h>

#include "pml_dr2_path.h"

typedef enum {
    PML_DR2_NIC_UNKNOWN = -1,
    PML_DR2_NIC_NEAR = 0,
    PML_DR2_NIC_PARTLY = 1,
    PML_DR2_NIC_FAR = 2,
} pml_dr2_nic_distance_t;

/* The distance of a NIC whose local CPUs, compared with the process's, include all of them
 * (`all_local`) or some (`some_local`). */
static inline pml_dr2_nic_distance_t pml_dr2_nic_distance(bool all_local, bool some_local)
{
    return all_local ? PML_DR2_NIC_NEAR : (some_local ? PML_DR2_NIC_PARTLY : PML_DR2_NIC_FAR);
}

/* A short name of a distance ("near", "partly near", "far", "unknown"), for logs. */
const char *pml_dr2_nic_distance_name(int distance);

/* weight[i] of each of the n paths from the bandwidth its BTL advertises (advertised[i],
 * <= 0: none), as described above. */
void pml_dr2_path_weights(const double *advertised, int n, double *weight);

/* Set the standby flag of each of the n paths from their kind, NIC distance and whether
 * they are up (the rule above). Returns how many stand by. Call after any of those
 * changed (a path down or up again). */
int pml_dr2_paths_apply_locality(pml_dr2_path_state_t *paths, int n);

#endif /* PML_DR2_LOCALITY_H */
