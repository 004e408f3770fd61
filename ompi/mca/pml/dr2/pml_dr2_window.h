/*
 * ompi-resilience: pml/dr2 duplicate suppression window.
 *
 * Pure logic, no MPI. A receiver keeps one window per peer over the 32-bit vfrag ids that
 * peer sends (ids count up and wrap around). It remembers which of the last `size` ids,
 * counted back from the highest id seen (`top`), have been marked, in a bitmap indexed by
 * id mod size, so memory stays bounded however long the job runs (the old PML DR kept
 * range lists that were never pruned and broke at wrap-around).
 *
 * Ids are compared in serial-number arithmetic (RFC 1982): id is ahead of top when
 * (id - top) mod 2^32 is in [1, 2^31), behind otherwise. For an id:
 *   ahead of top         NEW: the window slides forward so that id is its new top; ids
 *                        that slide out were either marked or will be TOO_OLD;
 *   within size of top   NEW the first time it is marked, DUPLICATE afterwards;
 *   further behind       TOO_OLD: it can no longer be told apart, treat it as a duplicate.
 * An id exactly 2^31 away is behind (TOO_OLD), the conservative side.
 *
 * The contract that makes TOO_OLD safe to drop: a sender never sends vfrag id x + size
 * while vfrag x is still unacknowledged (its flow-control window is at most `size` vfrags).
 * Then a TOO_OLD id is always one that was already received and acknowledged, and a late
 * copy of it only needs its ACK repeated.
 *
 * Marking happens when a vfrag is complete: pml_dr2_window_check() classifies an arriving
 * fragment without marking (a vfrag still being received is NEW until it is complete);
 * pml_dr2_window_check_and_mark() does both at once for single-fragment vfrags.
 */
#ifndef PML_DR2_WINDOW_H
#define PML_DR2_WINDOW_H

#include <stdint.h>

/* The default and largest window: 1024 vfrags of up to 64 fragments in flight per peer.
 * 128 bytes of bitmap per peer. */
#define PML_DR2_WINDOW_MAX 1024

typedef enum {
    PML_DR2_WINDOW_NEW = 0,       /* not seen: act on it */
    PML_DR2_WINDOW_DUPLICATE = 1, /* marked before: drop (and repeat its ACK) */
    PML_DR2_WINDOW_TOO_OLD = 2,   /* behind the window: drop as a duplicate */
} pml_dr2_window_verdict_t;

typedef struct {
    uint32_t top;  /* the highest id marked so far, in serial order */
    uint32_t size; /* ids remembered, top included: a power of two <= PML_DR2_WINDOW_MAX */
    /* bit (id mod size) is set iff id, in (top - size, top], has been marked */
    uint64_t marked[PML_DR2_WINDOW_MAX / 64];
} pml_dr2_window_t;

/* Start a window of `size` ids (a power of two, 1 .. PML_DR2_WINDOW_MAX) that expects
 * `first_id` next: the `size` ids before it count as already marked. Returns 0, or -1 for
 * an invalid size. */
int pml_dr2_window_init(pml_dr2_window_t *win, uint32_t size, uint32_t first_id);

/* Classify `id` without changing the window. */
pml_dr2_window_verdict_t pml_dr2_window_check(const pml_dr2_window_t *win, uint32_t id);

/* Classify `id` and, when it is NEW, mark it (sliding the window forward if it is ahead). */
pml_dr2_window_verdict_t pml_dr2_window_check_and_mark(pml_dr2_window_t *win, uint32_t id);

/* The in-order case inline: `id` is the one right after the highest marked (new, for sure),
 * and marking it does what pml_dr2_window_check_and_mark would: it becomes the top, and the
 * slot it takes over forgets the id one window size older. */
static inline int pml_dr2_window_is_next(const pml_dr2_window_t *win, uint32_t id)
{
    return id == win->top + 1 && win->size > 1;
}

static inline void pml_dr2_window_mark_next(pml_dr2_window_t *win)
{
    uint32_t bit = ++win->top & (win->size - 1);

    win->marked[bit / 64] |= UINT64_C(1) << (bit % 64);
}

/* The full id of a vfrag of which only the low `bits` bits are known (a TINY header,
 * 1 < bits < 32): the id with those low bits nearest to the one expected next (top + 1),
 * within 2^(bits-1) before it and 2^(bits-1) - 1 after it. Ids the sender can have in
 * flight are within one window of it either way; an id further away than 2^(bits-1) (a
 * copy outliving that many newer vfrags) would be taken for a nearer one. */
static inline uint32_t pml_dr2_window_expand_id(const pml_dr2_window_t *win, uint32_t low,
                                                unsigned bits)
{
    uint32_t next = win->top + 1;
    uint32_t span = UINT32_C(1) << bits;
    uint32_t ahead = (low - next) & (span - 1);

    return ahead < span / 2 ? next + ahead : next + ahead - span;
}

/* ---- ids a sender must not give out again --------------------------------------------
 * A rendezvous waiting for its go-ahead goes by the id of its RNDV's vfrag on both sides for
 * as long as it waits (the receiver keeps the unmatched message under it, the sender finds
 * it by it when MATCHED comes), which can be longer than the sender takes to give out 2^32
 * newer ids: a new vfrag with that id would then be taken for it. So the sender skips such
 * ids. It looks for them once per block of PML_DR2_ID_BLOCK ids, from the block's first id
 * on, and keeps the nearest ahead in a guard: a message that starts waiting later in the
 * block has an id behind the next one, which cannot come round within the block. The cost
 * per id given out is two comparisons. */
#define PML_DR2_ID_BLOCK 65536u

typedef struct {
    uint32_t held; /* the nearest id ahead, within the block, that is in use */
    int any;       /* held is valid */
} pml_dr2_id_guard_t;

/* Is `next` the first id of a block (the guard is then rebuilt from the ids in use)? */
static inline int pml_dr2_id_guard_due(uint32_t next)
{
    return 0 == (next & (PML_DR2_ID_BLOCK - 1));
}

/* Rebuilding the guard for `next`: start empty, then consider each id in use. */
static inline void pml_dr2_id_guard_clear(pml_dr2_id_guard_t *g)
{
    g->any = 0;
}

static inline void pml_dr2_id_guard_consider(pml_dr2_id_guard_t *g, uint32_t next, uint32_t id)
{
    uint32_t left = PML_DR2_ID_BLOCK - (next & (PML_DR2_ID_BLOCK - 1)); /* next .. block end */
    uint32_t ahead = id - next;

    if (ahead < left && (!g->any || ahead < g->held - next)) {
        g->held = id;
        g->any = 1;
    }
}

/* Must `next` be skipped (and the guard rebuilt for the id after it)? */
static inline int pml_dr2_id_guard_hits(const pml_dr2_id_guard_t *g, uint32_t next)
{
    return g->any && g->held == next;
}

#endif /* PML_DR2_WINDOW_H */
