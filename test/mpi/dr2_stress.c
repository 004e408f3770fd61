/*
 * Data-integrity stress for pml/dr2: every rank sends every other rank (and itself) a
 * random number of messages of random sizes (0 bytes to 2 MiB: eager and rendezvous) with
 * random datatypes (contiguous bytes, a strided vector of ints on either side) and random
 * send modes (standard, synchronous), received with exact or wildcard sources; every byte
 * is checked. Meant to run under injected faults:
 *
 *   mpirun --mca pml dr2 --mca pml_dr2_inject_drop 0.05 --mca pml_dr2_inject_corrupt 0.01 \
 *          --mca pml_dr2_inject_dup 0.01 dr2_stress [iterations] [expect-faults]
 *
 * With "expect-faults" the test also requires that faults were injected and repaired (the
 * pml_dr2_* MPI_T counters moved), so that a run that silently injected nothing cannot
 * pass as a fault test.
 */
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

#define MAX_MSGS 6

typedef struct {
    size_t bytes; /* payload bytes */
    int vector;   /* 0: MPI_BYTE; 1: sender strided; 2: receiver strided */
    int sync;
    int any_source;
} plan_t;

static uint64_t seed_of(int iter, int src, int dst, int k)
{
    return mt_hash64(((uint64_t) iter << 40) ^ ((uint64_t) src << 24) ^ ((uint64_t) dst << 8) ^ k);
}

static int nmsgs(int iter, int src, int dst)
{
    return (int) (seed_of(iter, src, dst, 255) % (MAX_MSGS + 1));
}

static plan_t plan_of(int iter, int src, int dst, int k)
{
    uint64_t h = seed_of(iter, src, dst, k);
    unsigned r = (unsigned) (h % 100);
    plan_t p;

    if (r < 55) {
        p.bytes = (h >> 8) % 2001;
    } else if (r < 88) {
        p.bytes = 2001 + (h >> 8) % 100000;
    } else {
        p.bytes = 100000 + (h >> 8) % (2 << 20);
    }
    p.vector = (int) ((h >> 40) % 5);
    p.vector = p.vector >= 3 ? 0 : p.vector; /* 60% contiguous */
    if (p.vector) {
        p.bytes &= ~(size_t) 3; /* whole ints */
    }
    p.sync = (h >> 50) % 7 == 0;
    p.any_source = (h >> 55) % 3 == 0;
    return p;
}

static unsigned char pat(int iter, int src, int k, size_t i)
{
    return (unsigned char) mt_hash64(((uint64_t) iter << 44) ^ ((uint64_t) src << 36) ^ ((uint64_t) k << 30) ^ i);
}

static int tag_of(int src, int k)
{
    return src * MAX_MSGS + k;
}

/* Vector of n ints with stride 2: the data goes in the even ints of a 2n-int buffer. */
static MPI_Datatype vector_type(size_t ints)
{
    MPI_Datatype t;
    MPI_Type_vector((int) ints, 1, 2, MPI_INT, &t);
    MPI_Type_commit(&t);
    return t;
}

typedef struct {
    void *buf;
    MPI_Datatype type; /* MPI_DATATYPE_NULL: bytes */
    plan_t p;
    int peer, k;
} slot_t;

