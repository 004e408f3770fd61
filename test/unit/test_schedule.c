/*
 * Unit tests of coll/ftrabit's schedules: folding, reduce-scatter/allgather ranges,
 * binomial trees, segmentation and algorithm choice, checked against their defining
 * properties for every communicator size up to 130.
 */
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/ftrabit/coll_ftrabit_schedule.h"
#include "unit.h"

static void pow2_floor(void)
{
    CHECK(ftrabit_pow2_floor(1) == 1);
    CHECK(ftrabit_pow2_floor(2) == 2);
    CHECK(ftrabit_pow2_floor(3) == 2);
    CHECK(ftrabit_pow2_floor(8) == 8);
    CHECK(ftrabit_pow2_floor(1000) == 512);
    CHECK(ftrabit_pow2_floor(0x7fffffff) == 0x40000000);
}

/* Every virtual rank is played by exactly one real rank; virtual ranks keep rank order;
 * fold partners are neighbours and exactly one of each pair sits out. */
static void fold_is_an_ordered_bijection(void)
{
    for (int size = 1; size <= 130; size++) {
        int *played = calloc(size, sizeof(int));
        int last_vrank = -1;
        for (int rank = 0; rank < size; rank++) {
            ftrabit_fold_t f;
            ftrabit_fold(size, rank, &f);
            CHECK(f.p2 + f.rem == size);
            CHECK(f.p2 <= size && f.p2 * 2 > size);
            if (f.vrank >= 0) {
                CHECK(f.vrank < f.p2);
                CHECK(f.vrank > last_vrank);
                last_vrank = f.vrank;
                CHECK(ftrabit_fold_real_rank(&f, f.vrank) == rank);
                played[f.vrank]++;
            } else {
                CHECK(f.fold_peer == rank + 1);
                ftrabit_fold_t peer;
                ftrabit_fold(size, f.fold_peer, &peer);
                CHECK(peer.vrank >= 0 && peer.fold_peer == rank);
            }
        }
        for (int v = 0; v < ftrabit_pow2_floor(size); v++) {
            CHECK(played[v] == 1);
        }
        free(played);
    }
}

/* For each step: keep and give split the previous range; the partner's keep is my give;
 * after the last step the kept ranges of all vranks tile [0, count) exactly. */
static void rsag_ranges_tile_the_vector(void)
{
    const size_t counts[] = {0, 1, 2, 3, 7, 8, 63, 64, 65, 1000, 1 << 20};
    for (int p2 = 1; p2 <= 128; p2 <<= 1) {
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
            size_t count = counts[ci];
            char *covered = calloc(count + 1, 1);
            ftrabit_rsag_step_t *all = calloc((size_t) p2 * FTRABIT_MAX_STEPS, sizeof(*all));
            int nsteps = -1;
            for (int v = 0; v < p2; v++) {
                ftrabit_rsag_step_t *s = &all[(size_t) v * FTRABIT_MAX_STEPS];
                int n = ftrabit_rsag_schedule(p2, v, count, s);
                CHECK(nsteps < 0 || n == nsteps);
                nsteps = n;
                CHECK((1 << n) == p2);
                ftrabit_range_t cur = {0, count};
                for (int i = 0; i < n; i++) {
                    CHECK(s[i].partner_vrank == (v ^ (1 << i)));
                    CHECK(s[i].lower == (v < s[i].partner_vrank));
                    /* keep and give are the two halves of cur, the lower half to the lower rank */
                    ftrabit_range_t lo = s[i].lower ? s[i].keep : s[i].give;
                    ftrabit_range_t hi = s[i].lower ? s[i].give : s[i].keep;
                    CHECK(lo.lo == cur.lo && lo.hi == hi.lo && hi.hi == cur.hi);
                    cur = s[i].keep;
                }
                for (size_t e = cur.lo; e < cur.hi; e++) {
                    covered[e]++;
                }
            }
            for (size_t e = 0; e < count; e++) {
                CHECK(covered[e] == 1);
            }
            /* Partners agree on what moves between them. */
            for (int v = 0; v < p2; v++) {
                for (int i = 0; i < nsteps; i++) {
                    const ftrabit_rsag_step_t *mine = &all[(size_t) v * FTRABIT_MAX_STEPS + i];
                    const ftrabit_rsag_step_t *theirs =
                        &all[(size_t) mine->partner_vrank * FTRABIT_MAX_STEPS + i];
                    CHECK(mine->give.lo == theirs->keep.lo && mine->give.hi == theirs->keep.hi);
                }
            }
            free(all);
            free(covered);
        }
    }
}

/* The k-nomial tree by its definition, in base-radix digits: the parent of vrank clears its
 * lowest nonzero digit; its children set one digit below that (every digit below the top
 * for the root), largest place first. Power-of-two radices take another way through
 * ftrabit_knomial_* (shifts): both must give these trees. */
static int reference_parent(int vrank, int radix)
{
    long place = 1;

    while ((vrank / place) % radix == 0) {
        place *= radix;
    }
    return (int) (vrank - ((vrank / place) % radix) * place);
}

