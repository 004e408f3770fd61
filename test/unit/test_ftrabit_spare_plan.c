/*
 * Unit tests of coll/ftrabit's warm-spare decisions: placement of the spares over hosts and
 * assignment of spares to dead application ranks. Hand-made cases for each rule, then
 * randomized properties: placement never loses more spares to one host than it must, and a
 * sequence of recoveries (random deaths of application processes, spares and whole hosts)
 * keeps every application rank held exactly once while spares last.
 */
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/ftrabit/ftrabit_spare_plan.h"
#include "unit.h"

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;

static unsigned rng(unsigned bound)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (unsigned) ((rng_state * 0x2545f4914f6cdd1dull) >> 33) % bound;
}

/* ---- placement ------------------------------------------------------------------------ */

static void one_host_takes_the_last_ranks(void)
{
    int host[10] = {0}, app[10];
    CHECK(FTRABIT_SPARE_PLAN_OK == ftrabit_spare_place(host, 10, 2, app));
    for (int w = 0; w < 8; w++) {
        CHECK(app[w] == w);
    }
    CHECK(-1 == app[8] && -1 == app[9]);
}

static void no_spares_changes_nothing(void)
{
    int host[4] = {7, 7, 3, 3}, app[4];
    CHECK(FTRABIT_SPARE_PLAN_OK == ftrabit_spare_place(host, 4, 0, app));
    for (int w = 0; w < 4; w++) {
        CHECK(app[w] == w);
    }
}

static void spares_spread_over_hosts(void)
{
    /* three hosts of four, by block; host keys are arbitrary integers */
    int host[12] = {40, 40, 40, 40, 4, 4, 4, 4, 17, 17, 17, 17}, app[12];
    CHECK(FTRABIT_SPARE_PLAN_OK == ftrabit_spare_place(host, 12, 2, app));
    /* the last host first, then the middle one; the highest world rank on each */
    CHECK(-1 == app[11] && -1 == app[7]);
    int next = 0;
    for (int w = 0; w < 12; w++) {
        if (w != 7 && w != 11) {
            CHECK(app[w] == next++);
        }
    }
    CHECK(FTRABIT_SPARE_PLAN_OK == ftrabit_spare_place(host, 12, 3, app));
    CHECK(-1 == app[3] && -1 == app[7] && -1 == app[11]);
}

static void round_robin_mapping(void)
{
    /* mpirun --map-by node: world ranks alternate between two hosts */
    int host[8] = {1, 2, 1, 2, 1, 2, 1, 2}, app[8];
    CHECK(FTRABIT_SPARE_PLAN_OK == ftrabit_spare_place(host, 8, 2, app));
    CHECK(-1 == app[7] && -1 == app[6]);
    CHECK(0 == app[0] && 5 == app[5]);
}

static void uneven_hosts_keep_an_application_process(void)
{
    /* host 0 has one process, host 1 four: host 0's only process stays in the application */
    int host[5] = {0, 1, 1, 1, 1}, app[5];
    CHECK(FTRABIT_SPARE_PLAN_OK == ftrabit_spare_place(host, 5, 2, app));
    CHECK(0 == app[0] && -1 == app[4] && -1 == app[3]);
    /* one process per host: there is no other way than using up hosts */
    int one_each[4] = {5, 6, 7, 8};
    CHECK(FTRABIT_SPARE_PLAN_OK == ftrabit_spare_place(one_each, 4, 3, app));
    CHECK(0 == app[0] && -1 == app[1] && -1 == app[2] && -1 == app[3]);
}

static void placement_refuses_bad_input(void)
{
    int host[3] = {0, 0, 0}, app[3];
    CHECK(FTRABIT_SPARE_PLAN_INVALID == ftrabit_spare_place(host, 3, 3, app));
    CHECK(FTRABIT_SPARE_PLAN_INVALID == ftrabit_spare_place(host, 3, -1, app));
    CHECK(FTRABIT_SPARE_PLAN_INVALID == ftrabit_spare_place(host, 0, 0, app));
    CHECK(FTRABIT_SPARE_PLAN_INVALID == ftrabit_spare_place(NULL, 3, 1, app));
}

/* Random layouts: spares per host differ by at most one among hosts that could take one
 * more, the numbering of application ranks follows world ranks, and no host loses its last
 * application process while another host has two. */
