/*
 * Unit tests of coll/ftrabit's type signatures: composition is exact (any split of a
 * sequence into concatenations and repetitions gives the hash computed element by element),
 * order and element kind matter, length matters, and huge repetitions cost nothing.
 */
#include <stdint.h>
#include <string.h>

#include "ompi/mca/coll/ftrabit/ftrabit_typesig.h"
#include "unit.h"

static uint64_t rng_state = 0x3c6ef372fe94f82bull;

static uint64_t rng(void)
{
    return unit_xorshift64s(&rng_state);
}

static int same(ftrabit_typesig_t a, ftrabit_typesig_t b)
{
    return a.hash == b.hash && a.length == b.length
           && ftrabit_typesig_digest(a) == ftrabit_typesig_digest(b);
}

/* The signature of ids[0..n), one element at a time. */
static ftrabit_typesig_t one_by_one(const uint64_t *ids, int n)
{
    ftrabit_typesig_t s = ftrabit_typesig_empty();
    for (int i = 0; i < n; i++) {
        s = ftrabit_typesig_concat(s, ftrabit_typesig_atom(ids[i]));
    }
    return s;
}

static void any_split_gives_the_same_signature(void)
{
    uint64_t ids[64];
    for (int round = 0; round < 200; round++) {
        int n = 1 + (int) (rng() % 64);
        for (int i = 0; i < n; i++) {
            ids[i] = rng() % 5; /* few kinds: sequences that differ only in order */
        }
        int cut = (int) (rng() % (uint64_t) (n + 1));
        ftrabit_typesig_t whole = one_by_one(ids, n);
        ftrabit_typesig_t split = ftrabit_typesig_concat(one_by_one(ids, cut),
                                                         one_by_one(ids + cut, n - cut));
        CHECK(same(whole, split));
        CHECK((uint64_t) n == whole.length);
    }
}

static void repetition_is_concatenation(void)
{
    uint64_t ids[3] = {7, 3, 7};
    ftrabit_typesig_t block = one_by_one(ids, 3), by_hand = ftrabit_typesig_empty();
    for (uint64_t k = 0; k < 40; k++) {
        CHECK(same(by_hand, ftrabit_typesig_repeat(block, k)));
        by_hand = ftrabit_typesig_concat(by_hand, block);
    }
    /* A vector of a vector is the flat repetition, for counts far past any memory. */
    uint64_t m = UINT64_C(1) << 31, n = (UINT64_C(1) << 29) + 3;
    CHECK(same(ftrabit_typesig_repeat(ftrabit_typesig_repeat(block, m), n),
               ftrabit_typesig_repeat(block, m * n)));
    CHECK(same(ftrabit_typesig_concat(ftrabit_typesig_repeat(block, m),
                                      ftrabit_typesig_repeat(block, n)),
               ftrabit_typesig_repeat(block, m + n)));
    CHECK(same(ftrabit_typesig_empty(), ftrabit_typesig_repeat(ftrabit_typesig_empty(), m)));
}

static void order_kind_and_length_matter(void)
{
    uint64_t int_float[2] = {1, 2}, float_int[2] = {2, 1};
    /* MPI_INT against MPI_FLOAT: same size, other kinds. */
    CHECK(ftrabit_typesig_digest(ftrabit_typesig_atom(1))
          != ftrabit_typesig_digest(ftrabit_typesig_atom(2)));
    /* struct {int, float} against {float, int}. */
    CHECK(ftrabit_typesig_digest(one_by_one(int_float, 2))
          != ftrabit_typesig_digest(one_by_one(float_int, 2)));
    /* One element is not none, two are not one. */
    ftrabit_typesig_t one = ftrabit_typesig_atom(0);
    CHECK(ftrabit_typesig_digest(one) != ftrabit_typesig_digest(ftrabit_typesig_empty()));
    CHECK(ftrabit_typesig_digest(one)
          != ftrabit_typesig_digest(ftrabit_typesig_repeat(one, 2)));
    /* Many kinds, all apart (ids as Fortran handles are: small integers). */
    uint64_t seen[200];
    int clash = 0;
    for (int i = 0; i < 200; i++) {
        seen[i] = ftrabit_typesig_digest(ftrabit_typesig_atom((uint64_t) i));
        for (int j = 0; j < i; j++) {
            clash |= seen[i] == seen[j];
        }
    }
    CHECK(!clash);
}

int main(void)
{
    RUN(any_split_gives_the_same_signature);
    RUN(repetition_is_concatenation);
    RUN(order_kind_and_length_matter);
    UNIT_EXIT();
}