static void knomial_matches_definition(void)
{
    for (int radix = 2; radix <= 8; radix++) {
        for (int size = 1; size <= 300; size++) {
            for (int v = 0; v < size; v++) {
                int children[FTRABIT_MAX_TREE_CHILDREN], expect[FTRABIT_MAX_TREE_CHILDREN];
                int n = ftrabit_knomial_children(size, v, radix, children,
                                                 FTRABIT_MAX_TREE_CHILDREN);
                int m = 0;
                long top = 1;

                if (v > 0) {
                    CHECK(ftrabit_knomial_parent(v, radix) == reference_parent(v, radix));
                }
                while (0 == v ? top < size : (v / top) % radix == 0) {
                    top *= radix;
                }
                for (long place = top / radix; place > 0; place /= radix) {
                    for (int digit = 1; digit < radix; digit++) {
                        if (v + digit * place < size && m < FTRABIT_MAX_TREE_CHILDREN) {
                            expect[m++] = (int) (v + digit * place);
                        }
                    }
                }
                CHECK(n == m);
                for (int i = 0; i < n && i < m; i++) {
                    CHECK(children[i] == expect[i]);
                }
            }
        }
    }
}

/* The k-nomial trees (radix 2: binomial) span every rank once, parents are smaller, the
 * child lists agree with the parent function, and no rank is more than ceil(log_radix(size))
 * hops from the root. */
static void knomial_trees_span(void)
{
    for (int radix = 2; radix <= 5; radix++) {
        for (int size = 1; size <= 130; size++) {
            int *reached = calloc(size, sizeof(int));
            int rounds = 0, depth_max = 0;
            for (long span = 1; span < size; span *= radix) {
                rounds++;
            }
            reached[0] = 1;
            for (int v = 0; v < size; v++) {
                int children[FTRABIT_MAX_TREE_CHILDREN], depth = 0;
                int n = ftrabit_knomial_children(size, v, radix, children,
                                                 FTRABIT_MAX_TREE_CHILDREN);
                CHECK(n <= (radix - 1) * (rounds > 0 ? rounds : 1));
                for (int i = 0; i < n; i++) {
                    CHECK(children[i] > v && children[i] < size);
                    CHECK(ftrabit_knomial_parent(children[i], radix) == v);
                    if (i > 0 && radix == 2) {
                        CHECK(children[i] < children[i - 1]); /* largest subtree first */
                    }
                    reached[children[i]]++;
                }
                for (int u = v; u > 0; u = ftrabit_knomial_parent(u, radix)) {
                    CHECK(ftrabit_knomial_parent(u, radix) < u);
                    depth++;
                }
                depth_max = depth > depth_max ? depth : depth_max;
            }
            for (int v = 0; v < size; v++) {
                CHECK(reached[v] == 1);
            }
            CHECK(depth_max <= rounds); /* a hop clears one base-radix digit */
            free(reached);
        }
    }
    /* radix 4 over 8 ranks: the root sends to 4, 1, 2, 3; 4 to 5, 6, 7 */
    {
        int children[FTRABIT_MAX_TREE_CHILDREN];
        CHECK(ftrabit_knomial_children(8, 0, 4, children, FTRABIT_MAX_TREE_CHILDREN) == 4);
        CHECK(children[0] == 4 && children[1] == 1 && children[2] == 2 && children[3] == 3);
        CHECK(ftrabit_knomial_children(8, 4, 4, children, FTRABIT_MAX_TREE_CHILDREN) == 3);
        CHECK(children[0] == 5 && children[1] == 6 && children[2] == 7);
        CHECK(ftrabit_knomial_children(8, 6, 4, children, FTRABIT_MAX_TREE_CHILDREN) == 0);
        CHECK(ftrabit_knomial_parent(7, 4) == 4 && ftrabit_knomial_parent(3, 4) == 0);
    }
}

static void segments(void)
{
    CHECK(ftrabit_segments(0, 10) == 0);
    CHECK(ftrabit_segments(1, 10) == 1);
    CHECK(ftrabit_segments(10, 10) == 1);
    CHECK(ftrabit_segments(11, 10) == 2);
    CHECK(ftrabit_segments(5, 0) == 1);
}

static void bcast_segment_size(void)
{
    /* never below the minimum; sqrt(bytes * 32 KiB / (ranks - 2)) above it */
    CHECK(ftrabit_bcast_segment_bytes(8, 4, 65536) == 65536);
    CHECK(ftrabit_bcast_segment_bytes((size_t) 16 << 20, 4, 65536) == (size_t) 512 << 10);
    CHECK(ftrabit_bcast_segment_bytes((size_t) 1 << 20, 4, 65536) == (size_t) 128 << 10);
    CHECK(ftrabit_bcast_segment_bytes((size_t) 1 << 20, 34, 65536) == 65536);
    /* more ranks, smaller segments; no overflow on huge messages */
    CHECK(ftrabit_bcast_segment_bytes((size_t) 1 << 30, 66, 1)
          < ftrabit_bcast_segment_bytes((size_t) 1 << 30, 4, 1));
    CHECK(ftrabit_bcast_segment_bytes(SIZE_MAX, 3, 1) > 0);
}

