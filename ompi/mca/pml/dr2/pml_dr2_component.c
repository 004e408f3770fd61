/*
 * ompi-resilience: pml/dr2 component: MCA parameters, counters, and the checks that decide
 * whether the component may run at all.
 */
#include "ompi_config.h"

#include <stdio.h>
#include <string.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/show_help.h"

#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/common/ompires/ompires_abi.h"
#include "ompi/proc/proc.h"

#include "pml_dr2.h"
#include "pml_dr2_copychoice.h"
#include "pml_dr2_crc.h"
#include "pml_dr2_from.h"
#include "pml_dr2_inject.h"
#include "pml_dr2_recvfrag.h"
#include "pml_dr2_recvreq.h"
#include "pml_dr2_sendreq.h"
#include "pml_dr2_vfrag.h"
#include "pml_dr2_window.h"

static int dr2_register(void);
static int dr2_open(void);
static int dr2_close(void);
static mca_pml_base_module_t *dr2_init(int *priority, bool enable_progress_threads,
                                       bool enable_mpi_threads);
static int dr2_fini(void);

mca_pml_base_component_2_1_0_t mca_pml_dr2_component = {
    .pmlm_version = {
        MCA_PML_BASE_VERSION_2_1_0,
        .mca_component_name = "dr2",
        MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                              OMPI_RELEASE_VERSION),
        .mca_open_component = dr2_open,
        .mca_close_component = dr2_close,
        .mca_register_component_params = dr2_register,
    },
    .pmlm_data = {
        MCA_BASE_METADATA_PARAM_CHECKPOINT
    },
    .pmlm_init = dr2_init,
    .pmlm_finalize = dr2_fini,
};

static bool initialized = false;

static const mca_base_var_enum_value_t checksum_values[] = {
    {MCA_PML_DR2_CHECKSUM_NONE, "none"},
    {MCA_PML_DR2_CHECKSUM_CRC32C, "crc32c"},
    {MCA_PML_DR2_CHECKSUM_AUTO, "auto"},
    {0, NULL},
};

static const mca_base_var_enum_value_t crc32c_impl_values[] = {
    {PML_DR2_CRC32C_AUTO, "auto"},
    {PML_DR2_CRC32C_PORTABLE, "portable"},
    {PML_DR2_CRC32C_SSE42_1WAY, "sse42-1way"},
    {PML_DR2_CRC32C_SSE42, "sse42"},
    {PML_DR2_CRC32C_VPCLMUL, "vpclmul"},
    {0, NULL},
};

static const mca_base_var_enum_value_t copy_way_values[] = {
    {PML_DR2_COPY_AUTO, "auto"},
    {PML_DR2_COPY_FUSED, "fused"},
    {PML_DR2_COPY_SEPARATE, "separate"},
    {0, NULL},
};

