/*
 * Unit tests of pml/dr2's CRC32C: published check values, incremental use, every
 * implementation against the portable one over many lengths and alignments, and the fused
 * copy (exact copy, same CRC, nothing written outside the destination).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/pml/dr2/pml_dr2_crc.h"
#include "unit.h"

/* xorshift64*: reproducible test data without libc's rand() quality or state. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng_next(void)
{
    return unit_xorshift64s(&rng_state);
}

static void rng_fill(unsigned char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = (unsigned char) rng_next();
    }
}

/* (implementations this CPU lacks are skipped: pml_dr2_crc32c_select refuses them) */
static const pml_dr2_crc32c_impl_t all_impls[] = {
    PML_DR2_CRC32C_PORTABLE, PML_DR2_CRC32C_SSE42_1WAY, PML_DR2_CRC32C_SSE42,
    PML_DR2_CRC32C_VPCLMUL};
#define NUM_IMPLS (sizeof(all_impls) / sizeof(all_impls[0]))

/* Bit-at-a-time CRC32C straight from the definition: the reference for everything else. */
static uint32_t reference_crc32c(const unsigned char *buf, size_t len)
{
    uint32_t crc = 0xFFFFFFFFu;

    for (size_t i = 0; i < len; i++) {
        crc ^= buf[i];
        for (int bit = 0; bit < 8; bit++) {
            crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        }
    }
    return ~crc;
}

static void auto_selection_is_available(void)
{
    pml_dr2_crc32c_impl_t impl = pml_dr2_crc32c_selected();

    CHECK(impl == PML_DR2_CRC32C_PORTABLE || impl == PML_DR2_CRC32C_SSE42
          || impl == PML_DR2_CRC32C_VPCLMUL);
    CHECK(pml_dr2_crc32c_select(PML_DR2_CRC32C_PORTABLE) == 0);
    CHECK(pml_dr2_crc32c_selected() == PML_DR2_CRC32C_PORTABLE);
    CHECK(pml_dr2_crc32c_select((pml_dr2_crc32c_impl_t) 99) == -1);
    CHECK(pml_dr2_crc32c_selected() == PML_DR2_CRC32C_PORTABLE);
    CHECK(pml_dr2_crc32c_select(PML_DR2_CRC32C_AUTO) == 0);
    CHECK(pml_dr2_crc32c_selected() == impl);
    printf("# crc32c implementation: %s\n", pml_dr2_crc32c_impl_name(impl));
}

/* Check value from the CRC catalogue and the iSCSI vectors of RFC 3720, appendix B.4. */
static void known_vectors(void)
{
    unsigned char zeros[32], ones[32], ascending[32], descending[32], copy[32];

    memset(zeros, 0, sizeof(zeros));
    memset(ones, 0xFF, sizeof(ones));
    for (int i = 0; i < 32; i++) {
        ascending[i] = (unsigned char) i;
        descending[i] = (unsigned char) (31 - i);
    }
    for (size_t k = 0; k < NUM_IMPLS; k++) {
        if (pml_dr2_crc32c_select(all_impls[k]) != 0) {
            continue;
        }
        CHECK(pml_dr2_crc32c(0, "123456789", 9) == 0xE3069283u);
        CHECK(pml_dr2_crc32c(0, zeros, 32) == 0x8A9136AAu);
        CHECK(pml_dr2_crc32c(0, ones, 32) == 0x62A8AB43u);
        CHECK(pml_dr2_crc32c(0, ascending, 32) == 0x46DD794Eu);
        CHECK(pml_dr2_crc32c(0, descending, 32) == 0x113FDB5Cu);
        CHECK(pml_dr2_crc32c_copy(0, copy, ascending, 32) == 0x46DD794Eu);
        CHECK(memcmp(copy, ascending, 32) == 0);
        CHECK(pml_dr2_crc32c(0, NULL, 0) == 0);
        CHECK(pml_dr2_crc32c(0x12345678u, NULL, 0) == 0x12345678u);
        CHECK(pml_dr2_crc32c_copy(0x12345678u, NULL, NULL, 0) == 0x12345678u);
    }
    pml_dr2_crc32c_select(PML_DR2_CRC32C_AUTO);
}

/* The reference, the portable tables and the hardware agree on every short length (the
 * head/tail paths) and on a few lengths around the interleaving block sizes. */
static void matches_bitwise_reference(void)
{
    enum { MAX = 3 * 8192 + 3 * 256 + 3 * 64 + 63 };
    unsigned char *buf = malloc(MAX);
    /* around each stream-block size (3 x 64, 3 x 256, 3 x 8192), the alignment cut, the
     * VPCLMULQDQ step (256, folds from 512) and its hybrid block (7680) */
    const size_t lengths[] = {0,    1,    7,    8,    9,         191,       192,
                              198,  199,  200,  511,  512,       767,       768,
                              769,  960,  1000, 7679, 7680,      7681,      2 * 7680 + 255,
                              3 * 7680 + 511,   3 * 8192 - 1,    3 * 8192,  MAX};

    rng_fill(buf, MAX);
    for (size_t k = 0; k < NUM_IMPLS; k++) {
        if (pml_dr2_crc32c_select(all_impls[k]) != 0) {
            continue;
        }
        for (size_t len = 0; len <= 300; len++) {
            CHECK(pml_dr2_crc32c(0, buf + 1, len) == reference_crc32c(buf + 1, len));
        }
        for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
            CHECK(pml_dr2_crc32c(0, buf, lengths[i]) == reference_crc32c(buf, lengths[i]));
        }
    }
    pml_dr2_crc32c_select(PML_DR2_CRC32C_AUTO);
    free(buf);
}

