/*
 * ompi-resilience: pml/dr2 over several paths (BTLs) to a peer: failover on a silent cut,
 * paths that come back, every byte verified. Run by the cluster tests (two hosts, two data
 * networks, tcp on both: two paths per peer), which cut networks with iptables.
 *
 * Two ranks exchange a stream of messages with MPI_Sendrecv, sizes cycling from 16 bytes to
 * 3 MB (eager and rendezvous); every byte of every message is checked against a pattern of
 * (direction, message number, offset). Rank 0 drives the phases with its per-path MPI_T
 * counters (pml_dr2_path_*, one value per path index) and tells rank 1 when to stop in the
 * header of its messages. Lines starting "dr2_paths: phase" tell the test script when to
 * act; the script answers by creating files in CONTROL_DIR (rank 0 runs where the script
 * does: same file system). Nothing here depends on how long anything takes (the script's
 * timeout bounds it); the times printed are for the reader.
 *
 *   dr2_paths cut DIR   after "phase streaming" the script cuts one network and creates
 *                       DIR/cut; rank 0 streams on until one of its paths went down after
 *                       that, then 200 exchanges more. PASS: every byte intact, a path went
 *                       down, the job finishes.
 *   dr2_paths heal DIR  the same, and after "phase failed-over" the script heals the network
 *                       and creates DIR/healed; rank 0 streams on until a path came back up
 *                       after that, then 200 exchanges more, during which fragments must go
 *                       on every path again.
 *   dr2_paths both DIR  one way only: rank 1 sends, rank 0 only receives (nothing of its own
 *                       in flight: only dr2's keepalive can tell it that rank 1 is gone).
 *                       After "phase streaming" the script cuts both networks: both ranks'
 *                       calls must end in an error (MPIX_ERR_PROC_FAILED under ULFM, the
 *                       ranks set MPI_ERRORS_RETURN); without ULFM the job aborts with dr2's
 *                       message.
 *   dr2_paths both-heal DIR  the same, and then each rank fills its receive buffer with a
 *                       sentinel (rank 0's received the stream until the error), prints
 *                       "phase ended-in-error" and keeps calling MPI until DIR/healed and
 *                       3 s more: the script heals both networks, and what TCP still had in
 *                       flight arrives. PASS: the error as above, and the sentinel intact:
 *                       nothing of a receive that ended in error was written after it ended.
 *   dr2_paths plain     no cut: fragments go on every path (striping).
 *   dr2_paths standby   no cut: fragments go on path 0 alone, path 1 stands by (its NIC is
 *                       farther from the process: pml_dr2_path_locality, with a topology
 *                       where it is).
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NPATHS 4 /* PML_DR2_PATH_MAX: the length of each per-path counter */
#define HDR 16   /* message header: number (8 bytes), stop flag (8 bytes) */
#define STREAMING_AFTER 300
#define AFTER_EVENT 200
#define MAX_EXCHANGES 2000000 /* a bound, not a timing: the script's timeout ends a hang */

static const size_t sizes[] = {16, 100, 4096, 65536, 200000, 1 << 20, 3000000, 64};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

enum { FRAGS_SENT, DOWNS, UPS, RETRANSMITS, NCOUNTERS };
static const char *const counter_names[NCOUNTERS] = {
    "pml_dr2_path_frags_sent", "pml_dr2_path_downs", "pml_dr2_path_ups",
    "pml_dr2_path_retransmits"};
static MPI_T_pvar_session session;
static MPI_T_pvar_handle handles[NCOUNTERS];
static int rank;
static long failures;

static void fail(const char *what, unsigned long long n)
{
    printf("dr2_paths: rank %d: FAIL: %s (%llu)\n", rank, what, n);
    fflush(stdout);
    failures++;
}

