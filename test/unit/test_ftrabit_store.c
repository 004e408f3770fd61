/*
 * Unit tests of coll/ftrabit's durable store (ftrabit_store.c, ftrabit_store_writer.c):
 * the header codec against every damaged byte, names, crash-safe writes and checked reads
 * in a real temporary directory (torn, corrupt, a writer that dies in the middle of a
 * file), which directory each rank writes to, the choice of the version to resume, which
 * versions are kept, and the writer thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ompi/mca/coll/ftrabit/ftrabit_store.h"
#include "ompi/mca/coll/ftrabit/ftrabit_store_writer.h"
#include "unit.h"

static char tmpdir[256];

static ftrabit_store_header_t sample_header(uint32_t kind, uint32_t version, uint32_t owner,
                                            uint64_t size)
{
    ftrabit_store_header_t h = {.kind = kind, .owner = owner, .nranks = 4, .version = version,
                                .epoch = 0x1122334455667788ull, .payload_size = size,
                                .payload_crc = 0xdeadbeef};
    snprintf(h.program, sizeof(h.program), "ftr_kmeans");
    return h;
}

static int file_exists(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    return 0 == access(path, F_OK);
}

static off_t file_size(const char *name)
{
    char path[512];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    return 0 == stat(path, &sb) ? sb.st_size : -1;
}

/* Overwrite `len` bytes at `offset` of tmpdir/name with `bytes` (or truncate to offset when
 * bytes is NULL). */
static void patch_file(const char *name, off_t offset, const void *bytes, size_t len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0);
    if (NULL == bytes) {
        CHECK(0 == ftruncate(fd, offset));
    } else {
        CHECK((ssize_t) len == pwrite(fd, bytes, len, offset));
    }
    close(fd);
}

static void clear_dir(void)
{
    ftrabit_store_entry_t *e;
    int n;
    CHECK(0 == ftrabit_store_list(tmpdir, &e, &n));
    for (int i = 0; i < n; i++) {
        ftrabit_store_remove(tmpdir, e[i].name);
    }
    free(e);
}

/* ---- header codec --------------------------------------------------------------------- */

static void header_round_trip(void)
{
    unsigned char buf[FTRABIT_STORE_HEADER_BYTES];
    ftrabit_store_header_t h = sample_header(FTRABIT_STORE_LOCAL, 7, 3, 1234567), back;
    ftrabit_store_header_encode(&h, buf);
    CHECK(FTRABIT_STORE_OK == ftrabit_store_header_decode(buf, sizeof(buf), &back));
    CHECK(back.kind == h.kind && back.owner == 3 && back.nranks == 4 && back.version == 7);
    CHECK(back.epoch == h.epoch && back.payload_size == 1234567 && back.payload_crc == 0xdeadbeef);
    CHECK(0 == strcmp(back.program, "ftr_kmeans"));
    /* little-endian at fixed offsets: the version at 28 */
    CHECK(7 == buf[28] && 0 == buf[29] && 0 == buf[30] && 0 == buf[31]);
}

/* Any one byte changed is never taken for a header: the checksum covers all but itself,
 * and a changed checksum no longer matches. */
static void header_every_byte_flip_detected(void)
{
    unsigned char buf[FTRABIT_STORE_HEADER_BYTES];
    ftrabit_store_header_t h = sample_header(FTRABIT_STORE_GLOBAL, 9, 0, 42), back;
    ftrabit_store_header_encode(&h, buf);
    for (int i = 0; i < FTRABIT_STORE_HEADER_BYTES; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            buf[i] ^= (unsigned char) (1u << bit);
            CHECK(FTRABIT_STORE_OK != ftrabit_store_header_decode(buf, sizeof(buf), &back));
            buf[i] ^= (unsigned char) (1u << bit);
        }
    }
    CHECK(FTRABIT_STORE_OK == ftrabit_store_header_decode(buf, sizeof(buf), &back));
}

