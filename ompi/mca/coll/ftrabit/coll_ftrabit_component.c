/*
 * ompi-resilience: coll/ftrabit component: MCA parameters, performance variables, and
 * the checks that decide whether the component may run at all.
 */
#include "ompi_config.h"

#include <stdio.h>
#include <string.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/show_help.h"

#include "ompi/mca/coll/ftrabit/coll_ftrabit.h"
#include "ompi/mca/common/ompires/ompires_abi.h"

static int ftrabit_register(void);
static int ftrabit_open(void);
static int ftrabit_close(void);

mca_coll_ftrabit_component_t mca_coll_ftrabit_component = {
    .super = {
        .collm_version = {
            MCA_COLL_BASE_VERSION_2_4_0,
            .mca_component_name = "ftrabit",
            MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                  OMPI_RELEASE_VERSION),
            .mca_open_component = ftrabit_open,
            .mca_close_component = ftrabit_close,
            .mca_register_component_params = ftrabit_register,
        },
        .collm_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = mca_coll_ftrabit_init_query,
        .collm_comm_query = mca_coll_ftrabit_comm_query,
    },
    .priority = 40,
    .output = -1,
};

static const mca_base_var_enum_value_t allreduce_algorithms[] = {
    {FTRABIT_ALLREDUCE_AUTO, "auto"},
    {FTRABIT_ALLREDUCE_RECURSIVE_DOUBLING, "recursive_doubling"},
    {FTRABIT_ALLREDUCE_REDUCE_SCATTER_ALLGATHER, "reduce_scatter_allgather"},
    {0, NULL},
};

static const mca_base_var_enum_value_t bcast_algorithms[] = {
    {FTRABIT_BCAST_AUTO, "auto"},
    {FTRABIT_BCAST_BINOMIAL, "binomial"},
    {FTRABIT_BCAST_PIPELINE, "pipeline"},
    {FTRABIT_BCAST_LINEAR, "linear"},
    {FTRABIT_BCAST_KNOMIAL, "knomial"},
    {0, NULL},
};

static const mca_base_var_enum_value_t recovery_policies[] = {
    {0, "respawn"},
    {1, "shrink"},
    {2, "abort"},
    {0, NULL},
};

static const mca_base_var_enum_value_t recovery_fallbacks[] = {
    {1, "shrink"},
    {2, "abort"},
    {0, NULL},
};

static void register_enum(const char *name, const char *description,
                          const mca_base_var_enum_value_t *values, int *storage)
{
    mca_base_var_enum_t *enumerator = NULL;

    (void) mca_base_var_enum_create(name, values, &enumerator);
    (void) mca_base_component_var_register(&mca_coll_ftrabit_component.super.collm_version,
                                           name, description, MCA_BASE_VAR_TYPE_INT, enumerator,
                                           0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL,
                                           storage);
    OBJ_RELEASE(enumerator);
}

static void register_size(const char *name, const char *description, size_t *storage)
{
    (void) mca_base_component_var_register(&mca_coll_ftrabit_component.super.collm_version,
                                           name, description, MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0,
                                           0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL, storage);
}

static void register_int(const char *name, const char *description, int info_level,
                         int *storage)
{
    (void) mca_base_component_var_register(&mca_coll_ftrabit_component.super.collm_version,
                                           name, description, MCA_BASE_VAR_TYPE_INT, NULL, 0, 0,
                                           info_level, MCA_BASE_VAR_SCOPE_ALL, storage);
}

static void register_counter(const char *name, const char *description, unsigned long *storage)
{
    (void) mca_base_component_pvar_register(&mca_coll_ftrabit_component.super.collm_version,
                                            name, description, OPAL_INFO_LVL_4,
                                            MCA_BASE_PVAR_CLASS_COUNTER,
                                            MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL,
                                            MCA_BASE_VAR_BIND_NO_OBJECT,
                                            MCA_BASE_PVAR_FLAG_READONLY
                                                | MCA_BASE_PVAR_FLAG_CONTINUOUS,
                                            NULL, NULL, NULL, storage);
}

