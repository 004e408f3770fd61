/*
 * ompi-resilience: coll/ftrabit communication schedules.
 *
 * Pure logic, no MPI: which algorithm a collective uses, which virtual rank a process
 * plays when the communicator size is not a power of two, which element ranges move at
 * each step of a reduce-scatter/allgather, and the shape of broadcast trees. Everything
 * here depends only on (size, rank, count, parameters), which is what makes the reduction
 * order, and so the result bits, identical on every rank and in every run.
 */
#ifndef COLL_FTRABIT_SCHEDULE_H
#define COLL_FTRABIT_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* At most 2^31 ranks: 32 halving steps are enough for any communicator. */
#define FTRABIT_MAX_STEPS 32

typedef enum {
    FTRABIT_ALLREDUCE_AUTO = 0,
    FTRABIT_ALLREDUCE_RECURSIVE_DOUBLING = 1,
    FTRABIT_ALLREDUCE_REDUCE_SCATTER_ALLGATHER = 2,
} ftrabit_allreduce_alg_t;

typedef enum {
    FTRABIT_BCAST_AUTO = 0,
    FTRABIT_BCAST_BINOMIAL = 1,
    FTRABIT_BCAST_PIPELINE = 2,
    FTRABIT_BCAST_LINEAR = 3,
    FTRABIT_BCAST_KNOMIAL = 4,
} ftrabit_bcast_alg_t;

/* Under auto, communicators of FTRABIT_BCAST_LINEAR_MIN_RANKS to FTRABIT_BCAST_LINEAR_MAX_RANKS
 * ranks broadcast messages from FTRABIT_BCAST_LINEAR_MIN_BYTES up to (not including)
 * FTRABIT_BCAST_LINEAR_MAX_BYTES by the root sending to every rank: no rank waits for another
 * to forward, which a tree's inner rank does (for its turn on a core where cores are shared).
 * The same range as coll/tuned's fixed decision in Open MPI 5.0 (basic_linear for 4-7 ranks,
 * 8 KiB - 1 MiB); binomial took 1.2-1.6x tuned's time there at 4 ranks on 2 cores. Three
 * ranks: binomial already is the root sending to both. */
#define FTRABIT_BCAST_LINEAR_MIN_RANKS 4
#define FTRABIT_BCAST_LINEAR_MAX_RANKS 7
#define FTRABIT_BCAST_LINEAR_MIN_BYTES 8192
#define FTRABIT_BCAST_LINEAR_MAX_BYTES 1048576

/* Under auto, communicators of FTRABIT_BCAST_MID_MIN_RANKS to FTRABIT_BCAST_MID_MAX_RANKS
 * ranks broadcast messages from FTRABIT_BCAST_KNOMIAL_MIN_BYTES on over a k-nomial tree of
 * radix FTRABIT_BCAST_KNOMIAL_RADIX (two rounds for up to 16 ranks, where the binomial tree
 * takes three or four), and from FTRABIT_BCAST_MID_LINEAR_MIN_BYTES on linearly: as
 * coll/tuned's fixed decision in Open MPI 5.0 does for 8-15 ranks (k-nomial of radix 4 for
 * 64 B - 4 KiB, a binary tree then, basic_linear from 32 KiB). The binomial tree took
 * 1.14-1.48x tuned's time at 8 ranks from 256 B (docs/bench/coll.md). */
#define FTRABIT_BCAST_MID_MIN_RANKS 8
#define FTRABIT_BCAST_MID_MAX_RANKS 15
#define FTRABIT_BCAST_KNOMIAL_MIN_BYTES 64
#define FTRABIT_BCAST_MID_LINEAR_MIN_BYTES 32768
#define FTRABIT_BCAST_KNOMIAL_RADIX 4
/* Children a k-nomial tree node may have: (radix - 1) per base-radix digit of an int. */
#define FTRABIT_MAX_TREE_CHILDREN 64

/*
 * Folding a communicator of `size` ranks onto the largest power of two p2 <= size:
 * the first 2*(size-p2) ranks pair up (2i, 2i+1); the even one hands its data to the
 * odd one and sits out. Virtual ranks stay in rank order, so a non-commutative reduction
 * over virtual ranks is still a reduction in rank order.
 */
typedef struct {
    int p2;        /* participating virtual ranks, a power of two */
    int rem;       /* size - p2: number of folded pairs */
    int vrank;     /* this rank's virtual rank, or -1 if it sits out */
    int fold_peer; /* partner in the fold (the odd or even neighbour), or -1 */
} ftrabit_fold_t;