/* Continuing a CRC over pieces gives the CRC of the whole, whatever the cut points. */
static void incremental_equals_one_shot(void)
{
    enum { MAX = 100000 };
    unsigned char *buf = malloc(MAX);

    rng_fill(buf, MAX);
    for (size_t k = 0; k < NUM_IMPLS; k++) {
        if (pml_dr2_crc32c_select(all_impls[k]) != 0) {
            continue;
        }
        for (int trial = 0; trial < 200; trial++) {
            size_t len = rng_next() % MAX;
            uint32_t whole = pml_dr2_crc32c(0, buf, len);
            uint32_t crc = 0;
            size_t done = 0;

            while (done < len) {
                /* mostly small pieces, sometimes big ones */
                size_t piece = (rng_next() & 1) ? rng_next() % 64 : rng_next() % (len - done + 1);

                if (piece > len - done) {
                    piece = len - done;
                }
                crc = pml_dr2_crc32c(crc, buf + done, piece);
                done += piece;
            }
            CHECK(crc == whole);
        }
    }
    pml_dr2_crc32c_select(PML_DR2_CRC32C_AUTO);
    free(buf);
}

static uint32_t crc_with(pml_dr2_crc32c_impl_t impl, uint32_t seed, const void *buf, size_t len)
{
    pml_dr2_crc32c_select(impl);
    return pml_dr2_crc32c(seed, buf, len);
}

/* Hardware == portable for random lengths 0..100000 at every alignment 0..15, seeded both
 * from the start and from the middle of a running CRC. */
static void hardware_equals_portable(void)
{
    enum { MAX = 100000 };
    unsigned char *buf = malloc(MAX + 16);
    int vpclmul = 0 == pml_dr2_crc32c_select(PML_DR2_CRC32C_VPCLMUL);

    printf("# vpclmul: %s\n", vpclmul ? "checked" : "not on this CPU, skipped");

    if (pml_dr2_crc32c_select(PML_DR2_CRC32C_SSE42) != 0) {
        printf("# SSE4.2 implementation not available: hardware comparison skipped\n");
        free(buf);
        return;
    }
    rng_fill(buf, MAX + 16);
    for (int trial = 0; trial < 400; trial++) {
        size_t len = trial < 40 ? (size_t) trial * 2501 : rng_next() % (MAX + 1);
        uint32_t seed = (trial & 1) ? (uint32_t) rng_next() : 0;

        for (size_t align = 0; align < 16; align++) {
            uint32_t portable = crc_with(PML_DR2_CRC32C_PORTABLE, seed, buf + align, len);

            CHECK(crc_with(PML_DR2_CRC32C_SSE42, seed, buf + align, len) == portable);
            CHECK(crc_with(PML_DR2_CRC32C_SSE42_1WAY, seed, buf + align, len) == portable);
            CHECK(!vpclmul || crc_with(PML_DR2_CRC32C_VPCLMUL, seed, buf + align, len) == portable);
        }
    }
    pml_dr2_crc32c_select(PML_DR2_CRC32C_AUTO);
    free(buf);
}

/* The fused copy writes exactly dst[0..len-1] with src's bytes and returns the CRC that
 * pml_dr2_crc32c gives for them: guard bytes around dst must survive, for every source and
 * destination alignment. */
static void fused_copy_is_exact(void)
{
    enum { MAX = 70000, GUARD = 64 };
    unsigned char *src = malloc(MAX + 16);
    unsigned char *dst = malloc(MAX + 16 + 2 * GUARD);

    rng_fill(src, MAX + 16);
    for (size_t k = 0; k < NUM_IMPLS; k++) {
        if (pml_dr2_crc32c_select(all_impls[k]) != 0) {
            continue;
        }
        for (int trial = 0; trial < 300; trial++) {
            size_t len = trial < 100 ? (size_t) trial : rng_next() % (MAX + 1);
            size_t salign = rng_next() % 16, dalign = rng_next() % 16;
            unsigned char *d = dst + GUARD + dalign;
            uint32_t seed = (uint32_t) rng_next();
            int guards_intact = 1;

            memset(dst, 0xA5, MAX + 16 + 2 * GUARD);
            CHECK(pml_dr2_crc32c_copy(seed, d, src + salign, len)
                  == pml_dr2_crc32c(seed, src + salign, len));
            CHECK(memcmp(d, src + salign, len) == 0);
            for (unsigned char *g = dst; g < d; g++) {
                guards_intact &= *g == 0xA5;
            }
            for (unsigned char *g = d + len; g < dst + MAX + 16 + 2 * GUARD; g++) {
                guards_intact &= *g == 0xA5;
            }
            CHECK(guards_intact);
        }
    }
    pml_dr2_crc32c_select(PML_DR2_CRC32C_AUTO);
    free(src);
    free(dst);
}

