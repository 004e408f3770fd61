/*
 * ompi-resilience: pml/dr2 wire headers (pure logic; the layouts are in the header).
 *
 * Encoding and decoding share one field checker, so a sender can never produce a header
 * its peer would reject, and the receiver's checks are exactly the documented ones.
 */
#include "pml_dr2_hdr.h"

#include <string.h>

#include "pml_dr2_crc.h"

/* Common prefix. */
#define OFF_TYPE 0
#define OFF_FLAGS 1
#define OFF_VERSION 2
#define OFF_HDR_LEN 3
#define OFF_HDR_CRC 4

/* MATCH and RNDV. */
#define MATCH_OFF_CTX 8
#define MATCH_OFF_SRC 12
#define MATCH_OFF_TAG 16
#define MATCH_OFF_SEQ 20
#define MATCH_OFF_FRAG_COUNT 22
#define MATCH_OFF_RESERVED 23
#define MATCH_OFF_VFRAG 24
#define MATCH_OFF_FRAG_LEN 28
#define MATCH_OFF_MSG_LEN 32
#define MATCH_OFF_DATA_CRC 40
#define MATCH_OFF_EPOCH 44

/* FRAG. */
#define FRAG_OFF_MSG_ID 8
#define FRAG_OFF_VFRAG 12
#define FRAG_OFF_FRAG_INDEX 16
#define FRAG_OFF_FRAG_COUNT 17
#define FRAG_OFF_RESERVED 18
#define FRAG_OFF_FRAG_LEN 20
#define FRAG_OFF_OFFSET 24
#define FRAG_OFF_MSG_LEN 32
#define FRAG_OFF_DATA_CRC 40
#define FRAG_OFF_RESERVED2 44

/* ACK and NACK. */
#define ACK_OFF_VFRAG 8
#define ACK_OFF_MASK 12

/* EAGER. */
#define EAGER_OFF_CTX 8
#define EAGER_OFF_SRC 12
#define EAGER_OFF_TAG 16
#define EAGER_OFF_SEQ 20
#define EAGER_OFF_RESERVED 22
#define EAGER_OFF_VFRAG 24
#define EAGER_OFF_FRAG_LEN 28
#define EAGER_OFF_ACK_VFRAG 32
#define EAGER_OFF_ACK_MASK 36
#define EAGER_OFF_EPOCH 44

/* TINY. */
#define TINY_OFF_VFRAG 1
#define TINY_OFF_CTX 8 /* then src, tag, seq: 16 bits each (encode_short_envelope) */

/* FROM. */
#define FROM_OFF_JOBID 8
#define FROM_OFF_VPID 12

/* LOCAL. */
#define LOCAL_OFF_RESERVED1 1
#define LOCAL_OFF_CTX 2 /* then src, tag, seq: 16 bits each */
#define LOCAL_OFF_RESERVED2 10

typedef struct {
    uint8_t len;   /* header bytes on the wire */
    uint8_t flags; /* flags the type may carry */
} hdr_type_info_t;

#define DATA_FLAGS (PML_DR2_HDR_FLAG_RETRANSMIT | PML_DR2_HDR_FLAG_ACK_NOW | PML_DR2_HDR_FLAG_NO_DATA_CRC)

static const hdr_type_info_t type_info[] = {
    [PML_DR2_HDR_MATCH] = {PML_DR2_HDR_MATCH_LEN, DATA_FLAGS | PML_DR2_HDR_FLAG_SYNC},
    [PML_DR2_HDR_RNDV] = {PML_DR2_HDR_MATCH_LEN, DATA_FLAGS | PML_DR2_HDR_FLAG_SYNC},
    [PML_DR2_HDR_FRAG] = {PML_DR2_HDR_FRAG_LEN, DATA_FLAGS},
    [PML_DR2_HDR_ACK] = {PML_DR2_HDR_ACK_LEN, PML_DR2_HDR_FLAG_MATCHED | PML_DR2_HDR_FLAG_REVOKED
                                                  | PML_DR2_HDR_FLAG_PROBE
                                                  | PML_DR2_HDR_FLAG_PROBE_REPLY},
    [PML_DR2_HDR_NACK] = {PML_DR2_HDR_ACK_LEN, 0},
    /* not NO_DATA_CRC: EAGER's one checksum always covers its payload (pml_dr2_hdr.h) */
    [PML_DR2_HDR_EAGER] = {PML_DR2_HDR_EAGER_LEN,
                           (DATA_FLAGS & ~PML_DR2_HDR_FLAG_NO_DATA_CRC) | PML_DR2_HDR_FLAG_MATCHED},
};

/* An ACK is an acknowledgement (its own flags), a probe or a probe's answer: a probe flag
 * comes alone. */
static inline int ack_flags_combine(uint8_t flags)
{
    uint8_t probe = flags & (PML_DR2_HDR_FLAG_PROBE | PML_DR2_HDR_FLAG_PROBE_REPLY);

    return 0 == probe || (flags == probe && 0 == (probe & (probe - 1)));
}

static const hdr_type_info_t *type_lookup(int type)
{
    if (type < PML_DR2_HDR_MATCH || type > PML_DR2_HDR_EAGER) {
        return NULL;
    }
    return &type_info[type];
}

static int is_data_type(int type)
{
    return type == PML_DR2_HDR_MATCH || type == PML_DR2_HDR_RNDV || type == PML_DR2_HDR_FRAG
           || type == PML_DR2_HDR_EAGER;
}