static void placement_properties(void)
{
    for (int trial = 0; trial < 2000; trial++) {
        int nhosts = 1 + (int) rng(5), world = 1 + (int) rng(24), host[24], app[24];
        for (int w = 0; w < world; w++) {
            host[w] = 100 + (int) rng((unsigned) nhosts);
        }
        int nspares = (int) rng((unsigned) world);
        CHECK(FTRABIT_SPARE_PLAN_OK == ftrabit_spare_place(host, world, nspares, app));
        int count = 0, next = 0, spares_on[200] = {0}, apps_on[200] = {0}, total_on[200] = {0};
        for (int w = 0; w < world; w++) {
            total_on[host[w] - 100]++;
            if (app[w] < 0) {
                count++;
                spares_on[host[w] - 100]++;
            } else {
                CHECK(app[w] == next++);
                apps_on[host[w] - 100]++;
            }
        }
        CHECK(count == nspares);
        int max_apps = 0;
        for (int h = 0; h < nhosts; h++) {
            max_apps = apps_on[h] > max_apps ? apps_on[h] : max_apps;
        }
        for (int h = 0; h < nhosts; h++) {
            if (total_on[h] > 0 && 0 == apps_on[h]) {
                CHECK(max_apps <= 1); /* emptied a host while another had two left */
            }
            for (int g = 0; g < nhosts; g++) {
                /* h has two spares more than g although g had room for one more */
                if (spares_on[h] >= spares_on[g] + 2) {
                    CHECK(apps_on[g] <= 1);
                }
            }
        }
    }
}

/* ---- assignment ----------------------------------------------------------------------- */

static void one_dead_rank_gets_the_first_spare(void)
{
    /* app ranks 0..3 (rank 1 dead), spares on the same host */
    int held[5] = {0, 2, 3, -1, -1}, host[5] = {0}, last[4] = {0}, new_rank[5], unfilled, left;
    CHECK(FTRABIT_SPARE_PLAN_OK
          == ftrabit_spare_assign(held, host, 5, 4, last, new_rank, &unfilled, &left));
    CHECK(0 == new_rank[0] && 2 == new_rank[1] && 3 == new_rank[2]);
    CHECK(1 == new_rank[3] && -1 == new_rank[4]);
    CHECK(0 == unfilled && 1 == left);
}

static void more_dead_than_spares_leaves_some_to_respawn(void)
{
    int held[4] = {0, 4, -1, -1}, host[4] = {0}, last[5] = {0}, new_rank[4], unfilled, left;
    CHECK(FTRABIT_SPARE_PLAN_OK
          == ftrabit_spare_assign(held, host, 4, 5, last, new_rank, &unfilled, &left));
    CHECK(1 == new_rank[2] && 2 == new_rank[3]); /* lowest dead ranks first */
    CHECK(1 == unfilled && 0 == left);
}

static void no_death_no_change(void)
{
    int held[3] = {1, 0, -1}, host[3] = {0, 1, 1}, last[2] = {0, 1}, new_rank[3], unfilled, left;
    CHECK(FTRABIT_SPARE_PLAN_OK
          == ftrabit_spare_assign(held, host, 3, 2, last, new_rank, &unfilled, &left));
    CHECK(1 == new_rank[0] && 0 == new_rank[1] && -1 == new_rank[2]);
    CHECK(0 == unfilled && 1 == left);
}

static void a_spare_on_the_dead_ranks_host_is_preferred(void)
{
    /* ranks 0,1 on host 5, 2,3 on host 9; rank 2 dead; spares on host 5 (two) and 9 */
    int held[6] = {0, 1, 3, -1, -1, -1}, host[6] = {5, 5, 9, 5, 5, 9};
    int last[4] = {5, 5, 9, 9}, new_rank[6], unfilled, left;
    CHECK(FTRABIT_SPARE_PLAN_OK
          == ftrabit_spare_assign(held, host, 6, 4, last, new_rank, &unfilled, &left));
    CHECK(2 == new_rank[5] && -1 == new_rank[3] && -1 == new_rank[4]);
    CHECK(0 == unfilled && 2 == left);
}

static void a_lost_host_takes_spares_from_the_richest_host(void)
{
    /* host 9 is gone with ranks 2 and 3: spares of host 5 (two) go first, as the host
     * with the most spares; then the tie between host 5 and host 7 goes to the first */
    int held[5] = {0, 1, -1, -1, -1}, host[5] = {5, 5, 7, 5, 5};
    int last[4] = {5, 5, 9, 9}, new_rank[5], unfilled, left;
    CHECK(FTRABIT_SPARE_PLAN_OK
          == ftrabit_spare_assign(held, host, 5, 4, last, new_rank, &unfilled, &left));
    CHECK(2 == new_rank[3]);          /* host 5 had two spares, host 7 one */
    CHECK(3 == new_rank[2]);          /* then one each: the first in order */
    CHECK(-1 == new_rank[4] && 0 == unfilled && 1 == left);
}