static void algorithm_choice(void)
{
    /* auto: small messages and too few elements stay latency-optimal */
    CHECK(ftrabit_choose_allreduce(FTRABIT_ALLREDUCE_AUTO, 8, 1, 4, 16384)
          == FTRABIT_ALLREDUCE_RECURSIVE_DOUBLING);
    CHECK(ftrabit_choose_allreduce(FTRABIT_ALLREDUCE_AUTO, 1 << 20, 1 << 18, 4, 16384)
          == FTRABIT_ALLREDUCE_REDUCE_SCATTER_ALLGATHER);
    CHECK(ftrabit_choose_allreduce(FTRABIT_ALLREDUCE_AUTO, 1 << 20, 2, 8, 16384)
          == FTRABIT_ALLREDUCE_RECURSIVE_DOUBLING);
    /* auto threshold: 16 KiB within a node, 64 KiB across nodes; a set value wins */
    CHECK(ftrabit_rsag_min_bytes(0, false) == 16384);
    CHECK(ftrabit_rsag_min_bytes(0, true) == 65536);
    CHECK(ftrabit_rsag_min_bytes(4096, true) == 4096);
    CHECK(ftrabit_choose_allreduce(FTRABIT_ALLREDUCE_AUTO, 32768, 4096, 4,
                                   ftrabit_rsag_min_bytes(0, false))
          == FTRABIT_ALLREDUCE_REDUCE_SCATTER_ALLGATHER);
    CHECK(ftrabit_choose_allreduce(FTRABIT_ALLREDUCE_AUTO, 32768, 4096, 4,
                                   ftrabit_rsag_min_bytes(0, true))
          == FTRABIT_ALLREDUCE_RECURSIVE_DOUBLING);
    /* forced reduce-scatter with fewer elements than ranks cannot split: falls back */
    CHECK(ftrabit_choose_allreduce(FTRABIT_ALLREDUCE_REDUCE_SCATTER_ALLGATHER, 16, 2, 8, 0)
          == FTRABIT_ALLREDUCE_RECURSIVE_DOUBLING);
    CHECK(ftrabit_choose_allreduce(FTRABIT_ALLREDUCE_RECURSIVE_DOUBLING, 1 << 24, 1 << 22, 8, 0)
          == FTRABIT_ALLREDUCE_RECURSIVE_DOUBLING);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 8, 8, 131072, false) == FTRABIT_BCAST_BINOMIAL);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 1 << 20, 16, 131072, false) == FTRABIT_BCAST_PIPELINE);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 1 << 20, 2, 131072, false) == FTRABIT_BCAST_BINOMIAL);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_PIPELINE, 8, 2, 131072, false) == FTRABIT_BCAST_PIPELINE);
    /* ranks sharing cores: the chain waits for each rank's turn, the tree does not */
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 1 << 20, 16, 131072, true) == FTRABIT_BCAST_BINOMIAL);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 16 << 20, 4, 131072, true) == FTRABIT_BCAST_BINOMIAL);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_PIPELINE, 1 << 20, 8, 131072, true) == FTRABIT_BCAST_PIPELINE);
    /* 4-7 ranks, 8 KiB up to 1 MiB: the root sends to all (as coll/tuned) */
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 65536, 4, 131072, true) == FTRABIT_BCAST_LINEAR);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 8192, 7, 131072, false) == FTRABIT_BCAST_LINEAR);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 524288, 4, 131072, false) == FTRABIT_BCAST_LINEAR);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 8191, 4, 131072, true) == FTRABIT_BCAST_BINOMIAL);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 1 << 20, 4, 131072, true) == FTRABIT_BCAST_BINOMIAL);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 65536, 3, 131072, true) == FTRABIT_BCAST_BINOMIAL);
    /* 8-15 ranks: k-nomial from 64 B, linear from 32 KiB (as coll/tuned) */
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 63, 8, 131072, true) == FTRABIT_BCAST_BINOMIAL);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 64, 8, 131072, true) == FTRABIT_BCAST_KNOMIAL);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 32767, 15, 131072, false)
          == FTRABIT_BCAST_KNOMIAL);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 65536, 8, 131072, true) == FTRABIT_BCAST_LINEAR);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 16 << 20, 15, 131072, false)
          == FTRABIT_BCAST_LINEAR);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 4096, 16, 131072, false)
          == FTRABIT_BCAST_BINOMIAL);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_AUTO, 1 << 20, 16, 131072, false)
          == FTRABIT_BCAST_PIPELINE);
    CHECK(ftrabit_choose_bcast(FTRABIT_BCAST_LINEAR, 8, 16, 131072, true) == FTRABIT_BCAST_LINEAR);
}

int main(void)
{
    RUN(pow2_floor);
    RUN(fold_is_an_ordered_bijection);
    RUN(rsag_ranges_tile_the_vector);
    RUN(knomial_trees_span);
    RUN(knomial_matches_definition);
    RUN(segments);
    RUN(bcast_segment_size);
    RUN(algorithm_choice);
    UNIT_EXIT();
}