size_t pml_dr2_hdr_size(int type)
{
    const hdr_type_info_t *info;

    /* no entry in type_info: no version, flags or length */
    if (PML_DR2_HDR_TINY == type) {
        return PML_DR2_HDR_TINY_LEN;
    }
    if (PML_DR2_HDR_LOCAL == type) {
        return PML_DR2_HDR_LOCAL_LEN;
    }
    info = type_lookup(type);
    return info != NULL ? info->len : 0;
}

/* ---- little-endian fields ----------------------------------------------------------- */

static inline void put_u16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char) v;
    p[1] = (unsigned char) (v >> 8);
}

static inline void put_u32(unsigned char *p, uint32_t v)
{
    put_u16(p, (uint16_t) v);
    put_u16(p + 2, (uint16_t) (v >> 16));
}

static inline void put_u64(unsigned char *p, uint64_t v)
{
    put_u32(p, (uint32_t) v);
    put_u32(p + 4, (uint32_t) (v >> 32));
}

static inline uint16_t get_u16(const unsigned char *p)
{
    return (uint16_t) (p[0] | (p[1] << 8));
}

static inline uint32_t get_u32(const unsigned char *p)
{
    return get_u16(p) | ((uint32_t) get_u16(p + 2) << 16);
}

static inline void put_u24(unsigned char *p, uint32_t v)
{
    put_u16(p, (uint16_t) v);
    p[2] = (unsigned char) (v >> 16);
}

static inline uint32_t get_u24(const unsigned char *p)
{
    return get_u16(p) | ((uint32_t) p[2] << 16);
}

static inline uint64_t get_u64(const unsigned char *p)
{
    return get_u32(p) | ((uint64_t) get_u32(p + 4) << 32);
}

/* Two's complement on the wire, whatever the host does with out-of-range conversions. */
static inline void put_i32(unsigned char *p, int32_t v)
{
    put_u32(p, (uint32_t) v);
}

static inline int32_t get_i32(const unsigned char *p)
{
    uint32_t u = get_u32(p);

    return u <= INT32_MAX ? (int32_t) u : (int32_t) (u - 0x80000000u) - INT32_MAX - 1;
}

/* CRC32C of the hdr_len header bytes with the hdr_crc field taken as zero; the received
 * buffer is never written (pml_dr2_crc32c_header skips the field in place, no copy). */
static inline uint32_t header_crc(const unsigned char *p, size_t hdr_len)
{
    _Static_assert(OFF_HDR_CRC == 4 && PML_DR2_HDR_COMMON_LEN == 8,
                   "pml_dr2_crc32c_header expects the checksum in bytes 4..7");
    return pml_dr2_crc32c_header(p, hdr_len);
}

/* EAGER's one checksum: the header bytes as above, then the payload right after them. */
static inline uint32_t eager_crc(const unsigned char *p, uint32_t frag_len)
{
    return pml_dr2_crc32c_header_payload(p, PML_DR2_HDR_EAGER_LEN, NULL,
                                         p + PML_DR2_HDR_EAGER_LEN, frag_len);
}

/* ---- field checks, shared by encode and decode -------------------------------------- */

/* A payload of `len` bytes at `offset` in a message of `msg_len` bytes. */
static pml_dr2_hdr_status_t check_payload_range(uint32_t len, uint64_t offset,
                                                uint64_t msg_len, uint32_t max_payload)
{
    if (len > max_payload) {
        return PML_DR2_HDR_ERR_TOO_LONG;
    }
    if (offset > UINT64_MAX - len) {
        return PML_DR2_HDR_ERR_OVERFLOW;
    }
    if (offset + len > msg_len) {
        return PML_DR2_HDR_ERR_BOUNDS;
    }
    return PML_DR2_HDR_OK;
}

/* EAGER's fields (the header of every small message: checked without the type lookup).
 * frag_count and msg_len are implied (decode sets them): a caller's other values would
 * describe a message EAGER cannot carry. */
static inline pml_dr2_hdr_status_t check_eager_fields(const pml_dr2_hdr_t *hdr,
                                                      uint32_t max_payload)
{
    if ((hdr->flags & ~type_info[PML_DR2_HDR_EAGER].flags) != 0) {
        return PML_DR2_HDR_ERR_FLAGS;
    }
    if (hdr->match.src < 0) {
        return PML_DR2_HDR_ERR_RANK;
    }
    if (1 != hdr->match.frag_count) {
        return PML_DR2_HDR_ERR_FRAG_COUNT;
    }
    if (0 == hdr->piggy_ack.mask
        && (0 != hdr->piggy_ack.vfrag || 0 != (hdr->flags & PML_DR2_HDR_FLAG_MATCHED))) {
        return 0 != hdr->piggy_ack.vfrag ? PML_DR2_HDR_ERR_RESERVED : PML_DR2_HDR_ERR_FLAGS;
    }
    if (hdr->match.msg_len != hdr->frag_len) {
        return PML_DR2_HDR_ERR_BOUNDS;
    }
    return hdr->frag_len > max_payload ? PML_DR2_HDR_ERR_TOO_LONG : PML_DR2_HDR_OK;
}

