/*
 * Unit tests of pml/dr2's paths by NIC distance and advertised bandwidth
 * (pml_dr2_locality.h): which paths stand by, failover to a far NIC and back, weights of
 * BTLs that advertise no bandwidth, and how a new vfrag is placed with them
 * (pml_dr2_path_pick).
 */
#include <string.h>

#include "ompi/mca/pml/dr2/pml_dr2_locality.h"
#include "unit.h"
#include "test_dr2_path_params.h"


/* n fresh paths; path i of kind kinds[i] with NIC distance dist[i]. */
static void paths_make(pml_dr2_path_state_t *p, int n, const int *kinds, const int *dist)
{
    for (int i = 0; i < n; i++) {
        pml_dr2_path_init(&p[i], &params);
        p[i].kind = kinds[i];
        p[i].nic_distance = dist[i];
    }
}

static void distance_from_local_cpus(void)
{
    CHECK(pml_dr2_nic_distance(true, true) == PML_DR2_NIC_NEAR);
    CHECK(pml_dr2_nic_distance(false, true) == PML_DR2_NIC_PARTLY);
    CHECK(pml_dr2_nic_distance(false, false) == PML_DR2_NIC_FAR);
    CHECK(strcmp(pml_dr2_nic_distance_name(PML_DR2_NIC_FAR), "far") == 0);
    CHECK(strcmp(pml_dr2_nic_distance_name(-1), "unknown") == 0);
}

static void fresh_path_has_unknown_distance(void)
{
    pml_dr2_path_state_t p;

    pml_dr2_path_init(&p, &params);
    CHECK(p.nic_distance == PML_DR2_NIC_UNKNOWN && !p.standby && 0 == p.kind);
}

/* Two networks of one BTL, the process bound near the first NIC: the far one stands by and
 * every new vfrag goes to the near one, however much it already carries. */
static void far_path_of_a_kind_stands_by(void)
{
    pml_dr2_path_state_t p[2];
    const int kinds[] = {0, 0}, dist[] = {PML_DR2_NIC_FAR, PML_DR2_NIC_NEAR};

    paths_make(p, 2, kinds, dist);
    CHECK(pml_dr2_paths_apply_locality(p, 2) == 1);
    CHECK(p[0].standby && !p[1].standby);
    for (int i = 0; i < 10; i++) {
        int at = pml_dr2_path_pick(p, 2, 1 << 20);
        CHECK(at == 1);
        pml_dr2_path_assign(&p[at], 1 << 20);
    }
}

/* The near path goes down: the far one carries everything; back up, it stands by again. */
static void far_path_takes_over_and_returns_to_standby(void)
{
    pml_dr2_path_state_t p[2];
    const int kinds[] = {0, 0}, dist[] = {PML_DR2_NIC_NEAR, PML_DR2_NIC_FAR};

    paths_make(p, 2, kinds, dist);
    (void) pml_dr2_paths_apply_locality(p, 2);
    CHECK(pml_dr2_path_fail(&p[0], 100, &params));
    CHECK(pml_dr2_paths_apply_locality(p, 2) == 0);
    CHECK(!p[1].standby && pml_dr2_path_pick(p, 2, 4096) == 1);
    uint32_t seq = pml_dr2_path_probe_sent(&p[0], 2000, &params);
    CHECK(pml_dr2_path_probe_answered(&p[0], seq, 2100, &params));
    CHECK(pml_dr2_paths_apply_locality(p, 2) == 1);
    CHECK(p[1].standby && pml_dr2_path_pick(p, 2, 4096) == 0);
}

/* Equally near paths of a kind share; so do paths whose distance is unknown, and a path of
 * unknown distance neither stands by nor puts a known one on standby. */
static void equal_or_unknown_distances_share(void)
{
    pml_dr2_path_state_t p[3];
    const int kinds[] = {0, 0, 0};
    const int near2[] = {PML_DR2_NIC_PARTLY, PML_DR2_NIC_PARTLY, PML_DR2_NIC_FAR};
    const int unknown[] = {PML_DR2_NIC_UNKNOWN, PML_DR2_NIC_FAR, PML_DR2_NIC_UNKNOWN};
    int on[3] = {0, 0, 0};

    paths_make(p, 3, kinds, near2);
    CHECK(pml_dr2_paths_apply_locality(p, 3) == 1 && p[2].standby);
    for (int i = 0; i < 100; i++) {
        int at = pml_dr2_path_pick(p, 3, 1000);
        on[at]++;
        pml_dr2_path_assign(&p[at], 1000);
    }
    CHECK(on[0] == 50 && on[1] == 50 && on[2] == 0);
    paths_make(p, 3, kinds, unknown);
    CHECK(pml_dr2_paths_apply_locality(p, 3) == 0);
}