static void a_leaving_member_hands_its_rank_to_a_spare(void)
{
    /* rank 1 (host 5) got a preemption notice and leaves; the spare on host 7 takes its
     * rank, and a leaving spare (host 5) is never picked, not even for a rank of its host */
    int held[5] = {0, FTRABIT_SPARE_LEAVING, -1, FTRABIT_SPARE_LEAVING, 2};
    int host[5] = {5, 5, 7, 5, 7}, last[3] = {5, 5, 7}, new_rank[5], unfilled, left;
    CHECK(FTRABIT_SPARE_PLAN_OK
          == ftrabit_spare_assign(held, host, 5, 3, last, new_rank, &unfilled, &left));
    CHECK(0 == new_rank[0] && 1 == new_rank[2] && 2 == new_rank[4]);
    CHECK(FTRABIT_SPARE_LEAVING == new_rank[1] && FTRABIT_SPARE_LEAVING == new_rank[3]);
    CHECK(0 == unfilled && 0 == left);
}

static void leaving_without_spares_leaves_the_rank_to_respawn(void)
{
    int held[3] = {0, FTRABIT_SPARE_LEAVING, 2}, host[3] = {0}, last[3] = {0}, new_rank[3];
    int unfilled, left;
    CHECK(FTRABIT_SPARE_PLAN_OK
          == ftrabit_spare_assign(held, host, 3, 3, last, new_rank, &unfilled, &left));
    CHECK(FTRABIT_SPARE_LEAVING == new_rank[1] && 1 == unfilled && 0 == left);
}

static void assignment_refuses_bad_input(void)
{
    int host[3] = {0}, last[2] = {0}, new_rank[3], unfilled, left;
    int twice[3] = {1, 1, -1}, out_of_range[3] = {0, 2, -1}, below[3] = {0, -3, -1};
    CHECK(FTRABIT_SPARE_PLAN_INVALID
          == ftrabit_spare_assign(twice, host, 3, 2, last, new_rank, &unfilled, &left));
    CHECK(FTRABIT_SPARE_PLAN_INVALID
          == ftrabit_spare_assign(out_of_range, host, 3, 2, last, new_rank, &unfilled, &left));
    CHECK(FTRABIT_SPARE_PLAN_INVALID
          == ftrabit_spare_assign(below, host, 3, 2, last, new_rank, &unfilled, &left));
    CHECK(FTRABIT_SPARE_PLAN_INVALID
          == ftrabit_spare_assign(twice, host, 3, 0, last, new_rank, &unfilled, &left));
}

/* A job lived through: placement, then recoveries with random deaths (single processes,
 * spares while waiting, whole hosts). After each, every application rank is held by exactly
 * one member or counted as unfilled, spares are used while any are left, a rank whose host
 * still has a waiting spare gets one of those, and the numbers add up. */
static void recoveries_keep_every_rank_held(void)
{
    int trials = getenv("OMPIRES_UNIT_QUICK") ? 200 : 2000;
    for (int trial = 0; trial < trials; trial++) {
        int nhosts = 1 + (int) rng(4), world = 2 + (int) rng(20);
        int host[22], app[22], alive[22], held[22];
        for (int w = 0; w < world; w++) {
            host[w] = (int) rng((unsigned) nhosts);
            alive[w] = 1;
        }
        int nspares = 1 + (int) rng((unsigned) world - 1);
        CHECK(FTRABIT_SPARE_PLAN_OK == ftrabit_spare_place(host, world, nspares, app));
        int app_size = world - nspares, last[22];
        for (int w = 0; w < world; w++) {
            held[w] = app[w];
            if (app[w] >= 0) {
                last[app[w]] = host[w];
            }
        }
        for (int round = 0; round < 4; round++) {
            /* deaths: each process with chance 1/6, or a whole host */
            int dead_host = rng(3) == 0 ? (int) rng((unsigned) nhosts) : -1;
            for (int w = 0; w < world; w++) {
                if (alive[w] && (host[w] == dead_host || rng(6) == 0)) {
                    alive[w] = 0;
                }
            }
            int m = 0, mh[22], mhost[22], who[22], new_rank[22], unfilled, left, before = 0;
            for (int w = 0; w < world; w++) {
                if (alive[w]) {
                    who[m] = w;
                    mh[m] = held[w];
                    mhost[m] = host[w];
                    before += -1 == held[w];
                    m++;
                }
            }
            if (0 == m) {
                break;
            }
            CHECK(FTRABIT_SPARE_PLAN_OK
                  == ftrabit_spare_assign(mh, mhost, m, app_size, last, new_rank, &unfilled,
                                          &left));
            int holders[22] = {0}, taken = 0, dead = 0;
            for (int r = 0; r < app_size; r++) {
                int h = 0;
                for (int i = 0; i < m; i++) {
                    h += mh[i] == r;
                }
                dead += 0 == h;
            }
            for (int i = 0; i < m; i++) {
                if (new_rank[i] >= 0) {
                    holders[new_rank[i]]++;
                }
                if (mh[i] >= 0) {
                    CHECK(new_rank[i] == mh[i]); /* nobody changes rank */
                } else if (new_rank[i] >= 0) {
                    taken++;
                    /* a spare from elsewhere only if the dead rank's host had none left */
                    if (mhost[i] != last[new_rank[i]]) {
                        for (int j = 0; j < m; j++) {
                            CHECK(!(-1 == new_rank[j] && mhost[j] == last[new_rank[i]]));
                        }
                    }
                }
            }
            int unheld = 0;
            for (int r = 0; r < app_size; r++) {
                CHECK(holders[r] <= 1);
                unheld += 0 == holders[r];
            }
            CHECK(unheld == unfilled);
            CHECK(taken == (dead < before ? dead : before));
            CHECK(left == before - taken);
            CHECK(0 == unfilled || 0 == left);
            /* apply; once no spare is left (or some rank is respawned, which happens only
             * then), recovery no longer consults spares */
            for (int i = 0; i < m; i++) {
                held[who[i]] = new_rank[i];
                if (new_rank[i] >= 0) {
                    last[new_rank[i]] = mhost[i];
                }
            }
            if (0 == left) {
                break;
            }
        }
    }
}

