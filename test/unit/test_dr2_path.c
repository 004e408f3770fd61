/*
 * Unit tests of pml/dr2's path logic (pml_dr2_path.h): health verdicts, probing with
 * backoff, which path takes a new vfrag, the bytes a path carries.
 */
#include <stdint.h>
#include <string.h>

#include "ompi/mca/pml/dr2/pml_dr2_path.h"
#include "unit.h"
#include "test_dr2_path_params.h"

/* The clock at the timer expiries of the health verdicts below: long after the vfrags left */
#define NOW 1000000


static void fresh_path_is_up_with_initial_timeout(void)
{
    pml_dr2_path_state_t p;

    pml_dr2_path_init(&p, &params);
    CHECK(p.up);
    CHECK(p.rto_us == 10000);
    CHECK(!p.has_rtt);
    CHECK(pml_dr2_path_backoff_us(&p, 0, &params) == 10000);
    CHECK(pml_dr2_path_backoff_us(&p, 3, &params) == 80000);
    CHECK(pml_dr2_path_backoff_us(&p, 60, &params) == 1000000); /* capped, no overflow */
}

static void rtt_samples_follow_rfc6298_and_bounds(void)
{
    pml_dr2_path_state_t p;

    pml_dr2_path_init(&p, &params);
    pml_dr2_path_rtt_sample(&p, 100, &params);
    CHECK(p.has_rtt && p.srtt_us == 100 && p.rttvar_us == 50);
    CHECK(p.rto_us == 2000); /* 100 + 4 * 50 is below the floor */
    pml_dr2_path_rtt_sample(&p, 900, &params);
    CHECK(p.srtt_us == (7 * 100 + 900) / 8);
    CHECK(p.rttvar_us == (3 * 50 + 800) / 4);
    pml_dr2_path_rtt_sample(&p, UINT64_MAX, &params);
    CHECK(p.rto_us == 1000000); /* capped */
}

static void timers_take_the_longest_timeout_of_the_paths_up(void)
{
    pml_dr2_path_state_t paths[3];

    for (int i = 0; i < 3; i++) {
        pml_dr2_path_init(&paths[i], &params);
    }
    paths[0].rto_us = 3000;
    paths[1].rto_us = 9000;
    paths[2].rto_us = 5000;
    CHECK(pml_dr2_path_slowest(paths, 3, 0) == 1);
    (void) pml_dr2_path_fail(&paths[1], 0, &params);
    CHECK(pml_dr2_path_slowest(paths, 3, 0) == 2); /* a path that is down does not count */
    CHECK(pml_dr2_path_slowest(paths, 1, 0) == 0);
}

/* The fallback is only the answer when no path is up: here it names the faster path, which
 * must not win over the slower one after it (path 0's vfrags would get path 1's shorter
 * timeout and be resent spuriously on mixed NICs). */
static void the_fallback_is_no_path_of_its_own(void)
{
    pml_dr2_path_state_t paths[3];

    for (int i = 0; i < 3; i++) {
        pml_dr2_path_init(&paths[i], &params);
    }
    paths[0].rto_us = 9000;
    paths[1].rto_us = 3000;
    CHECK(pml_dr2_path_slowest(paths, 2, 0) == 0);
    CHECK(pml_dr2_path_slowest(paths, 2, 1) == 0);
    paths[2].rto_us = 5000;
    CHECK(pml_dr2_path_slowest(paths, 3, 0) == 0);
    CHECK(pml_dr2_path_slowest(paths, 3, 2) == 0);
    (void) pml_dr2_path_fail(&paths[0], 0, &params);
    CHECK(pml_dr2_path_slowest(paths, 3, 0) == 2); /* down: the slowest of the others */
    CHECK(pml_dr2_path_slowest(paths, 3, 1) == 2);
}