static void counters_start(void)
{
    int provided;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    for (int i = 0; i < NCOUNTERS; i++) {
        int index, count = 0;
        if (MPI_SUCCESS != MPI_T_pvar_get_index(counter_names[i], MPI_T_PVAR_CLASS_COUNTER, &index)
            || MPI_SUCCESS != MPI_T_pvar_handle_alloc(session, index, NULL, &handles[i], &count)
            || NPATHS != count) {
            printf("dr2_paths: rank %d: FAIL: no MPI_T counter %s of %d values (is pml dr2 "
                   "selected?)\n", rank, counter_names[i], NPATHS);
            fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
}

static void counters_read(int which, unsigned long v[NPATHS])
{
    MPI_T_pvar_read(session, handles[which], v);
}

static unsigned long counters_sum(int which)
{
    unsigned long v[NPATHS], sum = 0;

    counters_read(which, v);
    for (int i = 0; i < NPATHS; i++) {
        sum += v[i];
    }
    return sum;
}

static void counters_print(const char *when)
{
    unsigned long v[NCOUNTERS][NPATHS];

    for (int c = 0; c < NCOUNTERS; c++) {
        counters_read(c, v[c]);
    }
    printf("dr2_paths: rank %d: counters %s: path 0 sent %lu resent %lu down %lu up %lu; "
           "path 1 sent %lu resent %lu down %lu up %lu\n",
           rank, when, v[FRAGS_SENT][0], v[RETRANSMITS][0], v[DOWNS][0], v[UPS][0],
           v[FRAGS_SENT][1], v[RETRANSMITS][1], v[DOWNS][1], v[UPS][1]);
    fflush(stdout);
}

static inline unsigned char pattern(int from, uint64_t n, size_t i)
{
    uint64_t x = (n * 0x9E3779B97F4A7C15ull) ^ ((uint64_t) from << 61) ^ (i >> 6);
    return (unsigned char) ((x >> (8 * (i & 7))) + i);
}

static void fill(unsigned char *buf, size_t len, uint64_t n, int stop)
{
    uint64_t flag = (uint64_t) stop;

    memcpy(buf, &n, 8);
    memcpy(buf + 8, &flag, 8);
    for (size_t i = HDR; i < len; i++) {
        buf[i] = pattern(rank, n, i);
    }
}

/* Check message n from `from`; returns its stop flag. */
static int verify(const unsigned char *buf, size_t len, uint64_t n, int from)
{
    uint64_t got, flag;

    memcpy(&got, buf, 8);
    memcpy(&flag, buf + 8, 8);
    if (got != n) {
        fail("a message out of order or lost: its number", (unsigned long long) got);
        return 1;
    }
    for (size_t i = HDR; i < len; i++) {
        if (buf[i] != pattern(from, n, i)) {
            fail("a corrupt byte at offset", (unsigned long long) i);
            return 1;
        }
    }
    return 0 != flag;
}

static double t_streaming;

static void phase(const char *name)
{
    if (0 == strcmp(name, "streaming")) {
        t_streaming = MPI_Wtime();
    }
    printf("dr2_paths: phase %s (%.3f s after streaming)\n", name, MPI_Wtime() - t_streaming);
    fflush(stdout);
}

/* The test script has done what the last phase asked for: it created CONTROL_DIR/name. */
static int script_did(const char *dir, const char *name)
{
    char path[4096];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return 0 == access(path, F_OK);
}

/* both-heal: the receive buffer, filled with a sentinel after the error, stays so while
 * MPI progresses until the script healed the networks and 3 s more. */
static int after_heal_untouched(unsigned char *buf, size_t len, const char *control)
{
    const unsigned char sentinel = 0xa5;
    double healed_at = 0;
    int flag;

    memset(buf, sentinel, len);
    phase("ended-in-error");
    for (;;) {
        /* any MPI call progresses the transports: this one touches no failed peer */
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
        if (0 == healed_at && script_did(control, "healed")) {
            healed_at = MPI_Wtime();
        }
        if (0 != healed_at && MPI_Wtime() - healed_at > 3.0) {
            break;
        }
        usleep(1000);
    }
    for (size_t i = 0; i < len; i++) {
        if (sentinel != buf[i]) {
            fail("a byte of the receive buffer changed after the receive ended, at offset",
                 (unsigned long long) i);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "plain";
    const char *control = argc > 2 ? argv[2] : NULL;
    int standby = 0 == strcmp(mode, "standby");
    int no_cut = standby || 0 == strcmp(mode, "plain");
    int both_heal = 0 == strcmp(mode, "both-heal");
    int one_way = 0 == strcmp(mode, "both") || both_heal;
    int size, peer, stop = 0, eclass = MPI_SUCCESS;
    unsigned char *out, *in;
    uint64_t n, event_at = 0;
    unsigned long sent_at_up[NPATHS] = {0}, seen = 0;
    enum { STREAM, WAIT_CUT, WAIT_DOWN, WAIT_HEAL, WAIT_UP, AFTER, DONE } state = STREAM;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (2 != size || (strcmp(mode, "cut") && strcmp(mode, "heal") && !one_way && !no_cut)
        || (!no_cut && NULL == control)) {
        if (0 == rank) {
            fprintf(stderr, "usage: mpirun -np 2 dr2_paths cut|heal|both|both-heal CONTROL_DIR\n"
                            "       mpirun -np 2 dr2_paths plain|standby\n");
        }
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    counters_start();
    peer = 1 - rank;
    out = malloc(sizes[NSIZES - 2] + HDR);
    in = malloc(sizes[NSIZES - 2] + HDR);
    if (NULL == out || NULL == in) {
        fail("out of memory", 0);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (n = 0; n < MAX_EXCHANGES && !stop; n++) {
        size_t len = sizes[n % NSIZES];
        int rc, peer_stop;

        if (0 == rank) {
            /* rank 0 decides when the stream ends */
            /* The counts are taken before the script acts: the exchange under way when it
             * does may last until the failover (or the path's return), and the script's
             * file is only seen after it. */
            if (STREAM == state && n == STREAMING_AFTER) {
                seen = counters_sum(DOWNS); /* a down before the cut was something else */
                phase("streaming");
                state = no_cut ? AFTER : WAIT_CUT;
                event_at = n;
            } else if (WAIT_CUT == state && script_did(control, "cut")) {
                state = WAIT_DOWN;
            } else if (WAIT_DOWN == state && counters_sum(DOWNS) > seen) {
                seen = counters_sum(UPS);
                phase("failed-over");
                counters_print("after failover");
                state = strcmp(mode, "heal") ? AFTER : WAIT_HEAL;
                event_at = n;
            } else if (WAIT_HEAL == state && script_did(control, "healed")) {
                state = WAIT_UP;
            } else if (WAIT_UP == state && counters_sum(UPS) > seen) {
                phase("path-back");
                counters_read(FRAGS_SENT, sent_at_up);
                state = AFTER;
                event_at = n;
            } else if (AFTER == state && n - event_at >= AFTER_EVENT) {
                state = DONE;
            }
            stop = DONE == state && !one_way; /* one way: until the error */
        }
        if (one_way) {
            if (1 == rank) {
                fill(out, len, n, 0);
                rc = MPI_Send(out, (int) len, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
            } else {
                rc = MPI_Recv(in, (int) len, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        } else {
            fill(out, len, n, stop);
            rc = MPI_Sendrecv(out, (int) len, MPI_BYTE, peer, 7, in, (int) len, MPI_BYTE, peer, 7,
                              MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (MPI_SUCCESS != rc) {
            MPI_Error_class(rc, &eclass);
            break;
        }
        peer_stop = one_way && 1 == rank ? 0 : verify(in, len, n, peer);
        if (failures > 0) {
            break;
        }
        if (1 == rank) {
            stop = peer_stop;
        }
    }
    counters_print("at the end");
    if (one_way) {
        int ok = MPIX_ERR_PROC_FAILED == eclass;
        if (both_heal && !after_heal_untouched(in, sizes[NSIZES - 2] + HDR, control)) {
            ok = 0;
        }
        printf("dr2_paths: rank %d: %s: both networks cut: the exchange ended with error "
               "class %d%s after %llu messages\n", rank, ok ? "PASS" : "FAIL", eclass,
               ok ? " (MPIX_ERR_PROC_FAILED)" : "", (unsigned long long) n);
        fflush(stdout);
        MPI_Finalize();
        return ok ? 0 : 1;
    }
    if (MPI_SUCCESS != eclass) {
        fail("the exchange failed with error class", (unsigned long long) eclass);
    } else if (!stop) {
        fail("the stream never reached its end, messages", (unsigned long long) n);
    }
    if (0 == rank && 0 == failures) {
        unsigned long sent[NPATHS];
        counters_read(FRAGS_SENT, sent);
        if (!no_cut && 0 == counters_sum(DOWNS)) {
            fail("no path ever went down", 0);
        }
        if (standby && (0 == sent[0] || 0 != sent[1])) {
            fail("fragments on path 1, which stands by (or none on path 0), fragments", sent[1]);
        }
        if (0 == strcmp(mode, "heal") || 0 == strcmp(mode, "plain")) {
            /* traffic on both networks: since the path came back (heal), or at all */
            for (int i = 0; i < 2; i++) {
                if (sent[i] <= sent_at_up[i]) {
                    fail("no fragment on path", (unsigned long long) i);
                }
            }
        }
    }
    printf("dr2_paths: rank %d: %s: %s, %llu messages exchanged and verified\n", rank,
           0 == failures ? "PASS" : "FAIL", mode, (unsigned long long) n);
    fflush(stdout);
    free(out);
    free(in);
    MPI_Finalize();
    return 0 == failures ? 0 : 1;
}
