/*
 * ompi-resilience: pml/dr2 segments that name their sender (see pml_dr2_from.h).
 */
#include "ompi_config.h"

#include <string.h>

#include "pml_dr2.h"
#include "pml_dr2_from.h"
#include "pml_dr2_peer.h"

unsigned char mca_pml_dr2_from_self[PML_DR2_HDR_FROM_LEN];

/* BTLs whose receive callbacks name the endpoint a segment came from (Open MPI 5.0.7:
 * btl_tcp_endpoint.c, btl_sm_fbox.h and btl_sm_component.c, btl_self.c,
 * btl_smcuda_component.c, btl_usnic_recv.c). Any other BTL, read or not, gets FROM
 * headers: 16 bytes a segment are cheaper than a BTL whose every segment is dropped. */
static const char *const btls_with_endpoints[] = {"tcp", "sm", "self", "smcuda", "usnic"};

bool mca_pml_dr2_btl_names_sender(const mca_btl_base_module_t *btl)
{
    /* asked for every segment received: one BTL module at a time, mostly */
    static const mca_btl_base_module_t *last_btl = NULL;
    static bool last_answer = false;
    const char *name;

    if (OPAL_LIKELY(btl == last_btl)) {
        return last_answer;
    }
    name = btl->btl_component->btl_version.mca_component_name;
    last_answer = true;
    for (size_t i = 0; i < sizeof(btls_with_endpoints) / sizeof(btls_with_endpoints[0]); i++) {
        if (0 == strcmp(name, btls_with_endpoints[i])) {
            last_answer = false;
            break;
        }
    }
    last_btl = btl;
    return last_answer;
}

static uint64_t name_key(uint32_t jobid, uint32_t vpid)
{
    return ((uint64_t) jobid << 32) | vpid;
}

void mca_pml_dr2_from_init(void)
{
    pml_dr2_from_hdr_t from = {.jobid = OMPI_PROC_MY_NAME->jobid,
                               .vpid = OMPI_PROC_MY_NAME->vpid};

    (void) pml_dr2_hdr_pack_from(&from, mca_pml_dr2_from_self, sizeof(mca_pml_dr2_from_self));
}

void mca_pml_dr2_from_add_peer(mca_pml_dr2_peer_t *peer)
{
    const opal_process_name_t *name = &peer->proc->super.proc_name;

    (void) opal_hash_table_set_value_uint64(&mca_pml_dr2.peer_by_name,
                                            name_key(name->jobid, name->vpid), peer);
}

/* A process that is known (added to this job, or connected to it) but has no peer yet:
 * set one up, as a segment from its BTL endpoint would. Never creates a process from what
 * the wire says. */
static mca_pml_dr2_peer_t *peer_of_known_process(const pml_dr2_from_hdr_t *from)
{
    ompi_process_name_t name = {.jobid = from->jobid, .vpid = from->vpid};
    ompi_proc_t *proc = ompi_proc_find(&name);

    return NULL == proc ? NULL : mca_pml_dr2_peer_get(proc);
}

mca_pml_dr2_peer_t *mca_pml_dr2_from_sender(const unsigned char *seg, size_t len)
{
    /* one-entry cache in front of the hash table: segments come in runs from one peer */
    static uint64_t last_key = UINT64_MAX;
    static mca_pml_dr2_peer_t *last_peer = NULL;
    pml_dr2_from_hdr_t from;
    pml_dr2_hdr_status_t st = pml_dr2_hdr_decode_from(seg, len, &from);
    mca_pml_dr2_peer_t *peer = NULL;
    uint64_t key;

    if (OPAL_UNLIKELY(PML_DR2_HDR_OK != st)) {
        mca_pml_dr2.counters.hdr_errors[st]++;
        DR2_VERBOSE(20, "pml:dr2: dropped a segment whose sender header is %s",
                    pml_dr2_hdr_status_name(st));
        return NULL;
    }
    key = name_key(from.jobid, from.vpid);
    if (OPAL_LIKELY(key == last_key)) {
        return last_peer;
    }
    if (OPAL_SUCCESS
            != opal_hash_table_get_value_uint64(&mca_pml_dr2.peer_by_name, key, (void **) &peer)
        && NULL == (peer = peer_of_known_process(&from))) {
        mca_pml_dr2.counters.unknown_endpoint++;
        DR2_VERBOSE(20, "pml:dr2: dropped a segment from process %u.%u, which has no peer",
                    from.jobid, from.vpid);
        return NULL;
    }
    last_key = key;
    last_peer = peer;
    return peer;
}
