/*
 * ompi-resilience: pml/dr2, a point-to-point layer that survives lost, corrupted and
 * duplicated fragments (see docs/DESIGN.md, section pml/dr2).
 *
 * The module: parameters, global state and the one lock that protects it.
 *
 * Concurrency model. All protocol state (peers, vfrags, matching queues) is protected by
 * one recursive lock. Recursive, because BTLs may call back into us from inside a call we
 * made (btl/self delivers a send to our receive callback before btl_send returns). Such a
 * nested delivery is never processed in place: the segment is copied and queued
 * (mca_pml_dr2.deferred) and processed when the outermost dr2 frame leaves, so that the
 * receive path never runs while another dr2 frame is half-way through a data structure.
 * The lock is never held across opal_progress().
 */
#ifndef MCA_PML_DR2_H
#define MCA_PML_DR2_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stdint.h>

#include "opal/class/opal_hash_table.h"
#include "opal/class/opal_list.h"
#include "opal/class/opal_free_list.h"
#include "opal/mca/threads/mutex.h"
#include "opal/mca/timer/base/base.h"
#include "opal/util/output.h"

#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/bml/bml.h"
#include "ompi/mca/pml/base/base.h"
#include "ompi/mca/pml/base/pml_base_recvreq.h"
#include "ompi/mca/pml/base/pml_base_sendreq.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/message/message.h"
#include "ompi/proc/proc.h"
#include "ompi/request/request.h"

#include "pml_dr2_crc.h"
#include "pml_dr2_hdr.h"
#include "pml_dr2_path.h"

BEGIN_C_DECLS

/* One active-message tag carries every dr2 segment: headers describe themselves. Inside
 * the PML range 0x40-0x5F (ob1 is never active at the same time: one PML per job). */
#define MCA_PML_DR2_BTL_TAG (MCA_BTL_TAG_PML + 0x12)

/* Largest message sent eagerly (complete at buffering). The receiver accepts MATCH
 * messages up to this size from any peer and buffers them when they are unexpected. */
#define MCA_PML_DR2_EAGER_LIMIT_MAX (1024 * 1024)

/* pml_dr2_eager_limit 0 takes the BTL's eager limit, but never less than this: on btl/sm
 * (4 KiB) a 16 KiB limit measured faster for 4-16 KiB messages than a rendezvous. */
#define MCA_PML_DR2_EAGER_LIMIT_FLOOR (16 * 1024)

/* ... and to a peer across a wire never less than this: there the rendezvous' go-ahead is
 * a network round trip. Two simulated hosts, one network, median one-way time of 12
 * ping-pong jobs: 256 KiB 89 us eagerly against 112 by rendezvous (ob1 89). At 512 KiB
 * the sender's copy of an eager message costs what the round trip saves (6 jobs: 199 us
 * eagerly against 192). Intel MPI's default across nodes is 256 KB as well
 * (docs/dr2-notes.md). */
#define MCA_PML_DR2_WIRE_EAGER_LIMIT_MIN (256 * 1024)

/* While timers are armed and none waits to be armed, progress reads the clock on one call
 * in this many (a power of two). A waiting process calls progress every few hundred
 * nanoseconds: 32 calls are microseconds, nothing next to a timer's milliseconds, and the
 * idle call stays a few loads. */
#define MCA_PML_DR2_CLOCK_PASSES 32

/* Pending ACK/NACK entries per peer before a flush is forced. */
#define MCA_PML_DR2_MAX_PENDING_ACKS 32

/* Progress calls a queued ACK waits for a data segment to the peer to ride on before it
 * goes alone. */
#define MCA_PML_DR2_ACK_WAIT_PASSES 2
/* The same when every queued ACK is of a small message received on the fast path
 * (mca_pml_dr2_peer_queue_lazy_ack): its sender completed the send when it buffered the
 * message and waits for nothing, while an ACK segment written into btl/sm's ring as the
 * peer polls it delays the next message. Measured on sm, 8 B ping-pong against ob1, slow /
 * fast VM state: 2 calls 1.12x / 1.17x, 16 calls 1.05x / 1.12x (4: 1.06x / 1.17x, 10:
 * 1.07x / 1.10x, 32: 1.13x / 1.15x, 64: 1.05x / 1.24x: it depends on where the ACK's write
 * falls in the peer's round trip, so this is a measured choice for these machines, not an
 * optimum). Microseconds at most, far inside the smallest ACK timeout. */
#define MCA_PML_DR2_LAZY_ACK_WAIT_PASSES 16

/* ACKs received (inside EAGER headers or alone) and not handled yet, per peer, before they
 * are handled at once (mca_pml_dr2_peer_defer_ack). */