static pml_dr2_hdr_status_t check_fields(const pml_dr2_hdr_t *hdr, uint32_t max_payload)
{
    const hdr_type_info_t *info = type_lookup(hdr->type);

    if (info == NULL) {
        return PML_DR2_HDR_ERR_TYPE;
    }
    if ((hdr->flags & ~info->flags) != 0) {
        return PML_DR2_HDR_ERR_FLAGS;
    }
    switch (hdr->type) {
    case PML_DR2_HDR_MATCH:
    case PML_DR2_HDR_RNDV:
        if (hdr->match.src < 0) {
            return PML_DR2_HDR_ERR_RANK;
        }
        if (hdr->match.frag_count == 0
            || hdr->match.frag_count > PML_DR2_MAX_FRAGS_PER_VFRAG) {
            return PML_DR2_HDR_ERR_FRAG_COUNT;
        }
        return check_payload_range(hdr->frag_len, 0, hdr->match.msg_len, max_payload);
    case PML_DR2_HDR_FRAG:
        if (hdr->frag.frag_index >= PML_DR2_MAX_FRAGS_PER_VFRAG) {
            return PML_DR2_HDR_ERR_FRAG_INDEX;
        }
        if (hdr->frag.frag_count == 0 || hdr->frag.frag_count > PML_DR2_MAX_FRAGS_PER_VFRAG
            || hdr->frag.frag_index >= hdr->frag.frag_count) {
            return PML_DR2_HDR_ERR_FRAG_COUNT;
        }
        if (hdr->frag_len == 0) {
            return PML_DR2_HDR_ERR_EMPTY;
        }
        return check_payload_range(hdr->frag_len, hdr->frag.offset, hdr->frag.msg_len,
                                   max_payload);
    case PML_DR2_HDR_EAGER:
        return check_eager_fields(hdr, max_payload);
    default: /* ACK, NACK */
        if (!ack_flags_combine(hdr->flags)) {
            return PML_DR2_HDR_ERR_FLAGS;
        }
        return hdr->ack.mask == 0 ? PML_DR2_HDR_ERR_MASK : PML_DR2_HDR_OK;
    }
}

/* ---- encode ------------------------------------------------------------------------- */

static inline void encode_eager_body(const pml_dr2_hdr_t *hdr, unsigned char *p)
{
    put_u32(p + EAGER_OFF_CTX, hdr->match.ctx);
    put_i32(p + EAGER_OFF_SRC, hdr->match.src);
    put_i32(p + EAGER_OFF_TAG, hdr->match.tag);
    put_u16(p + EAGER_OFF_SEQ, hdr->match.seq);
    put_u16(p + EAGER_OFF_RESERVED, 0);
    put_u32(p + EAGER_OFF_VFRAG, hdr->match.vfrag);
    put_u32(p + EAGER_OFF_FRAG_LEN, hdr->frag_len);
    put_u32(p + EAGER_OFF_ACK_VFRAG, hdr->piggy_ack.vfrag);
    put_u64(p + EAGER_OFF_ACK_MASK, hdr->piggy_ack.mask);
    put_u32(p + EAGER_OFF_EPOCH, hdr->match.epoch);
}

static void encode_body(const pml_dr2_hdr_t *hdr, unsigned char *p)
{
    switch (hdr->type) {
    case PML_DR2_HDR_MATCH:
    case PML_DR2_HDR_RNDV:
        put_u32(p + MATCH_OFF_CTX, hdr->match.ctx);
        put_i32(p + MATCH_OFF_SRC, hdr->match.src);
        put_i32(p + MATCH_OFF_TAG, hdr->match.tag);
        put_u16(p + MATCH_OFF_SEQ, hdr->match.seq);
        p[MATCH_OFF_FRAG_COUNT] = hdr->match.frag_count;
        p[MATCH_OFF_RESERVED] = 0;
        put_u32(p + MATCH_OFF_VFRAG, hdr->match.vfrag);
        put_u32(p + MATCH_OFF_FRAG_LEN, hdr->frag_len);
        put_u64(p + MATCH_OFF_MSG_LEN, hdr->match.msg_len);
        put_u32(p + MATCH_OFF_DATA_CRC, hdr->data_crc);
        put_u32(p + MATCH_OFF_EPOCH, hdr->match.epoch);
        break;
    case PML_DR2_HDR_FRAG:
        put_u32(p + FRAG_OFF_MSG_ID, hdr->frag.msg_id);
        put_u32(p + FRAG_OFF_VFRAG, hdr->frag.vfrag);
        p[FRAG_OFF_FRAG_INDEX] = hdr->frag.frag_index;
        p[FRAG_OFF_FRAG_COUNT] = hdr->frag.frag_count;
        put_u16(p + FRAG_OFF_RESERVED, 0);
        put_u32(p + FRAG_OFF_FRAG_LEN, hdr->frag_len);
        put_u64(p + FRAG_OFF_OFFSET, hdr->frag.offset);
        put_u64(p + FRAG_OFF_MSG_LEN, hdr->frag.msg_len);
        put_u32(p + FRAG_OFF_DATA_CRC, hdr->data_crc);
        put_u32(p + FRAG_OFF_RESERVED2, 0);
        break;
    case PML_DR2_HDR_EAGER:
        encode_eager_body(hdr, p);
        break;
    default: /* ACK and NACK never get here: pml_dr2_hdr_encode packs them one pass */
        break;
    }
}

/* The 8 bytes every header but TINY starts with, the checksum field zero. */
static inline void put_common(unsigned char *p, uint8_t type, uint8_t flags, uint8_t len)
{
    p[OFF_TYPE] = type;
    p[OFF_FLAGS] = flags;
    p[OFF_VERSION] = PML_DR2_HDR_VERSION;
    p[OFF_HDR_LEN] = len;
    put_u32(p + OFF_HDR_CRC, 0);
}

static inline void encode_common(pml_dr2_hdr_t *hdr, unsigned char *p, size_t len)
{
    hdr->hdr_len = (uint8_t) len;
    put_common(p, hdr->type, hdr->flags, hdr->hdr_len);
}

