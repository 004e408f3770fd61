/*
 * ompi-resilience: pml/dr2 paths over the BML: one per BTL that reaches a peer.
 *
 * The decisions (is the path up, which path takes a vfrag, when to probe) are pure logic
 * in pml_dr2_path.h; this is what ties them to Open MPI: the BTL module and endpoint of a
 * path, the descriptors it holds for us, its local-completion watchdog, its probes on the
 * wire, BTL errors, and the counters exported as MPI_T pvars (arrays indexed by path).
 *
 * A path's index is the position of its BTL in the peer's BML send array (the BML's order:
 * by bandwidth, then as the BTLs were opened), the same for every peer of a process: with
 * two tcp modules, index 0 and 1 are the two networks.
 *
 * Probes travel as ACK headers flagged PROBE (pml_dr2_hdr.h): vfrag = probe id, mask = the
 * prober's path index + 1. The receiver answers on the path the probe arrived on, flagged
 * PROBE_REPLY with the same fields, so an answer proves the path works both ways.
 */
#ifndef MCA_PML_DR2_BTLPATH_H
#define MCA_PML_DR2_BTLPATH_H

#include "pml_dr2.h"
#include "pml_dr2_path.h"

BEGIN_C_DECLS

struct mca_pml_dr2_peer_t;

typedef struct mca_pml_dr2_path_t {
    struct mca_pml_dr2_peer_t *peer;
    mca_bml_base_btl_t *bml_btl;
    int index; /* in peer->paths, and in the per-path counters */
    pml_dr2_path_state_t *state; /* &peer->path_state[index]: the peer keeps them side by
                                  * side for pml_dr2_path_pick */
    /* Our descriptors on this path, as two running counts: handed to the BTL (under our
     * lock) and completed by it (from its callbacks, possibly in another thread: atomic);
     * the difference is what the BTL still holds. A vfrag's ACK timer starts only once the
     * descriptors handed to its path up to its last transmission are complete
     * (vfrag->local_mark): a fragment still queued in the BTL (btl/tcp behind a full
     * socket) has not left, and timing its ACK from the hand-over would resend what was
     * never lost. Per path, so that a dead path that holds descriptors for ever (a silent
     * cut fills the socket) neither stops the others sending (pml_dr2_send_depth) nor
     * their timers. */
    uint64_t tx_handed;
    opal_atomic_int64_t tx_completed;
    /* ---- local-completion watchdog (mca_pml_dr2_watchdog_check) ---- */
    int64_t wdog_completed_seen; /* tx_completed at the last check that saw it move */
    uint64_t wdog_since_us;      /* since then no descriptor completed */
    bool wdog_expired; /* the BTL completed nothing for pml_dr2_local_timeout_us while holding
                        * some of ours: the path's ACK timers no longer wait for local
                        * completion */
    uint64_t alive_asked_us; /* the last liveness probes sent on the other paths because
                              * this one was silent (mca_pml_dr2_paths_ask_alive) */
    bool btl_error;    /* its BTL reported an error, to be handled from progress
                        * (mca_pml_dr2_paths_handle_errors) */
    bool no_wire;      /* its BTL crosses no wire (sm, self): it may carry LOCALs
                        * (pml_dr2_local.h) */
    bool in_place;     /* its BTL sends a large fragment's payload from where it lies
                        * (btl/tcp: mca_pml_dr2_peer_send_in_place) */
    bool names_sender; /* its BTL does not tell the receiver who sent a segment: each one
                        * starts with our FROM header (pml_dr2_from.h) */
} mca_pml_dr2_path_t;

/* Set up the peer's paths from its BML endpoint (at most PML_DR2_PATH_MAX). */
void mca_pml_dr2_paths_init(struct mca_pml_dr2_peer_t *peer);

/* The index of the peer's path whose BTL endpoint is `ep`; 0 if none is (an endpoint the
 * BTL made on its own: any path will do to answer it). */
int mca_pml_dr2_path_of_endpoint(const struct mca_pml_dr2_peer_t *peer,
                                 const struct mca_btl_base_endpoint_t *ep);

/* The index of the peer's path over BTL module `btl`; 0 if none is (any path will do to
 * answer it). */
int mca_pml_dr2_path_of_btl(const struct mca_pml_dr2_peer_t *peer,
                            const struct mca_btl_base_module_t *btl);

/* The path that takes a new vfrag of `bytes` (pml_dr2_path_pick); when none is up, path 0
 * (the peer is then being declared unreachable). */
int mca_pml_dr2_path_pick(struct mca_pml_dr2_peer_t *peer, uint64_t bytes);

/* Path `index` if it is up, else the one that would take a small segment. */
int mca_pml_dr2_path_live(struct mca_pml_dr2_peer_t *peer, int index);

/* Paths of the peer that are up. */
int mca_pml_dr2_paths_up(const struct mca_pml_dr2_peer_t *peer);