/* The header CRC equals the plain CRC of a copy whose checksum bytes (4..7) are zero, for
 * every implementation, at every header length and alignment, and leaves its input alone. */
static void header_crc_skips_its_own_field(void)
{
    enum { MAX = 96 };
    unsigned char buf[MAX + 8], before[MAX + 8], copy[MAX];

    for (size_t k = 0; k < NUM_IMPLS; k++) {
        if (pml_dr2_crc32c_select(all_impls[k]) != 0) {
            continue;
        }
        for (size_t align = 0; align < 8; align++) {
            for (size_t len = 8; len <= MAX; len++) {
                rng_fill(buf, sizeof(buf));
                memcpy(before, buf, sizeof(buf));
                memcpy(copy, buf + align, len);
                memset(copy + 4, 0, 4);
                CHECK(pml_dr2_crc32c_header(buf + align, len) == reference_crc32c(copy, len));
                CHECK(memcmp(buf, before, sizeof(buf)) == 0);
            }
        }
    }
    pml_dr2_crc32c_select(PML_DR2_CRC32C_AUTO);
}

/* A CRC32C detects every single-bit error: the property the wire format leans on. */
static void single_bit_errors_change_the_crc(void)
{
    enum { LEN = 4096 };
    unsigned char *buf = malloc(LEN);
    uint32_t good;

    rng_fill(buf, LEN);
    good = pml_dr2_crc32c(0, buf, LEN);
    for (size_t bit = 0; bit < LEN * 8; bit++) {
        buf[bit / 8] ^= (unsigned char) (1u << (bit % 8));
        CHECK(pml_dr2_crc32c(0, buf, LEN) != good);
        buf[bit / 8] ^= (unsigned char) (1u << (bit % 8));
    }
    free(buf);
}

/* The one-call header + payload checksum is the two-step one, for every implementation,
 * header length and payload length (empty, tails, interleaved blocks), copying or not. */
static void header_payload_equals_two_steps(void)
{
    static const size_t hdr_lens[] = {8, 20, 44, 63};
    static const size_t lens[] = {0, 1, 7, 8, 9, 100, 199, 200, 1024, 5000};
    unsigned char hdr[64], src[5000], dst[5001];

    rng_fill(hdr, sizeof(hdr));
    rng_fill(src, sizeof(src));
    for (size_t k = 0; k < sizeof(all_impls) / sizeof(all_impls[0]); k++) {
        if (pml_dr2_crc32c_select(all_impls[k]) != 0) {
            continue;
        }
        for (size_t h = 0; h < sizeof(hdr_lens) / sizeof(hdr_lens[0]); h++) {
            for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
                size_t n = lens[l];
                uint32_t expect = pml_dr2_crc32c(pml_dr2_crc32c_header(hdr, hdr_lens[h]), src, n);

                CHECK(pml_dr2_crc32c_header_payload(hdr, hdr_lens[h], NULL, src, n) == expect);
                memset(dst, 0xA5, sizeof(dst));
                CHECK(pml_dr2_crc32c_header_payload(hdr, hdr_lens[h], dst, src, n) == expect);
                CHECK(0 == memcmp(dst, src, n) && dst[n] == 0xA5); /* exactly n bytes */
            }
        }
    }
    pml_dr2_crc32c_select(PML_DR2_CRC32C_AUTO);
}

/* pml_dr2_checksum per BTL: auto checksums payloads where a wire or bus is crossed. */
static void checksum_policy_per_btl(void)
{
    CHECK(!pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_AUTO, "sm"));
    CHECK(!pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_AUTO, "self"));
    CHECK(!pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_AUTO, "vader"));
    CHECK(pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_AUTO, "tcp"));
    CHECK(pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_AUTO, "ofi"));
    CHECK(pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_AUTO, "usnic"));
    CHECK(pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_AUTO, "smcuda")); /* crosses PCIe */
    CHECK(pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_AUTO, "sm2")); /* not one we know */
    CHECK(pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_AUTO, NULL));
    CHECK(pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_CRC32C, "sm"));
    CHECK(pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_CRC32C, "self"));
    CHECK(pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_CRC32C, "tcp"));
    CHECK(!pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_NONE, "tcp"));
    CHECK(!pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_NONE, "ofi"));
    CHECK(!pml_dr2_checksum_on_btl(PML_DR2_CHECKSUM_NONE, "sm"));
}

int main(void)
{
    RUN(checksum_policy_per_btl);
    RUN(auto_selection_is_available);
    RUN(header_payload_equals_two_steps);
    RUN(known_vectors);
    RUN(matches_bitwise_reference);
    RUN(incremental_equals_one_shot);
    RUN(hardware_equals_portable);
    RUN(fused_copy_is_exact);
    RUN(header_crc_skips_its_own_field);
    RUN(single_bit_errors_change_the_crc);
    UNIT_EXIT();
}
