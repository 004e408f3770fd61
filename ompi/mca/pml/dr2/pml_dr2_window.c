/*
 * ompi-resilience: pml/dr2 duplicate suppression window (pure logic; see the header).
 */
#include "pml_dr2_window.h"

#include <string.h>

#define SERIAL_HALF 0x80000000u

static inline uint32_t bit_index(const pml_dr2_window_t *win, uint32_t id)
{
    return id & (win->size - 1);
}

static inline int is_marked(const pml_dr2_window_t *win, uint32_t id)
{
    uint32_t bit = bit_index(win, id);

    return (win->marked[bit / 64] >> (bit % 64)) & 1;
}

static inline void set_marked(pml_dr2_window_t *win, uint32_t id)
{
    uint32_t bit = bit_index(win, id);

    win->marked[bit / 64] |= UINT64_C(1) << (bit % 64);
}

/* Clear bits [from, to) of the bitmap, a word at a time. */
static void clear_bits(uint64_t *bits, uint32_t from, uint32_t to)
{
    while (from < to) {
        uint32_t shift = from % 64;
        uint32_t n = 64 - shift < to - from ? 64 - shift : to - from;
        uint64_t mask = n == 64 ? UINT64_MAX : ((UINT64_C(1) << n) - 1) << shift;

        bits[from / 64] &= ~mask;
        from += n;
    }
}

/* Forget the `count` ids after top (count < size): their slots are reused, in a ring. */
static void clear_after_top(pml_dr2_window_t *win, uint32_t count)
{
    uint32_t start = bit_index(win, win->top + 1);

    if (start + count <= win->size) {
        clear_bits(win->marked, start, start + count);
    } else {
        clear_bits(win->marked, start, win->size);
        clear_bits(win->marked, 0, start + count - win->size);
    }
}

int pml_dr2_window_init(pml_dr2_window_t *win, uint32_t size, uint32_t first_id)
{
    if (size == 0 || size > PML_DR2_WINDOW_MAX || (size & (size - 1)) != 0) {
        return -1;
    }
    win->size = size;
    win->top = first_id - 1;
    /* Everything before first_id counts as seen: only words that hold slots matter. */
    memset(win->marked, 0, sizeof(win->marked));
    memset(win->marked, 0xFF, ((size + 63) / 64) * sizeof(uint64_t));
    if (size < 64) {
        win->marked[0] = (UINT64_C(1) << size) - 1;
    }
    return 0;
}

/* How far `id` is ahead of top, or 0 when it is not ahead (serial arithmetic). */
static inline uint32_t distance_ahead(const pml_dr2_window_t *win, uint32_t id)
{
    uint32_t ahead = id - win->top;

    return ahead < SERIAL_HALF ? ahead : 0;
}

pml_dr2_window_verdict_t pml_dr2_window_check(const pml_dr2_window_t *win, uint32_t id)
{
    if (distance_ahead(win, id) > 0) {
        return PML_DR2_WINDOW_NEW;
    }
    if (win->top - id >= win->size) {
        return PML_DR2_WINDOW_TOO_OLD;
    }
    return is_marked(win, id) ? PML_DR2_WINDOW_DUPLICATE : PML_DR2_WINDOW_NEW;
}

pml_dr2_window_verdict_t pml_dr2_window_check_and_mark(pml_dr2_window_t *win, uint32_t id)
{
    uint32_t ahead = distance_ahead(win, id);
    pml_dr2_window_verdict_t verdict;

    if (ahead == 0) {
        verdict = pml_dr2_window_check(win, id);
        if (verdict == PML_DR2_WINDOW_NEW) {
            set_marked(win, id);
        }
        return verdict;
    }
    if (ahead == 1 && win->size > 1) {
        /* the next id, the usual case: its slot is the only one to forget, and it is
         * marked right below anyway */
    } else if (ahead >= win->size) {
        memset(win->marked, 0, sizeof(win->marked)); /* a jump past the whole window */
    } else {
        clear_after_top(win, ahead);
    }
    win->top = id;
    set_marked(win, id);
    return PML_DR2_WINDOW_NEW;
}
