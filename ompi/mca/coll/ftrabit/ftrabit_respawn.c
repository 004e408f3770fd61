/*
 * ompi-resilience: libftrabit recovery by respawn: the survivors find the dead original
 * ranks, start one replacement for each (spread over the survivors' hosts), send each its
 * rank and merge with them into a communicator in the original rank order. Every step ends
 * in an agreement (ftrabit_step_agreed), so that a failure in the middle of it has every
 * survivor start the rebuild again (ftrabit_rebuild.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <mpi-ext.h>

#include "ftrabit_rebuild.h"
#include "ftrabit_spare_plan.h"

/* The original ranks alive in `shrunk`, sorted; returns the dead ones of 0..orig_size-1. */
static int ftrabit_dead_ranks(const ftrabit_state_t *st, MPI_Comm shrunk, int **dead, int *ndead)
{
    int size, err;
    MPI_Comm_size(shrunk, &size);
    int *alive = malloc(sizeof(int) * (size_t) size);
    char *is_alive = calloc((size_t) st->orig_size, 1);
    *dead = malloc(sizeof(int) * (size_t) st->orig_size);
    if (!alive || !is_alive || !*dead) {
        free(alive);
        free(is_alive);
        free(*dead);
        *dead = NULL;
        return MPI_ERR_NO_MEM;
    }
    err = MPI_Allgather(&st->orig_rank, 1, MPI_INT, alive, 1, MPI_INT, shrunk);
    if (MPI_SUCCESS == err) {
        for (int i = 0; i < size; i++) {
            if (alive[i] >= 0 && alive[i] < st->orig_size) {
                is_alive[alive[i]] = 1;
            }
        }
        *ndead = 0;
        for (int r = 0; r < st->orig_size; r++) {
            if (!is_alive[r]) {
                (*dead)[(*ndead)++] = r;
            }
        }
    }
    free(alive);
    free(is_alive);
    return err;
}

/* The root's arguments to MPI_Comm_spawn_multiple (elsewhere all NULL: only the root's
 * count): one command per replacement, each with the host chosen for it. */
typedef struct {
    char **commands;
    char ***argvs;
    int *maxprocs;
    MPI_Info *infos;
} ftrabit_spawn_args_t;

static void ftrabit_spawn_args_free(ftrabit_spawn_args_t *args, int ndead)
{
    for (int i = 0; NULL != args->infos && i < ndead; i++) {
        if (MPI_INFO_NULL != args->infos[i]) {
            MPI_Info_free(&args->infos[i]);
        }
    }
    free(args->commands);
    free(args->argvs);
    free(args->maxprocs);
    free(args->infos);
    memset(args, 0, sizeof(*args));
}

/* Root: the replacements spread over the survivors' hosts (names: n host names of
 * MPI_MAX_PROCESSOR_NAME bytes, one per survivor) by ftrabit_respawn_place. A lost host is
 * no survivor's, so none goes there. */