static void header_short_and_foreign(void)
{
    unsigned char buf[FTRABIT_STORE_HEADER_BYTES];
    ftrabit_store_header_t h = sample_header(FTRABIT_STORE_LOCAL, 1, 0, 8), back;
    ftrabit_store_header_encode(&h, buf);
    CHECK(FTRABIT_STORE_NOT_OURS == ftrabit_store_header_decode(buf, 3, &back));
    CHECK(FTRABIT_STORE_TORN == ftrabit_store_header_decode(buf, 100, &back));
    CHECK(FTRABIT_STORE_TORN == ftrabit_store_header_decode(buf, sizeof(buf) - 1, &back));
    memcpy(buf, "GARBAGE!", 8);
    CHECK(FTRABIT_STORE_NOT_OURS == ftrabit_store_header_decode(buf, sizeof(buf), &back));
    /* a later format: said so, not taken for damage */
    ftrabit_store_header_encode(&h, buf);
    buf[8] = 2;
    CHECK(FTRABIT_STORE_FORMAT_UNKNOWN == ftrabit_store_header_decode(buf, sizeof(buf), &back));
}

/* Fields a checksum-correct header may still not hold. */
static void header_bad_fields_refused(void)
{
    unsigned char buf[FTRABIT_STORE_HEADER_BYTES];
    ftrabit_store_header_t back, bad[] = {
        sample_header(FTRABIT_STORE_LOCAL, 0, 0, 8),  /* version 0 */
        sample_header(FTRABIT_STORE_LOCAL, 1, 4, 8),  /* owner beyond the ranks */
        sample_header(FTRABIT_STORE_GLOBAL, 1, 1, 8), /* a global with an owner */
        sample_header(3, 1, 0, 8),                    /* unknown kind */
    };
    bad[3].kind = 3;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ftrabit_store_header_encode(&bad[i], buf);
        CHECK(FTRABIT_STORE_DAMAGED == ftrabit_store_header_decode(buf, sizeof(buf), &back));
    }
}

/* ---- names ---------------------------------------------------------------------------- */

static void names_round_trip_and_strict(void)
{
    char name[FTRABIT_STORE_NAME_MAX];
    uint32_t kind, version, owner;
    int tmp;

    ftrabit_store_name(FTRABIT_STORE_LOCAL, 4294967295u, 123456, name, sizeof(name));
    CHECK(0 == strcmp(name, "ftrabit-v4294967295-r123456.ckpt"));
    CHECK(ftrabit_store_parse_name(name, &kind, &version, &owner, &tmp));
    CHECK(FTRABIT_STORE_LOCAL == kind && 4294967295u == version && 123456 == owner && !tmp);
    ftrabit_store_name(FTRABIT_STORE_GLOBAL, 12, 99, name, sizeof(name));
    CHECK(0 == strcmp(name, "ftrabit-v12-global.ckpt"));
    CHECK(ftrabit_store_parse_name(name, &kind, &version, &owner, &tmp));
    CHECK(FTRABIT_STORE_GLOBAL == kind && 12 == version && 0 == owner && !tmp);
    CHECK(ftrabit_store_parse_name("ftrabit-v3-r1.ckpt.tmp-h1-77", &kind, &version, &owner, &tmp));
    CHECK(tmp && 3 == version && 1 == owner);
    const char *refused[] = {"ftrabit-v0-r1.ckpt",          "ftrabit-v01-r1.ckpt",
                             "ftrabit-v1-r.ckpt",           "ftrabit-v1-r1.ckp",
                             "ftrabit-v1-r1.ckpt~",         "ftrabit-v4294967296-r1.ckpt",
                             "ftrabit-v1-local.ckpt",       "xftrabit-v1-r1.ckpt",
                             "ftrabit-v1-globalx.ckpt",     "ftrabit-v-r1.ckpt",
                             "ftrabit-v12345678901-r1.ckpt", ""};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        CHECK(!ftrabit_store_parse_name(refused[i], &kind, &version, &owner, &tmp));
    }
}

/* ---- files ----------------------------------------------------------------------------- */

