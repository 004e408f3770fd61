/*
 * ompi-resilience: pml/dr2 paths: health, timing and scheduling of one way to a peer.
 *
 * Pure logic, no MPI. Every BTL the BML offers for a peer (two tcp modules on two
 * networks, say) is a path. The reliability state (vfrag ids, windows, ACK masks) belongs
 * to the peer, so any fragment or ACK may travel on any path; what differs between paths is
 * kept here: whether it works, how long its round trip is, how fast it delivers and how
 * much of the peer's data it currently carries.
 *
 * Health. A path is up until
 *  - its BTL reports an error for it (pml_dr2_path_fail), or
 *  - a vfrag it carries stays unacknowledged through `retry_budget` ACK timer expiries
 *    while nothing it carries was acknowledged since that vfrag was sent
 *    (pml_dr2_path_timeout_says_down): the silent cut, where a firewall drops everything
 *    and no error ever comes.
 * A down path is probed: a probe goes out after `probe_interval_us`, then at doubling
 * intervals up to `probe_interval_max_us`; the first answer to any probe of the current
 * down period brings it back up (pml_dr2_path_probe_answered).
 *
 * Scheduling. A new vfrag goes to the up path that would finish it first: the bytes the
 * path has queued and not yet had acknowledged, plus the vfrag, divided by the path's
 * measured delivery rate (bytes acknowledged per microsecond of the time it had data
 * outstanding). A path without a measurement yet counts as fast as the mean of those that
 * have one (as 1 if none has), so fresh paths share by queued bytes: round robin in effect;
 * none counts as slower than 1/PML_DR2_PATH_RATE_FLOOR_DIVISOR of the fastest.
 */
#ifndef PML_DR2_PATH_H
#define PML_DR2_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Paths per peer: the BTLs of one peer beyond this are not used. */
#define PML_DR2_PATH_MAX 4

/* Delivery-rate samples cover at least this much busy time (microseconds) and this many
 * bytes: ACKs come in bursts, a shorter window measures the burst, not the path; and a few
 * small messages measure the peer's reply latency, not the path's bandwidth. */
#define PML_DR2_PATH_RATE_WINDOW_US 2000
#define PML_DR2_PATH_RATE_WINDOW_BYTES (256 * 1024)

/* In the choice of a path, none counts as slower than the fastest over this: a path once
 * measured slow (a sample taken while the receiver was busy) still gets a share of the
 * traffic, so it is measured again rather than starved for ever. */
#define PML_DR2_PATH_RATE_FLOOR_DIVISOR 8

typedef struct {
    uint32_t retry_budget;          /* ACK timer expiries of one vfrag before the path is down */
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
    /* ---- delivery rate ---- */
    double rate;            /* bytes per microsecond; 0: not measured yet */
    uint64_t busy_since_us; /* start of the current busy stretch (queued_bytes > 0) */
    uint64_t busy_us;       /* busy time in the current sample */
    uint64_t rate_bytes;    /* bytes acknowledged in the current sample */
    /* ---- probing while down ---- */
    uint64_t next_probe_us;
    uint32_t probe_interval_us;
    uint32_t probe_seq;       /* id of the latest probe sent */
    uint32_t probe_first_seq; /* first probe of the current down period */
    /* ---- counters ---- */
    unsigned long downs, ups, probes_sent;
} pml_dr2_path_state_t;

/* A fresh path: up, no RTT sample, timeout rto_initial_us. */
void pml_dr2_path_init(pml_dr2_path_state_t *p, const pml_dr2_path_params_t *params);

/* A round-trip sample in microseconds: updates srtt, rttvar and rto (bounded). */
void pml_dr2_path_rtt_sample(pml_dr2_path_state_t *p, uint64_t sample_us,
                             const pml_dr2_path_params_t *params);

/* The ACK timeout after `retries` expiries: rto doubled that many times, capped. */
uint64_t pml_dr2_path_backoff_us(const pml_dr2_path_state_t *p, uint32_t retries,
                                 const pml_dr2_path_params_t *params);

/* `bytes` of a vfrag are now carried by the path (new, or moved from another path). */
void pml_dr2_path_assign(pml_dr2_path_state_t *p, uint64_t bytes, uint64_t now_us);
/* `bytes` it carried are no longer its (moved away or abandoned, not acknowledged). */
void pml_dr2_path_unassign(pml_dr2_path_state_t *p, uint64_t bytes, uint64_t now_us);
/* `bytes` it carried were acknowledged (`bytes` 0: part of a vfrag, the rest still
 * queued): the path works; feeds the delivery rate. */
void pml_dr2_path_acked(pml_dr2_path_state_t *p, uint64_t bytes, uint64_t now_us);

/* A vfrag the path carries expired its ACK timer for the `retries`-th time; its latest
 * transmission left at `sent_at_us`. True if the path is to be declared down: retries
 * reached the budget and nothing the path carries was acknowledged since that
 * transmission. (The latest, not the first: a vfrag sent before a cut, whose ACK the cut
 * swallowed after something later on the path was acknowledged, would otherwise never
 * condemn the path and be resent on it for ever.) */
bool pml_dr2_path_timeout_says_down(const pml_dr2_path_state_t *p, uint32_t retries,
                                    uint64_t sent_at_us, const pml_dr2_path_params_t *params);

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
 * period may be a late echo from before the path failed again). */
bool pml_dr2_path_probe_answered(pml_dr2_path_state_t *p, uint32_t seq, uint64_t now_us);

/* Which of the n paths takes a new vfrag of `bytes`: the up path expected to finish it
 * first (see the top of this file); ties go to the lowest index. -1 if none is up. */
int pml_dr2_path_pick(const pml_dr2_path_state_t *paths, int n, uint64_t bytes);

/* The up path with the longest ACK timeout among the n (`fallback` if none is up). An ACK
 * waits for the receiver as much as for the path: a path that carried only small messages
 * has measured short round trips, and its vfrags would time out whenever the receiver is
 * busy with a large message from another path. Timers take the longest timeout of the
 * peer's paths; a silent cut is still detected by retries (pml_dr2_path_timeout_says_down). */
int pml_dr2_path_slowest(const pml_dr2_path_state_t *paths, int n, int fallback);

/* Paths up among the n. */
int pml_dr2_path_count_up(const pml_dr2_path_state_t *paths, int n);

#endif /* PML_DR2_PATH_H */