/* Paths of different kinds (a tcp path and an ofi path) never stand by for each other; a
 * third distance level falls back level by level. */
static void kinds_are_independent_and_levels_fall_back(void)
{
    pml_dr2_path_state_t p[4];
    const int kinds[] = {0, 1, 0, 0};
    const int dist[] = {PML_DR2_NIC_FAR, PML_DR2_NIC_NEAR, PML_DR2_NIC_NEAR, PML_DR2_NIC_PARTLY};

    paths_make(p, 4, kinds, dist);
    CHECK(pml_dr2_paths_apply_locality(p, 4) == 2);
    CHECK(p[0].standby && !p[1].standby && !p[2].standby && p[3].standby);
    (void) pml_dr2_path_fail(&p[2], 10, &params);
    CHECK(pml_dr2_paths_apply_locality(p, 4) == 1);
    CHECK(p[0].standby && !p[3].standby);
    (void) pml_dr2_path_fail(&p[3], 10, &params);
    CHECK(pml_dr2_paths_apply_locality(p, 4) == 0);
    CHECK(!p[0].standby);
}

/* Should the flags lag behind (every path up standing by), an up path is still picked. */
static void pick_never_refuses_an_up_path(void)
{
    pml_dr2_path_state_t p[2];
    const int kinds[] = {0, 0}, dist[] = {PML_DR2_NIC_NEAR, PML_DR2_NIC_FAR};

    paths_make(p, 2, kinds, dist);
    p[0].standby = p[1].standby = true;
    CHECK(pml_dr2_path_pick(p, 2, 1) == 0);
    (void) pml_dr2_path_fail(&p[0], 10, &params);
    (void) pml_dr2_path_fail(&p[1], 10, &params);
    CHECK(pml_dr2_path_pick(p, 2, 1) == -1);
}

/* btl/tcp advertises 10000 (Mb/s, a veth), btl/ofi nothing: ofi weighs 10000 too and the
 * two share a stream equally; one advertising 30000 takes three quarters; none advertising
 * anything: equal weights of 1. */
static void weights_of_unadvertised_bandwidth(void)
{
    const double tcp_ofi[] = {10000.0, 0.0}, fast_slow[] = {30000.0, 10000.0};
    const double none[] = {0.0, -1.0, 0.0};
    double w[3];
    pml_dr2_path_state_t p[2];
    const int kinds[] = {0, 1}, dist[] = {PML_DR2_NIC_UNKNOWN, PML_DR2_NIC_UNKNOWN};
    int on[2] = {0, 0};

    pml_dr2_path_weights(tcp_ofi, 2, w);
    CHECK(w[0] == 10000.0 && w[1] == 10000.0);
    pml_dr2_path_weights(none, 3, w);
    CHECK(w[0] == 1.0 && w[1] == 1.0 && w[2] == 1.0);
    pml_dr2_path_weights(fast_slow, 2, w);
    paths_make(p, 2, kinds, dist);
    p[0].weight = w[0];
    p[1].weight = w[1];
    for (int i = 0; i < 400; i++) {
        int at = pml_dr2_path_pick(p, 2, 1000);
        on[at]++;
        pml_dr2_path_assign(&p[at], 1000);
    }
    CHECK(on[0] == 300 && on[1] == 100);
}

int main(void)
{
    RUN(distance_from_local_cpus);
    RUN(fresh_path_has_unknown_distance);
    RUN(far_path_of_a_kind_stands_by);
    RUN(far_path_takes_over_and_returns_to_standby);
    RUN(equal_or_unknown_distances_share);
    RUN(kinds_are_independent_and_levels_fall_back);
    RUN(pick_never_refuses_an_up_path);
    RUN(weights_of_unadvertised_bandwidth);
    UNIT_EXIT();
}