/* A parameter value the component cannot work with: say so, and do not load. */
static int refuse_param(const char *name, long value, const char *hint)
{
    char text[32];

    snprintf(text, sizeof(text), "%ld", value);
    ompires_add_help_dir();
    opal_show_help("help-ompi-resilience.txt", "invalid-param", true, name, text, hint,
                   "coll ftrabit");
    return OMPI_ERR_BAD_PARAM;
}

static int ftrabit_register(void)
{
    mca_coll_ftrabit_component_t *c = &mca_coll_ftrabit_component;

    c->priority = 40;
    (void) mca_base_component_var_register(
        &c->super.collm_version, "priority",
        "Priority of coll ftrabit (0-100). The default, 40, is above tuned (30) and han (35), "
        "so ftrabit provides MPI_Allreduce and MPI_Bcast on every intra-communicator of two or "
        "more ranks; set 0 or exclude it (--mca coll ^ftrabit) to leave them to others",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, &c->priority);

    c->verbose = 0;
    (void) mca_base_component_var_register(
        &c->super.collm_version, "verbose",
        "Verbosity of coll ftrabit: 0 silent, 1 module selection per communicator, "
        "10 the algorithm of every collective",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL, &c->verbose);

    c->allreduce_algorithm = FTRABIT_ALLREDUCE_AUTO;
    register_enum("allreduce_algorithm",
                  "MPI_Allreduce algorithm: auto (by size), recursive_doubling (latency-optimal, "
                  "log2(p) rounds of the whole vector), reduce_scatter_allgather (bandwidth-"
                  "optimal recursive halving then doubling). All keep the reduction in rank "
                  "order, so non-commutative operations are correct and results are bit-"
                  "identical on every rank",
                  allreduce_algorithms, &c->allreduce_algorithm);

    c->allreduce_rsag_min_bytes = 0;
    register_size("allreduce_rsag_min_bytes",
                  "With allreduce_algorithm auto: messages of at least this many bytes use "
                  "reduce_scatter_allgather, smaller ones recursive_doubling. 0 (the default): "
                  "16384 where the communicator's ranks run on one node, 65536 where they span "
                  "nodes (each of the reduce-scatter's extra rounds is then a network round "
                  "trip); the ranks agree on which, with one small allreduce per communicator "
                  "the first time it matters",
                  &c->allreduce_rsag_min_bytes);

    c->bcast_algorithm = FTRABIT_BCAST_AUTO;
    register_enum("bcast_algorithm",
                  "MPI_Bcast algorithm: auto (by size and ranks, as coll/tuned where it "
                  "counts: linear for 4-7 ranks from 8 KiB to 1 MiB; for 8-15 ranks knomial "
                  "from 64 B and linear from 32 KiB), binomial (latency-optimal tree), "
                  "knomial (a tree of radix 4: fewer rounds, more sends per round), pipeline "
                  "(segmented chain from the root, bandwidth-optimal), linear (the root sends "
                  "to every rank)",
                  bcast_algorithms, &c->bcast_algorithm);

    c->bcast_pipeline_min_bytes = 131072;
    register_size("bcast_pipeline_min_bytes",
                  "With bcast_algorithm auto: messages of at least this many bytes use the "
                  "pipeline on communicators of three or more ranks, smaller ones binomial; "
                  "where a node of the communicator's ranks is oversubscribed (more ranks than "
                  "cores) every size uses binomial, since a chain's hops wait for their ranks' "
                  "turns on a core (the ranks agree on this, with one small allreduce per "
                  "communicator the first time it matters)",
                  &c->bcast_pipeline_min_bytes);

    c->bcast_segment_bytes = 65536;
    register_size("bcast_segment_bytes",
                  "Smallest segment size in bytes of the pipelined MPI_Bcast: segments grow "
                  "with the message, to about sqrt(bytes * 32 KiB / (ranks - 2)), which "
                  "balances per-message costs against the time to fill the chain, but are "
                  "never smaller than this (and hold at least one datatype element); must be "
                  "greater than 0",
                  &c->bcast_segment_bytes);

    c->recovery = 0;
    register_enum("recovery",
                  "What the FTR_* API (libftrabit) does when a process fails: respawn (start a "
                  "replacement that takes the dead rank's place, reloads the last checkpoint "
                  "and replays), shrink (continue with the survivors; communicator sizes "
                  "change), abort (end the job with a message)",
                  recovery_policies, &c->recovery);

    c->recovery_timeout = 60;
    register_int("recovery_timeout",
                 "Respawn policy: seconds a recovery may go without progress (a step of the "
                 "rebuild done, a part of a checkpoint or cached result received) before each "
                 "process ends itself with a message saying what it was waiting for, so the job "
                 "ends instead of hanging; a recovery that progresses may take longer (0: no "
                 "limit)",
                 OPAL_INFO_LVL_5, &c->recovery_timeout);

    c->join_timeout = 20;
    register_int("join_timeout",
                 "Respawn policy: seconds the survivors wait for each replacement a recovery "
                 "started to answer its join record (it does so in FTR_Init) before they take "
                 "it as failed, abandon it and start another; a replacement must reach FTR_Init "
                 "within this time of its start (0: no limit but coll_ftrabit_recovery_timeout)",
                 OPAL_INFO_LVL_5, &c->join_timeout);

    c->recoveries_without_progress = 8;
    register_int("recoveries_without_progress",
                 "The job ends (every rank's FTR_* call returns an error after a message) when "
                 "this many recoveries in a row end before any collective completes after the "
                 "one before: a replacement that fails again every time it is started, e.g. by "
                 "a deterministic error in its replay, instead of being replaced for ever "
                 "(0: no limit)",
                 OPAL_INFO_LVL_5, &c->recoveries_without_progress);

    c->recovery_fallback = 2;
    register_enum("recovery_fallback",
                  "Respawn policy: what happens when replacements cannot be started "
                  "(MPI_Comm_spawn returns an error): shrink (continue with the survivors) or "
                  "abort (end the job with a message)",
                  recovery_fallbacks, &c->recovery_fallback);

    c->uniform = false;
    (void) mca_base_component_var_register(
        &c->super.collm_version, "uniform",
        "MPI_Allreduce and MPI_Bcast under ULFM: after each one, the survivors agree on its "
        "outcome, so that it succeeds on every rank or fails on every rank (one agreement "
        "per call; see docs/uniform.md for its cost). For applications that recover with "
        "plain ULFM calls",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_ALL,
        &c->uniform);

    c->test_kill_in_recovery = -1;
    register_int("test_kill_in_recovery",
                 "For testing recovery: the process with this original rank kills itself "
                 "(SIGKILL) during its first recovery, after the survivors agreed on the failed "
                 "set and before the replacements join (-1: never)",
                 OPAL_INFO_LVL_9, &c->test_kill_in_recovery);

    c->test_kill_in_recovery_step = 0;
    register_int("test_kill_in_recovery_step",
                 "For testing recovery: where coll_ftrabit_test_kill_in_recovery's process dies: "
                 "0 at the start of the rebuild, right after the failed set is agreed; 1 right "
                 "after the survivors exchanged which original ranks are dead and on which hosts "
                 "they run (the spawn comes next); 2 right after MPI_Comm_spawn returned (the "
                 "merge with the replacements comes next); 3 inside the duplicate of the rebuilt "
                 "communicator for the application, after the catch-up (0.1 s after entering it)",
                 OPAL_INFO_LVL_9, &c->test_kill_in_recovery_step);

    c->test_kill_in_catch_up = -1;
    register_int("test_kill_in_catch_up",
                 "For testing recovery: the process with this original rank kills itself "
                 "(SIGKILL) in the catch-up exchange of the first recovery that has a "
                 "replacement in it, right after the state records were exchanged, so that "
                 "the replacement meets a failure in the middle of joining (-1: never)",
                 OPAL_INFO_LVL_9, &c->test_kill_in_catch_up);

    c->local_replicas = 2;
    register_int("local_replicas",
                 "FTR_Checkpoint: how many ring neighbours keep a copy of each rank's local state "
                 "(at least 1); a replacement recovers as long as one of them survives",
                 OPAL_INFO_LVL_5, &c->local_replicas);

    c->result_replicas = 0;
    register_int("result_replicas",
                 "FTR_* collectives: how many ranks keep each result until the next checkpoint, "
                 "to serve ranks that replay (0: every rank; fewer bounds memory, but results are "
                 "lost if all their keepers, consecutive ranks, fail together before the next "
                 "allreduce: every rank also holds the results since the last allreduce it "
                 "completed, usually just its last one)",
                 OPAL_INFO_LVL_5, &c->result_replicas);

    c->result_pool_mib = -1;
    register_int("result_pool_mib",
                 "FTR_* collectives: at most this many MiB of result buffers that a checkpoint "
                 "freed are kept per communicator for the results of the next interval, so that "
                 "they do not fault in fresh pages (-1: no bound in MiB; a buffer no result used "
                 "during a whole checkpoint interval is freed at the next checkpoint anyway, so "
                 "the pool never holds more than the last interval's results did; 0: keep none)",
                 OPAL_INFO_LVL_5, &c->result_pool_mib);

    c->spares = 0;
    register_int("spares",
                 "FTR_* API, respawn policy: how many of the job's processes wait as warm spares "
                 "instead of running the application (start the job with that many processes "
                 "more). They wait inside FTR_Init without using the CPU, are spread over the "
                 "job's nodes, and on a failure one takes each dead rank's place at once, "
                 "without starting a process; when none is left, replacements are spawned as "
                 "usual. Unused spares leave (MPI_Finalize, exit status 0) when the "
                 "application calls FTR_Finalize. 0: no spares",
                 OPAL_INFO_LVL_4, &c->spares);

    c->notice = 1;
    register_int("notice",
                 "FTR_* API: 1 takes a process's first SIGTERM as a preemption notice (Slurm's "
                 "preemption with a grace time, a spot VM's notice): the process goes on, and at "
                 "the next FTR_Checkpoint the ranks hand its rank over to a warm spare or a "
                 "respawned replacement, which starts from that checkpoint, so that no "
                 "iteration is redone; the notified process then leaves (exit status 0). A "
                 "second SIGTERM ends it at once, and a SIGTERM handler the program installed "
                 "itself is left alone. 0: SIGTERM is not touched (it ends the process)",
                 OPAL_INFO_LVL_4, &c->notice);

    c->test_kill_spare = -1;
    register_int("test_kill_spare",
                 "For testing spares: the spare with this MPI_COMM_WORLD rank kills itself "
                 "(SIGKILL) as soon as it starts waiting (-1: never)",
                 OPAL_INFO_LVL_9, &c->test_kill_spare);

    c->test_message_limit = 0;
    register_int("test_message_limit",
                 "For testing checkpoints and recovery of many parts without gigabytes: "
                 "libftrabit's messages (checkpoints, results sent to a replacement) go in "
                 "parts of this many bytes (0: 4 MiB)",
                 OPAL_INFO_LVL_9, &c->test_message_limit);

    c->checkpoint_dir = NULL;
    (void) mca_base_component_var_register(
        &c->super.collm_version, "checkpoint_dir",
        "FTR_* API: also write every committed checkpoint under this directory (made if "
        "missing), so that a job that lost every copy of a rank's state, or was killed whole, "
        "can be started again (same directory, same number of ranks) and resume from the "
        "newest version complete on every rank. Written by a background thread, crash-safe "
        "(temporary file, fsync, rename), with checksums; a node-local directory (each rank "
        "also writes the copies it holds of its ring predecessors' states) or one shared by "
        "all nodes (found out at run time). A failed write is reported and the job goes on "
        "with in-memory checkpoints. Empty (the default): in-memory checkpoints only",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_ALL,
        &c->checkpoint_dir);

    c->checkpoint_keep = 2;
    register_int("checkpoint_keep",
                 "With checkpoint_dir: how many checkpoint versions known complete on every "
                 "rank are kept there (1-32); older ones are removed, and the version being "
                 "written is kept besides, so the directory holds up to this many plus one",
                 OPAL_INFO_LVL_4, &c->checkpoint_keep);

    c->test_kill_in_write = -1;
    register_int("test_kill_in_write",
                 "For testing durable checkpoints: the process with this original rank kills "
                 "itself (SIGKILL) once half of the first file it writes for checkpoint version "
                 "coll_ftrabit_test_kill_in_write_version is written (-1: never)",
                 OPAL_INFO_LVL_9, &c->test_kill_in_write);

    c->test_kill_in_write_version = 2;
    register_int("test_kill_in_write_version",
                 "For testing durable checkpoints: the checkpoint version during whose write "
                 "coll_ftrabit_test_kill_in_write's process dies",
                 OPAL_INFO_LVL_9, &c->test_kill_in_write_version);

    register_counter("allreduce_calls", "Number of MPI_Allreduce calls served by coll ftrabit",
                     &c->allreduce_calls);
    register_counter("bcast_calls", "Number of MPI_Bcast calls served by coll ftrabit",
                     &c->bcast_calls);
    return OMPI_SUCCESS;
}

