/*
 * ompi-resilience: coll/ftrabit datatype signatures (pure logic, no MPI).
 *
 * A datatype's type signature (MPI 4.1, 5.1) is the sequence of predefined types it is
 * made of, in order, without the displacements: two types with the same signature read
 * the same packed bytes the same way. A bootstrap call replayed by a replacement process
 * is served packed bytes stored by another process, whose handles for derived types are
 * not the replacement's: the call is matched by signature, never by handle or by size
 * (MPI_FLOAT and MPI_INT have the same size).
 *
 * A signature is summarised by a polynomial hash of its sequence modulo the prime
 * 2^61 - 1, h(a_1..a_n) = sum a_i B^(n-i), which composes: the hash of a concatenation and
 * of k repetitions follow from the parts' hashes and lengths, so a vector of a million
 * elements costs O(log) work and a struct of n blocks O(n). Lengths are kept modulo
 * 2^61 - 2 (B's order divides it), so composition is exact whatever the lengths.
 * The MPI side (ftrabit_datatype.c) walks a type's constructors and composes these.
 */
#ifndef FTRABIT_TYPESIG_H
#define FTRABIT_TYPESIG_H

#include <stdint.h>

typedef struct ftrabit_typesig {
    uint64_t hash;   /* polynomial hash of the sequence, in [0, 2^61 - 1) */
    uint64_t length; /* number of predefined elements, modulo 2^61 - 2 */
} ftrabit_typesig_t;

/* The empty sequence (a type of size 0). */
ftrabit_typesig_t ftrabit_typesig_empty(void);
/* One predefined type, named by an id that is the same in every process of the job. */
ftrabit_typesig_t ftrabit_typesig_atom(uint64_t id);
/* a followed by b. */
ftrabit_typesig_t ftrabit_typesig_concat(ftrabit_typesig_t a, ftrabit_typesig_t b);
/* a, k times. */
ftrabit_typesig_t ftrabit_typesig_repeat(ftrabit_typesig_t a, uint64_t k);
/* One 64-bit word for the whole signature (hash and length). */
uint64_t ftrabit_typesig_digest(ftrabit_typesig_t a);

#endif