/* Every header byte but the checksum. */
static void encode_fields(pml_dr2_hdr_t *hdr, unsigned char *p, size_t len)
{
    encode_common(hdr, p, len);
    encode_body(hdr, p);
}

/* An EAGER header, with its payload copied after it and one checksum over both: the
 * header of every small message, so without the type lookups of the general path. */
static size_t pack_eager(pml_dr2_hdr_t *hdr, unsigned char *p, size_t buf_len,
                         const void *payload, uint32_t payload_len)
{
    if (buf_len < PML_DR2_HDR_EAGER_LEN || payload_len > buf_len - PML_DR2_HDR_EAGER_LEN) {
        return 0;
    }
    hdr->frag_len = payload_len;
    hdr->match.frag_count = 1;
    hdr->match.msg_len = payload_len;
    if (check_eager_fields(hdr, UINT32_MAX) != PML_DR2_HDR_OK) {
        return 0;
    }
    /* the header first, then the payload checksummed while it is copied after it */
    encode_common(hdr, p, PML_DR2_HDR_EAGER_LEN);
    encode_eager_body(hdr, p);
    hdr->data_crc = pml_dr2_crc32c_header_payload(p, PML_DR2_HDR_EAGER_LEN,
                                                  p + PML_DR2_HDR_EAGER_LEN, payload, payload_len);
    put_u32(p + OFF_HDR_CRC, hdr->data_crc);
    return PML_DR2_HDR_EAGER_LEN + payload_len;
}

/* TINY's and LOCAL's envelope: ctx, src, tag, seq in 16-bit fields from `env` on (the
 * caller checked pml_dr2_hdr_envelope_fits_short). */
static inline void encode_short_envelope(unsigned char *env, const pml_dr2_match_hdr_t *match)
{
    put_u16(env, (uint16_t) match->ctx);
    put_u16(env + 2, (uint16_t) match->src);
    put_u16(env + 4, (uint16_t) match->tag); /* two's complement, as put_i32 */
    put_u16(env + 6, match->seq);
}

size_t pml_dr2_hdr_pack_tiny_envelope(const pml_dr2_match_hdr_t *match, void *buf,
                                      size_t buf_len, const void *payload, uint32_t payload_len)
{
    unsigned char *p = buf;
    uint32_t crc;

    if (!pml_dr2_hdr_envelope_fits_tiny(match, payload_len) || buf_len < PML_DR2_HDR_TINY_LEN
        || payload_len > buf_len - PML_DR2_HDR_TINY_LEN) {
        return 0;
    }
    p[0] = PML_DR2_HDR_TINY;
    put_u24(p + TINY_OFF_VFRAG, match->vfrag);
    put_u32(p + OFF_HDR_CRC, 0);
    encode_short_envelope(p + TINY_OFF_CTX, match);
    crc = pml_dr2_crc32c_header_payload(p, PML_DR2_HDR_TINY_LEN, p + PML_DR2_HDR_TINY_LEN,
                                        payload, payload_len);
    put_u32(p + OFF_HDR_CRC, crc);
    return PML_DR2_HDR_TINY_LEN + payload_len;
}

size_t pml_dr2_hdr_pack_local(const pml_dr2_match_hdr_t *match, void *buf, size_t buf_len,
                              const void *payload, uint32_t payload_len)
{
    unsigned char *p = buf;

    if (!pml_dr2_hdr_envelope_fits_short(match) || payload_len > PML_DR2_HDR_LOCAL_MAX_PAYLOAD
        || buf_len < PML_DR2_HDR_LOCAL_LEN || payload_len > buf_len - PML_DR2_HDR_LOCAL_LEN) {
        return 0;
    }
    p[0] = PML_DR2_HDR_LOCAL;
    p[LOCAL_OFF_RESERVED1] = 0;
    encode_short_envelope(p + LOCAL_OFF_CTX, match);
    put_u16(p + LOCAL_OFF_RESERVED2, 0);
    if (payload_len > 0) {
        memcpy(p + PML_DR2_HDR_LOCAL_LEN, payload, payload_len);
    }
    return PML_DR2_HDR_LOCAL_LEN + payload_len;
}

size_t pml_dr2_hdr_pack_tiny(const pml_dr2_hdr_t *hdr, void *buf, size_t buf_len,
                             const void *payload, uint32_t payload_len)
{
    if (PML_DR2_HDR_EAGER != hdr->type || !pml_dr2_hdr_fits_tiny(hdr, payload_len)) {
        return 0;
    }
    return pml_dr2_hdr_pack_tiny_envelope(&hdr->match, buf, buf_len, payload, payload_len);
}

size_t pml_dr2_hdr_pack_ack(uint8_t type, uint8_t flags, const pml_dr2_ack_hdr_t *ack, void *buf,
                            size_t buf_len)
{
    unsigned char *p = buf;

    if ((PML_DR2_HDR_ACK != type && PML_DR2_HDR_NACK != type)
        || (flags & ~type_info[type].flags) != 0 || !ack_flags_combine(flags) || 0 == ack->mask
        || buf_len < PML_DR2_HDR_ACK_LEN) {
        return 0;
    }
    put_common(p, type, flags, PML_DR2_HDR_ACK_LEN);
    put_u32(p + ACK_OFF_VFRAG, ack->vfrag);
    put_u64(p + ACK_OFF_MASK, ack->mask);
    put_u32(p + OFF_HDR_CRC, header_crc(p, PML_DR2_HDR_ACK_LEN));
    return PML_DR2_HDR_ACK_LEN;
}