static void timeout_takes_a_silent_path_down_only_after_its_budget(void)
{
    pml_dr2_path_state_t p;

    pml_dr2_path_init(&p, &params);
    p.last_ack_us = 500;
    /* vfrag sent at 1000, nothing acknowledged since: down at the third expiry */
    CHECK(!pml_dr2_path_timeout_says_down(&p, 1, 0, 1, 1000, NOW, &params));
    CHECK(!pml_dr2_path_timeout_says_down(&p, 1, 0, 2, 1000, NOW, &params));
    CHECK(pml_dr2_path_timeout_says_down(&p, 1, 0, 3, 1000, NOW, &params));
    CHECK(pml_dr2_path_timeout_says_down(&p, 1, 0, 9, 1000, NOW, &params));
    /* something the path carries was acknowledged after the vfrag left: it delivers */
    pml_dr2_path_acked(&p, 0, 1500);
    CHECK(!pml_dr2_path_timeout_says_down(&p, 1, 0, 9, 1000, NOW, &params));
    /* budget 0: timeouts never decide */
    {
        pml_dr2_path_params_t none = params;
        none.retry_budget = 0;
        p.last_ack_us = 0;
        CHECK(!pml_dr2_path_timeout_says_down(&p, 1, 0, 100, 1000, NOW, &none));
    }
    /* a path already down is not declared down again */
    CHECK(pml_dr2_path_fail(&p, 2000, &params));
    CHECK(!pml_dr2_path_timeout_says_down(&p, 1, 0, 9, 3000, NOW, &params));
    CHECK(!pml_dr2_path_fail(&p, 2000, &params));
    CHECK(p.downs == 1);
}

static void another_path_delivering_takes_a_silent_path_down_sooner(void)
{
    pml_dr2_path_state_t paths[3];

    for (int i = 0; i < 3; i++) {
        pml_dr2_path_init(&paths[i], &params);
    }
    /* a vfrag on path 0 left at 1000; nothing acknowledged anywhere since: the receiver may
     * be descheduled, so only the full budget decides */
    CHECK(!pml_dr2_path_timeout_says_down(paths, 3, 0, 1, 1000, NOW, &params));
    CHECK(!pml_dr2_path_others_alive_since(paths, 3, 0, 1000));
    /* path 1 delivered after it left: the peer reads, path 0 is silent: down at the
     * evidence budget (1 here) */
    pml_dr2_path_acked(&paths[1], 0, 1200);
    CHECK(pml_dr2_path_others_alive_since(paths, 3, 0, 1000));
    CHECK(!pml_dr2_path_others_alive_since(paths, 3, 1, 1000)); /* a path is not its own evidence */
    CHECK(!pml_dr2_path_timeout_says_down(paths, 3, 0, 0, 1000, NOW, &params));
    CHECK(pml_dr2_path_timeout_says_down(paths, 3, 0, 1, 1000, NOW, &params));
    /* ...but not before the vfrag was unacknowledged for the evidence silence (50 ms) */
    CHECK(!pml_dr2_path_timeout_says_down(paths, 3, 0, 1, 1000, 1000 + 49999, &params));
    CHECK(pml_dr2_path_timeout_says_down(paths, 3, 0, 1, 1000, 1000 + 50000, &params));
    /* an ACK before the vfrag left is no evidence */
    CHECK(!pml_dr2_path_timeout_says_down(paths, 3, 0, 1, 1300, NOW, &params));
    /* a path that is down is no evidence either (its last ACK is from before) */
    CHECK(pml_dr2_path_fail(&paths[1], 1250, &params));
    CHECK(!pml_dr2_path_timeout_says_down(paths, 3, 0, 1, 1000, NOW, &params));
    CHECK(pml_dr2_path_timeout_says_down(paths, 3, 0, 3, 1000, NOW, &params)); /* the full budget */
    /* ...which too needs the least silence: timeouts from a 2 ms floor spend it in 14 ms */
    CHECK(!pml_dr2_path_timeout_says_down(paths, 3, 0, 3, 1000, 1000 + 49999, &params));
    CHECK(pml_dr2_path_timeout_says_down(paths, 3, 0, 3, 1000, 1000 + 50000, &params));
    /* path 0 itself delivered since: an ordinary loss, whatever the others do */
    pml_dr2_path_acked(&paths[2], 0, 1400);
    pml_dr2_path_acked(&paths[0], 0, 1100);
    CHECK(!pml_dr2_path_timeout_says_down(paths, 3, 0, 9, 1000, NOW, &params));
    /* something from the peer arriving on another path is evidence too (the answer to a
     * liveness probe on an idle path) */
    paths[0].last_ack_us = 0;
    paths[2].last_ack_us = 0;
    CHECK(!pml_dr2_path_timeout_says_down(paths, 3, 0, 1, 1000, NOW, &params));
    pml_dr2_path_heard(&paths[2], 1600);
    pml_dr2_path_heard(&paths[2], 1500); /* an older clock reading does not go back */
    CHECK(paths[2].last_heard_us == 1600);
    CHECK(pml_dr2_path_others_alive_since(paths, 3, 0, 1599));
    CHECK(!pml_dr2_path_others_alive_since(paths, 3, 0, 1600));
    CHECK(pml_dr2_path_timeout_says_down(paths, 3, 0, 1, 1000, NOW, &params));
    /* the rule off (evidence budget 0), or timeouts off (retry budget 0) */
    {
        pml_dr2_path_params_t off = params;
        paths[0].last_ack_us = 0;
        off.evidence_budget = 0;
        CHECK(!pml_dr2_path_timeout_says_down(paths, 3, 0, 2, 1000, NOW, &off));
        CHECK(pml_dr2_path_timeout_says_down(paths, 3, 0, 3, 1000, NOW, &off));
        off.evidence_budget = 1;
        off.retry_budget = 0;
        CHECK(!pml_dr2_path_timeout_says_down(paths, 3, 0, 9, 1000, NOW, &off));
    }
}

