/*
 * ompi-resilience: libftrabit, the type signature of an MPI datatype (ftrabit_typesig.h).
 *
 * The constructors of a derived type are walked with MPI_Type_get_envelope and
 * MPI_Type_get_contents. Predefined types are atoms named by their Fortran handle, which
 * Open MPI fixes at build time, so it is the same in every process of the job (a derived
 * type's handle is not: a replacement process creates its types in another order). Every
 * constructor but struct repeats one old type's signature as many times as the new type
 * holds elements of it (its size over the old type's size), which covers contiguous,
 * vector, indexed, subarray, darray, resized and dup alike.
 */
#include <stdlib.h>

#include <mpi.h>

#include "ftrabit_internal.h"
#include "ftrabit_typesig.h"

/* Deeper nesting than any program builds: a bound on the recursion, not a real limit. */
#define FTRABIT_TYPESIG_MAX_DEPTH 64

static int ftrabit_signature_of(MPI_Datatype type, int depth, ftrabit_typesig_t *out);

/* Datatypes returned by MPI_Type_get_contents are new handles unless predefined. */
static void ftrabit_free_contents_types(MPI_Datatype *types, int n)
{
    for (int i = 0; i < n; i++) {
        int ni, na, nd, combiner;
        MPI_Type_get_envelope(types[i], &ni, &na, &nd, &combiner);
        if (MPI_COMBINER_NAMED != combiner) {
            MPI_Type_free(&types[i]);
        }
    }
}

/* n copies of `old`'s signature, n = size(type) / size(old). */
static int ftrabit_signature_repeated(MPI_Datatype type, MPI_Datatype old, int depth,
                                      ftrabit_typesig_t *out)
{
    MPI_Count size, old_size;
    ftrabit_typesig_t inner;
    int err = ftrabit_signature_of(old, depth + 1, &inner);

    if (MPI_SUCCESS == err) {
        err = MPI_Type_size_x(type, &size);
    }
    if (MPI_SUCCESS == err) {
        err = MPI_Type_size_x(old, &old_size);
    }
    if (MPI_SUCCESS != err) {
        return err;
    }
    if (size < 0 || old_size < 0) { /* MPI_UNDEFINED: beyond MPI_Count */
        return MPI_ERR_TYPE;
    }
    *out = old_size > 0 ? ftrabit_typesig_repeat(inner, (uint64_t) (size / old_size))
                        : ftrabit_typesig_empty();
    return MPI_SUCCESS;
}

/* A struct: its blocks in order, block i being blocklens[i] copies of types[i]. */
static int ftrabit_signature_struct(const int *ints, MPI_Datatype *types, int depth,
                                    ftrabit_typesig_t *out)
{
    int count = ints[0];
    *out = ftrabit_typesig_empty();
    for (int i = 0; i < count; i++) {
        ftrabit_typesig_t block;
        int err = ftrabit_signature_of(types[i], depth + 1, &block);
        if (MPI_SUCCESS != err) {
            return err;
        }
        *out = ftrabit_typesig_concat(*out,
                                      ftrabit_typesig_repeat(block, (uint64_t) ints[1 + i]));
    }
    return MPI_SUCCESS;
}

/* Fortran's parameterised types (MPI_Type_create_f90_*): named by their parameters. */
static ftrabit_typesig_t ftrabit_signature_f90(int combiner, const int *ints, int ni)
{
    uint64_t id = (uint64_t) (uint32_t) combiner << 40;
    for (int i = 0; i < ni; i++) {
        id = id * UINT64_C(1000003) + (uint64_t) (uint32_t) ints[i];
    }
    return ftrabit_typesig_atom(id | UINT64_C(1) << 63); /* apart from Fortran handles */
}

static int ftrabit_signature_of(MPI_Datatype type, int depth, ftrabit_typesig_t *out)
{
    int ni, na, nd, combiner, err;

    if (depth > FTRABIT_TYPESIG_MAX_DEPTH) {
        return MPI_ERR_TYPE;
    }
    err = MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
    if (MPI_SUCCESS != err) {
        return err;
    }
    if (MPI_COMBINER_NAMED == combiner) {
        *out = ftrabit_typesig_atom((uint64_t) (uint32_t) MPI_Type_c2f(type));
        return MPI_SUCCESS;
    }
    int *ints = malloc(sizeof(int) * (size_t) (ni > 0 ? ni : 1));
    MPI_Aint *aints = malloc(sizeof(MPI_Aint) * (size_t) (na > 0 ? na : 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t) (nd > 0 ? nd : 1));
    if (NULL == ints || NULL == aints || NULL == types) {
        free(ints);
        free(aints);
        free(types);
        return MPI_ERR_NO_MEM;
    }
    err = MPI_Type_get_contents(type, ni, na, nd, ints, aints, types);
    if (MPI_SUCCESS == err) {
        if (MPI_COMBINER_STRUCT == combiner) {
            err = ni >= 1 && nd == ints[0] ? ftrabit_signature_struct(ints, types, depth, out)
                                           : MPI_ERR_TYPE;
        } else if (0 == nd) {
            *out = ftrabit_signature_f90(combiner, ints, ni);
        } else if (1 == nd) {
            err = ftrabit_signature_repeated(type, types[0], depth, out);
        } else {
            err = MPI_ERR_TYPE; /* a constructor MPI does not have */
        }
        ftrabit_free_contents_types(types, nd);
    }
    free(ints);
    free(aints);
    free(types);
    return err;
}

int ftrabit_type_signature(MPI_Datatype type, uint64_t *digest)
{
    ftrabit_typesig_t sig;
    int err = ftrabit_signature_of(type, 0, &sig);
    if (MPI_SUCCESS == err) {
        *digest = ftrabit_typesig_digest(sig);
    }
    return err;
}