static void reg(const char *name, const char *description, mca_base_var_type_t type,
                mca_base_var_enum_t *enumerator, int level, void *storage)
{
    (void) mca_base_component_var_register(&mca_pml_dr2_component.pmlm_version, name, description,
                                           type, enumerator, 0, 0, level,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

/* An enumerated parameter: Open MPI lists its values and refuses any other. */
static void reg_enum(const char *name, const char *description,
                     const mca_base_var_enum_value_t *values, int level, int *storage)
{
    mca_base_var_enum_t *enumerator = NULL;
    char enum_name[64];

    snprintf(enum_name, sizeof(enum_name), "pml_dr2_%s", name);
    (void) mca_base_var_enum_create(enum_name, values, &enumerator);
    reg(name, description, MCA_BASE_VAR_TYPE_INT, enumerator, level, storage);
    if (NULL != enumerator) {
        OBJ_RELEASE(enumerator);
    }
}

static void register_counter(const char *name, const char *description, unsigned long *storage)
{
    (void) mca_base_component_pvar_register(&mca_pml_dr2_component.pmlm_version, name, description,
                                            OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER,
                                            MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL,
                                            MCA_BASE_VAR_BIND_NO_OBJECT,
                                            MCA_BASE_PVAR_FLAG_READONLY
                                                | MCA_BASE_PVAR_FLAG_CONTINUOUS,
                                            NULL, NULL, NULL, storage);
}

/* Per-path counters are arrays of PML_DR2_PATH_MAX values, one per path index. */
static int path_counter_notify(mca_base_pvar_t *pvar, mca_base_pvar_event_t event, void *obj,
                               int *count)
{
    (void) pvar;
    (void) obj;
    if (MCA_BASE_PVAR_HANDLE_BIND == event) {
        *count = PML_DR2_PATH_MAX;
    }
    return OPAL_SUCCESS;
}

/* ...read whole: Open MPI's default reader copies one value. */
static int path_counter_get(const mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void) obj;
    memcpy(value, pvar->ctx, PML_DR2_PATH_MAX * sizeof(unsigned long));
    return OPAL_SUCCESS;
}

static void register_path_counter(const char *name, const char *description,
                                  unsigned long *storage)
{
    (void) mca_base_component_pvar_register(&mca_pml_dr2_component.pmlm_version, name, description,
                                            OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER,
                                            MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL,
                                            MCA_BASE_VAR_BIND_NO_OBJECT,
                                            MCA_BASE_PVAR_FLAG_READONLY
                                                | MCA_BASE_PVAR_FLAG_CONTINUOUS,
                                            path_counter_get, NULL, path_counter_notify,
                                            storage);
}

static int dr2_register(void)
{
    mca_pml_dr2_t *m = &mca_pml_dr2;
    mca_pml_dr2_counters_t *c = &mca_pml_dr2.counters;

    m->priority = 10;
    reg("priority",
        "Priority of pml dr2. Open MPI never selects an out-of-tree PML by itself (its default "
        "list is ob1, ucx, cm): select it with --mca pml dr2. The default, 10, is below ob1 (20)",
        MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_9, &m->priority);

    m->frag_size = 131072;
    reg("frag_size",
        "Largest payload of one fragment in bytes (also capped by the BTL's largest send); "
        "up to 64 fragments form a vfrag, the unit of acknowledgement and retransmission. "
        "Between 64 bytes and 16 MiB",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, OPAL_INFO_LVL_5, &m->frag_size);

    m->eager_limit = 0;
    reg("eager_limit",
        "Messages of at most this many bytes are sent eagerly: copied, the send completes at "
        "once, the copy is kept until acknowledged. Larger and synchronous sends use a "
        "rendezvous (the data moves once the receiver has matched). 0 (the default): per "
        "peer, the larger of 16 KiB and the eager limit of the BTL that reaches it (4 KiB on "
        "sm, 64 KiB on tcp), and to a peer across a wire (tcp, ...) at least 256 KiB, since "
        "there a rendezvous' round trip costs as much as moving that much (unexpected "
        "messages up to that size are buffered by the receiver). At most 1 MiB",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, OPAL_INFO_LVL_5, &m->eager_limit);

    m->local_max = PML_DR2_HDR_LOCAL_MAX_PAYLOAD;
    reg("local_max",
        "Under pml_dr2_checksum auto, messages of at most this many bytes to a process reached "
        "only through sm or self (no wire: shared memory loses, duplicates and reorders "
        "nothing) go as ob1 sends them: without vfrag, checksum or ACK, complete once the BTL "
        "took them. Larger messages, and every message to a process reached over a network, "
        "keep the whole protocol. Not used while fault injection is on. 0: every message "
        "is acknowledged, on every path. At most 8192 (the default)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, OPAL_INFO_LVL_5, &m->local_max);

    m->checksum = MCA_PML_DR2_CHECKSUM_AUTO;
    reg_enum("checksum",
             "Payload checksum, decided per BTL when a peer is set up: auto (the default: "
             "CRC32C on every BTL that crosses a wire or a bus, such as tcp or ofi; none on sm "
             "and self, where no wire is crossed, as Linux skips the TCP checksum on "
             "loopback), crc32c (on every BTL: each fragment's payload is checked while it is "
             "copied, a corrupt one is NACKed and resent) or none (nowhere: payload corruption "
             "goes undetected). The sender's choice travels in each header, so processes may "
             "differ. Headers are always checked, whatever this says, and a message of up to "
             "256 bytes sent with the protocol travels in a header whose checksum covers its "
             "payload too. Under auto, small messages to a process reached only by sm or self "
             "go without checksum or ACK (pml_dr2_local_max), and while corruption is injected "
             "(pml_dr2_inject_corrupt) every BTL gets CRC32C",
             checksum_values, OPAL_INFO_LVL_5, &m->checksum);

    m->crc32c_impl = PML_DR2_CRC32C_AUTO;
    reg_enum("crc32c_impl",
             "How CRC32C is computed: auto (the fastest this CPU has: vpclmul, else sse42, else "
             "portable), vpclmul (AVX-512 carry-less multiplication for buffers of 512 bytes and "
             "more, sse42 for the rest), sse42 (the crc32 instruction, three streams), sse42-1way "
             "(one stream), portable (tables). All compute the same checksum; an implementation "
             "this CPU lacks is refused",
             crc32c_impl_values, OPAL_INFO_LVL_6, &m->crc32c_impl);

    m->copy_way = PML_DR2_COPY_AUTO;
    reg_enum("copy",
             "How a sender copies the payload of a rendezvous fragment into the BTL's buffer with "
             "pml_dr2_checksum crc32c: fused (copy and checksum in one pass), separate (the "
             "checksum of the source, then memcpy), auto (per peer, time both on a few "
             "fragments, use the cheaper, time them again every 4096 fragments). Fused is "
             "faster when the two processes share a cache, separate when they do not (fused "
             "stalls writing into the buffer the receiver has just read). Only fragments of "
             "4 KiB and more are timed; smaller payloads are always fused",
             copy_way_values, OPAL_INFO_LVL_6, &m->copy_way);

    m->ack_timeout_us = 10000;
    reg("ack_timeout_us",
        "ACK timeout in microseconds before the first round-trip sample; afterwards the "
        "timeout is derived from the measured round-trip time (RFC 6298), doubled on every "
        "expiry of the same vfrag",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, OPAL_INFO_LVL_5, &m->ack_timeout_us);

    m->ack_timeout_min_us = 2000;
    reg("ack_timeout_min_us",
        "Lower bound of the RTT-derived ACK timeout in microseconds (a receiver only "
        "acknowledges when it calls into MPI, so very small timeouts only cause resends)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, OPAL_INFO_LVL_6, &m->ack_timeout_min_us);

    m->ack_timeout_max_us = 1000000;
    reg("ack_timeout_max_us",
        "Upper bound of the ACK timeout and of its backoff, in microseconds",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, OPAL_INFO_LVL_6, &m->ack_timeout_max_us);

    m->retry_limit = 0;
    reg("retry_limit",
        "ACK timer expiries of one vfrag after which its peer is declared unreachable (a "
        "process failure under ULFM, else the job aborts). 0: never give up (a peer that died "
        "is then only detected by the runtime or a BTL error)",
        MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_5, &m->retry_limit);

    m->local_timeout_us = 1000000;
    reg("local_timeout_us",
        "Local-completion watchdog, in microseconds: a transport (BTL) that holds segments of "
        "ours for a peer and completes none of them for this long is reported (counter "
        "local_timeouts, verbose 1). A vfrag's ACK timer starts only once the transport has "
        "sent its segments (a segment queued behind a full TCP socket has not left yet); "
        "after this timeout the peer's ACK timers stop waiting for that, so losses are still "
        "recovered (and, with pml_dr2_retry_limit, the peer given up on). Also the longest "
        "wait of btl/tcp, closing a connection in MPI_Finalize, for room for its goodbye "
        "(btl_tcp_goodbye_timeout_ms, set for dr2 unless given): a connection a cut left "
        "full is then closed without it. Positive",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, OPAL_INFO_LVL_6, &m->local_timeout_us);

    m->send_depth = 64;
    reg("send_depth",
        "Most segments of ours the BTL may hold per peer (handed over, not completed yet: on "
        "sm, not yet taken by the receiver) before dr2 waits to send a peer's next fragment; "
        "as ob1's send_pipeline_depth. Keeps a large message in a few of the BTL's buffers: "
        "without it a sender ran up to the BTL's whole free list ahead (sm: 512 x 32 KiB), "
        "and 8 MiB messages over sm took 1.3-2x longer where the cores share a cache. "
        "0: no limit",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, OPAL_INFO_LVL_6, &m->send_depth);

    m->path_retry_budget = 5;
    reg("path_retry_budget",
        "Failover between the BTLs (paths) that reach a peer, e.g. two tcp networks: a path is "
        "taken out when a vfrag it carries has had this many ACK timer expiries and nothing it "
        "carries was acknowledged since that vfrag was sent (a silent cut: a firewall that "
        "drops everything gives no error). Its unacknowledged fragments are then resent at once "
        "on the paths still up, and it is probed until it answers. A BTL error takes a path out "
        "at once. pml_dr2_retry_limit applies only on a peer's last path. 0: only BTL errors "
        "take a path out",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, OPAL_INFO_LVL_5, &m->path_retry_budget);

    m->path_evidence_budget = 2;
    reg("path_evidence_budget",
        "Quick failover on evidence: a path is also taken out after this many ACK timer "
        "expiries of a vfrag it carries (instead of pml_dr2_path_retry_budget), and at least "
        "pml_dr2_path_stall_us, when nothing it carries was acknowledged since that vfrag was "
        "sent while another path to the same peer showed the peer alive (something it carries "
        "was acknowledged, or an answer to a liveness probe came on it): the peer is alive "
        "and reading, so the silence is the path's. A receiver "
        "that is descheduled or busy acknowledges nothing on any path, so this rule does not "
        "take down paths that were only waiting. 0: off (only pml_dr2_path_retry_budget). "
        "At most pml_dr2_path_retry_budget",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, OPAL_INFO_LVL_5, &m->path_evidence_budget);

    m->path_stall_us = 100000;
    reg("path_stall_us",
        "Silence on a path, in microseconds, that counts as a cut while another path to the "
        "same peer shows the peer alive: the least time a vfrag stays unacknowledged before "
        "its path is taken out (by pml_dr2_path_evidence_budget or "
        "pml_dr2_path_retry_budget: a receiver held up for a few timeouts of the 2 ms floor "
        "does not take a path down), and the time after which the "
        "local-completion watchdog (pml_dr2_local_timeout_us) gives up on the path's "
        "transport (a silent cut strands what the transport already holds, btl/tcp: a full "
        "socket; those vfrags' ACK timers, which wait for the transport to send them, start "
        "then). Positive, at most pml_dr2_local_timeout_us",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, OPAL_INFO_LVL_6, &m->path_stall_us);

    m->path_probe_interval_us = 100000;
    reg("path_probe_interval_us",
        "A path taken out (see pml_dr2_path_retry_budget) is probed after this many "
        "microseconds, then at doubling intervals up to pml_dr2_path_probe_interval_max_us; "
        "the first answer puts it back in use. Positive",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, OPAL_INFO_LVL_5, &m->path_probe_interval_us);

    m->path_probe_interval_max_us = 1000000;
    reg("path_probe_interval_max_us",
        "Longest interval between two probes of a path taken out, in microseconds (at least "
        "pml_dr2_path_probe_interval_us)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, OPAL_INFO_LVL_6, &m->path_probe_interval_max_us);

    m->tcp_rto_max_ms = 1000;
    reg("tcp_rto_max_ms",
        "Longest retransmission timeout, in milliseconds, of the TCP connections that carry "
        "paths (btl_tcp_rto_max_ms, set for dr2 unless given; Linux 6.15 and later). While "
        "a network drops everything TCP doubles the time between retransmissions, up to "
        "120 s by default, and a path's probes wait in the connection behind them: after "
        "a cut of a minute the network would stay unused for up to a minute more once it "
        "is back. With this bound a healed path answers its probes within about this time "
        "plus pml_dr2_path_probe_interval_max_us. 0: leave btl/tcp's setting; otherwise "
        "1000-120000 (the kernel's range)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, OPAL_INFO_LVL_5, &m->tcp_rto_max_ms);

    m->path_locality = true;
    reg("path_locality",
        "Among a peer's paths over one BTL (two btl/tcp networks, two btl/ofi NICs), those "
        "whose NIC is nearest this process take the traffic; the others stand by, up and "
        "probed, and take it while no nearer one is up. Near: every CPU this process is "
        "bound to is local to the NIC (hwloc's topology, HWLOC_XMLFILE if set; devices: "
        "btl/tcp's interface, btl/ofi's domain); an unbound process is as near to every NIC "
        "of a node with several sockets. 0: every path of a kind takes traffic. The choice "
        "is shown at pml_dr2_verbose 10",
        MCA_BASE_VAR_TYPE_BOOL, NULL, OPAL_INFO_LVL_5, &m->path_locality);

    m->window = PML_DR2_WINDOW_MAX;
    reg("window",
        "Vfrags in flight per peer before the sender waits for acknowledgements: a power of "
        "two between 1 and 1024 (the receiver's duplicate window is always 1024)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, OPAL_INFO_LVL_6, &m->window);

    m->free_list_max = -1;

    m->verbose = 0;
    reg("verbose",
        "Verbosity of pml dr2: 0 silent, 1 peer failures and paths going down or up, 2 also a "
        "summary of the fault and per-path counters (fragments resent, corrupt, duplicated, "
        "...) of each process at MPI_Finalize, 10 each peer's paths and payload checksum "
        "policy, 20 every dropped segment",
        MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_9, &m->verbose);

    m->inject_drop = 0.0;
    reg("inject_drop",
        "Fault injection (tests, benchmarks): probability in [0, 1] that a segment handed "
        "to the BTL is silently dropped instead",
        MCA_BASE_VAR_TYPE_DOUBLE, NULL, OPAL_INFO_LVL_9, &m->inject_drop);
    m->inject_corrupt = 0.0;
    reg("inject_corrupt",
        "Fault injection: probability in [0, 1] that one random bit of a segment is flipped "
        "before it is handed to the BTL. Under pml_dr2_checksum auto every BTL, sm and self "
        "included, then gets payload checksums; under none a warning says that damaged "
        "payloads are delivered",
        MCA_BASE_VAR_TYPE_DOUBLE, NULL, OPAL_INFO_LVL_9, &m->inject_corrupt);
    m->inject_dup = 0.0;
    reg("inject_dup",
        "Fault injection: probability in [0, 1] that a segment is sent twice",
        MCA_BASE_VAR_TYPE_DOUBLE, NULL, OPAL_INFO_LVL_9, &m->inject_dup);
    m->inject_nomem = 0.0;
    reg("inject_nomem",
        "Fault injection: probability in [0, 1] that a buffer the receiver allocates for a "
        "message (the copy of an unexpected eager message, the staging copy of a "
        "non-contiguous receive) is refused, as when memory runs out",
        MCA_BASE_VAR_TYPE_DOUBLE, NULL, OPAL_INFO_LVL_9, &m->inject_nomem);
    m->inject_seed = 1;
    reg("inject_seed",
        "Fault injection: seed of the pseudo-random choices (mixed with the process's rank), "
        "so that a run can be repeated",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, OPAL_INFO_LVL_9, &m->inject_seed);

    register_counter("retransmits", "Fragments pml dr2 sent more than once", &c->retransmits);
    register_path_counter("path_frags_sent",
                          "Per path (one value per path index: the position of the BTL among "
                          "those that reach a peer, summed over peers): data fragments sent",
                          m->path_counters.frags_sent);
    register_path_counter("path_retransmits",
                          "Per path: fragments sent again on it (after a loss, or moved from a "
                          "path that went down)",
                          m->path_counters.retransmits);
    register_path_counter("path_acks_sent", "Per path: segments of ACKs/NACKs sent alone",
                          m->path_counters.acks_sent);
    register_path_counter("path_downs",
                          "Per path: times it was taken out (BTL error, or "
                          "pml_dr2_path_retry_budget exhausted)",
                          m->path_counters.downs);
    register_path_counter("path_ups", "Per path: times a probe brought it back into use",
                          m->path_counters.ups);
    register_path_counter("path_probes",
                          "Per path: probes sent on it (while it was out, or to ask whether "
                          "the peer is alive while another of its paths is silent)",
                          m->path_counters.probes);
    register_counter("fast_retransmits", "Fragments resent because an ACK showed a gap",
                     &c->fast_retransmits);
    register_counter("timeouts", "ACK timer expiries", &c->timeouts);
    register_counter("local_timeouts",
                     "Local-completion watchdog expiries (a transport completed none of the "
                     "segments it held for a peer within pml_dr2_local_timeout_us)",
                     &c->local_timeouts);
    register_counter("crc_errors", "Fragments whose payload failed its CRC32C (NACKed)",
                     &c->data_crc_errors);
    register_counter("hdr_crc_errors", "Segments dropped because a header failed its CRC32C",
                     &c->hdr_errors[PML_DR2_HDR_ERR_HDR_CRC]);
    register_counter("duplicates", "Fragments and ACKs dropped as duplicates", &c->duplicates);
    register_counter("malformed", "Headers inconsistent with the receiver's state (dropped)",
                     &c->malformed);
    register_counter("stale_msgs",
                     "Messages of a freed communicator dropped (acknowledged) because another "
                     "communicator now has its context id (told by the epoch in their header)",
                     &c->stale_msgs);
    register_counter("frags_sent", "Fragments handed to the BTL", &c->frags_sent);
    register_counter("frags_received", "Data fragments received with a valid header",
                     &c->frags_received);
    register_counter("injected_drop", "Segments dropped by fault injection", &c->injected_drop);
    register_counter("injected_corrupt", "Segments corrupted by fault injection",
                     &c->injected_corrupt);
    register_counter("injected_dup", "Segments duplicated by fault injection", &c->injected_dup);
    register_counter("injected_nomem", "Receive buffers refused by fault injection",
                     &c->injected_nomem);
    register_counter("copy_separate",
                     "Rendezvous payloads checksummed and then copied by memcpy (pml_dr2_copy "
                     "separate, or auto where that measured cheaper), not in one fused pass",
                     &c->copy_separate);
    register_counter("local_sent",
                     "Small messages sent without vfrag, checksum or ACK to a process reached "
                     "through no wire (pml_dr2_local_max)",
                     &c->local_sent);
    register_counter("frags_in_place",
                     "Fragments btl/tcp sent straight from the user's buffer (of 32 KiB and more, "
                     "with a checksum): no copy into a buffer of the BTL's",
                     &c->frags_in_place);
    register_counter("copy_probes",
                     "Copy-way measurements completed under pml_dr2_copy auto (one per peer "
                     "at first, then every 4096 fragments)",
                     &c->copy_probes);
    return OMPI_SUCCESS;
}

static const char *checksum_name(int policy)
{
    return MCA_PML_DR2_CHECKSUM_AUTO == policy
               ? "auto"
               : (MCA_PML_DR2_CHECKSUM_CRC32C == policy ? "crc32c" : "none");
}

static int refuse(const char *param, const char *value, const char *advice)
{
    ompires_add_help_dir();
    opal_show_help("help-pml-dr2.txt", "invalid-param", true, param, value, advice);
    return OMPI_ERR_BAD_PARAM;
}

static int dr2_open(void)
{
    mca_pml_dr2_t *m = &mca_pml_dr2;
    char value[64];

    if (!ompires_abi_check("pml dr2")) {
        return OMPI_ERR_NOT_SUPPORTED;
    }
    if (m->frag_size < 64 || m->frag_size > 16 * 1024 * 1024) {
        snprintf(value, sizeof(value), "%zu", m->frag_size);
        return refuse("pml_dr2_frag_size", value, "Use a size between 64 and 16777216 bytes.");
    }
    if (m->eager_limit > MCA_PML_DR2_EAGER_LIMIT_MAX) {
        snprintf(value, sizeof(value), "%zu", m->eager_limit);
        return refuse("pml_dr2_eager_limit", value,
                      "Use at most 1048576 bytes: receivers buffer unexpected eager messages, "
                      "and refuse larger ones as malformed.");
    }
    if (m->checksum != MCA_PML_DR2_CHECKSUM_NONE && m->checksum != MCA_PML_DR2_CHECKSUM_CRC32C
        && m->checksum != MCA_PML_DR2_CHECKSUM_AUTO) {
        snprintf(value, sizeof(value), "%d", m->checksum);
        return refuse("pml_dr2_checksum", value, "Use auto, crc32c or none.");
    }
    if (m->copy_way != PML_DR2_COPY_AUTO && m->copy_way != PML_DR2_COPY_FUSED
        && m->copy_way != PML_DR2_COPY_SEPARATE) {
        snprintf(value, sizeof(value), "%d", m->copy_way);
        return refuse("pml_dr2_copy", value, "Use auto, fused or separate.");
    }
    if (0 != pml_dr2_crc32c_select((pml_dr2_crc32c_impl_t) m->crc32c_impl)) {
        return refuse("pml_dr2_crc32c_impl",
                      pml_dr2_crc32c_impl_name((pml_dr2_crc32c_impl_t) m->crc32c_impl),
                      "This CPU (or this build) does not have it: use auto, sse42 or "
                      "portable.");
    }
    if (0 == m->ack_timeout_us || 0 == m->ack_timeout_min_us
        || m->ack_timeout_min_us > m->ack_timeout_max_us) {
        snprintf(value, sizeof(value), "%u/%u/%u", m->ack_timeout_us, m->ack_timeout_min_us,
                 m->ack_timeout_max_us);
        return refuse("pml_dr2_ack_timeout_us/_min_us/_max_us", value,
                      "All must be positive and the minimum must not exceed the maximum.");
    }
    if (m->local_max > PML_DR2_HDR_LOCAL_MAX_PAYLOAD) {
        snprintf(value, sizeof(value), "%zu", m->local_max);
        return refuse("pml_dr2_local_max", value,
                      "Use a size between 0 (never) and 8192 bytes: larger messages always "
                      "travel with the whole protocol.");
    }
    if (0 == m->local_timeout_us) {
        return refuse("pml_dr2_local_timeout_us", "0",
                      "The watchdog needs a positive timeout in microseconds.");
    }
    if (m->retry_limit < 0) {
        snprintf(value, sizeof(value), "%d", m->retry_limit);
        return refuse("pml_dr2_retry_limit", value, "Use 0 (never give up) or a positive count.");
    }
    if (0 == m->path_probe_interval_us || m->path_probe_interval_us > m->path_probe_interval_max_us) {
        snprintf(value, sizeof(value), "%u/%u", m->path_probe_interval_us,
                 m->path_probe_interval_max_us);
        return refuse("pml_dr2_path_probe_interval_us/_max_us", value,
                      "The first interval must be positive and not exceed the longest.");
    }
    if (0 == m->window || m->window > PML_DR2_WINDOW_MAX || (m->window & (m->window - 1)) != 0) {
        snprintf(value, sizeof(value), "%u", m->window);
        return refuse("pml_dr2_window", value, "Use a power of two between 1 and 1024.");
    }
    {
        const struct {
            const char *name;
            double p;
        } probs[] = {{"pml_dr2_inject_drop", m->inject_drop},
                     {"pml_dr2_inject_corrupt", m->inject_corrupt},
                     {"pml_dr2_inject_dup", m->inject_dup},
                     {"pml_dr2_inject_nomem", m->inject_nomem}};
        for (size_t i = 0; i < sizeof(probs) / sizeof(probs[0]); i++) {
            /* written so that NaN fails too */
            if (!(probs[i].p >= 0.0 && probs[i].p <= 1.0)) {
                snprintf(value, sizeof(value), "%g", probs[i].p);
                return refuse(probs[i].name, value, "A probability is a number between 0 and 1.");
            }
        }
        if (m->inject_drop >= 1.0 && m->retry_limit <= 0) {
            /* a network that delivers nothing: only meaningful to see dr2 give up on the
             * peers (tests), which it never does without a retry limit */
            return refuse("pml_dr2_inject_drop", "1",
                          "Dropping every segment would make every transfer hang: set "
                          "pml_dr2_retry_limit too, to see the peers declared unreachable.");
        }
    }
    if (0 != m->tcp_rto_max_ms && (m->tcp_rto_max_ms < 1000 || m->tcp_rto_max_ms > 120000)) {
        snprintf(value, sizeof(value), "%u", m->tcp_rto_max_ms);
        return refuse("pml_dr2_tcp_rto_max_ms", value,
                      "Use 0 (leave btl/tcp's setting) or 1000-120000 milliseconds, the "
                      "range the kernel takes.");
    }
    if (m->path_evidence_budget > m->path_retry_budget) {
        snprintf(value, sizeof(value), "%u", m->path_evidence_budget);
        return refuse("pml_dr2_path_evidence_budget", value,
                      "The budget on evidence is for failing over sooner than "
                      "pml_dr2_path_retry_budget: use at most that (0 turns the rule off).");
    }
    if (0 == m->path_stall_us || m->path_stall_us > m->local_timeout_us) {
        snprintf(value, sizeof(value), "%u", m->path_stall_us);
        return refuse("pml_dr2_path_stall_us", value,
                      "Use a positive number of microseconds, at most pml_dr2_local_timeout_us.");
    }
    m->path_params.retry_budget = m->path_retry_budget;
    m->path_params.evidence_budget = m->path_evidence_budget;
    m->path_params.evidence_silence_us = m->path_stall_us;
    m->path_params.probe_interval_us = m->path_probe_interval_us;
    m->path_params.probe_interval_max_us = m->path_probe_interval_max_us;
    m->path_params.rto_initial_us = m->ack_timeout_us;
    m->path_params.rto_min_us = m->ack_timeout_min_us;
    m->path_params.rto_max_us = m->ack_timeout_max_us;
    m->inject_enabled = m->inject_drop > 0.0 || m->inject_corrupt > 0.0 || m->inject_dup > 0.0;
    m->checksum_in_use = m->checksum;
    if (m->inject_corrupt > 0.0 && MCA_PML_DR2_CHECKSUM_AUTO == m->checksum) {
        m->checksum_in_use = MCA_PML_DR2_CHECKSUM_CRC32C;
    }
    m->output = opal_output_open(NULL);
    opal_output_set_verbosity(m->output, m->verbose);
    return OMPI_SUCCESS;
}

static int dr2_close(void)
{
    if (mca_pml_dr2.output >= 0) {
        opal_output_close(mca_pml_dr2.output);
        mca_pml_dr2.output = -1;
    }
    return OMPI_SUCCESS;
}

static mca_pml_base_module_t *dr2_init(int *priority, bool enable_progress_threads,
                                       bool enable_mpi_threads)
{
    mca_pml_dr2_t *m = &mca_pml_dr2;

    *priority = m->priority;
    /* Before the BML opens the BTLs: btl/tcp copies its exclusivity into each module it
     * makes. The goodbye is a transport holding our segment: it gets the watchdog's time. */
    mca_pml_dr2_paths_tune_tcp(m->tcp_rto_max_ms, (m->local_timeout_us + 999) / 1000);
    /* ULFM's revoke and agreement (and osc rdma) talk to the BML directly: it must exist
     * whatever PML runs. */
    if (OMPI_SUCCESS != mca_bml_base_init(enable_progress_threads, enable_mpi_threads)) {
        return NULL;
    }
    OBJ_CONSTRUCT(&m->lock, opal_recursive_mutex_t);
    m->depth = 0;
    OBJ_CONSTRUCT(&m->peers, opal_list_t);
    OBJ_CONSTRUCT(&m->deferred, opal_list_t);
    OBJ_CONSTRUCT(&m->nocomm, opal_list_t);
    OBJ_CONSTRUCT(&m->freed_comms, opal_hash_table_t);
    opal_hash_table_init(&m->freed_comms, 64);
    OBJ_CONSTRUCT(&m->peer_by_proc, opal_hash_table_t);
    opal_hash_table_init(&m->peer_by_proc, 256);
    OBJ_CONSTRUCT(&m->peer_by_endpoint, opal_hash_table_t);
    opal_hash_table_init(&m->peer_by_endpoint, 256);
    OBJ_CONSTRUCT(&m->peer_by_name, opal_hash_table_t);
    opal_hash_table_init(&m->peer_by_name, 256);
    mca_pml_dr2_from_init();
    OBJ_CONSTRUCT(&m->send_requests, opal_free_list_t);
    opal_free_list_init(&m->send_requests, sizeof(mca_pml_dr2_send_request_t),
                        opal_cache_line_size, OBJ_CLASS(mca_pml_dr2_send_request_t), 0,
                        opal_cache_line_size, 16, m->free_list_max, 64, NULL, 0, NULL, NULL, NULL);
    OBJ_CONSTRUCT(&m->recv_requests, opal_free_list_t);
    opal_free_list_init(&m->recv_requests, sizeof(mca_pml_dr2_recv_request_t),
                        opal_cache_line_size, OBJ_CLASS(mca_pml_dr2_recv_request_t), 0,
                        opal_cache_line_size, 16, m->free_list_max, 64, NULL, 0, NULL, NULL, NULL);
    OBJ_CONSTRUCT(&m->txmsgs, opal_free_list_t);
    opal_free_list_init(&m->txmsgs, sizeof(mca_pml_dr2_txmsg_t), opal_cache_line_size,
                        OBJ_CLASS(mca_pml_dr2_txmsg_t), 0, opal_cache_line_size, 16,
                        m->free_list_max, 64, NULL, 0, NULL, NULL, NULL);
    OBJ_CONSTRUCT(&m->copy_buffers, opal_free_list_t);
    opal_free_list_init(&m->copy_buffers, sizeof(mca_pml_dr2_copy_buffer_t), opal_cache_line_size,
                        OBJ_CLASS(opal_free_list_item_t), 0, opal_cache_line_size, 0,
                        m->free_list_max, 16, NULL, 0, NULL, NULL, NULL);
    OBJ_CONSTRUCT(&m->vfrags, opal_free_list_t);
    opal_free_list_init(&m->vfrags, sizeof(mca_pml_dr2_vfrag_t), opal_cache_line_size,
                        OBJ_CLASS(mca_pml_dr2_vfrag_t), 0, opal_cache_line_size, 64,
                        m->free_list_max, 256, NULL, 0, NULL, NULL, NULL);
    OBJ_CONSTRUCT(&m->rxmsgs, opal_free_list_t);
    opal_free_list_init(&m->rxmsgs, sizeof(mca_pml_dr2_rxmsg_t), opal_cache_line_size,
                        OBJ_CLASS(mca_pml_dr2_rxmsg_t), 0, opal_cache_line_size, 16,
                        m->free_list_max, 64, NULL, 0, NULL, NULL, NULL);
    m->next_deadline_us = UINT64_MAX;
    m->next_watchdog_us = 0;
    m->last_watchdog_us = 0;
    m->now_us = mca_pml_dr2_now_us();
    m->arm_list = NULL;
    m->progress_pass = 0;
    m->sending_des = NULL;
    m->sending_des_completed = false;
    m->closed = false;
    m->path_errors_pending = false;
    /* with a retry limit the keepalive (pml_dr2_keepalive.h) is a timer that never ends */
    m->timers_armed = m->retry_limit > 0 ? 1 : 0;
    m->next_keepalive_us = 0;
    m->peers_with_work = 0;
    m->work_list = NULL;
    m->work_due_pass = 0;
    memset(&m->counters, 0, sizeof(m->counters));
    mca_pml_dr2_inject_seed(m->inject_seed, OMPI_PROC_MY_NAME->vpid);
    initialized = true;
    DR2_VERBOSE(1,
                "pml:dr2: selected; frag_size %zu, eager_limit %zu (0: per BTL), checksum %s%s (%s)",
                m->frag_size, m->eager_limit, checksum_name(m->checksum),
                m->checksum_in_use != m->checksum ? ", crc32c everywhere while corruption is injected"
                                                  : "",
                pml_dr2_crc32c_impl_name(pml_dr2_crc32c_selected()));
    if (m->inject_corrupt > 0.0 && MCA_PML_DR2_CHECKSUM_NONE == m->checksum) {
        /* once per process: nobody must take such a run for one whose data was verified */
        char p[32];
        snprintf(p, sizeof(p), "%g", m->inject_corrupt);
        ompires_add_help_dir();
        opal_show_help("help-pml-dr2.txt", "inject-corrupt-unchecked", true, p);
    }
    return &m->super;
}

static int dr2_fini(void)
{
    mca_pml_dr2_t *m = &mca_pml_dr2;

    if (!initialized) {
        return OMPI_SUCCESS;
    }
    mca_pml_dr2_finalize();
    OBJ_DESTRUCT(&m->send_requests);
    m->recv_kept = NULL; /* its memory belongs to the list */
    OBJ_DESTRUCT(&m->recv_requests);
    OBJ_DESTRUCT(&m->txmsgs);
    OBJ_DESTRUCT(&m->copy_buffers);
    OBJ_DESTRUCT(&m->vfrags);
    OBJ_DESTRUCT(&m->rxmsgs);
    OBJ_DESTRUCT(&m->peer_by_name);
    OBJ_DESTRUCT(&m->peer_by_endpoint);
    OBJ_DESTRUCT(&m->peer_by_proc);
    OBJ_DESTRUCT(&m->nocomm);
    OBJ_DESTRUCT(&m->freed_comms);
    OBJ_DESTRUCT(&m->deferred);
    OBJ_DESTRUCT(&m->peers);
    OBJ_DESTRUCT(&m->lock);
    initialized = false;
    return OMPI_SUCCESS;
}