size_t pml_dr2_hdr_encode(pml_dr2_hdr_t *hdr, void *buf, size_t buf_len)
{
    unsigned char *p = buf;
    size_t len;

    if (PML_DR2_HDR_ACK == hdr->type || PML_DR2_HDR_NACK == hdr->type) {
        len = pml_dr2_hdr_pack_ack(hdr->type, hdr->flags, &hdr->ack, buf, buf_len);
        if (0 != len) {
            hdr->hdr_len = (uint8_t) len;
            hdr->frag_len = 0;
            hdr->data_crc = 0;
        }
        return len;
    }
    len = pml_dr2_hdr_size(hdr->type);
    if (len == 0 || buf_len < len) {
        return 0;
    }
    if (PML_DR2_HDR_EAGER == hdr->type && hdr->frag_len > buf_len - len) {
        return 0; /* its checksum covers the payload, which must be there */
    }
    if (check_fields(hdr, UINT32_MAX) != PML_DR2_HDR_OK) {
        return 0;
    }
    encode_fields(hdr, p, len);
    if (PML_DR2_HDR_EAGER == hdr->type) {
        hdr->data_crc = eager_crc(p, hdr->frag_len);
        put_u32(p + OFF_HDR_CRC, hdr->data_crc);
    } else {
        put_u32(p + OFF_HDR_CRC, header_crc(p, len));
    }
    return len;
}

size_t pml_dr2_hdr_pack(pml_dr2_hdr_t *hdr, void *buf, size_t buf_len, const void *payload,
                        uint32_t payload_len)
{
    size_t len;

    if (PML_DR2_HDR_EAGER == hdr->type) {
        return pack_eager(hdr, buf, buf_len, payload, payload_len);
    }
    len = pml_dr2_hdr_size(hdr->type);
    if (!is_data_type(hdr->type) || buf_len < len || payload_len > buf_len - len) {
        return 0;
    }
    hdr->frag_len = payload_len;
    if (check_fields(hdr, UINT32_MAX) != PML_DR2_HDR_OK) {
        return 0;
    }
    hdr->data_crc = pml_dr2_crc32c_copy(PML_DR2_CRC32C_INIT, (unsigned char *) buf + len,
                                        payload, payload_len);
    return pml_dr2_hdr_encode(hdr, buf, buf_len) + payload_len;
}

/* ---- decode ------------------------------------------------------------------------- */

/* Type, version, length and header checksum: after this, the header bytes are the ones
 * the sender wrote, and buf holds all of them. Not for EAGER (decode_eager). */
static pml_dr2_hdr_status_t decode_common(const unsigned char *p, size_t buf_len,
                                          pml_dr2_hdr_t *hdr)
{
    const hdr_type_info_t *info;

    if (buf_len < PML_DR2_HDR_COMMON_LEN) {
        return PML_DR2_HDR_ERR_TRUNCATED;
    }
    /* The version first: another version may define other types and lengths. */
    if (p[OFF_VERSION] != PML_DR2_HDR_VERSION) {
        return PML_DR2_HDR_ERR_VERSION;
    }
    info = type_lookup(p[OFF_TYPE]);
    if (info == NULL) {
        return PML_DR2_HDR_ERR_TYPE;
    }
    if (p[OFF_HDR_LEN] != info->len) {
        return PML_DR2_HDR_ERR_HDR_LEN;
    }
    if (buf_len < info->len) {
        return PML_DR2_HDR_ERR_TRUNCATED;
    }
    if (get_u32(p + OFF_HDR_CRC) != header_crc(p, info->len)) {
        return PML_DR2_HDR_ERR_HDR_CRC;
    }
    memset(hdr, 0, sizeof(*hdr));
    hdr->type = p[OFF_TYPE];
    hdr->flags = p[OFF_FLAGS];
    hdr->hdr_len = info->len;
    return PML_DR2_HDR_OK;
}

/* The type's own fields; reserved fields must be zero (room for later versions). */
static pml_dr2_hdr_status_t decode_body(const unsigned char *p, pml_dr2_hdr_t *hdr)
{
    switch (hdr->type) {
    case PML_DR2_HDR_MATCH:
    case PML_DR2_HDR_RNDV:
        if (p[MATCH_OFF_RESERVED] != 0) {
            return PML_DR2_HDR_ERR_RESERVED;
        }
        hdr->match.ctx = get_u32(p + MATCH_OFF_CTX);
        hdr->match.src = get_i32(p + MATCH_OFF_SRC);
        hdr->match.tag = get_i32(p + MATCH_OFF_TAG);
        hdr->match.seq = get_u16(p + MATCH_OFF_SEQ);
        hdr->match.frag_count = p[MATCH_OFF_FRAG_COUNT];
        hdr->match.vfrag = get_u32(p + MATCH_OFF_VFRAG);
        hdr->frag_len = get_u32(p + MATCH_OFF_FRAG_LEN);
        hdr->match.msg_len = get_u64(p + MATCH_OFF_MSG_LEN);
        hdr->data_crc = get_u32(p + MATCH_OFF_DATA_CRC);
        hdr->match.epoch = get_u32(p + MATCH_OFF_EPOCH);
        hdr->match.has_epoch = 1;
        break;
    case PML_DR2_HDR_FRAG:
        if (get_u16(p + FRAG_OFF_RESERVED) != 0 || get_u32(p + FRAG_OFF_RESERVED2) != 0) {
            return PML_DR2_HDR_ERR_RESERVED;
        }
        hdr->frag.msg_id = get_u32(p + FRAG_OFF_MSG_ID);
        hdr->frag.vfrag = get_u32(p + FRAG_OFF_VFRAG);
        hdr->frag.frag_index = p[FRAG_OFF_FRAG_INDEX];
        hdr->frag.frag_count = p[FRAG_OFF_FRAG_COUNT];
        hdr->frag_len = get_u32(p + FRAG_OFF_FRAG_LEN);
        hdr->frag.offset = get_u64(p + FRAG_OFF_OFFSET);
        hdr->frag.msg_len = get_u64(p + FRAG_OFF_MSG_LEN);
        hdr->data_crc = get_u32(p + FRAG_OFF_DATA_CRC);
        break;
    default: /* ACK, NACK (EAGER has its own decoder, decode_eager) */
        hdr->ack.vfrag = get_u32(p + ACK_OFF_VFRAG);
        hdr->ack.mask = get_u64(p + ACK_OFF_MASK);
        break;
    }
    return PML_DR2_HDR_OK;
}

