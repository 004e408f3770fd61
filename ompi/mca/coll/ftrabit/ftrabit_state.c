/*
 * ompi-resilience: libftrabit state: one record per logical communicator, attached to the
 * current MPI communicator as an attribute; and the settings, read from coll/ftrabit's MCA
 * parameters through MPI_T so that users set them the usual way (--mca coll_ftrabit_...).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrabit.h"
#include "ftrabit_durable.h"
#include "ftrabit_internal.h"

ftrabit_settings_t ftrabit_settings = {
    .policy = FTRABIT_RECOVER_RESPAWN,
    .local_replicas = 2,
    .result_replicas = 0,
    .result_pool_mib = -1,
    .recovery_timeout = 60,
    .join_timeout = 20,
    .recoveries_without_progress = 8,
    .recovery_fallback = FTRABIT_RECOVER_ABORT,
    .test_kill_in_recovery = -1,
    .test_kill_in_catch_up = -1,
    .spares = 0,
    .test_kill_spare = -1,
    .notice = 1,
    .checkpoint_dir = NULL,
    .checkpoint_keep = 2,
    .test_kill_in_write = -1,
    .test_kill_in_write_version = 2,
    .verbose = 0,
};

static int ftrabit_keyval = MPI_KEYVAL_INVALID;
static ftrabit_state_t *ftrabit_states; /* every state of this process */

ftrabit_state_t *ftrabit_state_first(void)
{
    return ftrabit_states;
}

int ftrabit_origin = FTR_ORIGIN_ORIGINAL;

int FTR_Origin(int *origin)
{
    if (NULL == origin) {
        return MPI_ERR_ARG;
    }
    *origin = ftrabit_origin;
    return MPI_SUCCESS;
}

/* The communicator looked up last and its state: FTR_* calls on one communicator in a row
 * skip the attribute lookup (a hash table under a lock: about a third of what the FTR_*
 * layer adds to an 8-byte allreduce). The attribute's delete callback forgets it when that
 * communicator is freed or its attribute replaced, so a handle that a later communicator
 * reuses never finds a stale state. */
static MPI_Comm ftrabit_last_comm = MPI_COMM_NULL;
static ftrabit_state_t *ftrabit_last_state;

/* The application freed its handle (or recovery freed the one it replaced): the state and
 * its own communicator stay, for the final agreement; the lookup cache forgets the handle,
 * which a later communicator may reuse. */
static int ftrabit_app_comm_deleted(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    ftrabit_state_t *st = attr;
    (void) keyval;
    (void) extra;
    if (NULL != st && st->app_comm == comm) {
        st->app_comm = MPI_COMM_NULL;
    }
    if (comm == ftrabit_last_comm) {
        ftrabit_last_comm = MPI_COMM_NULL;
        ftrabit_last_state = NULL;
    }
    return MPI_SUCCESS;
}

ftrabit_state_t *ftrabit_state_of(MPI_Comm comm)
{
    ftrabit_state_t *st = NULL;
    int found = 0;

    if (MPI_KEYVAL_INVALID == ftrabit_keyval || MPI_COMM_NULL == comm) {
        return NULL;
    }
    if (comm == ftrabit_last_comm) {
        return ftrabit_last_state;
    }
    MPI_Comm_get_attr(comm, ftrabit_keyval, &st, &found);
    if (!found) {
        return NULL;
    }
    ftrabit_last_comm = comm;
    ftrabit_last_state = st;
    return st;
}

int ftrabit_state_hand_out(ftrabit_state_t *st, MPI_Comm *app)
{
    if (MPI_KEYVAL_INVALID == ftrabit_keyval) {
        /* No copy function: a dup of an FTR communicator is a plain communicator. */
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, ftrabit_app_comm_deleted, &ftrabit_keyval,
                               NULL);
    }
    int err = MPI_Comm_dup(st->comm, app);
    if (MPI_SUCCESS != err) {
        *app = MPI_COMM_NULL;
        return err;
    }
    MPI_Comm_set_errhandler(*app, MPI_ERRORS_RETURN);
    MPI_Comm_set_attr(*app, ftrabit_keyval, st);
    st->app_comm = *app;
    return MPI_SUCCESS;
}