#define MCA_PML_DR2_MAX_DEFERRED_ACKS 16

enum {
    MCA_PML_DR2_CHECKSUM_NONE = PML_DR2_CHECKSUM_NONE,
    MCA_PML_DR2_CHECKSUM_CRC32C = PML_DR2_CHECKSUM_CRC32C,
    MCA_PML_DR2_CHECKSUM_AUTO = PML_DR2_CHECKSUM_AUTO,
};

/* Counters of everything that goes wrong or gets repaired, exported as MPI_T pvars. */
typedef struct {
    unsigned long hdr_errors[PML_DR2_HDR_NUM_STATUS]; /* decode failures by reason */
    unsigned long malformed;        /* decoded but inconsistent with our state: dropped */
    unsigned long data_crc_errors;  /* payload checksum failures (NACKed) */
    unsigned long duplicates;       /* fragments dropped as duplicates */
    unsigned long unknown_msg;      /* fragments of a message we have no header for */
    unsigned long stale_msgs;       /* messages of a freed communicator whose context id
                                     * another has now: dropped */
    unsigned long unknown_endpoint; /* segments from an endpoint we cannot map to a peer */
    unsigned long retransmits;      /* fragments sent again */
    unsigned long fast_retransmits; /* of which: resent on a gap shown by an ACK */
    unsigned long timeouts;         /* ACK timer expiries */
    unsigned long local_timeouts;   /* local-completion watchdog expiries */
    unsigned long acks_sent, nacks_sent, acks_received, nacks_received;
    unsigned long frags_sent, frags_received;
    unsigned long injected_drop, injected_corrupt, injected_dup;
    unsigned long injected_nomem;   /* receive buffers refused by pml_dr2_inject_nomem */
    unsigned long copy_separate;    /* rendezvous payloads checksummed, then memcpy'd */
    unsigned long copy_probes;      /* pml_dr2_copy auto: copy-way measurements completed */
    unsigned long local_sent;       /* small messages sent as LOCAL (pml_dr2_local.h) */
    unsigned long frags_in_place;   /* fragments the BTL sent from the user's buffer */
} mca_pml_dr2_counters_t;

/* Per-path counters (pml_dr2_btlpath.h), summed over peers by path index, exported as
 * MPI_T pvars of PML_DR2_PATH_MAX values each. */
typedef struct {
    unsigned long frags_sent[PML_DR2_PATH_MAX];  /* data fragments handed to the BTL */
    unsigned long retransmits[PML_DR2_PATH_MAX]; /* of which resends */
    unsigned long acks_sent[PML_DR2_PATH_MAX];   /* ACK/NACK segments sent alone */
    unsigned long downs[PML_DR2_PATH_MAX];       /* up -> down transitions */
    unsigned long ups[PML_DR2_PATH_MAX];         /* down -> up transitions */
    unsigned long probes[PML_DR2_PATH_MAX];      /* probes sent */
} mca_pml_dr2_path_counters_t;