static void write_read_round_trip(void)
{
    size_t sizes[] = {0, 1, 4099, ((size_t) 9 << 20) + 3}; /* the last spans two chunks */
    ftrabit_store_write_options_t opt = {.tmp_tag = "unit-1"};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        unsigned char *data = malloc(sizes[s] + 1);
        uint64_t rng = 0x1234 + s;
        for (size_t i = 0; i < sizes[s]; i++) {
            data[i] = (unsigned char) unit_xorshift64s(&rng);
        }
        ftrabit_store_header_t h = sample_header(FTRABIT_STORE_LOCAL, 5, 2, sizes[s]), back;
        ftrabit_store_error_t e;
        size_t bytes;
        void *payload;
        CHECK(0 == ftrabit_store_write(tmpdir, &h, data, &opt, &bytes, &e));
        CHECK(bytes == sizes[s] + FTRABIT_STORE_HEADER_BYTES);
        CHECK((off_t) bytes == file_size("ftrabit-v5-r2.ckpt"));
        CHECK(FTRABIT_STORE_OK == ftrabit_store_read_header(tmpdir, "ftrabit-v5-r2.ckpt", &back));
        CHECK(FTRABIT_STORE_OK == ftrabit_store_read(tmpdir, "ftrabit-v5-r2.ckpt", &back, &payload));
        CHECK(back.payload_size == sizes[s] && 0 == memcmp(payload, data, sizes[s]));
        CHECK(!file_exists("ftrabit-v5-r2.ckpt.tmp-unit-1"));
        free(payload);
        free(data);
    }
    clear_dir();
}

static void torn_and_corrupt_files_detected(void)
{
    unsigned char data[1000];
    memset(data, 0x5a, sizeof(data));
    ftrabit_store_header_t h = sample_header(FTRABIT_STORE_GLOBAL, 3, 0, sizeof(data)), back;
    ftrabit_store_error_t e;
    size_t bytes;
    void *payload;
    const char *name = "ftrabit-v3-global.ckpt";
    unsigned char flip = 0xa5, zero = 0;

    CHECK(0 == ftrabit_store_write(tmpdir, &h, data, NULL, &bytes, &e));
    patch_file(name, FTRABIT_STORE_HEADER_BYTES + 500, &flip, 1);
    CHECK(FTRABIT_STORE_OK == ftrabit_store_read_header(tmpdir, name, &back)); /* header fine */
    CHECK(FTRABIT_STORE_CORRUPT == ftrabit_store_read(tmpdir, name, &back, &payload));
    CHECK(NULL == payload);
    CHECK(0 == ftrabit_store_write(tmpdir, &h, data, NULL, &bytes, &e));
    patch_file(name, FTRABIT_STORE_HEADER_BYTES + 999, NULL, 0); /* a byte short */
    CHECK(FTRABIT_STORE_TORN == ftrabit_store_read_header(tmpdir, name, &back));
    CHECK(FTRABIT_STORE_TORN == ftrabit_store_read(tmpdir, name, &back, &payload));
    CHECK(0 == ftrabit_store_write(tmpdir, &h, data, NULL, &bytes, &e));
    patch_file(name, FTRABIT_STORE_HEADER_BYTES + 1000, &zero, 1); /* a byte too many */
    CHECK(FTRABIT_STORE_TORN == ftrabit_store_read(tmpdir, name, &back, &payload));
    CHECK(0 == ftrabit_store_write(tmpdir, &h, data, NULL, &bytes, &e));
    patch_file(name, 30, &flip, 1); /* the version's bytes */
    CHECK(FTRABIT_STORE_DAMAGED == ftrabit_store_read(tmpdir, name, &back, &payload));
    patch_file(name, 0, NULL, 0); /* empty */
    CHECK(FTRABIT_STORE_NOT_OURS == ftrabit_store_read(tmpdir, name, &back, &payload));
    CHECK(FTRABIT_STORE_IO == ftrabit_store_read(tmpdir, "ftrabit-v4-global.ckpt", &back, &payload));
    clear_dir();
}

static void die_midway(const char *tmp_path, void *arg)
{
    (void) tmp_path;
    (void) arg;
    _exit(7);
}

/* A writer killed in the middle of a file leaves its temporary file, never the final name;
 * the previous version of the same name stays whole. */
