/*
 * ompi-resilience: pml/dr2 paths: health, timing and scheduling of one way to a peer.
 *
 * Pure logic, no MPI. Every BTL the BML offers for a peer (two tcp modules on two
 * networks, say) is a path. The reliability state (vfrag ids, windows, ACK masks) belongs
 * to the peer, so any fragment or ACK may travel on any path; what differs between paths is
 * kept here: whether it works, how long its round trip is, how much of the peer's data it
 * currently carries and its weight.
 *
 * Health. A path is up until
 *  - its BTL reports an error for it (pml_dr2_path_fail), or
 *  - a vfrag it carries stays unacknowledged through `retry_budget` ACK timer expiries
 *    while nothing it carries was acknowledged since that vfrag was sent
 *    (pml_dr2_path_timeout_says_down): the silent cut, where a firewall drops everything
 *    and no error ever comes; or
 *  - the same after only `evidence_budget` expiries, and at least `evidence_silence_us`,
 *    when another path of the peer showed the peer alive since that vfrag was sent
 *    (something it carries was acknowledged, or something from the peer arrived on it, e.g.
 *    the answer to a liveness probe): the peer is alive and reading, so the silence is the
 *    path's. Time alone cannot tell a cut from a receiver that is descheduled or busy,
 *    which is why the plain budget is long; a descheduled receiver acknowledges and answers
 *    nothing on any path, so the evidence rule can be quick without taking down paths that
 *    were only waiting. Neither takes a path down before the vfrag was unacknowledged for
 *    `evidence_silence_us`.
 * A down path is probed: a probe goes out after `probe_interval_us`, then at doubling
 * intervals up to `probe_interval_max_us`; the first answer to any probe of the current
 * down period brings it back up (pml_dr2_path_probe_answered).
 *
 * Scheduling. A new vfrag goes to the up path that would finish it first: the bytes the
 * path carries and that are not acknowledged yet, plus the vfrag, over the path's weight
 * (its BTL's advertised bandwidth). The unacknowledged bytes are the measurement: a path
 * that delivers slowly keeps its bytes longer and so takes fewer new ones, in proportion to
 * what it delivers (join the shortest queue); paths of equal weight that deliver alike
 * share equally. Not an explicit rate estimate (bytes acknowledged per busy time): where
 * the paths share a bottleneck (the receiver's CPU, its bus) a path's measured rate is its
 * share of that bottleneck, the path with the larger share looks faster and gets more, and
 * the split runs to the limit (92 % / 8 % of a stream over two identical networks,
 * measured).
 */
#ifndef PML_DR2_PATH_H
#define PML_DR2_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Paths per peer: the BTLs of one peer beyond this are not used. */
#define PML_DR2_PATH_MAX 4

typedef struct {
    uint32_t retry_budget;          /* ACK timer expiries of one vfrag before the path is down */
    uint32_t evidence_budget;       /* the same while another path of the peer delivers
                                     * (0: that rule is off) */
    uint32_t evidence_silence_us;   /* the vfrag unacknowledged for this long at least, under
                                     * either budget: ACK timeouts alone (2 ms and more) took
                                     * healthy paths down on busy cores */
    uint32_t probe_interval_us;     /* first probe after a path went down */
    uint32_t probe_interval_max_us; /* probe backoff cap */
    uint32_t rto_initial_us, rto_min_us, rto_max_us; /* ACK timeout bounds (RFC 6298) */
} pml_dr2_path_params_t;

typedef struct {
    bool up;
    /* ---- round trip (RFC 6298, Karn: samples only from vfrags never resent) ---- */
    uint32_t srtt_us, rttvar_us, rto_us;
    bool has_rtt;
    /* ---- what it carries ---- */
    uint64_t queued_bytes;  /* of vfrags assigned to it and not yet acknowledged */
    uint64_t last_ack_us;   /* last time anything it carries was acknowledged */
    uint64_t last_heard_us; /* last time anything from the peer arrived on it */
    double weight;          /* share of new vfrags relative to the other paths (> 0) */
    /* ---- where its NIC is (pml_dr2_locality.h) ---- */
    int kind;               /* paths of one kind (one BTL component) are alternatives */
    int nic_distance;       /* pml_dr2_nic_distance_t; -1: unknown */
    bool standby;           /* takes no new vfrag: a nearer path of its kind is up */
    /* ---- probing while down ---- */
    uint64_t next_probe_us;
    uint32_t probe_interval_us;
    uint32_t probe_seq;       /* id of the latest probe sent */
    uint32_t probe_first_seq; /* first probe of the current down period */
    /* ---- counters ---- */
    unsigned long downs, ups, probes_sent;
} pml_dr2_path_state_t;

/* A fresh path: up, no RTT sample, timeout rto_initial_us, weight 1, kind 0, NIC distance
 * unknown, not standing by. */
void pml_dr2_path_init(pml_dr2_path_state_t *p, const pml_dr2_path_params_t *params);