/* EAGER, the header of every small message, decoded in one pass: the checks other types
 * get from decode_common, decode_body and check_fields, without looking the type up
 * twice; the checksum last, once the payload is known to be there. */
static pml_dr2_hdr_status_t decode_eager(const unsigned char *p, size_t buf_len,
                                         uint32_t max_payload, pml_dr2_hdr_t *hdr)
{
    pml_dr2_hdr_status_t status;
    uint32_t frag_len;

    if (p[OFF_HDR_LEN] != PML_DR2_HDR_EAGER_LEN) {
        return PML_DR2_HDR_ERR_HDR_LEN;
    }
    if (buf_len < PML_DR2_HDR_EAGER_LEN) {
        return PML_DR2_HDR_ERR_TRUNCATED;
    }
    memset(hdr, 0, sizeof(*hdr));
    hdr->type = PML_DR2_HDR_EAGER;
    hdr->flags = p[OFF_FLAGS];
    hdr->hdr_len = PML_DR2_HDR_EAGER_LEN;
    if (get_u16(p + EAGER_OFF_RESERVED) != 0) {
        return PML_DR2_HDR_ERR_RESERVED;
    }
    hdr->match.ctx = get_u32(p + EAGER_OFF_CTX);
    hdr->match.src = get_i32(p + EAGER_OFF_SRC);
    hdr->match.tag = get_i32(p + EAGER_OFF_TAG);
    hdr->match.seq = get_u16(p + EAGER_OFF_SEQ);
    hdr->match.frag_count = 1;
    hdr->match.vfrag = get_u32(p + EAGER_OFF_VFRAG);
    hdr->frag_len = frag_len = get_u32(p + EAGER_OFF_FRAG_LEN);
    hdr->match.msg_len = frag_len;
    hdr->piggy_ack.vfrag = get_u32(p + EAGER_OFF_ACK_VFRAG);
    hdr->piggy_ack.mask = get_u64(p + EAGER_OFF_ACK_MASK);
    hdr->match.epoch = get_u32(p + EAGER_OFF_EPOCH);
    hdr->match.has_epoch = 1;
    hdr->data_crc = get_u32(p + OFF_HDR_CRC);
    if ((status = check_eager_fields(hdr, max_payload)) != PML_DR2_HDR_OK) {
        return status;
    }
    if (frag_len > buf_len - PML_DR2_HDR_EAGER_LEN) {
        return PML_DR2_HDR_ERR_PAYLOAD_TRUNCATED;
    }
    if (hdr->data_crc != eager_crc(p, frag_len)) {
        return PML_DR2_HDR_ERR_HDR_CRC; /* header or payload: one check for both */
    }
    return PML_DR2_HDR_OK;
}

/* ACK and NACK, the headers that travel alone (over sm, one per small message: a TINY has
 * no room for it), decoded in one pass: the checks, and their order, of decode_common,
 * decode_body and check_fields, without looking the type up twice. */
static pml_dr2_hdr_status_t decode_ack(const unsigned char *p, size_t buf_len, pml_dr2_hdr_t *hdr)
{
    uint8_t type = p[OFF_TYPE], flags = p[OFF_FLAGS];

    if (p[OFF_HDR_LEN] != PML_DR2_HDR_ACK_LEN) {
        return PML_DR2_HDR_ERR_HDR_LEN;
    }
    if (buf_len < PML_DR2_HDR_ACK_LEN) {
        return PML_DR2_HDR_ERR_TRUNCATED;
    }
    if (get_u32(p + OFF_HDR_CRC) != header_crc(p, PML_DR2_HDR_ACK_LEN)) {
        return PML_DR2_HDR_ERR_HDR_CRC;
    }
    memset(hdr, 0, sizeof(*hdr));
    hdr->type = type;
    hdr->flags = flags;
    hdr->hdr_len = PML_DR2_HDR_ACK_LEN;
    hdr->ack.vfrag = get_u32(p + ACK_OFF_VFRAG);
    hdr->ack.mask = get_u64(p + ACK_OFF_MASK);
    if ((flags & ~type_info[type].flags) != 0 || !ack_flags_combine(flags)) {
        return PML_DR2_HDR_ERR_FLAGS;
    }
    return 0 == hdr->ack.mask ? PML_DR2_HDR_ERR_MASK : PML_DR2_HDR_OK;
}

/* TINY and LOCAL: a header of hdr_len bytes with the message's envelope in 16-bit fields
 * at `env` (ctx, src, tag, seq), its payload the rest of the segment, at most wire_max
 * (the type's) and max_payload (the caller's) bytes. */
