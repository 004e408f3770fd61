/*
 * ompi-resilience: coll/ftrabit datatype signatures (pure logic; see the header).
 */
#include "ftrabit_typesig.h"

#define FTRABIT_TYPESIG_P ((UINT64_C(1) << 61) - 1)
/* Exponents of B live modulo P - 1 (Fermat). */
#define FTRABIT_TYPESIG_ORDER (FTRABIT_TYPESIG_P - 1)
/* Any base in [2, P - 2] works; a fixed odd 61-bit constant. */
#define FTRABIT_TYPESIG_BASE UINT64_C(0x1d8e4e27c47d124f)

static uint64_t ftrabit_typesig_mulmod(uint64_t a, uint64_t b)
{
    unsigned __int128 x = (unsigned __int128) a * b;
    /* x mod (2^61 - 1): fold the high bits onto the low ones, twice at most. */
    uint64_t r = (uint64_t) (x & FTRABIT_TYPESIG_P) + (uint64_t) (x >> 61);
    r = (r & FTRABIT_TYPESIG_P) + (r >> 61);
    return r >= FTRABIT_TYPESIG_P ? r - FTRABIT_TYPESIG_P : r;
}

static uint64_t ftrabit_typesig_addmod(uint64_t a, uint64_t b)
{
    uint64_t r = a + b; /* both < 2^61: no overflow */
    return r >= FTRABIT_TYPESIG_P ? r - FTRABIT_TYPESIG_P : r;
}

/* B^e mod P. */
static uint64_t ftrabit_typesig_power(uint64_t e)
{
    uint64_t result = 1, base = FTRABIT_TYPESIG_BASE % FTRABIT_TYPESIG_P;
    for (; e; e >>= 1) {
        if (e & 1) {
            result = ftrabit_typesig_mulmod(result, base);
        }
        base = ftrabit_typesig_mulmod(base, base);
    }
    return result;
}

/* splitmix64's finaliser: spreads ids that differ by one over the whole word. */
static uint64_t ftrabit_typesig_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

ftrabit_typesig_t ftrabit_typesig_empty(void)
{
    return (ftrabit_typesig_t){.hash = 0, .length = 0};
}

ftrabit_typesig_t ftrabit_typesig_atom(uint64_t id)
{
    /* Never 0, so that an element is never the same as no element. */
    uint64_t v = ftrabit_typesig_mix(id) % (FTRABIT_TYPESIG_P - 1) + 1;
    return (ftrabit_typesig_t){.hash = v, .length = 1};
}

ftrabit_typesig_t ftrabit_typesig_concat(ftrabit_typesig_t a, ftrabit_typesig_t b)
{
    uint64_t shifted = ftrabit_typesig_mulmod(a.hash, ftrabit_typesig_power(b.length));
    uint64_t length = a.length + b.length; /* both < 2^61 */
    return (ftrabit_typesig_t){.hash = ftrabit_typesig_addmod(shifted, b.hash),
                               .length = length % FTRABIT_TYPESIG_ORDER};
}

ftrabit_typesig_t ftrabit_typesig_repeat(ftrabit_typesig_t a, uint64_t k)
{
    /* Binary method on the number of copies: the result is a^k whatever k's bits. */
    ftrabit_typesig_t result = ftrabit_typesig_empty(), square = a;
    for (; k; k >>= 1) {
        if (k & 1) {
            result = ftrabit_typesig_concat(result, square);
        }
        square = ftrabit_typesig_concat(square, square);
    }
    return result;
}

uint64_t ftrabit_typesig_digest(ftrabit_typesig_t a)
{
    return a.hash ^ ftrabit_typesig_mix(a.length + UINT64_C(0x9e3779b97f4a7c15));
}