void ftrabit_fold(int size, int rank, ftrabit_fold_t *fold);
/* Real rank that plays virtual rank `vrank`. */
int ftrabit_fold_real_rank(const ftrabit_fold_t *fold, int vrank);

/* A half-open range of elements [lo, hi). */
typedef struct {
    size_t lo, hi;
} ftrabit_range_t;

/* One step of the recursive-halving reduce-scatter (and, run backwards, of the
 * recursive-doubling allgather that follows it). */
typedef struct {
    int partner_vrank;
    int lower;             /* 1 if this vrank is the lower of the pair (left operand) */
    ftrabit_range_t keep;  /* elements this rank reduces and keeps (received from partner) */
    ftrabit_range_t give;  /* elements this rank sends to the partner */
} ftrabit_rsag_step_t;

/* Fill steps[0..log2(p2)-1] for `vrank` among `p2` (a power of two) over `count`
 * elements; returns the number of steps. The distance doubles at each step, so the
 * ranks a partial result covers are always contiguous: the order of a non-commutative
 * operation is kept. */
int ftrabit_rsag_schedule(int p2, int vrank, size_t count, ftrabit_rsag_step_t *steps);

/* k-nomial tree of radix `radix` (>= 2; 2: the binomial tree) rooted at virtual rank 0 over
 * `size` ranks (vrank = (rank - root) mod size): a vrank's parent clears its lowest nonzero
 * base-radix digit. Parent of a non-root vrank, and the children in the order they are
 * sent to (largest subtree first). */
int ftrabit_knomial_parent(int vrank, int radix);
int ftrabit_knomial_children(int size, int vrank, int radix, int *children, int max_children);

/* Segment size in bytes of the pipelined broadcast of `bytes` bytes on `size` ranks: at
 * least `min_segment`. A pipeline of s-byte segments over a chain of p ranks takes about
 * (bytes/s + p - 2) * (s/bandwidth + overhead), least at s = sqrt(bytes * overhead *
 * bandwidth / (p - 2)); overhead * bandwidth, the bytes one message's fixed cost is worth,
 * is taken as 32 KiB (a few microseconds at several GB/s, shared memory and fast networks
 * alike). Long chains keep small segments; few ranks and long messages get large ones. */
size_t ftrabit_bcast_segment_bytes(size_t bytes, int size, size_t min_segment);

/* Number of segments of at most `per_segment` units (bytes, elements) in `total` units. */
size_t ftrabit_segments(size_t total, size_t per_segment);

/* With allreduce_rsag_min_bytes 0 (auto), the size from which the allreduce reduce-scatters:
 * on ranks within one node, and on ranks that span nodes, where each extra round of the
 * reduce-scatter is a network round trip (across two hosts on 4 ranks recursive doubling
 * took 67 and 87 us at 16 and 32 KiB, the reduce-scatter 119 and 139 us; at 64 KiB the
 * reduce-scatter was the faster: docs/bench/coll-hosts-2026-11-27/rsag-threshold.md). */
#define FTRABIT_RSAG_MIN_WITHIN_NODE ((size_t) 16384)
#define FTRABIT_RSAG_MIN_ACROSS_NODES ((size_t) 65536)

/* The reduce-scatter threshold for allreduce_rsag_min_bytes `configured` (0: auto) on ranks
 * that span nodes or not. */
size_t ftrabit_rsag_min_bytes(size_t configured, bool spans_nodes);

/* Algorithm choice from message size (bytes), communicator size and tunables. A forced
 * algorithm (anything but AUTO) is honoured when it can run. */
ftrabit_allreduce_alg_t ftrabit_choose_allreduce(ftrabit_allreduce_alg_t forced, size_t bytes,
                                                 size_t count, int size, size_t rsag_min_bytes);
/* The pipeline (a chain) only pays off while every rank of the chain runs at once: where
 * a node of the chain is oversubscribed (`cores_shared`: more ranks than cores), each hop
 * waits for its rank's turn on a core and the binomial tree, half as deep in rounds of the
 * whole message, is faster at every size (docs/bench/coll.md). */
ftrabit_bcast_alg_t ftrabit_choose_bcast(ftrabit_bcast_alg_t forced, size_t bytes, int size,
                                         size_t pipeline_min_bytes, bool cores_shared);

/* Largest power of two <= n (n >= 1). */
int ftrabit_pow2_floor(int n);

#endif /* COLL_FTRABIT_SCHEDULE_H */