static void probes_back_off_and_an_answer_brings_the_path_back(void)
{
    pml_dr2_path_state_t p;
    uint32_t s1, s2, s3, s4;

    pml_dr2_path_init(&p, &params);
    pml_dr2_path_rtt_sample(&p, 100, &params); /* timed before it fails */
    CHECK(p.has_rtt && p.rto_us != params.rto_initial_us);
    CHECK(!pml_dr2_path_probe_due(&p, 1u << 30)); /* an up path is never probed */
    CHECK(pml_dr2_path_fail(&p, 10000, &params));
    CHECK(!p.up);
    CHECK(!pml_dr2_path_probe_due(&p, 10999));
    CHECK(pml_dr2_path_probe_due(&p, 11000));
    s1 = pml_dr2_path_probe_sent(&p, 11000, &params);
    CHECK(p.next_probe_us == 12000); /* 1000 */
    s2 = pml_dr2_path_probe_sent(&p, 12000, &params);
    CHECK(p.next_probe_us == 14000); /* 2000 */
    s3 = pml_dr2_path_probe_sent(&p, 14000, &params);
    CHECK(p.next_probe_us == 18000); /* 4000 */
    s4 = pml_dr2_path_probe_sent(&p, 18000, &params);
    CHECK(p.next_probe_us == 23000); /* capped at 5000 */
    pml_dr2_path_probe_sent(&p, 23000, &params);
    CHECK(p.next_probe_us == 28000);
    CHECK(p.probes_sent == 5);
    CHECK(s1 != s2 && s2 != s3 && s3 != s4);
    /* an id never sent is no answer */
    CHECK(!pml_dr2_path_probe_answered(&p, s4 + 100, 30000, &params));
    CHECK(!p.up);
    /* the answer to an earlier probe of this down period is */
    CHECK(pml_dr2_path_probe_answered(&p, s2, 30000, &params));
    CHECK(p.up && p.ups == 1 && p.last_ack_us == 30000);
    /* timed afresh: the round trips of before the outage do not count */
    CHECK(!p.has_rtt && p.rto_us == params.rto_initial_us);
    /* answers after it changes nothing */
    CHECK(!pml_dr2_path_probe_answered(&p, s3, 30001, &params));
    /* down again: answers to the probes of the last period are late echoes */
    CHECK(pml_dr2_path_fail(&p, 40000, &params));
    CHECK(p.next_probe_us == 41000); /* the backoff starts over */
    CHECK(!pml_dr2_path_probe_answered(&p, s4, 40001, &params));
    CHECK(!p.up);
    s1 = pml_dr2_path_probe_sent(&p, 41000, &params);
    CHECK(pml_dr2_path_probe_answered(&p, s1, 41500, &params));
    CHECK(p.up && p.ups == 2 && p.downs == 2);
}

static void probe_ids_wrap_around(void)
{
    pml_dr2_path_state_t p;
    uint32_t s;

    pml_dr2_path_init(&p, &params);
    p.probe_seq = UINT32_MAX - 1;
    CHECK(pml_dr2_path_fail(&p, 0, &params));
    (void) pml_dr2_path_probe_sent(&p, 1000, &params); /* UINT32_MAX */
    s = pml_dr2_path_probe_sent(&p, 2000, &params);    /* 0 */
    CHECK(0 == s);
    CHECK(!pml_dr2_path_probe_answered(&p, UINT32_MAX - 1, 2100, &params));
    CHECK(pml_dr2_path_probe_answered(&p, UINT32_MAX, 2100, &params));
}

