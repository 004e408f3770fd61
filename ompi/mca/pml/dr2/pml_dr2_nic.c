/*
 * ompi-resilience: the NIC behind each pml/dr2 path, through hwloc (see pml_dr2_nic.h).
 */
#include "ompi_config.h"

#include <net/if.h>
#include <string.h>

#include "opal/mca/hwloc/base/base.h"
/* The device of a module is in the BTLs' own module structures (Open MPI 5.0.7): dr2 is
 * built against the configured source tree, whose private headers these are. */
#include "opal/mca/btl/tcp/btl_tcp.h"
#if defined(__has_include)
#    if __has_include(<rdma/fabric.h>)
#        include "opal/mca/btl/ofi/btl_ofi.h"
#        define DR2_NIC_OFI 1
#    endif
#endif

#include "pml_dr2.h"
#include "pml_dr2_locality.h"
#include "pml_dr2_nic.h"
#include "pml_dr2_peer.h"

/* What was found for one BTL module: the same for every peer reached through it. */
typedef struct {
    const mca_btl_base_module_t *btl;
    int kind;
    int distance;
} nic_place_t;

#define NIC_PLACES_MAX 16
static nic_place_t places[NIC_PLACES_MAX];
static int nplaces = 0;
static const mca_btl_base_component_t *kinds[NIC_PLACES_MAX];
static int nkinds = 0;

/* The device of a BTL module as hwloc names it, or false if the BTL does not say. */
static bool module_device(const mca_btl_base_module_t *btl, char *name, size_t len)
{
    const char *component = btl->btl_component->btl_version.mca_component_name;

    if (0 == strcmp(component, "tcp")) {
        char ifname[IF_NAMESIZE];
        const mca_btl_tcp_module_t *tcp = (const mca_btl_tcp_module_t *) btl;
        if (NULL == if_indextoname(tcp->tcp_ifkindex, ifname)) {
            return false;
        }
        snprintf(name, len, "%s", ifname);
        return true;
    }
#ifdef DR2_NIC_OFI
    if (0 == strcmp(component, "ofi")) {
        /* the domain of the module's own copy of its fi_info: its linux_device_name points
         * into the fi_getinfo list that btl/ofi frees after choosing (5.0.7) */
        const mca_btl_ofi_module_t *ofi = (const mca_btl_ofi_module_t *) btl;
        if (NULL == ofi->fabric_info || NULL == ofi->fabric_info->domain_attr
            || NULL == ofi->fabric_info->domain_attr->name) {
            return false;
        }
        snprintf(name, len, "%s", ofi->fabric_info->domain_attr->name);
        return true;
    }
#endif
    return false;
}

static hwloc_obj_t os_device(hwloc_topology_t topology, const char *name)
{
    hwloc_obj_t dev = NULL;

    while (NULL != (dev = hwloc_get_next_osdev(topology, dev))) {
        if (NULL != dev->name && 0 == strcmp(dev->name, name)) {
            return dev;
        }
    }
    return NULL;
}

/* The distance of the device `name` from this process; `where` says where hwloc puts it. */
static int device_distance(const char *name, char *where, size_t len)
{
    hwloc_obj_t dev, local;

    snprintf(where, len, "not in the topology");
    if (NULL == opal_hwloc_topology && OPAL_SUCCESS != opal_hwloc_base_get_topology()) {
        snprintf(where, len, "no topology");
        return PML_DR2_NIC_UNKNOWN;
    }
    if (NULL == opal_hwloc_my_cpuset || NULL == (dev = os_device(opal_hwloc_topology, name))) {
        return PML_DR2_NIC_UNKNOWN;
    }
    local = hwloc_get_non_io_ancestor_obj(opal_hwloc_topology, dev);
    if (NULL == local || NULL == local->cpuset) {
        return PML_DR2_NIC_UNKNOWN;
    }
    snprintf(where, len, "local to %s %u", hwloc_obj_type_string(local->type), local->logical_index);
    return pml_dr2_nic_distance(hwloc_bitmap_isincluded(opal_hwloc_my_cpuset, local->cpuset),
                                hwloc_bitmap_intersects(opal_hwloc_my_cpuset, local->cpuset));
}

static int kind_of(const mca_btl_base_component_t *component)
{
    for (int i = 0; i < nkinds; i++) {
        if (kinds[i] == component) {
            return i;
        }
    }
    if (nkinds < NIC_PLACES_MAX) {
        kinds[nkinds] = component;
        return nkinds++;
    }
    return NIC_PLACES_MAX; /* more BTL components than ever loaded: one more kind */
}

static const nic_place_t *place_of(const mca_btl_base_module_t *btl)
{
    static nic_place_t overflow;
    nic_place_t *place = nplaces < NIC_PLACES_MAX ? &places[nplaces] : &overflow;
    char device[64], where[96];

    for (int i = 0; i < nplaces; i++) {
        if (places[i].btl == btl) {
            return &places[i];
        }
    }
    place->btl = btl;
    place->kind = kind_of(btl->btl_component);
    place->distance = PML_DR2_NIC_UNKNOWN;
    if (!module_device(btl, device, sizeof(device))) {
        snprintf(device, sizeof(device), "(not named by the BTL)");
        snprintf(where, sizeof(where), "-");
    } else if (!mca_pml_dr2.path_locality) {
        snprintf(where, sizeof(where), "not looked up (pml_dr2_path_locality 0)");
    } else {
        place->distance = device_distance(device, where, sizeof(where));
    }
    DR2_VERBOSE(10, "pml:dr2: btl %s module %p: device %s, %s: %s to this process",
                btl->btl_component->btl_version.mca_component_name, (const void *) btl, device,
                where, pml_dr2_nic_distance_name(place->distance));
    if (place != &overflow) {
        nplaces++;
    }
    return place;
}

void mca_pml_dr2_nic_place_paths(mca_pml_dr2_peer_t *peer)
{
    for (int i = 0; i < peer->npaths; i++) {
        const nic_place_t *place = place_of(peer->paths[i].bml_btl->btl);
        peer->path_state[i].kind = place->kind;
        peer->path_state[i].nic_distance = place->distance;
    }
    (void) pml_dr2_paths_apply_locality(peer->path_state, peer->npaths);
    for (int i = 0; i < peer->npaths && peer->npaths > 1; i++) {
        DR2_VERBOSE(10, "pml:dr2: path %d to %s: btl %s, NIC %s, weight %.0f: %s", i,
                    OMPI_NAME_PRINT(&peer->proc->super.proc_name),
                    peer->paths[i].bml_btl->btl->btl_component->btl_version.mca_component_name,
                    pml_dr2_nic_distance_name(peer->path_state[i].nic_distance),
                    peer->path_state[i].weight,
                    peer->path_state[i].standby
                        ? "stands by while a nearer path of its kind is up"
                        : "takes traffic");
    }
}