typedef struct mca_pml_dr2_t {
    mca_pml_base_module_t super;

    /* ---- parameters (registered by the component) ---- */
    size_t frag_size;         /* payload bytes per fragment (capped by the BTL) */
    size_t eager_limit;       /* largest message sent eagerly */
    size_t local_max;         /* largest message sent as LOCAL (pml_dr2_local.h); 0: none */
    int checksum;             /* MCA_PML_DR2_CHECKSUM_* */
    int crc32c_impl;          /* pml_dr2_crc32c_impl_t */
    int copy_way;             /* pml_dr2_copy_way_t: how fragment payloads are copied */
    unsigned ack_timeout_us;  /* initial ACK timeout, before any RTT sample */
    unsigned ack_timeout_min_us;
    unsigned ack_timeout_max_us;
    int retry_limit;          /* timer expiries per vfrag before the peer is failed; 0: never */
    unsigned local_timeout_us;/* local-completion watchdog (mca_pml_dr2_watchdog_check) */
    unsigned window;          /* vfrags in flight per peer (power of two <= 1024) */
    unsigned send_depth;      /* descriptors a BTL may hold per path before we wait; 0: any */
    unsigned path_retry_budget;      /* ACK expiries of a vfrag before its path is down */
    unsigned path_evidence_budget;   /* the same while another path of the peer delivers */
    unsigned path_stall_us;          /* watchdog timeout while another path delivers */
    unsigned path_probe_interval_us; /* first probe of a down path */
    unsigned path_probe_interval_max_us;
    unsigned tcp_rto_max_ms;         /* btl/tcp's retransmission backoff bound; 0: not set */
    bool path_locality;              /* paths whose NIC is nearer go first (pml_dr2_nic.h) */
    pml_dr2_path_params_t path_params; /* the above and the ACK timeouts, for pml_dr2_path.h */
    int free_list_max;
    int priority;
    int verbose;
    int output;
    double inject_drop, inject_corrupt, inject_dup;
    double inject_nomem;      /* receive buffers refused (mca_pml_dr2_rx_buffer_alloc) */
    unsigned inject_seed;
    bool inject_enabled;      /* any injection probability > 0 */
    /* the payload checksum policy followed: pml_dr2_checksum, but crc32c for auto while
     * corruption is injected (injected damage is there to be caught, not delivered) */
    int checksum_in_use;

    /* ---- state ---- */
    opal_recursive_mutex_t lock;
    int depth;                /* nesting of dr2 frames in the thread holding the lock */
    bool enabled;
    opal_list_t peers;        /* every mca_pml_dr2_peer_t */
    opal_hash_table_t peer_by_proc;     /* ompi_proc_t* -> peer */
    opal_hash_table_t peer_by_endpoint; /* btl endpoint* -> peer */
    opal_hash_table_t peer_by_name;     /* process name (jobid << 32 | vpid) -> peer, for
                                         * segments that name their sender (pml_dr2_from.h) */
    opal_list_t deferred;     /* segments delivered while a dr2 frame was active */
    opal_list_t nocomm;       /* received messages for communicators not created yet */
    /* context id -> the last communicator freed on it: its epoch and whether it was
     * revoked (mca_pml_dr2_comm_freed) */
    opal_hash_table_t freed_comms;
    uint64_t next_deadline_us;/* earliest timer of any peer; UINT64_MAX if none */
    /* The clock, read once per progress call while timers are armed, never per fragment:
     * timestamps and deadlines use this. A vfrag is armed lazily: it leaves the send path
     * with deadline 0 and the next progress call stamps it with a fresh reading (so an
     * application that did not call MPI for a while cannot get a stale deadline). */
    uint64_t now_us;
    uint64_t next_watchdog_us; /* next local-completion watchdog check */
    uint64_t last_watchdog_us; /* the last one */
    uint64_t next_keepalive_us; /* next keepalive check (pml_dr2_keepalive.h) */
    struct mca_pml_dr2_peer_t *arm_list; /* peers with vfrags to arm (peer->arm_next) */
    /* Progress calls so far: ACKs wait up to two of them for a data segment to ride on. */
    uint64_t progress_pass;
    size_t timers_armed;      /* vfrags + rendezvous + flushing sends waiting on a timer */
    size_t peers_with_work;   /* peers with ACKs to flush or fragments to send */
    /* those peers, linked through peer->work_next: progress visits only them, not every
     * peer of the job */
    struct mca_pml_dr2_peer_t *work_list;
    /* No peer's work is due before this progress pass (mca_pml_dr2_peer_work_due): progress
     * skips the work list until then. In a ping-pong a peer always has work, ACKs waiting
     * some passes for a reply to ride on, so without it every poll of a waiting process
     * walked the list, under the lock, to find nothing due. Only ever lowered outside
     * progress (mca_pml_dr2_peer_set_work), recomputed by the pass that walks the list. */
    uint64_t work_due_pass;
    opal_free_list_t send_requests;
    opal_free_list_t recv_requests;
    /* MPI_Recv's request, kept between calls without MPI_THREAD_MULTIPLE (mca_pml_dr2_recv) */
    struct mca_pml_dr2_recv_request_t *recv_kept;
    opal_free_list_t txmsgs;  /* mca_pml_dr2_txmsg_t */
    opal_free_list_t copy_buffers; /* mca_pml_dr2_copy_buffer_t: eager copies over 1 KiB */
    opal_free_list_t vfrags;  /* mca_pml_dr2_vfrag_t */
    opal_free_list_t rxmsgs;  /* mca_pml_dr2_rxmsg_t */
    uint64_t rng_state;       /* fault injection */

    /* ---- teardown (see mca_pml_dr2_del_procs and mca_pml_dr2_finalize) ---- */
    /* The descriptor being handed to a BTL right now and whether its completion callback
     * already ran inside that call (btl/tcp fails and releases a descriptor from inside
     * btl_send when a connection attempt fails at once): written under the lock. */
    struct mca_btl_base_descriptor_t *sending_des;
    bool sending_des_completed;
    /* Set by finalize: the BTLs may still call us (our callbacks stay registered until the
     * BTLs close; this component stays loaded until then), and we ignore everything. */
    volatile bool closed;
    mca_pml_dr2_counters_t counters;
    mca_pml_dr2_path_counters_t path_counters;
    volatile bool path_errors_pending; /* a path's BTL reported an error (btl_error) */
} mca_pml_dr2_t;

