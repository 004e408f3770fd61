/*
 * ompi-resilience: pml/dr2 paths: health, timing and scheduling (see pml_dr2_path.h).
 */
#include "pml_dr2_path.h"

#include <string.h>

void pml_dr2_path_init(pml_dr2_path_state_t *p, const pml_dr2_path_params_t *params)
{
    memset(p, 0, sizeof(*p));
    p->up = true;
    p->rto_us = params->rto_initial_us;
    p->weight = 1.0;
    p->nic_distance = -1;
}

void pml_dr2_path_rtt_sample(pml_dr2_path_state_t *p, uint64_t sample_us,
                             const pml_dr2_path_params_t *params)
{
    uint32_t r = sample_us > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t) sample_us;
    uint64_t rto;

    /* RFC 6298 with alpha 1/8, beta 1/4, K = 4. */
    if (!p->has_rtt) {
        p->srtt_us = r;
        p->rttvar_us = r / 2;
        p->has_rtt = true;
    } else {
        uint32_t diff = p->srtt_us > r ? p->srtt_us - r : r - p->srtt_us;
        p->rttvar_us = (3 * p->rttvar_us + diff) / 4;
        p->srtt_us = (7 * p->srtt_us + r) / 8;
    }
    rto = (uint64_t) p->srtt_us + 4 * (uint64_t) p->rttvar_us;
    if (rto < params->rto_min_us) {
        rto = params->rto_min_us;
    }
    if (rto > params->rto_max_us) {
        rto = params->rto_max_us;
    }
    p->rto_us = (uint32_t) rto;
}

uint64_t pml_dr2_path_backoff_us(const pml_dr2_path_state_t *p, uint32_t retries,
                                 const pml_dr2_path_params_t *params)
{
    uint64_t t = p->rto_us;

    for (uint32_t i = 0; i < retries && t < params->rto_max_us; i++) {
        t *= 2;
    }
    return t > params->rto_max_us ? params->rto_max_us : t;
}

void pml_dr2_path_assign(pml_dr2_path_state_t *p, uint64_t bytes)
{
    p->queued_bytes += bytes;
}

void pml_dr2_path_unassign(pml_dr2_path_state_t *p, uint64_t bytes)
{
    p->queued_bytes = bytes < p->queued_bytes ? p->queued_bytes - bytes : 0;
}

void pml_dr2_path_acked(pml_dr2_path_state_t *p, uint64_t bytes, uint64_t now_us)
{
    p->last_ack_us = now_us;
    pml_dr2_path_unassign(p, bytes);
}

bool pml_dr2_path_others_alive_since(const pml_dr2_path_state_t *paths, int n, int index,
                                     uint64_t since_us)
{
    for (int i = 0; i < n; i++) {
        if (i != index && paths[i].up
            && (paths[i].last_ack_us > since_us || paths[i].last_heard_us > since_us)) {
            return true;
        }
    }
    return false;
}

bool pml_dr2_path_timeout_says_down(const pml_dr2_path_state_t *paths, int n, int index,
                                    uint32_t retries, uint64_t sent_at_us, uint64_t now_us,
                                    const pml_dr2_path_params_t *params)
{
    const pml_dr2_path_state_t *p = &paths[index];

    /* Budget 0: only a BTL error takes a path down. An ACK for anything the path carries
     * that arrived after this vfrag left shows the path still delivers: the vfrag's own
     * loss is then an ordinary one, for the retransmission protocol. */
    if (!p->up || 0 == params->retry_budget || p->last_ack_us >= sent_at_us) {
        return false;
    }
    /* Never on a shorter silence, whichever budget is spent: timeouts from the 2 ms floor
     * spend 5 expiries in 32 ms, and a receiver held up that long (a VM whose cores the
     * host moved) took a healthy network down, twice in one 7.5 s stream. */
    if (now_us - sent_at_us < params->evidence_silence_us) {
        return false;
    }
    if (retries >= params->retry_budget) {
        return true;
    }
    return params->evidence_budget > 0 && retries >= params->evidence_budget
           && pml_dr2_path_others_alive_since(paths, n, index, sent_at_us);
}