static void writer_dying_mid_file_leaves_previous(void)
{
    unsigned char old[64], fresh[4096];
    memset(old, 1, sizeof(old));
    memset(fresh, 2, sizeof(fresh));
    ftrabit_store_header_t h = sample_header(FTRABIT_STORE_LOCAL, 6, 1, sizeof(old)), back;
    ftrabit_store_error_t e;
    size_t bytes;
    void *payload;

    CHECK(0 == ftrabit_store_write(tmpdir, &h, old, NULL, &bytes, &e));
    fflush(stdout);
    pid_t child = fork();
    if (0 == child) {
        ftrabit_store_header_t again = sample_header(FTRABIT_STORE_LOCAL, 6, 1, sizeof(fresh));
        ftrabit_store_write_options_t opt = {.tmp_tag = "h1-99", .half_written = die_midway};
        ftrabit_store_write(tmpdir, &again, fresh, &opt, &bytes, &e);
        _exit(0);
    }
    int status;
    CHECK(child == waitpid(child, &status, 0));
    CHECK(WIFEXITED(status) && 7 == WEXITSTATUS(status));
    CHECK(FTRABIT_STORE_HEADER_BYTES + 2048 == file_size("ftrabit-v6-r1.ckpt.tmp-h1-99"));
    CHECK(FTRABIT_STORE_OK == ftrabit_store_read(tmpdir, "ftrabit-v6-r1.ckpt", &back, &payload));
    CHECK(back.payload_size == sizeof(old) && 0 == memcmp(payload, old, sizeof(old)));
    free(payload);
    /* the temporary file is listed as such, and a restart's clean-up removes it */
    ftrabit_store_entry_t *list;
    int n, temporaries = 0;
    CHECK(0 == ftrabit_store_list(tmpdir, &list, &n));
    for (int i = 0; i < n; i++) {
        temporaries += list[i].temporary;
    }
    free(list);
    CHECK(2 == n && 1 == temporaries);
    CHECK(0 == ftrabit_store_remove_above(tmpdir, 6));
    CHECK(!file_exists("ftrabit-v6-r1.ckpt.tmp-h1-99") && file_exists("ftrabit-v6-r1.ckpt"));
    clear_dir();
}

static void write_errors_name_the_path(void)
{
    char missing[512];
    unsigned char data[8] = {0};
    ftrabit_store_header_t h = sample_header(FTRABIT_STORE_LOCAL, 1, 0, sizeof(data));
    ftrabit_store_error_t e;
    size_t bytes;

    snprintf(missing, sizeof(missing), "%s/no-such-dir", tmpdir);
    CHECK(-1 == ftrabit_store_write(missing, &h, data, NULL, &bytes, &e));
    CHECK(ENOENT == e.err && 0 == strcmp(e.step, "open") && 0 == bytes);
    CHECK(NULL != strstr(e.path, "no-such-dir/ftrabit-v1-r0.ckpt.tmp-"));
}

static void listing_sees_only_ours(void)
{
    const char *names[] = {"ftrabit-v1-r0.ckpt", "ftrabit-v1-global.ckpt", "notes.txt",
                           "ftrabit-v2-r0.ckpt.tmp-x-1", "ftrabit-v1-r0.ckpt.bak"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
        close(open(path, O_WRONLY | O_CREAT, 0644));
    }
    ftrabit_store_entry_t *list;
    int n;
    CHECK(0 == ftrabit_store_list(tmpdir, &list, &n));
    CHECK(3 == n);
    free(list);
    clear_dir();
    CHECK(file_exists("notes.txt") && file_exists("ftrabit-v1-r0.ckpt.bak"));
    char path[512];
    snprintf(path, sizeof(path), "%s/notes.txt", tmpdir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/ftrabit-v1-r0.ckpt.bak", tmpdir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/absent", tmpdir);
    CHECK(0 == ftrabit_store_list(path, &list, &n) && 0 == n);
}

/* ---- which directory a rank writes to -------------------------------------------------- */

static void groups_shared_and_node_local(void)
{
    int all[6] = {1, 1, 1, 1, 1, 1}, only0[6] = {1, 0, 0, 0, 0, 0}, none[6] = {0};
    uint64_t hosts[6] = {70, 70, 12, 12, 5, 5};
    int leader[6];

    CHECK(0 == ftrabit_store_dir_groups(6, all, hosts, leader));
    for (int r = 0; r < 6; r++) {
        CHECK(0 == leader[r]);
    }
    /* node-local: rank 1 shares rank 0's node, so it sees rank 0's marker */
    only0[1] = 1;
    CHECK(0 == ftrabit_store_dir_groups(6, only0, hosts, leader));
    CHECK(0 == leader[0] && 0 == leader[1] && 2 == leader[2] && 2 == leader[3]);
    CHECK(4 == leader[4] && 4 == leader[5]);
    /* rank 0 could not leave its marker: grouped by node */
    uint64_t interleaved[6] = {1, 2, 3, 1, 2, 3};
    CHECK(0 == ftrabit_store_dir_groups(6, none, interleaved, leader));
    CHECK(0 == leader[3] && 1 == leader[4] && 2 == leader[5] && 2 == leader[2]);
}