int main(int argc, char **argv)
{
    int iters, expect_faults;
    long messages = 0, bytes = 0;

    mt_init(&argc, &argv, "dr2_stress");
    iters = argc > 1 ? atoi(argv[1]) : 40;
    expect_faults = argc > 2 && 0 == strcmp(argv[2], "expect-faults");
    mt_dr2_counters_start();

    for (int iter = 0; iter < iters; iter++) {
        int nsend = 0, nrecv = 0;
        slot_t *sends, *recvs;
        MPI_Request *reqs;
        MPI_Status *stats;

        for (int peer = 0; peer < mt_size; peer++) {
            nsend += nmsgs(iter, mt_rank, peer);
            nrecv += nmsgs(iter, peer, mt_rank);
        }
        sends = calloc(nsend + 1, sizeof(slot_t));
        recvs = calloc(nrecv + 1, sizeof(slot_t));
        reqs = calloc(nsend + nrecv + 1, sizeof(MPI_Request));
        stats = calloc(nsend + nrecv + 1, sizeof(MPI_Status));

        /* receives first for half the iterations, sends first for the other half: both
         * the expected and the unexpected paths */
        for (int phase = 0; phase < 2; phase++) {
            int do_recv = (phase == 0) == (iter % 2 == 0);
            int n = 0;
            for (int peer = 0; peer < mt_size; peer++) {
                int m = do_recv ? nmsgs(iter, peer, mt_rank) : nmsgs(iter, mt_rank, peer);
                for (int k = 0; k < m; k++) {
                    plan_t p = do_recv ? plan_of(iter, peer, mt_rank, k) : plan_of(iter, mt_rank, peer, k);
                    slot_t *s = do_recv ? &recvs[n] : &sends[n];
                    int strided = (do_recv && 2 == p.vector) || (!do_recv && 1 == p.vector);
                    size_t ints = p.bytes / 4;
                    s->p = p;
                    s->peer = peer;
                    s->k = k;
                    s->type = MPI_DATATYPE_NULL;
                    s->buf = calloc(1, strided ? 8 * ints + 1 : p.bytes + 1);
                    if (!do_recv) {
                        unsigned char *b = s->buf;
                        for (size_t i = 0; i < p.bytes; i++) {
                            size_t at = strided ? (i / 4) * 8 + i % 4 : i;
                            b[at] = pat(iter, mt_rank, k, i);
                        }
                    }
                    if (p.vector) {
                        s->type = strided ? vector_type(ints) : MPI_DATATYPE_NULL;
                    }
                    if (do_recv) {
                        int src = p.any_source ? MPI_ANY_SOURCE : peer;
                        if (MPI_DATATYPE_NULL != s->type) {
                            MPI_Irecv(s->buf, 1, s->type, src, tag_of(peer, k), MPI_COMM_WORLD, &reqs[nsend + n]);
                        } else if (p.vector) {
                            MPI_Irecv(s->buf, (int) ints, MPI_INT, src, tag_of(peer, k), MPI_COMM_WORLD, &reqs[nsend + n]);
                        } else {
                            MPI_Irecv(s->buf, (int) p.bytes, MPI_BYTE, src, tag_of(peer, k), MPI_COMM_WORLD, &reqs[nsend + n]);
                        }
                    } else {
                        int (*isend)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *) =
                            p.sync ? MPI_Issend : MPI_Isend;
                        if (MPI_DATATYPE_NULL != s->type) {
                            isend(s->buf, 1, s->type, peer, tag_of(mt_rank, k), MPI_COMM_WORLD, &reqs[n]);
                        } else if (p.vector) {
                            isend(s->buf, (int) ints, MPI_INT, peer, tag_of(mt_rank, k), MPI_COMM_WORLD, &reqs[n]);
                        } else {
                            isend(s->buf, (int) p.bytes, MPI_BYTE, peer, tag_of(mt_rank, k), MPI_COMM_WORLD, &reqs[n]);
                        }
                        messages++;
                        bytes += (long) p.bytes;
                    }
                    n++;
                }
            }
        }
        MPI_Waitall(nsend + nrecv, reqs, stats);
        for (int n = 0; n < nrecv; n++) {
            slot_t *s = &recvs[n];
            const unsigned char *b = s->buf;
            int strided = 2 == s->p.vector;
            size_t bad = 0;
            for (size_t i = 0; i < s->p.bytes; i++) {
                size_t at = strided ? (i / 4) * 8 + i % 4 : i;
                bad += b[at] != pat(iter, s->peer, s->k, i);
                if (strided && i % 4 == 3) {
                    bad += 0 != b[at + 1] + b[at + 2] + b[at + 3] + b[at + 4]; /* gaps untouched */
                }
            }
            MT_CHECK(0 == bad, "iteration %d: message %d from %d (%zu bytes, vector %d): %zu bytes wrong",
                     iter, s->k, s->peer, s->p.bytes, s->p.vector, bad);
            MT_CHECK(stats[nsend + n].MPI_SOURCE == s->peer, "iteration %d: source %d, expected %d",
                     iter, stats[nsend + n].MPI_SOURCE, s->peer);
            if (MPI_DATATYPE_NULL != s->type) {
                MPI_Type_free(&s->type);
            }
            free(s->buf);
        }
        for (int n = 0; n < nsend; n++) {
            if (MPI_DATATYPE_NULL != sends[n].type) {
                MPI_Type_free(&sends[n].type);
            }
            free(sends[n].buf);
        }
        free(sends);
        free(recvs);
        free(reqs);
        free(stats);
    }

    {
        long injected = mt_dr2_injected();
        long repaired = mt_dr2_resent();
        long all_injected = 0, all_repaired = 0;
        MPI_Reduce(&injected, &all_injected, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&repaired, &all_repaired, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (0 == mt_rank) {
            printf("mpitest dr2_stress: %d iterations, %ld messages / %ld bytes sent by rank 0; "
                   "faults injected %ld, fragments resent %ld (all ranks)\n",
                   iters, messages, bytes, all_injected, all_repaired);
            if (expect_faults) {
                MT_CHECK(all_injected > 0 && all_repaired > 0,
                         "expected injected faults and retransmissions, got %ld and %ld",
                         all_injected, all_repaired);
            }
        }
    }
    mt_dr2_counters_stop();
    return mt_finish();
}