/* Another path for the fragments not sent yet of a vfrag (`bytes` on the wire) on path
 * `index`, whose transport the watchdog gave up on (wdog_expired): the pick among the up
 * paths whose transport still completes (pml_dr2_path_pick_avoiding); -1 if there is
 * none. Handed to the stuck transport they would wait behind what it holds, and as a
 * vfrag's ACK timer starts only once all its fragments went, no timeout would take the
 * path down: a send waited for them for ever (cluster/dr2-ofi-netb-cut). */
int mca_pml_dr2_path_instead_of_stuck(const struct mca_pml_dr2_peer_t *peer, int index,
                                      uint64_t bytes);

/* Take a path out (`why` for the log): its vfrags move to the surviving paths and their
 * unacknowledged fragments are resent at once; probing starts. When it was the last path,
 * the peer is declared unreachable. */
void mca_pml_dr2_path_down(struct mca_pml_dr2_peer_t *peer, int index, const char *why);

/* A BTL reported an error for `proc`, whose peer has several paths: the path of that BTL
 * is taken out from the next progress call (mca_pml_dr2_paths_handle_errors), not from
 * inside the BTL's callback, which may run inside a send of ours half-way through the
 * peer's vfrags. False if the peer has one path or none is of that BTL (the caller
 * handles the error as a peer's). */
bool mca_pml_dr2_path_btl_error(struct ompi_proc_t *proc, struct mca_btl_base_module_t *btl);

/* A send on path `index` failed with "unreachable": the peer is, if that is its only
 * path; otherwise the path is taken out from the next progress call, as after a BTL error. */
void mca_pml_dr2_path_unreachable(struct mca_pml_dr2_peer_t *peer, int index);

/* Unless the user set them: bound TCP's retransmission backoff on btl/tcp's connections to
 * `rto_max_ms` milliseconds (btl_tcp_rto_max_ms, Open MPI patch 0018; 0: leave it), let
 * btl/tcp connect again to a peer whose connection failed (btl_tcp_reconnect, patch 0019),
 * bound the wait for room for its goodbye when it closes a connection to
 * `goodbye_timeout_ms` (btl_tcp_goodbye_timeout_ms, patch 0020), and give btl/tcp the
 * exclusivity of the BTLs for other NICs (btl_tcp_exclusivity 1024), so that it is a path
 * beside them. Call before the BML opens the BTLs: btl/tcp copies these into each module
 * and connection it makes. */
void mca_pml_dr2_paths_tune_tcp(unsigned rto_max_ms, unsigned goodbye_timeout_ms);

/* Take out the paths whose BTL reported an error (progress, outermost dr2 frame). */
void mca_pml_dr2_paths_handle_errors(void);

/* Send the probes that are due on the peer's down paths; the earliest next probe goes into
 * *next. Returns probes sent. */
int mca_pml_dr2_paths_probe(struct mca_pml_dr2_peer_t *peer, uint64_t now_us, uint64_t *next);

/* Path `silent` of the peer is silent (its vfrags unacknowledged, or its transport stuck)
 * and no other path has shown the peer alive since `since_us`: ask for evidence, a probe on
 * each other path that is up (at most once per ACK timeout), whose answer marks that path
 * heard (pml_dr2_path_others_alive_since). True if the evidence is there already. */
bool mca_pml_dr2_paths_ask_alive(struct mca_pml_dr2_peer_t *peer, int silent, uint64_t since_us,
                                 uint64_t now_us);

/* A probe or probe answer from the peer, which arrived on path `arrival` (header already
 * validated: an ACK flagged PROBE or PROBE_REPLY). */
void mca_pml_dr2_path_probe_received(struct mca_pml_dr2_peer_t *peer, int arrival,
                                     const pml_dr2_hdr_t *hdr);

/* Descriptors of ours the path's BTL holds and has not completed yet. */
static inline uint64_t mca_pml_dr2_path_inflight(const mca_pml_dr2_path_t *path)
{
    return path->tx_handed - (uint64_t) path->tx_completed;
}

/* Every descriptor handed to the path's BTL up to `mark` (a value of path->tx_handed) has
 * been completed by it: what they carried has left this process. */
static inline bool mca_pml_dr2_path_has_sent(const mca_pml_dr2_path_t *path, uint64_t mark)
{
    return (uint64_t) path->tx_completed >= mark;
}

/* The same, or the watchdog gave up waiting for that: what the ACK timers wait for. Not
 * whether a message has left: the BTL may still hold it (btl/sm behind a receiver out of
 * MPI for longer than pml_dr2_local_timeout_us). */
static inline bool mca_pml_dr2_path_locally_complete(const mca_pml_dr2_path_t *path,
                                                     uint64_t mark)
{
    return path->wdog_expired || mca_pml_dr2_path_has_sent(path, mark);
}

END_C_DECLS

#endif /* MCA_PML_DR2_BTLPATH_H */