static int ftrabit_spawn_args_fill(const char *names, int n, int ndead, ftrabit_spawn_args_t *args)
{
    static char *no_args[] = {NULL};
    int nhosts = 0, *load = calloc((size_t) n, sizeof(int)), *first = calloc((size_t) n, sizeof(int));
    int *host_of = calloc((size_t) ndead, sizeof(int));
    int err = MPI_ERR_NO_MEM;

    args->commands = calloc((size_t) ndead, sizeof(char *));
    args->argvs = calloc((size_t) ndead, sizeof(char **));
    args->maxprocs = calloc((size_t) ndead, sizeof(int));
    args->infos = calloc((size_t) ndead, sizeof(MPI_Info));
    if (NULL != load && NULL != first && NULL != host_of && NULL != args->commands &&
        NULL != args->argvs && NULL != args->maxprocs && NULL != args->infos) {
        for (int i = 0; i < n; i++) {
            const char *name = names + (size_t) i * MPI_MAX_PROCESSOR_NAME;
            int h = 0;
            while (h < nhosts && strcmp(names + (size_t) first[h] * MPI_MAX_PROCESSOR_NAME, name)) {
                h++;
            }
            if (h == nhosts) {
                first[nhosts++] = i;
            }
            load[h]++;
        }
        err = FTRABIT_SPARE_PLAN_OK == ftrabit_respawn_place(load, nhosts, ndead, host_of)
                  ? MPI_SUCCESS : MPI_ERR_INTERN;
    }
    for (int i = 0; MPI_SUCCESS == err && i < ndead; i++) {
        const char *host = names + (size_t) first[host_of[i]] * MPI_MAX_PROCESSOR_NAME;
        args->commands[i] = ftrabit_program;
        args->argvs[i] = NULL != ftrabit_program_argv ? ftrabit_program_argv : no_args;
        args->maxprocs[i] = 1;
        MPI_Info_create(&args->infos[i]);
        /* Replacements go where the dead ones were allowed to be: a full node must not
         * stop them. "map_by" applies to the whole spawned job and is given once: Open MPI
         * 5.0.7 (dpm.c) takes a second ":OVERSUBSCRIBE" for a conflicting directive. */
        if (0 == i) {
            MPI_Info_set(args->infos[i], "map_by", ":OVERSUBSCRIBE");
        }
        MPI_Info_set(args->infos[i], "host", host);
        ftrabit_log(1, "replacement %d of %d to be started on host %s", i + 1, ndead, host);
    }
    if (MPI_SUCCESS != err) {
        fprintf(stderr, "ftrabit: respawn: cannot place %d replacement(s) on %d survivors' "
                        "hosts (%s); recovery gives up\n", ndead, n,
                MPI_ERR_NO_MEM == err ? "out of memory" : "inconsistent host list");
    }
    free(load);
    free(first);
    free(host_of);
    return err;
}

/* Every survivor: its host's name to the root, which prepares the spawn's arguments. */
static int ftrabit_spawn_args_prepare(MPI_Comm shrunk, int ndead, ftrabit_spawn_args_t *args)
{
    char name[MPI_MAX_PROCESSOR_NAME] = "", *names = NULL;
    int n, rank, len, err = MPI_SUCCESS;

    memset(args, 0, sizeof(*args));
    MPI_Comm_size(shrunk, &n);
    MPI_Comm_rank(shrunk, &rank);
    if (0 == rank && NULL == (names = calloc((size_t) n, MPI_MAX_PROCESSOR_NAME))) {
        fprintf(stderr, "ftrabit: respawn: out of memory for %d host names; recovery gives "
                        "up\n", n);
        err = MPI_ERR_NO_MEM; /* still in the gather: the others wait for the root */
    }
    MPI_Get_processor_name(name, &len);
    int gathered = MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names,
                              MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, shrunk);
    if (MPI_SUCCESS == err) {
        err = gathered;
    }
    if (0 == rank && MPI_SUCCESS == err) {
        err = ftrabit_spawn_args_fill(names, n, ndead, args);
    }
    if (MPI_SUCCESS != err) {
        ftrabit_spawn_args_free(args, ndead);
    }
    free(names);
    return err;
}

/* Start the replacements, as one step of `shrunk`. On failure the replacements that were
 * started are abandoned: revoking their communicator ends their wait for the join record
 * (ftrabit_join), which is sent only once the spawn held everywhere. */
static int ftrabit_spawn_replacements(const ftrabit_state_t *st, MPI_Comm shrunk, int ndead,
                                      const ftrabit_spawn_args_t *args, MPI_Comm *inter)
{
    *inter = MPI_COMM_NULL;
    ftrabit_recovery_doing("starting replacement processes (MPI_Comm_spawn)");
    int err = MPI_Comm_spawn_multiple(ndead, args->commands, args->argvs, args->maxprocs,
                                      args->infos, 0, shrunk, inter, MPI_ERRCODES_IGNORE);
    if (MPI_SUCCESS == err) {
        MPI_Comm_set_errhandler(*inter, MPI_ERRORS_RETURN);
    }
    ftrabit_maybe_die_in_recovery(st, FTRABIT_TEST_STEP_MERGE);
    err = ftrabit_step_agreed(shrunk, err, "spawn");
    if (MPI_SUCCESS != err && MPI_COMM_NULL != *inter) {
        MPIX_Comm_revoke(*inter);
        MPI_Comm_free(inter);
    }
    return err;
}

/* Merge with the replacements and take the original rank order, as one step of the
 * intercommunicator (survivors and replacements agree together), once every replacement
 * answered its join record (ftrabit_introduce_replacements). */