static void each_directory_gets_one_copy_of_each_local_state(void)
{
    int leader_local[6] = {0, 0, 2, 2, 4, 4}, leader_shared[6] = {0};
    /* node-local, 2 replicas: rank 4's state in its own directory (by 4) and in rank 0's
     * (by 0, the first successor elsewhere; 5 shares 4's directory) */
    CHECK(ftrabit_store_writes_local(6, 2, leader_local, 4, 4));
    CHECK(!ftrabit_store_writes_local(6, 2, leader_local, 5, 4));
    CHECK(ftrabit_store_writes_local(6, 2, leader_local, 0, 4));
    CHECK(ftrabit_store_writes_local(6, 2, leader_local, 0, 5));
    CHECK(!ftrabit_store_writes_local(6, 2, leader_local, 1, 5)); /* 0 wrote it there */
    CHECK(!ftrabit_store_writes_local(6, 2, leader_local, 1, 4)); /* not a holder of 4 */
    /* shared: each state once, by its owner */
    for (int r = 0; r < 6; r++) {
        for (int o = 0; o < 6; o++) {
            CHECK(ftrabit_store_writes_local(6, 2, leader_shared, r, o) == (r == o));
        }
    }
    /* more replicas than ranks: every other rank holds one */
    int leader_each[3] = {0, 1, 2};
    CHECK(ftrabit_store_writes_local(3, 5, leader_each, 1, 2));
    CHECK(ftrabit_store_writes_local(3, 5, leader_each, 0, 2));
}

/* ---- the version to resume -------------------------------------------------------------- */

static void choose_newest_complete(void)
{
    uint64_t avail[3], emax[FTRABIT_STORE_WINDOW] = {0}, emin_not[FTRABIT_STORE_WINDOW];
    ftrabit_store_choice_t c;
    for (int i = 0; i < FTRABIT_STORE_WINDOW; i++) {
        emax[i] = 77;
        emin_not[i] = ~(uint64_t) 77;
    }
    /* top 10: versions 10 (bit 0), 9, 8 */
    avail[0] = avail[2] = 0x7;
    avail[1] = 0x6; /* rank 1 has no copy of 10 */
    ftrabit_store_choose(10, avail, 3, 0x7, emax, emin_not, &c);
    CHECK(9 == c.version && 0x6 == c.complete && 1 == c.top_missing);
    ftrabit_store_choose(10, avail, 3, 0x5, emax, emin_not, &c); /* no global of 9 */
    CHECK(8 == c.version && 0x4 == c.complete && 1 == c.top_missing);
    avail[1] = 0x7;
    ftrabit_store_choose(10, avail, 3, 0x6, emax, emin_not, &c);
    CHECK(9 == c.version && FTRABIT_STORE_NO_GLOBAL == c.top_missing);
    emin_not[0] = ~(uint64_t) 76; /* version 10 from two runs */
    ftrabit_store_choose(10, avail, 3, 0x7, emax, emin_not, &c);
    CHECK(9 == c.version && FTRABIT_STORE_MIXED_RUNS == c.top_missing);
    /* nothing complete; and a window reaching below version 1 */
    avail[2] = 0;
    ftrabit_store_choose(2, avail, 3, ~(uint64_t) 0, emax, emin_not, &c);
    CHECK(0 == c.version && 0 == c.complete && 2 == c.top_missing);
    ftrabit_store_choose(0, avail, 3, 0, emax, emin_not, &c);
    CHECK(0 == c.version);
    CHECK(0 == ftrabit_store_bit(70, 6) && ((uint64_t) 1 << 63) == ftrabit_store_bit(70, 7));
    CHECK(0 == ftrabit_store_bit(3, 4) && 0 == ftrabit_store_bit(3, 0));
}