static inline pml_dr2_hdr_status_t decode_short(const unsigned char *p, size_t buf_len,
                                                uint8_t type, size_t hdr_len, size_t env,
                                                uint32_t wire_max, uint32_t max_payload,
                                                pml_dr2_hdr_t *hdr)
{
    uint16_t tag;

    if (buf_len < hdr_len) {
        return PML_DR2_HDR_ERR_TRUNCATED;
    }
    if (buf_len - hdr_len > wire_max || buf_len - hdr_len > max_payload) {
        return PML_DR2_HDR_ERR_TOO_LONG;
    }
    memset(hdr, 0, sizeof(*hdr));
    hdr->type = type;
    hdr->hdr_len = (uint8_t) hdr_len;
    hdr->frag_len = (uint32_t) (buf_len - hdr_len);
    hdr->match.ctx = get_u16(p + env);
    hdr->match.src = get_u16(p + env + 2);
    tag = get_u16(p + env + 4);
    hdr->match.tag = tag <= INT16_MAX ? (int32_t) tag : (int32_t) tag - 65536;
    hdr->match.seq = get_u16(p + env + 6);
    hdr->match.frag_count = 1;
    hdr->match.msg_len = hdr->frag_len;
    return PML_DR2_HDR_OK;
}

/* TINY: every byte after its 16 is its payload; the checksum covers all of them. */
static pml_dr2_hdr_status_t decode_tiny(const unsigned char *p, size_t buf_len,
                                        uint32_t max_payload, pml_dr2_hdr_t *hdr)
{
    pml_dr2_hdr_status_t status = decode_short(p, buf_len, PML_DR2_HDR_TINY, PML_DR2_HDR_TINY_LEN,
                                               TINY_OFF_CTX, PML_DR2_HDR_TINY_MAX_PAYLOAD,
                                               max_payload, hdr);

    if (PML_DR2_HDR_OK != status) {
        return status;
    }
    hdr->flags = PML_DR2_HDR_FLAG_ACK_NOW; /* a first transmission, as an EAGER's */
    hdr->data_crc = get_u32(p + OFF_HDR_CRC);
    hdr->match.vfrag = get_u24(p + TINY_OFF_VFRAG);
    if (hdr->data_crc
        != pml_dr2_crc32c_header_payload(p, PML_DR2_HDR_TINY_LEN, NULL, p + PML_DR2_HDR_TINY_LEN,
                                         hdr->frag_len)) {
        return PML_DR2_HDR_ERR_HDR_CRC;
    }
    return PML_DR2_HDR_OK;
}

/* LOCAL: every byte after its 12 is its payload; nothing to check but its shape. */
static pml_dr2_hdr_status_t decode_local(const unsigned char *p, size_t buf_len,
                                         uint32_t max_payload, pml_dr2_hdr_t *hdr)
{
    pml_dr2_hdr_status_t status = decode_short(p, buf_len, PML_DR2_HDR_LOCAL,
                                               PML_DR2_HDR_LOCAL_LEN, LOCAL_OFF_CTX,
                                               PML_DR2_HDR_LOCAL_MAX_PAYLOAD, max_payload, hdr);

    if (PML_DR2_HDR_OK == status
        && (0 != p[LOCAL_OFF_RESERVED1] || 0 != get_u16(p + LOCAL_OFF_RESERVED2))) {
        return PML_DR2_HDR_ERR_RESERVED;
    }
    return status;
}

/* Every type but TINY and LOCAL. Out of line, so that those two, the common small
 * messages, are decoded in a frame that saves none of the registers these decoders need. */
static __attribute__((noinline)) pml_dr2_hdr_status_t
decode_with_common_header(const unsigned char *p, size_t buf_len, uint32_t max_payload,
                          pml_dr2_hdr_t *hdr)
{
    pml_dr2_hdr_status_t status;

    if (buf_len >= PML_DR2_HDR_COMMON_LEN && PML_DR2_HDR_VERSION == p[OFF_VERSION]) {
        if (PML_DR2_HDR_EAGER == p[OFF_TYPE]) {
            return decode_eager(p, buf_len, max_payload, hdr);
        }
        if (PML_DR2_HDR_ACK == p[OFF_TYPE] || PML_DR2_HDR_NACK == p[OFF_TYPE]) {
            return decode_ack(p, buf_len, hdr);
        }
    }
    if ((status = decode_common(p, buf_len, hdr)) != PML_DR2_HDR_OK
        || (status = decode_body(p, hdr)) != PML_DR2_HDR_OK
        || (status = check_fields(hdr, max_payload)) != PML_DR2_HDR_OK) {
        return status;
    }
    /* buf_len >= hdr_len here: no underflow. */
    if (hdr->frag_len > buf_len - hdr->hdr_len) {
        return PML_DR2_HDR_ERR_PAYLOAD_TRUNCATED;
    }
    return PML_DR2_HDR_OK;
}

pml_dr2_hdr_status_t pml_dr2_hdr_decode_header(const void *buf, size_t buf_len,
                                               uint32_t max_payload, pml_dr2_hdr_t *hdr)
{
    const unsigned char *p = buf;

    if (buf_len > 0 && PML_DR2_HDR_TINY == p[OFF_TYPE]) {
        return decode_tiny(p, buf_len, max_payload, hdr);
    }
    if (buf_len > 0 && PML_DR2_HDR_LOCAL == p[OFF_TYPE]) {
        return decode_local(p, buf_len, max_payload, hdr);
    }
    return decode_with_common_header(p, buf_len, max_payload, hdr);
}