bool pml_dr2_path_fail(pml_dr2_path_state_t *p, uint64_t now_us,
                       const pml_dr2_path_params_t *params)
{
    if (!p->up) {
        return false;
    }
    p->up = false;
    p->downs++;
    p->probe_interval_us = params->probe_interval_us;
    p->next_probe_us = now_us + params->probe_interval_us;
    p->probe_first_seq = p->probe_seq + 1;
    return true;
}

uint32_t pml_dr2_path_probe_sent(pml_dr2_path_state_t *p, uint64_t now_us,
                                 const pml_dr2_path_params_t *params)
{
    uint64_t next = (uint64_t) p->probe_interval_us * 2;

    p->probes_sent++;
    p->next_probe_us = now_us + p->probe_interval_us;
    p->probe_interval_us = (uint32_t) (next > params->probe_interval_max_us
                                           ? params->probe_interval_max_us : next);
    return ++p->probe_seq;
}

bool pml_dr2_path_probe_answered(pml_dr2_path_state_t *p, uint32_t seq, uint64_t now_us,
                                 const pml_dr2_path_params_t *params)
{
    /* ids compared modulo 2^32: in [probe_first_seq, probe_seq] */
    if (p->up || (int32_t) (seq - p->probe_first_seq) < 0 || (int32_t) (p->probe_seq - seq) < 0) {
        return false;
    }
    p->up = true;
    p->ups++;
    p->last_ack_us = now_us;
    /* The round trips measured before the path went down say nothing of it now: the
     * connection behind it is recovering from the outage (TCP restarts from one segment
     * after its retransmission timeouts, with our fragments queued behind). Timed by them,
     * the first fragments took the path down again 32 ms after a heal (5 timeouts from
     * 2 ms). As RFC 6298 allows after repeated backoff, start again from the initial
     * timeout and the next sample. */
    p->has_rtt = false;
    p->rto_us = params->rto_initial_us;
    return true;
}

int pml_dr2_path_count_up(const pml_dr2_path_state_t *paths, int n)
{
    int up = 0;

    for (int i = 0; i < n; i++) {
        up += paths[i].up ? 1 : 0;
    }
    return up;
}

int pml_dr2_path_slowest(const pml_dr2_path_state_t *paths, int n, int fallback)
{
    int slowest = -1; /* no path up seen yet; fallback may name a path, so it cannot say so */

    for (int i = 0; i < n; i++) {
        if (paths[i].up && (slowest < 0 || paths[i].rto_us > paths[slowest].rto_us)) {
            slowest = i;
        }
    }
    return slowest < 0 ? fallback : slowest;
}

/* The pick among the up paths not in `avoid` (bit i: path i), those standing by included
 * or not. */
static int pick_up_path(const pml_dr2_path_state_t *paths, int n, uint64_t bytes,
                        bool with_standby, unsigned avoid)
{
    double best_cost = 0.0;
    int best = -1;

    for (int i = 0; i < n; i++) {
        double cost;
        if (!paths[i].up || (paths[i].standby && !with_standby) || (avoid & (1u << i))) {
            continue;
        }
        cost = (double) (paths[i].queued_bytes + bytes) / paths[i].weight;
        if (best < 0 || cost < best_cost) {
            best = i;
            best_cost = cost;
        }
    }
    return best;
}

int pml_dr2_path_pick(const pml_dr2_path_state_t *paths, int n, uint64_t bytes)
{
    return pml_dr2_path_pick_avoiding(paths, n, bytes, 0);
}

int pml_dr2_path_pick_avoiding(const pml_dr2_path_state_t *paths, int n, uint64_t bytes,
                               unsigned avoid)
{
    int best = pick_up_path(paths, n, bytes, false, avoid);

    /* a path stands by only while a nearer one is up (pml_dr2_locality.h); should the
     * flags be behind a change, an up path still beats none */
    return best >= 0 ? best : pick_up_path(paths, n, bytes, true, avoid);
}