ftrabit_state_t *ftrabit_state_new(MPI_Comm comm, int orig_rank, int orig_size)
{
    ftrabit_state_t *st = calloc(1, sizeof(*st));
    if (NULL == st) {
        return NULL;
    }
    st->comm = comm;
    st->app_comm = MPI_COMM_NULL;
    st->orig_rank = orig_rank;
    st->first_rank = orig_rank; /* a replacement or spare is the rank it takes */
    st->orig_size = orig_size;
    ftrabit_cache_init(&st->results);
    if (ftrabit_settings.result_pool_mib >= 0) {
        ftrabit_cache_set_pool_limit(&st->results, (size_t) ftrabit_settings.result_pool_mib << 20);
    }
    ftrabit_bootstrap_init(&st->bootstrap);
    st->held_from = 1; /* no allreduce completed yet: it holds all it completes */
    st->restart_version = 0;
    if (MPI_SUCCESS != ftrabit_durable_attach(st)) {
        fprintf(stderr, "ftrabit: out of memory: no durable checkpoints in %s\n",
                ftrabit_settings.checkpoint_dir);
    }
    st->next = ftrabit_states;
    ftrabit_states = st;
    return st;
}

void ftrabit_state_free(ftrabit_state_t *st)
{
    if (NULL == st) {
        return;
    }
    ftrabit_durable_free(st); /* its last write completes first */
    ftrabit_held_restart(st, 0); /* pool buffers lent to it */
    ftrabit_cache_fini(&st->results);
    ftrabit_bootstrap_fini(&st->bootstrap);
    free(st->global);
    free(st->local);
    free(st->scratch);
    free(st->first_rank_of);
    for (int i = 0; i < st->nreplicas; i++) {
        free(st->replicas[i].data);
    }
    free(st->replicas);
    free(st);
}

int FTR_Cache_memory(MPI_Comm comm, size_t *results, size_t *result_bytes, size_t *held_bytes)
{
    ftrabit_state_t *st = ftrabit_state_of(comm);
    ftrabit_cache_memory_t m;
    if (NULL == st || NULL == results || NULL == result_bytes || NULL == held_bytes) {
        return NULL == st ? MPI_ERR_COMM : MPI_ERR_ARG;
    }
    ftrabit_cache_memory(&st->results, &m);
    *results = m.results;
    *result_bytes = m.result_bytes;
    *held_bytes = m.held_bytes;
    return MPI_SUCCESS;
}

void ftrabit_state_release_all(void)
{
    while (NULL != ftrabit_states) {
        ftrabit_state_t *st = ftrabit_states;
        ftrabit_states = st->next;
        if (MPI_COMM_NULL != st->app_comm) {
            /* Not &st->app_comm: the delete callback clears it while MPI_Comm_free runs. */
            MPI_Comm app = st->app_comm;
            MPI_Comm_free(&app);
        }
        if (MPI_COMM_NULL != st->comm) {
            MPI_Comm_free(&st->comm);
        }
        ftrabit_state_free(st);
    }
    if (MPI_KEYVAL_INVALID != ftrabit_keyval) {
        MPI_Comm_free_keyval(&ftrabit_keyval);
    }
}

/* An int-valued control variable, or `fallback` when coll/ftrabit is not loaded. */
static int ftrabit_read_int_cvar(const char *name, int fallback)
{
    int index, count, value = fallback;
    MPI_T_cvar_handle handle;

    if (MPI_SUCCESS != MPI_T_cvar_get_index(name, &index)) {
        return fallback;
    }
    if (MPI_SUCCESS == MPI_T_cvar_handle_alloc(index, NULL, &handle, &count)) {
        if (MPI_SUCCESS != MPI_T_cvar_read(handle, &value)) {
            value = fallback;
        }
        MPI_T_cvar_handle_free(&handle);
    }
    return value;
}

/* A string-valued control variable (a new string, NULL when empty or unset), or NULL when
 * coll/ftrabit is not loaded. */
