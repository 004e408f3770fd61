/*
 * ompi-resilience: coll/ftrabit warm spares, the decisions (pure logic, no MPI).
 *
 * With coll_ftrabit_spares N the job starts with N processes more than the application
 * gets. Two decisions are made from data every process has, so that every process makes
 * the same one without a further message:
 *
 * 1. Placement, once in FTR_Init: which processes of MPI_COMM_WORLD wait as spares. Input:
 *    the host of every world rank (any integer naming the node, the same on every process
 *    of that node). Spares are spread over hosts so that the loss of one node does not take
 *    them all: each spare in turn goes to the host with the fewest spares so far, among
 *    those the one with the most processes still left to the application, the last such
 *    host (in order of first appearance) on a tie; there it is the highest world rank not
 *    yet a spare. Only hosts with two or more processes left to the application are
 *    candidates while there are any: a host keeps an application process as long as
 *    possible. On one host the spares are the last N world ranks. The others are numbered
 *    0..APP-1 in world-rank order: their application rank.
 *
 * 2. Assignment, in every recovery that has spares: which spare takes which dead
 *    application rank. Input: the members of the standby communicator after it was shrunk
 *    (each one the application rank it holds, or -1 for a waiting spare, and its host), and
 *    the host of the process that last held each application rank. Dead ranks are filled
 *    in increasing order; each gets a spare on its own host if there is one (its node
 *    survived: the application keeps its layout), otherwise one on the host that has the
 *    most spares left (so that those that remain stay spread); ties go to the spare first
 *    in the communicator's order. Dead ranks left over when spares run out are the ones a
 *    respawn must replace. A member that is leaving (a process that got a preemption
 *    notice, ftrabit_notice.c) holds no rank afterwards and never takes one: the rank it
 *    held is filled like a dead one's.
 *
 * 3. Respawn placement, on the root of a respawn: which live host each replacement is
 *    started on. Input: how many processes of the rebuilt job each live host has. Each
 *    replacement in turn goes to the host with the fewest processes so far, the first such
 *    host on a tie: replacements spread over the hosts that are left instead of all landing
 *    on the first one with room (PRRTE maps by slot), and a lost host gets none.
 */
#ifndef FTRABIT_SPARE_PLAN_H
#define FTRABIT_SPARE_PLAN_H

/* In the assignment's records: a member that is leaving (neither a rank nor a spare). */
#define FTRABIT_SPARE_LEAVING (-2)

enum {
    FTRABIT_SPARE_PLAN_OK = 0,
    FTRABIT_SPARE_PLAN_INVALID = -1, /* bad sizes, or records that contradict each other */
    FTRABIT_SPARE_PLAN_NOMEM = -2
};

/*
 * Placement. host[world_size]: host of each world rank. nspares: 0 <= nspares < world_size.
 * Out: app_rank[world_size]: the application rank of each world rank, -1 for a spare.
 */
int ftrabit_spare_place(const int *host, int world_size, int nspares, int *app_rank);

/*
 * Assignment. n members (in the standby communicator's order): held[i] is the application
 * rank member i holds (0 <= held[i] < app_size, each at most once), -1 (a spare) or
 * FTRABIT_SPARE_LEAVING; host[i] its host. last_host[app_size]: host of the process that
 * last held each rank.
 * Out: new_rank[n]: the rank each member holds afterwards (-1: stays a spare;
 * FTRABIT_SPARE_LEAVING: leaves);
 * *unfilled: dead ranks no spare could take (to respawn); *spares_left: spares still
 * waiting afterwards.
 */
int ftrabit_spare_assign(const int *held, const int *host, int n, int app_size,
                         const int *last_host, int *new_rank, int *unfilled, int *spares_left);

/*
 * Respawn placement. load[nhosts]: processes on each live host (nhosts >= 1, each >= 0).
 * Out: host_of[nrepl]: the host (index into load) of each replacement.
 */
int ftrabit_respawn_place(const int *load, int nhosts, int nrepl, int *host_of);

#endif