static void unmeasured_paths_share_by_queued_bytes(void)
{
    pml_dr2_path_state_t paths[3];
    int count[3] = {0, 0, 0};

    for (int i = 0; i < 3; i++) {
        pml_dr2_path_init(&paths[i], &params);
    }
    /* equal vfrags, never acknowledged: strict rotation */
    for (int k = 0; k < 30; k++) {
        int i = pml_dr2_path_pick(paths, 3, 1000);
        CHECK(i == k % 3);
        pml_dr2_path_assign(&paths[i], 1000);
        count[i]++;
    }
    CHECK(count[0] == 10 && count[1] == 10 && count[2] == 10);
    /* a large vfrag on one path: the others take the next ones */
    pml_dr2_path_assign(&paths[0], 100000);
    CHECK(pml_dr2_path_pick(paths, 3, 1000) == 1);
}

static void down_paths_take_nothing(void)
{
    pml_dr2_path_state_t paths[2];

    pml_dr2_path_init(&paths[0], &params);
    pml_dr2_path_init(&paths[1], &params);
    CHECK(pml_dr2_path_count_up(paths, 2) == 2);
    (void) pml_dr2_path_fail(&paths[0], 0, &params);
    CHECK(pml_dr2_path_count_up(paths, 2) == 1);
    for (int k = 0; k < 5; k++) {
        CHECK(pml_dr2_path_pick(paths, 2, 1000) == 1);
        pml_dr2_path_assign(&paths[1], 1000);
    }
    (void) pml_dr2_path_fail(&paths[1], 0, &params);
    CHECK(pml_dr2_path_pick(paths, 2, 1000) == -1);
    CHECK(pml_dr2_path_slowest(paths, 2, 1) == 1); /* none up: the caller's */
    CHECK(pml_dr2_path_count_up(paths, 2) == 0);
    CHECK(pml_dr2_path_pick(paths, 0, 1000) == -1);
}

/* Fragments that a stuck path's transport would hold go to another up path, standing by
 * or not, never to an avoided one; none if every other path is down or avoided. */
static void a_stuck_path_is_avoided(void)
{
    pml_dr2_path_state_t paths[3];

    for (int i = 0; i < 3; i++) {
        pml_dr2_path_init(&paths[i], &params);
    }
    pml_dr2_path_assign(&paths[1], 5000);
    CHECK(pml_dr2_path_pick_avoiding(paths, 3, 1000, 1u << 0) == 2); /* the less loaded */
    CHECK(pml_dr2_path_pick_avoiding(paths, 3, 1000, (1u << 0) | (1u << 2)) == 1);
    paths[2].standby = true; /* near path 0 stuck: the far one takes it */
    CHECK(pml_dr2_path_pick_avoiding(paths, 3, 1000, (1u << 0) | (1u << 1)) == 2);
    CHECK(pml_dr2_path_pick_avoiding(paths, 3, 1000, 1u << 0) == 1); /* not standing by first */
    (void) pml_dr2_path_fail(&paths[1], 0, &params);
    CHECK(pml_dr2_path_pick_avoiding(paths, 3, 1000, (1u << 0) | (1u << 2)) == -1);
    CHECK(pml_dr2_path_pick_avoiding(paths, 3, 1000, 0) == 0);
    CHECK(pml_dr2_path_pick(paths, 3, 1000) == pml_dr2_path_pick_avoiding(paths, 3, 1000, 0));
}

static void queued_bytes_follow_assignments(void)
{
    pml_dr2_path_state_t p;

    pml_dr2_path_init(&p, &params);
    pml_dr2_path_assign(&p, 3000);
    pml_dr2_path_acked(&p, 1000, 500);
    CHECK(2000 == p.queued_bytes && 500 == p.last_ack_us);
    pml_dr2_path_acked(&p, 0, 600); /* part of a vfrag: the path works, nothing leaves */
    CHECK(2000 == p.queued_bytes && 600 == p.last_ack_us);
    /* bytes moved away are no longer carried */
    pml_dr2_path_unassign(&p, 2000);
    CHECK(0 == p.queued_bytes);
    pml_dr2_path_unassign(&p, 5000); /* never below zero */
    CHECK(0 == p.queued_bytes);
}