extern mca_pml_dr2_t mca_pml_dr2;
OMPI_DECLSPEC extern mca_pml_base_component_2_1_0_t mca_pml_dr2_component;

/* ---- locking: every public entry point brackets its work with enter/leave ---- */
void mca_pml_dr2_drain_deferred(void);

static inline void mca_pml_dr2_enter(void)
{
    OPAL_THREAD_LOCK(&mca_pml_dr2.lock);
    mca_pml_dr2.depth++;
}

static inline void mca_pml_dr2_leave(void)
{
    if (1 == mca_pml_dr2.depth && !opal_list_is_empty(&mca_pml_dr2.deferred)) {
        mca_pml_dr2_drain_deferred();
    }
    mca_pml_dr2.depth--;
    OPAL_THREAD_UNLOCK(&mca_pml_dr2.lock);
}

/* Open MPI's monotonic microsecond timer: the TSC where it is invariant (a few cycles, no
 * vDSO call: progress reads it while a process waits for an ACK), clock_gettime otherwise. */
static inline uint64_t mca_pml_dr2_now_us(void)
{
    return (uint64_t) opal_timer_base_get_usec();
}

/* ---- module entry points (pml_dr2.c and friends) ---- */
int mca_pml_dr2_add_procs(struct ompi_proc_t **procs, size_t nprocs);
int mca_pml_dr2_del_procs(struct ompi_proc_t **procs, size_t nprocs);
int mca_pml_dr2_enable(bool enable);
int mca_pml_dr2_progress(void);
int mca_pml_dr2_add_comm(struct ompi_communicator_t *comm);
int mca_pml_dr2_del_comm(struct ompi_communicator_t *comm);
int mca_pml_dr2_revoke_comm(struct ompi_communicator_t *comm, bool coll_only);
int mca_pml_dr2_dump(struct ompi_communicator_t *comm, int verbose);
int mca_pml_dr2_finalize(void);

int mca_pml_dr2_isend_init(const void *buf, size_t count, ompi_datatype_t *datatype, int dst,
                           int tag, mca_pml_base_send_mode_t mode,
                           struct ompi_communicator_t *comm, struct ompi_request_t **request);
int mca_pml_dr2_isend(const void *buf, size_t count, ompi_datatype_t *datatype, int dst, int tag,
                      mca_pml_base_send_mode_t mode, struct ompi_communicator_t *comm,
                      struct ompi_request_t **request);
int mca_pml_dr2_send(const void *buf, size_t count, ompi_datatype_t *datatype, int dst, int tag,
                     mca_pml_base_send_mode_t mode, struct ompi_communicator_t *comm);

int mca_pml_dr2_irecv_init(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                           struct ompi_communicator_t *comm, struct ompi_request_t **request);
int mca_pml_dr2_irecv(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                      struct ompi_communicator_t *comm, struct ompi_request_t **request);
int mca_pml_dr2_recv(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                     struct ompi_communicator_t *comm, ompi_status_public_t *status);
int mca_pml_dr2_imrecv(void *buf, size_t count, ompi_datatype_t *datatype,
                       struct ompi_message_t **message, struct ompi_request_t **request);
int mca_pml_dr2_mrecv(void *buf, size_t count, ompi_datatype_t *datatype,
                      struct ompi_message_t **message, ompi_status_public_t *status);

int mca_pml_dr2_iprobe(int src, int tag, struct ompi_communicator_t *comm, int *matched,
                       ompi_status_public_t *status);
int mca_pml_dr2_probe(int src, int tag, struct ompi_communicator_t *comm,
                      ompi_status_public_t *status);
int mca_pml_dr2_improbe(int src, int tag, struct ompi_communicator_t *comm, int *matched,
                        struct ompi_message_t **message, ompi_status_public_t *status);
int mca_pml_dr2_mprobe(int src, int tag, struct ompi_communicator_t *comm,
                       struct ompi_message_t **message, ompi_status_public_t *status);

int mca_pml_dr2_start(size_t count, ompi_request_t **requests);

/* A peer is unreachable: fail it (ULFM) or abort the job. */
void mca_pml_dr2_peer_unreachable(struct ompi_proc_t *proc, const char *why);

#define DR2_VERBOSE(level, ...) opal_output_verbose(level, mca_pml_dr2.output, __VA_ARGS__)

END_C_DECLS

#endif /* MCA_PML_DR2_H */