int ftrabit_merge_with_replacements(MPI_Comm inter, int key, int high, MPI_Comm *rebuilt)
{
    MPI_Comm merged = MPI_COMM_NULL;
    int err;

    *rebuilt = MPI_COMM_NULL;
    ftrabit_recovery_doing("merging with the replacement processes (MPI_Intercomm_merge)");
    err = MPI_Intercomm_merge(inter, high, &merged);
    if (MPI_SUCCESS == err) {
        MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
        err = MPI_Comm_split(merged, 0, key, rebuilt);
    }
    if (MPI_COMM_NULL != merged) {
        MPI_Comm_free(&merged);
    }
    err = ftrabit_step_agreed(inter, err, "merge");
    if (MPI_SUCCESS != err && MPI_COMM_NULL != *rebuilt) {
        MPI_Comm_free(rebuilt);
    }
    return err;
}

/* Wait for the join records sent (req[0..n-1]) and the replacements' answers
 * (req[n..2n-1]), at most coll_ftrabit_join_timeout seconds (0: no limit but the watchdog).
 * Polled, not waited for: a first send to a replacement that died right after MPI_Init
 * could stay pending for ever when its death is never reported here. At the deadline the
 * answers still pending are cancelled and the sends let go (MPI_Request_free: ob1 cannot
 * cancel a send; *records_in_use then says the records must stay allocated); the step
 * fails as for a process failure. With `all_posted` 0 nothing is waited for. */
static int ftrabit_wait_answers(MPI_Request *req, int n, int all_posted, int *records_in_use)
{
    double deadline = MPI_Wtime() + ftrabit_settings.join_timeout;
    int done = !all_posted, err = MPI_SUCCESS;

    *records_in_use = 0;
    while (!done) {
        err = MPI_Testall(2 * n, req, &done, MPI_STATUSES_IGNORE);
        if (MPI_SUCCESS != err) {
            break;
        }
        if (!done && ftrabit_settings.join_timeout > 0 && MPI_Wtime() > deadline) {
            /* on stderr, not in the verbose log: if the application is slow to reach
             * FTR_Init, every replacement will be abandoned in turn */
            fprintf(stderr, "ftrabit: a replacement did not answer within "
                            "coll_ftrabit_join_timeout (%d s): taken as failed, starting another "
                            "(a replacement must reach FTR_Init within that time)\n",
                    ftrabit_settings.join_timeout);
            fflush(stderr);
            err = MPI_ERR_PROC_FAILED;
            break;
        }
    }
    for (int i = 0; i < 2 * n; i++) {
        if (MPI_REQUEST_NULL == req[i]) {
            continue;
        }
        if (i < n) {
            MPI_Request_free(&req[i]);
            *records_in_use = 1;
        } else {
            MPI_Cancel(&req[i]);
            if (MPI_SUCCESS != MPI_Wait(&req[i], MPI_STATUS_IGNORE)
                && MPI_REQUEST_NULL != req[i]) {
                MPI_Request_free(&req[i]); /* MPI_Wait leaves it allocated after an error */
            }
        }
    }
    return err;
}

/* The survivors' rank 0 sends each replacement its join record and waits for the answers
 * (ftrabit_wait_answers). */
static int ftrabit_exchange_join_records(const ftrabit_state_t *st, MPI_Comm inter,
                                         const int *dead, int ndead)
{
    ftrabit_join_t *join = malloc((size_t) ndead * sizeof(*join));
    MPI_Request *req = malloc(2 * (size_t) ndead * sizeof(*req));
    int err = NULL == join || NULL == req ? MPI_ERR_NO_MEM : MPI_SUCCESS, in_use = 0;

    for (int i = 0; MPI_SUCCESS == err && i < 2 * ndead; i++) {
        req[i] = MPI_REQUEST_NULL;
    }
    for (int i = 0; MPI_SUCCESS == err && i < ndead; i++) {
        join[i] = (ftrabit_join_t){.orig_rank = dead[i], .orig_size = st->orig_size};
        err = MPI_Isend(&join[i], sizeof(join[i]), MPI_BYTE, i, FTRABIT_TAG_JOIN, inter,
                        &req[i]);
        if (MPI_SUCCESS == err) {
            err = MPI_Irecv(NULL, 0, MPI_BYTE, i, FTRABIT_TAG_JOIN, inter, &req[ndead + i]);
        }
    }
    if (NULL != join && NULL != req) {
        int waited = ftrabit_wait_answers(req, ndead, MPI_SUCCESS == err, &in_use);
        err = MPI_SUCCESS != err ? err : waited;
    }
    if (!in_use) {
        free(join); /* otherwise left to a send that may never complete */
    }
    free(req);
    return err;
}