static void weights_set_the_shares(void)
{
    pml_dr2_path_state_t paths[2];
    int count[2] = {0, 0};

    pml_dr2_path_init(&paths[0], &params);
    pml_dr2_path_init(&paths[1], &params);
    CHECK(1.0 == paths[0].weight);
    paths[0].weight = 30000.0; /* a BTL that advertises three times the other's bandwidth */
    paths[1].weight = 10000.0;
    for (int k = 0; k < 400; k++) {
        int i = pml_dr2_path_pick(paths, 2, 1000);
        CHECK(i >= 0);
        pml_dr2_path_assign(&paths[i], 1000);
        count[i]++;
    }
    CHECK(count[0] == 300 && count[1] == 100);
    /* the shares hold as the queues grow */
    for (int k = 0; k < 400; k++) {
        int i = pml_dr2_path_pick(paths, 2, 1000);
        pml_dr2_path_assign(&paths[i], 1000);
        count[i]++;
    }
    CHECK(count[0] == 600 && count[1] == 200);
}

/* A sender keeping `window` vfrags of `vfrag` bytes unacknowledged over two paths, for
 * `steps` acknowledgements; `next_acked(outstanding paths in send order, n)` says which one
 * the receiver acknowledges next (its index in that order). Counts vfrags per path. */
#define SIM_MAX 64
typedef int (*sim_ack_order_t)(const int *order, int n, uint64_t step);

static void simulate(pml_dr2_path_state_t *paths, int window, uint64_t vfrag, int steps,
                     sim_ack_order_t next_acked, int count[2])
{
    int order[SIM_MAX], n = 0;
    uint64_t now = 0;

    count[0] = count[1] = 0;
    for (int step = 0; step < steps; step++) {
        int k, p;
        while (n < window) {
            p = pml_dr2_path_pick(paths, 2, vfrag);
            pml_dr2_path_assign(&paths[p], vfrag);
            order[n++] = p;
            count[p]++;
        }
        now += 10;
        k = next_acked(order, n, (uint64_t) step);
        pml_dr2_path_acked(&paths[order[k]], vfrag, now);
        memmove(&order[k], &order[k + 1], sizeof(order[0]) * (size_t) (n - k - 1));
        n--;
    }
}

/* One receiver, the bottleneck of both paths, takes the vfrags in the order they were sent. */
static int shared_bottleneck(const int *order, int n, uint64_t step)
{
    (void) order; (void) n; (void) step;
    return 0;
}

/* Path 1's wire is three times slower: of every four acknowledgements, three are path 0's
 * oldest vfrag (when it has one). */
static int path1_three_times_slower(const int *order, int n, uint64_t step)
{
    int want = 3 == step % 4 ? 1 : 0;

    for (int k = 0; k < n; k++) {
        if (order[k] == want) {
            return k;
        }
    }
    return 0;
}

static void a_shared_bottleneck_is_split_evenly(void)
{
    pml_dr2_path_state_t paths[2];
    int count[2];

    /* the case a rate estimate gets wrong (pml_dr2_path.h): identical paths behind one
     * receiver; 128 KiB vfrags, 8 in flight, as a stream of 1 MiB messages
     * (bench/run-dr2-cluster.sh) */
    pml_dr2_path_init(&paths[0], &params);
    pml_dr2_path_init(&paths[1], &params);
    simulate(paths, 8, 131072, 20000, shared_bottleneck, count);
    CHECK(count[0] > 0.45 * (count[0] + count[1]) && count[1] > 0.45 * (count[0] + count[1]));
}

static void a_slower_path_takes_less(void)
{
    pml_dr2_path_state_t paths[2];
    int count[2];

    pml_dr2_path_init(&paths[0], &params);
    pml_dr2_path_init(&paths[1], &params);
    simulate(paths, 16, 131072, 20000, path1_three_times_slower, count);
    /* path 1 delivers a quarter of the acknowledgements: it gets about a quarter */
    CHECK(count[1] > 0.2 * (count[0] + count[1]) && count[1] < 0.3 * (count[0] + count[1]));
}

int main(void)
{
    RUN(fresh_path_is_up_with_initial_timeout);
    RUN(rtt_samples_follow_rfc6298_and_bounds);
    RUN(timers_take_the_longest_timeout_of_the_paths_up);
    RUN(the_fallback_is_no_path_of_its_own);
    RUN(timeout_takes_a_silent_path_down_only_after_its_budget);
    RUN(another_path_delivering_takes_a_silent_path_down_sooner);
    RUN(probes_back_off_and_an_answer_brings_the_path_back);
    RUN(probe_ids_wrap_around);
    RUN(unmeasured_paths_share_by_queued_bytes);
    RUN(down_paths_take_nothing);
    RUN(a_stuck_path_is_avoided);
    RUN(queued_bytes_follow_assignments);
    RUN(weights_set_the_shares);
    RUN(a_shared_bottleneck_is_split_evenly);
    RUN(a_slower_path_takes_less);
    UNIT_EXIT();
}