/* ---- which versions are kept --------------------------------------------------------------- */

static void history_keeps_k_complete_and_newer(void)
{
    ftrabit_store_history_t h = {0};
    CHECK(ftrabit_store_history_keeps(&h, 2, 1)); /* nothing known: keep all */
    ftrabit_store_history_mark(&h, 3);
    CHECK(ftrabit_store_history_keeps(&h, 2, 1) && ftrabit_store_history_keeps(&h, 2, 2));
    ftrabit_store_history_mark(&h, 5); /* 4 never completed */
    CHECK(ftrabit_store_history_keeps(&h, 2, 6) && ftrabit_store_history_keeps(&h, 2, 5));
    CHECK(!ftrabit_store_history_keeps(&h, 2, 4) && ftrabit_store_history_keeps(&h, 2, 3));
    CHECK(!ftrabit_store_history_keeps(&h, 2, 2) && !ftrabit_store_history_keeps(&h, 2, 1));
    CHECK(ftrabit_store_history_keeps(&h, 3, 1)); /* only 2 known for keep 3 */
    ftrabit_store_history_mark(&h, 6);
    CHECK(!ftrabit_store_history_keeps(&h, 2, 3) && ftrabit_store_history_keeps(&h, 1, 6));
    CHECK(!ftrabit_store_history_keeps(&h, 1, 5));
    ftrabit_store_history_mark(&h, 200); /* far ahead: the window starts again */
    CHECK(1 == __builtin_popcountll(h.complete) && 200 == h.top);
    ftrabit_store_history_mark(&h, 199);
    CHECK(!ftrabit_store_history_keeps(&h, 2, 6) && ftrabit_store_history_keeps(&h, 2, 199));
}

static void write_version(uint32_t version, int nranks)
{
    unsigned char data[16] = {0};
    ftrabit_store_error_t e;
    size_t bytes;
    ftrabit_store_header_t g = sample_header(FTRABIT_STORE_GLOBAL, version, 0, sizeof(data));
    CHECK(0 == ftrabit_store_write(tmpdir, &g, data, NULL, &bytes, &e));
    for (int r = 0; r < nranks; r++) {
        ftrabit_store_header_t l = sample_header(FTRABIT_STORE_LOCAL, version, (uint32_t) r,
                                                 sizeof(data));
        CHECK(0 == ftrabit_store_write(tmpdir, &l, data, NULL, &bytes, &e));
    }
}

static void prune_removes_what_is_not_kept(void)
{
    ftrabit_store_history_t h = {0};
    for (uint32_t v = 1; v <= 5; v++) {
        write_version(v, 2);
    }
    patch_file("ftrabit-v5-r1.ckpt", 0, NULL, 0);
    char path[512];
    snprintf(path, sizeof(path), "%s/ftrabit-v3-r1.ckpt.tmp-dead-1", tmpdir);
    close(open(path, O_WRONLY | O_CREAT, 0644));
    snprintf(path, sizeof(path), "%s/ftrabit-v5-r0.ckpt.tmp-live-2", tmpdir);
    close(open(path, O_WRONLY | O_CREAT, 0644));
    ftrabit_store_history_mark(&h, 3);
    ftrabit_store_history_mark(&h, 4);
    CHECK(0 == ftrabit_store_prune(tmpdir, &h, 2, 5));
    CHECK(!file_exists("ftrabit-v1-global.ckpt") && !file_exists("ftrabit-v2-r0.ckpt"));
    CHECK(!file_exists("ftrabit-v3-r1.ckpt.tmp-dead-1"));
    CHECK(file_exists("ftrabit-v3-global.ckpt") && file_exists("ftrabit-v4-r1.ckpt"));
    CHECK(file_exists("ftrabit-v5-r1.ckpt") && file_exists("ftrabit-v5-r0.ckpt.tmp-live-2"));
    /* a restart that resumes version 4 removes everything above it, and every temporary */
    CHECK(0 == ftrabit_store_remove_above(tmpdir, 4));
    CHECK(!file_exists("ftrabit-v5-r1.ckpt") && !file_exists("ftrabit-v5-r0.ckpt.tmp-live-2"));
    CHECK(file_exists("ftrabit-v4-global.ckpt"));
    clear_dir();
}