static char *ftrabit_read_string_cvar(const char *name)
{
    int index, count;
    MPI_T_cvar_handle handle;
    char *value = NULL;

    if (MPI_SUCCESS != MPI_T_cvar_get_index(name, &index)) {
        return NULL;
    }
    if (MPI_SUCCESS == MPI_T_cvar_handle_alloc(index, NULL, &handle, &count)) {
        /* Open MPI copies the whole string whatever count says: room for any value the
         * component accepts (coll_ftrabit_component.c refuses longer ones) */
        size_t room = (size_t) (count > 0 ? count : 0) + FTRABIT_CVAR_STRING_MAX + 1;
        value = calloc(1, room);
        if (NULL != value && (MPI_SUCCESS != MPI_T_cvar_read(handle, value) || '\0' == value[0])) {
            free(value);
            value = NULL;
        }
        MPI_T_cvar_handle_free(&handle);
    }
    return value;
}

void ftrabit_read_settings(void)
{
    int provided;
    ftrabit_settings_t *s = &ftrabit_settings;

    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) {
        return;
    }
    s->policy = ftrabit_read_int_cvar("coll_ftrabit_recovery", s->policy);
    s->local_replicas = ftrabit_read_int_cvar("coll_ftrabit_local_replicas", s->local_replicas);
    s->result_replicas = ftrabit_read_int_cvar("coll_ftrabit_result_replicas", s->result_replicas);
    s->result_pool_mib = ftrabit_read_int_cvar("coll_ftrabit_result_pool_mib", s->result_pool_mib);
    s->recovery_timeout = ftrabit_read_int_cvar("coll_ftrabit_recovery_timeout",
                                                s->recovery_timeout);
    s->join_timeout = ftrabit_read_int_cvar("coll_ftrabit_join_timeout", s->join_timeout);
    s->recoveries_without_progress = ftrabit_read_int_cvar(
        "coll_ftrabit_recoveries_without_progress", s->recoveries_without_progress);
    s->recovery_fallback = ftrabit_read_int_cvar("coll_ftrabit_recovery_fallback",
                                                 s->recovery_fallback);
    s->test_kill_in_recovery = ftrabit_read_int_cvar("coll_ftrabit_test_kill_in_recovery",
                                                     s->test_kill_in_recovery);
    s->test_kill_in_recovery_step = ftrabit_read_int_cvar(
        "coll_ftrabit_test_kill_in_recovery_step", s->test_kill_in_recovery_step);
    s->test_kill_in_catch_up = ftrabit_read_int_cvar("coll_ftrabit_test_kill_in_catch_up",
                                                     s->test_kill_in_catch_up);
    s->spares = ftrabit_read_int_cvar("coll_ftrabit_spares", s->spares);
    s->test_kill_spare = ftrabit_read_int_cvar("coll_ftrabit_test_kill_spare", s->test_kill_spare);
    s->notice = ftrabit_read_int_cvar("coll_ftrabit_notice", s->notice);
    s->test_message_limit = ftrabit_read_int_cvar("coll_ftrabit_test_message_limit",
                                                  s->test_message_limit);
    free(s->checkpoint_dir);
    s->checkpoint_dir = ftrabit_read_string_cvar("coll_ftrabit_checkpoint_dir");
    s->checkpoint_keep = ftrabit_read_int_cvar("coll_ftrabit_checkpoint_keep", s->checkpoint_keep);
    if (s->checkpoint_keep < 1 || s->checkpoint_keep > 32) {
        s->checkpoint_keep = 2; /* refused by the component, which said so */
    }
    s->test_kill_in_write = ftrabit_read_int_cvar("coll_ftrabit_test_kill_in_write",
                                                  s->test_kill_in_write);
    s->test_kill_in_write_version = ftrabit_read_int_cvar("coll_ftrabit_test_kill_in_write_version",
                                                          s->test_kill_in_write_version);
    s->verbose = ftrabit_read_int_cvar("coll_ftrabit_verbose", s->verbose);
    MPI_T_finalize();
    if (FTRABIT_RECOVER_SHRINK == s->policy) {
        /* Which ranks keep a result is a function of rank and size, and shrinking renumbers
         * the ranks: the survivors could no longer tell who holds what. Every rank keeps
         * every result instead (the cache still empties at each checkpoint). */
        s->result_replicas = 0;
    }
}