static int ftrabit_open(void)
{
    mca_coll_ftrabit_component_t *c = &mca_coll_ftrabit_component;

    if (!ompires_abi_check("coll ftrabit")) {
        return OMPI_ERR_NOT_SUPPORTED;
    }
    if (0 == c->bcast_segment_bytes) {
        return refuse_param("coll_ftrabit_bcast_segment_bytes", 0,
                            "The pipelined broadcast needs segments of at least one byte.");
    }
    if (c->recovery_timeout < 0) {
        return refuse_param("coll_ftrabit_recovery_timeout", c->recovery_timeout,
                            "Use a number of seconds, or 0 for no limit.");
    }
    if (c->join_timeout < 0) {
        return refuse_param("coll_ftrabit_join_timeout", c->join_timeout,
                            "Use a number of seconds, or 0 for no limit.");
    }
    if (c->recoveries_without_progress < 0) {
        return refuse_param("coll_ftrabit_recoveries_without_progress",
                            c->recoveries_without_progress,
                            "Use a number of recoveries, or 0 for no limit.");
    }
    if (c->local_replicas < 1) {
        return refuse_param("coll_ftrabit_local_replicas", c->local_replicas,
                            "At least one neighbour must keep a copy of each local checkpoint.");
    }
    if (c->test_kill_in_recovery_step < 0 || c->test_kill_in_recovery_step > 3) {
        return refuse_param("coll_ftrabit_test_kill_in_recovery_step",
                            c->test_kill_in_recovery_step, "Use 0, 1, 2 or 3.");
    }
    if (c->spares < 0) {
        return refuse_param("coll_ftrabit_spares", c->spares,
                            "Use 0 for no spares, or the number of spare processes.");
    }
    if (0 != c->notice && 1 != c->notice) {
        return refuse_param("coll_ftrabit_notice", c->notice,
                            "Use 1 to take a SIGTERM as a preemption notice, 0 not to.");
    }
    if (c->result_replicas < 0) {
        return refuse_param("coll_ftrabit_result_replicas", c->result_replicas,
                            "Use 0 for every rank, or a positive number of ranks.");
    }
    if (c->result_pool_mib < -1) {
        return refuse_param("coll_ftrabit_result_pool_mib", c->result_pool_mib,
                            "Use a number of MiB, 0 to keep no buffers, or -1 for no bound.");
    }
    if (c->checkpoint_keep < 1 || c->checkpoint_keep > 32) {
        return refuse_param("coll_ftrabit_checkpoint_keep", c->checkpoint_keep,
                            "Keep from 1 to 32 complete checkpoint versions.");
    }
    /* 1024: what libftrabit reads (FTRABIT_CVAR_STRING_MAX), its files' names added */
    if (NULL != c->checkpoint_dir && strlen(c->checkpoint_dir) > 1024) {
        return refuse_param("coll_ftrabit_checkpoint_dir", (long) strlen(c->checkpoint_dir),
                            "The directory's name (of this many characters) is too long: give "
                            "one of at most 1024.");
    }
    if (c->test_message_limit < 0) {
        return refuse_param("coll_ftrabit_test_message_limit", c->test_message_limit,
                            "Use a number of bytes, or 0 for INT_MAX.");
    }
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    return OMPI_SUCCESS;
}

static int ftrabit_close(void)
{
    if (mca_coll_ftrabit_component.output >= 0) {
        opal_output_close(mca_coll_ftrabit_component.output);
        mca_coll_ftrabit_component.output = -1;
    }
    return OMPI_SUCCESS;
}