/* ---- the writer thread ------------------------------------------------------------------- */

static void writer_thread_writes_and_reports(void)
{
    static unsigned char global[100000], local[10];
    ftrabit_store_writer_t *w = ftrabit_store_writer_new();
    ftrabit_store_result_t res;
    memset(global, 3, sizeof(global));
    memset(local, 4, sizeof(local));

    for (uint32_t v = 1; v <= 4; v++) {
        ftrabit_store_job_t job = {.version = v, .npieces = 2, .prune = 1, .keep = 2};
        snprintf(job.dir, sizeof(job.dir), "%s", tmpdir);
        snprintf(job.who, sizeof(job.who), "unit");
        snprintf(job.tmp_tag, sizeof(job.tmp_tag), "unit-%d", (int) getpid());
        job.pieces = calloc(2, sizeof(*job.pieces));
        job.pieces[0].h = sample_header(FTRABIT_STORE_GLOBAL, v, 0, sizeof(global));
        job.pieces[0].payload = global;
        job.pieces[1].h = sample_header(FTRABIT_STORE_LOCAL, v, 1, sizeof(local));
        job.pieces[1].payload = local;
        for (uint32_t c = 1; c < v; c++) {
            ftrabit_store_history_mark(&job.history, c); /* all before it completed */
        }
        CHECK(0 == ftrabit_store_writer_submit(w, &job));
        ftrabit_store_writer_wait(w, NULL); /* over, its outcome kept for the next wait */
        CHECK(!ftrabit_store_writer_busy(w));
        ftrabit_store_writer_wait(w, &res);
        CHECK(res.ran && !res.failed && v == res.version);
        CHECK(res.bytes == sizeof(global) + sizeof(local) + 2 * FTRABIT_STORE_HEADER_BYTES);
        ftrabit_store_writer_wait(w, &res);
        CHECK(!res.ran); /* reported once */
    }
    /* keep 2 of the complete ones (3 and 2 when 4 was written) and 4 itself */
    CHECK(!file_exists("ftrabit-v1-global.ckpt") && file_exists("ftrabit-v2-global.ckpt"));
    CHECK(file_exists("ftrabit-v4-r1.ckpt") && !ftrabit_store_writer_busy(w));

    /* a failure is reported with its path, and the job goes no further */
    ftrabit_store_job_t bad = {.version = 5, .npieces = 1};
    snprintf(bad.dir, sizeof(bad.dir), "%s/absent", tmpdir);
    snprintf(bad.who, sizeof(bad.who), "unit (an expected failure)");
    bad.pieces = calloc(1, sizeof(*bad.pieces));
    bad.pieces[0].h = sample_header(FTRABIT_STORE_LOCAL, 5, 1, sizeof(local));
    bad.pieces[0].payload = local;
    CHECK(0 == ftrabit_store_writer_submit(w, &bad));
    ftrabit_store_writer_wait(w, &res);
    CHECK(res.ran && res.failed && ENOENT == res.error.err && 0 == res.bytes);
    CHECK(NULL != strstr(res.error.path, "absent/ftrabit-v5-r1.ckpt"));
    ftrabit_store_writer_free(w);
    ftrabit_store_writer_free(NULL);
    clear_dir();
}

int main(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "%s/test_ftrabit_store.XXXXXX",
             NULL != getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (NULL == mkdtemp(tmpdir)) {
        printf("not ok setup: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    RUN(header_round_trip);
    RUN(header_every_byte_flip_detected);
    RUN(header_short_and_foreign);
    RUN(header_bad_fields_refused);
    RUN(names_round_trip_and_strict);
    RUN(write_read_round_trip);
    RUN(torn_and_corrupt_files_detected);
    RUN(writer_dying_mid_file_leaves_previous);
    RUN(write_errors_name_the_path);
    RUN(listing_sees_only_ours);
    RUN(groups_shared_and_node_local);
    RUN(each_directory_gets_one_copy_of_each_local_state);
    RUN(choose_newest_complete);
    RUN(history_keeps_k_complete_and_newer);
    RUN(prune_removes_what_is_not_kept);
    RUN(writer_thread_writes_and_reports);
    rmdir(tmpdir);
    UNIT_EXIT();
}