/* A round-trip sample in microseconds: updates srtt, rttvar and rto (bounded). */
void pml_dr2_path_rtt_sample(pml_dr2_path_state_t *p, uint64_t sample_us,
                             const pml_dr2_path_params_t *params);

/* The ACK timeout after `retries` expiries: rto doubled that many times, capped. */
uint64_t pml_dr2_path_backoff_us(const pml_dr2_path_state_t *p, uint32_t retries,
                                 const pml_dr2_path_params_t *params);

/* `bytes` of a vfrag are now carried by the path (new, or moved from another path). */
void pml_dr2_path_assign(pml_dr2_path_state_t *p, uint64_t bytes);
/* `bytes` it carried are no longer its (moved away or abandoned, not acknowledged). */
void pml_dr2_path_unassign(pml_dr2_path_state_t *p, uint64_t bytes);
/* `bytes` it carried were acknowledged at `now_us` (`bytes` 0: part of a vfrag, the rest
 * still queued): the path works. */
void pml_dr2_path_acked(pml_dr2_path_state_t *p, uint64_t bytes, uint64_t now_us);

/* A vfrag carried by paths[index] (one of a peer's n paths) expired its ACK timer for the
 * `retries`-th time at `now_us`; its latest transmission left at `sent_at_us`. True if that
 * path is to be declared down: nothing it carries was acknowledged since that transmission,
 * for evidence_silence_us at least, and retries reached the budget, or the evidence budget
 * while another path of the peer that is up showed the peer alive since then
 * (pml_dr2_path_others_alive_since). (The latest transmission, not the first: a vfrag sent
 * before a cut, whose ACK the cut swallowed after something later on the path was
 * acknowledged, would otherwise never condemn the path and be resent on it for ever.)
 * Never true with retry_budget 0 (only BTL errors take paths down). */
bool pml_dr2_path_timeout_says_down(const pml_dr2_path_state_t *paths, int n, int index,
                                    uint32_t retries, uint64_t sent_at_us, uint64_t now_us,
                                    const pml_dr2_path_params_t *params);

/* Another path than paths[index] among the n is up and, after `since_us`, had something
 * it carries acknowledged or delivered something from the peer: the peer is alive. */
bool pml_dr2_path_others_alive_since(const pml_dr2_path_state_t *paths, int n, int index,
                                     uint64_t since_us);

/* Something from the peer arrived on the path at `now_us`. */
static inline void pml_dr2_path_heard(pml_dr2_path_state_t *p, uint64_t now_us)
{
    if (now_us > p->last_heard_us) {
        p->last_heard_us = now_us;
    }
}

/* Declare the path down (an error, or the verdict above); its first probe is due after
 * probe_interval_us. False if it was down already. */
bool pml_dr2_path_fail(pml_dr2_path_state_t *p, uint64_t now_us,
                       const pml_dr2_path_params_t *params);

/* A down path whose next probe is due. */
static inline bool pml_dr2_path_probe_due(const pml_dr2_path_state_t *p, uint64_t now_us)
{
    return !p->up && now_us >= p->next_probe_us;
}

/* A probe is going out now: returns its id; the next one is due after the doubled
 * interval (capped). */
uint32_t pml_dr2_path_probe_sent(pml_dr2_path_state_t *p, uint64_t now_us,
                                 const pml_dr2_path_params_t *params);

/* The answer to probe `seq` arrived. True if that brought the path back up (it was down
 * and `seq` is a probe of the current down period: an answer to a probe of an earlier
 * period may be a late echo from before the path failed again); its ACK timeout then
 * starts again from params->rto_initial_us, its round-trip estimate from the next sample. */
bool pml_dr2_path_probe_answered(pml_dr2_path_state_t *p, uint32_t seq, uint64_t now_us,
                                 const pml_dr2_path_params_t *params);

/* Which of the n paths takes a new vfrag of `bytes`: the up path with the least
 * (unacknowledged bytes + bytes) / weight (see the top of this file), among those not
 * standing by (pml_dr2_locality.h); ties go to the lowest index. -1 if none is up. */
int pml_dr2_path_pick(const pml_dr2_path_state_t *paths, int n, uint64_t bytes);

/* The same among the paths not in `avoid` (bit i: path i): where the fragments go that a
 * path's stuck transport would hold (pml_dr2_btlpath.h). -1 if no other is up. */
int pml_dr2_path_pick_avoiding(const pml_dr2_path_state_t *paths, int n, uint64_t bytes,
                               unsigned avoid);

/* The up path with the longest ACK timeout among the n (`fallback` if none is up). An ACK
 * waits for the receiver as much as for the path: a path that carried only small messages
 * has measured short round trips, and its vfrags would time out whenever the receiver is
 * busy with a large message from another path. Timers take the longest timeout of the
 * peer's paths; a silent cut is still detected by retries (pml_dr2_path_timeout_says_down). */
int pml_dr2_path_slowest(const pml_dr2_path_state_t *paths, int n, int fallback);

/* Paths up among the n. */
int pml_dr2_path_count_up(const pml_dr2_path_state_t *paths, int n);

#endif /* PML_DR2_PATH_H */