/* Respawn placement: replacements go to the least loaded live hosts, in turn. */
static void respawn_spreads_over_live_hosts(void)
{
    int host_of[4];
    /* 3 hosts of 2, h2 lost: its two replacements go one to h0, one to h1 */
    int load2[] = {2, 2};
    CHECK(FTRABIT_SPARE_PLAN_OK == ftrabit_respawn_place(load2, 2, 2, host_of));
    CHECK(0 == host_of[0] && 1 == host_of[1]);
    /* one host left: everything there */
    int load1[] = {5};
    CHECK(FTRABIT_SPARE_PLAN_OK == ftrabit_respawn_place(load1, 1, 3, host_of));
    CHECK(0 == host_of[0] && 0 == host_of[1] && 0 == host_of[2]);
    /* uneven: the emptier host first, until loads meet, then the first on a tie */
    int load3[] = {3, 1, 2};
    CHECK(FTRABIT_SPARE_PLAN_OK == ftrabit_respawn_place(load3, 3, 4, host_of));
    CHECK(1 == host_of[0] && 1 == host_of[1] && 2 == host_of[2] && 0 == host_of[3]);
    /* nothing to place */
    CHECK(FTRABIT_SPARE_PLAN_OK == ftrabit_respawn_place(load3, 3, 0, NULL));
}

static void respawn_placement_refuses_bad_input(void)
{
    int host_of[2], load[] = {1, -1};
    CHECK(FTRABIT_SPARE_PLAN_INVALID == ftrabit_respawn_place(NULL, 1, 1, host_of));
    CHECK(FTRABIT_SPARE_PLAN_INVALID == ftrabit_respawn_place(load, 0, 1, host_of));
    CHECK(FTRABIT_SPARE_PLAN_INVALID == ftrabit_respawn_place(load, 1, -1, host_of));
    CHECK(FTRABIT_SPARE_PLAN_INVALID == ftrabit_respawn_place(load, 1, 1, NULL));
    CHECK(FTRABIT_SPARE_PLAN_INVALID == ftrabit_respawn_place(load, 2, 1, host_of));
}

int main(void)
{
    RUN(one_host_takes_the_last_ranks);
    RUN(no_spares_changes_nothing);
    RUN(spares_spread_over_hosts);
    RUN(round_robin_mapping);
    RUN(uneven_hosts_keep_an_application_process);
    RUN(placement_refuses_bad_input);
    RUN(placement_properties);
    RUN(one_dead_rank_gets_the_first_spare);
    RUN(more_dead_than_spares_leaves_some_to_respawn);
    RUN(no_death_no_change);
    RUN(a_spare_on_the_dead_ranks_host_is_preferred);
    RUN(a_lost_host_takes_spares_from_the_richest_host);
    RUN(a_leaving_member_hands_its_rank_to_a_spare);
    RUN(leaving_without_spares_leaves_the_rank_to_respawn);
    RUN(assignment_refuses_bad_input);
    RUN(recoveries_keep_every_rank_held);
    RUN(respawn_spreads_over_live_hosts);
    RUN(respawn_placement_refuses_bad_input);
    UNIT_EXIT();
}