/* Before anybody enters MPI_Intercomm_merge, which Open MPI 5.0.7 never leaves with a
 * dead member, the survivors learn that their replacements are alive: the survivors'
 * rank 0 sends each replacement its join record and waits for its answer, at most
 * coll_ftrabit_join_timeout; the survivors agree on the outcome, and only then does rank 0
 * let the replacements go on to the merge. A replacement that died before it answered, or
 * stays silent, fails the step on every survivor and the rebuild starts another; the
 * replacements of a failed step are released by the revoke of their intercommunicator,
 * which ends their wait. Left to the watchdog: a replacement that dies after its answer
 * and before the merge completes. */
static int ftrabit_introduce_replacements(const ftrabit_state_t *st, MPI_Comm shrunk,
                                          MPI_Comm inter, const int *dead, int ndead)
{
    int rank, err = MPI_SUCCESS;

    MPI_Comm_rank(shrunk, &rank);
    ftrabit_recovery_doing("waiting for the replacement processes to answer from FTR_Init");
    if (0 == rank) {
        err = ftrabit_exchange_join_records(st, inter, dead, ndead);
    }
    if (MPI_SUCCESS != err && !ftrabit_is_process_failure(err) && MPI_ERR_NO_MEM != err) {
        /* A replacement that died before this process learnt its address is unreachable
         * (MPI_ERR_INTERN from the PML) until its failure is reported: it failed. */
        ftrabit_log(1, "a replacement did not answer its join record (error %d): taken as "
                       "failed", err);
        err = MPI_ERR_PROC_FAILED;
    }
    err = ftrabit_step_agreed(shrunk, err, "join");
    for (int i = 0; 0 == rank && MPI_SUCCESS == err && i < ndead; i++) {
        err = MPI_Send(NULL, 0, MPI_BYTE, i, FTRABIT_TAG_JOIN, inter);
    }
    return err;
}

/* Survivors: start a replacement for each dead original rank and build the communicator
 * in which everybody holds its original rank again. */
int ftrabit_respawn(ftrabit_state_t *st, MPI_Comm shrunk, MPI_Comm *rebuilt)
{
    int *dead = NULL, ndead = 0, err;
    MPI_Comm inter;
    ftrabit_spawn_args_t args = {0};

    *rebuilt = MPI_COMM_NULL;
    err = ftrabit_dead_ranks(st, shrunk, &dead, &ndead);
    if (MPI_SUCCESS == err && ndead > 0) {
        err = ftrabit_spawn_args_prepare(shrunk, ndead, &args);
    }
    ftrabit_maybe_die_in_recovery(st, FTRABIT_TEST_STEP_SPAWN);
    err = ftrabit_step_agreed(shrunk, err, "exchange of the dead ranks and hosts");
    if (MPI_SUCCESS != err) {
        ftrabit_spawn_args_free(&args, ndead);
        free(dead);
        return err;
    }
    if (0 == ndead) {
        free(dead);
        return MPI_Comm_dup(shrunk, rebuilt);
    }
    ftrabit_log(1, "respawning %d process(es), first original rank %d", ndead, dead[0]);
    st->respawned += ndead;

    err = ftrabit_spawn_replacements(st, shrunk, ndead, &args, &inter);
    ftrabit_spawn_args_free(&args, ndead);
    if (MPI_SUCCESS != err) {
        free(dead);
        return err;
    }
    err = ftrabit_introduce_replacements(st, shrunk, inter, dead, ndead);
    free(dead);
    if (MPI_SUCCESS == err) {
        err = ftrabit_merge_with_replacements(inter, st->orig_rank, 0, rebuilt);
    }
    if (MPI_SUCCESS != err) {
        MPIX_Comm_revoke(inter); /* replacements that merged: abandoned too */
    }
    MPI_Comm_free(&inter);
    return err;
}

