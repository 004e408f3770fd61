/*
 * ompi-resilience: pml/dr2's view of the NIC behind each path: which device a BTL module
 * uses, where hwloc puts that device, and how near it is to this process (the decision is
 * pml_dr2_locality.h's).
 *
 * BTLs name their devices each in their own way: a btl/tcp module is one kernel interface
 * (its index in the module; hwloc names the network OS device after the interface, "eth0"),
 * a btl/ofi module one libfabric domain (its name: the interface for the sockets, tcp and
 * udp providers, the RDMA device, "mlx5_0", for verbs, as hwloc's OpenFabrics OS device is
 * named). The device is looked up among the OS devices of Open MPI's topology
 * (opal_hwloc_topology: the node's, or the one in HWLOC_XMLFILE), its local CPUs are the
 * cpuset of its nearest non-I/O ancestor, and they are compared with the CPUs this process
 * is bound to (opal_hwloc_my_cpuset; an unbound process may run on every CPU).
 */
#ifndef MCA_PML_DR2_NIC_H
#define MCA_PML_DR2_NIC_H

#include "pml_dr2.h"

BEGIN_C_DECLS

struct mca_pml_dr2_peer_t;

/* Set the kind (one per BTL component) and NIC distance of each of the peer's paths, from
 * the BTL modules' devices (pml_dr2_path_locality false: distances stay unknown), and
 * which stand by. What is found is said at pml_dr2_verbose 10, once per BTL module. */
void mca_pml_dr2_nic_place_paths(struct mca_pml_dr2_peer_t *peer);

END_C_DECLS

#endif /* MCA_PML_DR2_NIC_H */