pml_dr2_hdr_status_t pml_dr2_hdr_decode(const void *buf, size_t buf_len, uint32_t max_payload,
                                        pml_dr2_hdr_t *hdr)
{
    pml_dr2_hdr_status_t status = pml_dr2_hdr_decode_header(buf, buf_len, max_payload, hdr);

    if (status != PML_DR2_HDR_OK || pml_dr2_hdr_payload_checked(hdr)) {
        return status;
    }
    /* Also for an empty payload: its data_crc must then be 0, the CRC of nothing. */
    if (pml_dr2_crc32c(PML_DR2_CRC32C_INIT, (const unsigned char *) buf + hdr->hdr_len,
                       hdr->frag_len)
        != hdr->data_crc) {
        return PML_DR2_HDR_ERR_DATA_CRC;
    }
    return PML_DR2_HDR_OK;
}

pml_dr2_hdr_status_t pml_dr2_hdr_unpack(const pml_dr2_hdr_t *hdr, const void *buf, void *dst)
{
    if (pml_dr2_hdr_payload_checked(hdr)) {
        memcpy(dst, (const unsigned char *) buf + hdr->hdr_len, hdr->frag_len);
        return PML_DR2_HDR_OK;
    }
    uint32_t crc = pml_dr2_crc32c_copy(PML_DR2_CRC32C_INIT, dst,
                                       (const unsigned char *) buf + hdr->hdr_len,
                                       hdr->frag_len);

    return crc == hdr->data_crc ? PML_DR2_HDR_OK : PML_DR2_HDR_ERR_DATA_CRC;
}

size_t pml_dr2_hdr_pack_from(const pml_dr2_from_hdr_t *from, void *buf, size_t buf_len)
{
    unsigned char *p = buf;

    if (buf_len < PML_DR2_HDR_FROM_LEN) {
        return 0;
    }
    put_common(p, PML_DR2_HDR_FROM, 0, PML_DR2_HDR_FROM_LEN);
    put_u32(p + FROM_OFF_JOBID, from->jobid);
    put_u32(p + FROM_OFF_VPID, from->vpid);
    put_u32(p + OFF_HDR_CRC, header_crc(p, PML_DR2_HDR_FROM_LEN));
    return PML_DR2_HDR_FROM_LEN;
}

pml_dr2_hdr_status_t pml_dr2_hdr_decode_from(const void *buf, size_t buf_len,
                                             pml_dr2_from_hdr_t *from)
{
    const unsigned char *p = buf;

    if (buf_len < PML_DR2_HDR_COMMON_LEN) {
        return PML_DR2_HDR_ERR_TRUNCATED;
    }
    if (p[OFF_VERSION] != PML_DR2_HDR_VERSION) {
        return PML_DR2_HDR_ERR_VERSION;
    }
    if (p[OFF_TYPE] != PML_DR2_HDR_FROM) {
        return PML_DR2_HDR_ERR_TYPE;
    }
    if (p[OFF_HDR_LEN] != PML_DR2_HDR_FROM_LEN) {
        return PML_DR2_HDR_ERR_HDR_LEN;
    }
    if (buf_len < PML_DR2_HDR_FROM_LEN) {
        return PML_DR2_HDR_ERR_TRUNCATED;
    }
    if (get_u32(p + OFF_HDR_CRC) != header_crc(p, PML_DR2_HDR_FROM_LEN)) {
        return PML_DR2_HDR_ERR_HDR_CRC;
    }
    if (0 != p[OFF_FLAGS]) {
        return PML_DR2_HDR_ERR_FLAGS;
    }
    from->jobid = get_u32(p + FROM_OFF_JOBID);
    from->vpid = get_u32(p + FROM_OFF_VPID);
    return PML_DR2_HDR_OK;
}

const char *pml_dr2_hdr_status_name(pml_dr2_hdr_status_t status)
{
    static const char *const names[PML_DR2_HDR_NUM_STATUS] = {
        [PML_DR2_HDR_OK] = "ok",
        [PML_DR2_HDR_ERR_TRUNCATED] = "truncated",
        [PML_DR2_HDR_ERR_VERSION] = "version",
        [PML_DR2_HDR_ERR_TYPE] = "type",
        [PML_DR2_HDR_ERR_HDR_LEN] = "hdr-len",
        [PML_DR2_HDR_ERR_HDR_CRC] = "hdr-crc",
        [PML_DR2_HDR_ERR_FLAGS] = "flags",
        [PML_DR2_HDR_ERR_RESERVED] = "reserved",
        [PML_DR2_HDR_ERR_RANK] = "rank",
        [PML_DR2_HDR_ERR_FRAG_INDEX] = "frag-index",
        [PML_DR2_HDR_ERR_FRAG_COUNT] = "frag-count",
        [PML_DR2_HDR_ERR_EMPTY] = "empty",
        [PML_DR2_HDR_ERR_MASK] = "mask",
        [PML_DR2_HDR_ERR_TOO_LONG] = "too-long",
        [PML_DR2_HDR_ERR_OVERFLOW] = "overflow",
        [PML_DR2_HDR_ERR_BOUNDS] = "bounds",
        [PML_DR2_HDR_ERR_PAYLOAD_TRUNCATED] = "payload-truncated",
        [PML_DR2_HDR_ERR_DATA_CRC] = "data-crc",
    };

    if ((unsigned) status >= PML_DR2_HDR_NUM_STATUS) {
        return "unknown";
    }
    return names[status];
}
