/*
 * ompi-resilience: pml/dr2 wire headers.
 *
 * Pure logic, no MPI. Headers are encoded byte by byte, little-endian, at fixed offsets:
 * never a struct cast over wire data, so the layout does not depend on the compiler, the
 * host byte order or alignment, and nothing read off the wire is used before it is checked.
 *
 * Every header but TINY and LOCAL (below) starts with the same 8 bytes:
 *
 *   off size field     meaning
 *     0  u8   type     PML_DR2_HDR_MATCH .. PML_DR2_HDR_EAGER
 *     1  u8   flags    PML_DR2_HDR_FLAG_*; a flag not defined for the type is an error
 *     2  u8   version  PML_DR2_HDR_VERSION
 *     3  u8   hdr_len  header bytes, exactly pml_dr2_hdr_size(type)
 *     4  u32  hdr_crc  CRC32C of the hdr_len header bytes, this field taken as zero
 *                      (EAGER: of the header bytes and then the payload)
 *
 * The three data headers (MATCH, RNDV, FRAG) are followed by frag_len payload bytes and
 * carry data_crc, the CRC32C of that payload. Since data_crc is inside the header, hdr_crc
 * covers the header and, through data_crc, the payload: one bit changed anywhere in the
 * fragment fails one of the two checks. Two checks rather than one CRC over header+payload
 * because the receiver must trust the header (tag, offset, length) before it decides where
 * the payload goes, and must be able to check the payload while it copies it there (fused
 * copy+CRC, reading the data once). A corrupt payload then only ever lands in its own,
 * checked, destination range: it is not marked received, and the resend overwrites it.
 *
 * MATCH: first fragment of an eager message (the whole message when it fits one fragment).
 * RNDV:  rendezvous request, same layout; carries the message's last frag_len bytes
 *        (possibly none: dr2 sends what whole fragments leave over, if it fits the BTL's
 *        eager send); the rest is sent after the receiver answers with an ACK flagged
 *        MATCHED, as FRAGs from offset 0.
 *
 *   off size field       meaning
 *     8  u32  ctx        communicator context id
 *    12  i32  src        sender's rank in the communicator (>= 0)
 *    16  i32  tag        (negative tags are Open MPI's internal collectives)
 *    20  u16  seq        matching sequence per (communicator, peer); wraps, as in ob1
 *    22  u8   frag_count fragments in this vfrag, 1..64 (this one is index 0)
 *    23  u8   reserved   0
 *    24  u32  vfrag      vfrag id (per peer); also the message id FRAGs refer to
 *    28  u32  frag_len   payload bytes after the header
 *    32  u64  msg_len    message length in bytes; frag_len <= msg_len
 *    40  u32  data_crc   CRC32C of the payload
 *    44  u32  epoch      the communicator's generation: its ULFM epoch (c_epoch), agreed by
 *                        its members when its context id was allocated. A communicator
 *                        created on a context id that a freed one had gets another epoch,
 *                        so a late resend of a message of the freed one is told from its
 *                        messages (dropped and acknowledged, never delivered into it)
 *    48                  (PML_DR2_HDR_MATCH_LEN)
 *
 * FRAG: any other fragment of a message, including fragments 1.. of the MATCH's own vfrag
 * (then vfrag == msg_id). The receiver finds the message by (peer, msg_id), never through a
 * pointer from the wire.
 *
 *     8  u32  msg_id     vfrag id of the message's MATCH or RNDV
 *    12  u32  vfrag      vfrag id (per peer)
 *    16  u8   frag_index index in the vfrag, 0..63, < frag_count
 *    17  u8   frag_count fragments in this vfrag, 1..64
 *    18  u16  reserved   0
 *    20  u32  frag_len   payload bytes after the header, > 0
 *    24  u64  offset     of the payload in the message
 *    32  u64  msg_len    message length; offset + frag_len <= msg_len, without overflow
 *    40  u32  data_crc   CRC32C of the payload
 *    44  u32  reserved   0 (the three data headers have one length: PML_DR2_HDR_MAX_LEN)
 *    48                  (PML_DR2_HDR_FRAG_LEN)
 *
 * ACK: fragments of a vfrag received intact. NACK: fragments to resend (found corrupt or
 * missing). Same layout, no payload. Both are idempotent (a lost one is recovered by the
 * sender's timer, a duplicate is harmless), so several can be coalesced into one.
 *
 *     8  u32  vfrag      vfrag id (per peer, the receiver's peer being the sender)
 *    12  u64  mask       bit i = fragment i; never 0
 *    20                  (PML_DR2_HDR_ACK_LEN)
 *
 * EAGER: a whole eager message in one fragment (the common small message), with room for
 * one ACK riding along, and ONE checksum: hdr_crc is the CRC32C of the header bytes (this
 * field taken as zero) followed by the frag_len payload bytes. The payload is small, so the
 * receiver checks the whole fragment before it acts on any field (no data_crc, no separate
 * ACK header with a CRC of its own). Its vfrag has one fragment and id `vfrag`, exactly as a
 * MATCH with frag_count 1 and msg_len == frag_len, which is what a receiver makes of it. A
 * corrupt EAGER fails that one check and is dropped without a NACK (no field of it can be
 * trusted, not even its vfrag id): the sender's ACK timer resends it.
 *
 *     8  u32  ctx        communicator context id
 *    12  i32  src        sender's rank in the communicator (>= 0)
 *    16  i32  tag
 *    20  u16  seq        matching sequence per (communicator, peer)
 *    22  u16  reserved   0
 *    24  u32  vfrag      vfrag id (per peer): the message's only vfrag
 *    28  u32  frag_len   payload bytes after the header; also the message length
 *    32  u32  ack_vfrag  a piggybacked ACK (the sender's peer being the receiver): vfrag id,
 *    36  u64  ack_mask   and its mask; both 0 when no ACK rides along. Flag MATCHED here
 *                        flags that ACK (never set without one).
 *    44  u32  epoch      the communicator's generation, as in MATCH
 *    48                  (PML_DR2_HDR_EAGER_LEN)
 *
 * TINY: an EAGER in short form, for a small message whose envelope fits 16-bit fields and
 * that carries no ACK: 16 bytes, so that 8 bytes of payload and btl/sm's 8-byte fast-box
 * header fill one 32-byte slot (one cache line) where an EAGER needs two. It has no
 * version, flags or length: type 7 is TINY in every version, its payload is the rest of
 * the segment (a TINY is always alone in its segment, nothing can follow it), and it
 * carries the low 24 bits of its vfrag id, which the receiver completes from the id it
 * expects next (pml_dr2_window_expand_id): ids in flight are never more than the
 * 1024-vfrag window apart, far inside the 2^23 either side that 24 bits tell apart. One
 * checksum over header and payload, as EAGER. Resends of its vfrag go as EAGER, with the
 * epoch it has no room for (see LOCAL for what that leaves).
 *
 *     0  u8   type       PML_DR2_HDR_TINY
 *     1  u24  vfrag      the low 24 bits of the vfrag id (little-endian)
 *     4  u32  hdr_crc    CRC32C of the 16 header bytes (this field zero), then the payload
 *     8  u16  ctx        communicator context id (< 65536)
 *    10  u16  src        sender's rank in the communicator (< 65536)
 *    12  i16  tag
 *    14  u16  seq        matching sequence per (communicator, peer)
 *    16                  (PML_DR2_HDR_TINY_LEN)
 *
 * LOCAL: a small message without vfrag, checksum or ACK, for a path that crosses no wire
 * (sm, self: a copy through memory, which loses, duplicates and reorders nothing), sent
 * only there and accepted only from there (pml_dr2_local.h). Like TINY it has no version,
 * flags or length: type 8 is LOCAL in every version, its payload is the rest of the segment
 * (at most PML_DR2_HDR_LOCAL_MAX_PAYLOAD bytes), nothing follows it. It is a message's
 * envelope and nothing else: the receiver matches it by its sequence number as any other.
 * No epoch either. LOCAL and TINY are first transmissions only, over sm or self, read in
 * the receiver's next progress: only one still unread when its receiver freed the
 * communicator and created the next on the same context id (both collective, so with the
 * sender's part in them) would be taken for the next one's, the exposure pml/ob1 has for
 * every message.
 *
 *     0  u8   type       PML_DR2_HDR_LOCAL
 *     1  u8   reserved   0
 *     2  u16  ctx        communicator context id (< 65536)
 *     4  u16  src        sender's rank in the communicator (< 65536)
 *     6  i16  tag
 *     8  u16  seq        matching sequence per (communicator, peer)
 *    10  u16  reserved   0
 *    12                  (PML_DR2_HDR_LOCAL_LEN)
 *
 * FROM: who sent the segment, for a BTL whose receive callback does not say (btl/ofi and
 * btl/uct give no endpoint with what they deliver, which btl.h allows: "May be NULL"). It
 * is the first header of every segment dr2 sends on such a BTL (pml_dr2_from.h), and
 * nowhere else: the decoder of a segment's headers does not know the type, a FROM inside a
 * segment ends it as malformed. Common 8 bytes (flags 0), then the sender's Open MPI
 * process name:
 *
 *     8  u32  jobid
 *    12  u32  vpid
 *    16                  (PML_DR2_HDR_FROM_LEN)
 *
 * An ACK flagged MATCHED for the vfrag of a RNDV also says
 * the receiver matched the message: send the rest / the synchronous send is complete. It
 * is idempotent like any ACK: a sender still waiting for it resends the RNDV (flagged
 * RETRANSMIT) on its timer, and the receiver answers that duplicate with ACK|MATCHED once
 * it has matched the message.
 *
 * Headers are packed back to back in one BTL segment: a decoded header tells its wire
 * length (header + payload), where the next one would start.
 */
#ifndef PML_DR2_HDR_H
#define PML_DR2_HDR_H

#include <stddef.h>
#include <stdint.h>

/* 2: MATCH, RNDV and EAGER carry the communicator's epoch; they and FRAG are 48 bytes (44 in
 * version 1). */
#define PML_DR2_HDR_VERSION 2

typedef enum {
    PML_DR2_HDR_MATCH = 1,
    PML_DR2_HDR_RNDV = 2,
    PML_DR2_HDR_FRAG = 3,
    PML_DR2_HDR_ACK = 4,
    PML_DR2_HDR_NACK = 5,
    PML_DR2_HDR_EAGER = 6,
    PML_DR2_HDR_TINY = 7,
    PML_DR2_HDR_LOCAL = 8,
    PML_DR2_HDR_FROM = 9,
} pml_dr2_hdr_type_t;

#define PML_DR2_HDR_COMMON_LEN 8
#define PML_DR2_HDR_MATCH_LEN 48 /* MATCH and RNDV */
#define PML_DR2_HDR_FRAG_LEN 48
#define PML_DR2_HDR_ACK_LEN 20 /* ACK and NACK */
#define PML_DR2_HDR_EAGER_LEN 48
#define PML_DR2_HDR_MAX_LEN 48
#define PML_DR2_HDR_TINY_LEN 16
/* A TINY's payload: at most this many bytes (the rest of its segment). */
#define PML_DR2_HDR_TINY_MAX_PAYLOAD 256
#define PML_DR2_HDR_LOCAL_LEN 12
/* A LOCAL's payload: at most this many bytes (the rest of its segment). */
#define PML_DR2_HDR_LOCAL_MAX_PAYLOAD 8192
#define PML_DR2_HDR_FROM_LEN 16
/* The bits of a vfrag id a TINY carries. */
#define PML_DR2_HDR_TINY_VFRAG_BITS 24

/* Fragments per vfrag: one bit each in a 64-bit ACK mask. */
#define PML_DR2_MAX_FRAGS_PER_VFRAG 64

/* MATCH, RNDV, FRAG: a resend (no RTT sample from its ACK: Karn's rule). */
#define PML_DR2_HDR_FLAG_RETRANSMIT 0x01
/* MATCH, RNDV, FRAG: acknowledge this vfrag now rather than waiting to coalesce. */
#define PML_DR2_HDR_FLAG_ACK_NOW 0x02
/* MATCH, RNDV: a synchronous send. Valid on the wire, never set by dr2 and ignored by its
 * receivers: dr2 sends every synchronous message by rendezvous, whose MATCHED go-ahead
 * already tells the sender that the receive matched. */
#define PML_DR2_HDR_FLAG_SYNC 0x04
/* ACK (and EAGER's piggybacked ACK): the receiver matched the message whose first vfrag
 * is acknowledged. */
#define PML_DR2_HDR_FLAG_MATCHED 0x08
/* ACK of a RNDV's vfrag: the receiver dropped the message unmatched, because its
 * communicator is revoked there (for the message's tag): the send completes in error, no
 * data follows. The answer ob1 gives as an ACK without a receive request. Never inside an
 * EAGER. */
#define PML_DR2_HDR_FLAG_REVOKED 0x10
/* ACK: not an acknowledgement but a probe of the path it travels on (pml_dr2_btlpath.h):
 * vfrag is the probe's id, mask the prober's path index + 1; answered with the same fields
 * flagged PROBE_REPLY on the path it arrived on. Either flag comes alone. */
#define PML_DR2_HDR_FLAG_PROBE 0x20
#define PML_DR2_HDR_FLAG_PROBE_REPLY 0x40
/* MATCH, RNDV, FRAG: the payload carries no checksum (data_crc 0): the sender's checksum
 * policy for the path it came on said none (pml_dr2_checksum_on_btl). The receiver does
 * not check it, whatever its own policy: the sender's decides, per path. */
#define PML_DR2_HDR_FLAG_NO_DATA_CRC 0x80

/* MATCH and RNDV. */
typedef struct {
    uint32_t ctx;
    int32_t src;
    int32_t tag;
    uint16_t seq;
    uint8_t frag_count;
    uint32_t vfrag;
    uint64_t msg_len;
    uint32_t epoch;    /* the communicator's generation (not in TINY and LOCAL) */
    uint8_t has_epoch; /* decode: 1 for MATCH, RNDV and EAGER, which carry one */
} pml_dr2_match_hdr_t;

typedef struct {
    uint32_t msg_id;
    uint32_t vfrag;
    uint8_t frag_index;
    uint8_t frag_count;
    uint64_t offset;
    uint64_t msg_len;
} pml_dr2_frag_hdr_t;

/* ACK and NACK. */
typedef struct {
    uint32_t vfrag;
    uint64_t mask;
} pml_dr2_ack_hdr_t;


/* A header in host form. */
typedef struct {
    uint8_t type;      /* pml_dr2_hdr_type_t */
    uint8_t flags;     /* PML_DR2_HDR_FLAG_* */
    uint8_t hdr_len;   /* filled in by encode and decode */
    uint32_t frag_len; /* payload bytes (data headers; 0 for ACK/NACK) */
    uint32_t data_crc; /* CRC32C of the payload (data headers; 0 for ACK/NACK). EAGER:
                        * the wire hdr_crc over header and payload (checked by decode) */
    /* EAGER: the ACK riding along (mask 0: none); zero for every other type */
    pml_dr2_ack_hdr_t piggy_ack;
    union {
        pml_dr2_match_hdr_t match; /* MATCH, RNDV; EAGER (frag_count 1, msg_len frag_len) */
        pml_dr2_frag_hdr_t frag;   /* FRAG */
        pml_dr2_ack_hdr_t ack;     /* ACK, NACK */
    };
} pml_dr2_hdr_t;

/* Outcome of a decode: one code per reason, usable as an index into an array of counters.
 * A header damaged in flight can fail any check; HDR_CRC is what damage usually shows as. */
typedef enum {
    PML_DR2_HDR_OK = 0,
    PML_DR2_HDR_ERR_TRUNCATED,         /* buffer shorter than the header */
    PML_DR2_HDR_ERR_VERSION,           /* version is not PML_DR2_HDR_VERSION */
    PML_DR2_HDR_ERR_TYPE,              /* unknown type */
    PML_DR2_HDR_ERR_HDR_LEN,           /* hdr_len is not the type's header length */
    PML_DR2_HDR_ERR_HDR_CRC,           /* header checksum mismatch */
    PML_DR2_HDR_ERR_FLAGS,             /* a flag the type does not define */
    PML_DR2_HDR_ERR_RESERVED,          /* a reserved field is not zero */
    PML_DR2_HDR_ERR_RANK,              /* negative source rank */
    PML_DR2_HDR_ERR_FRAG_INDEX,        /* fragment index >= 64 */
    PML_DR2_HDR_ERR_FRAG_COUNT,        /* fragment count 0 or > 64, or index >= count */
    PML_DR2_HDR_ERR_EMPTY,             /* FRAG without payload */
    PML_DR2_HDR_ERR_MASK,              /* ACK or NACK with an empty mask */
    PML_DR2_HDR_ERR_TOO_LONG,          /* payload longer than the caller's maximum */
    PML_DR2_HDR_ERR_OVERFLOW,          /* offset + length overflows 64 bits */
    PML_DR2_HDR_ERR_BOUNDS,            /* payload reaches past the message length */
    PML_DR2_HDR_ERR_PAYLOAD_TRUNCATED, /* buffer shorter than header + payload */
    PML_DR2_HDR_ERR_DATA_CRC,          /* payload checksum mismatch */
    PML_DR2_HDR_NUM_STATUS
} pml_dr2_hdr_status_t;

/* Header length of `type` on the wire, 0 for an unknown type. */
size_t pml_dr2_hdr_size(int type);

/* Bytes a decoded or encoded header occupies with its payload: where the next header in
 * the same segment starts. */
static inline size_t pml_dr2_hdr_wire_len(const pml_dr2_hdr_t *hdr)
{
    return (size_t) hdr->hdr_len + hdr->frag_len;
}

/* Write the header (not the payload) at buf: data_crc must already be the payload's CRC.
 * Sets hdr->hdr_len (and, for ACK and NACK, frag_len and data_crc to 0). Returns the header
 * length, or 0 if buf_len is too small or the header would not pass decode (a bug in the
 * caller, not a wire error). EAGER: its checksum covers the payload, which must already be
 * at buf + PML_DR2_HDR_EAGER_LEN (buf_len covering both); sets data_crc to that checksum. */
size_t pml_dr2_hdr_encode(pml_dr2_hdr_t *hdr, void *buf, size_t buf_len);

/* Encode a data header followed by a copy of payload[0 .. payload_len-1], checksummed while
 * it is copied; sets hdr->frag_len and hdr->data_crc (EAGER: also match.msg_len and
 * match.frag_count, which it implies). Returns the wire length, or 0. */
size_t pml_dr2_hdr_pack(pml_dr2_hdr_t *hdr, void *buf, size_t buf_len, const void *payload,
                        uint32_t payload_len);

/* Check and decode the header at buf[0 .. buf_len-1] and its payload: every field, both
 * checksums, and that a payload of at most max_payload bytes is entirely within buf.
 * Never reads outside buf. *hdr is meaningful only when PML_DR2_HDR_OK is returned. */
pml_dr2_hdr_status_t pml_dr2_hdr_decode(const void *buf, size_t buf_len, uint32_t max_payload,
                                        pml_dr2_hdr_t *hdr);

/* Everything pml_dr2_hdr_decode checks except the payload checksum, for a receiver that
 * checks the payload while copying it out with pml_dr2_hdr_unpack (or its own fused copy
 * compared with hdr->data_crc). The header itself is fully checked: it can be acted on.
 * EAGER: its one checksum covers the payload too, so the payload is checked here already
 * (pml_dr2_hdr_payload_checked): copy it out with a plain copy. */
pml_dr2_hdr_status_t pml_dr2_hdr_decode_header(const void *buf, size_t buf_len,
                                               uint32_t max_payload, pml_dr2_hdr_t *hdr);

/* Copy the payload of a header accepted by pml_dr2_hdr_decode_header from buf (the same
 * buffer) to dst[0 .. frag_len-1], checking it on the way: PML_DR2_HDR_OK or
 * PML_DR2_HDR_ERR_DATA_CRC (dst then holds the corrupt bytes: do not act on them). */
pml_dr2_hdr_status_t pml_dr2_hdr_unpack(const pml_dr2_hdr_t *hdr, const void *buf, void *dst);

/* The payload of this decoded header has no checksum left to check: EAGER and TINY were
 * checked with their header, a LOCAL carries none. */
static inline int pml_dr2_hdr_payload_checked(const pml_dr2_hdr_t *hdr)
{
    return PML_DR2_HDR_EAGER == hdr->type || PML_DR2_HDR_TINY == hdr->type
           || PML_DR2_HDR_LOCAL == hdr->type;
}

/* The envelope (ctx, src, tag; no other field is read) fits the 16-bit fields of TINY and
 * LOCAL. */
static inline int pml_dr2_hdr_envelope_fits_short(const pml_dr2_match_hdr_t *match)
{
    return match->ctx <= UINT16_MAX && match->src >= 0 && match->src <= UINT16_MAX
           && match->tag >= INT16_MIN && match->tag <= INT16_MAX;
}

/* A message with this envelope and a payload of payload_len bytes fits a TINY. */
static inline int pml_dr2_hdr_envelope_fits_tiny(const pml_dr2_match_hdr_t *match,
                                                 uint32_t payload_len)
{
    return payload_len <= PML_DR2_HDR_TINY_MAX_PAYLOAD && pml_dr2_hdr_envelope_fits_short(match);
}

/* The envelope of this EAGER header (before pml_dr2_hdr_pack sets its lengths) and a
 * payload of payload_len bytes fit a TINY, and it carries no ACK. */
static inline int pml_dr2_hdr_fits_tiny(const pml_dr2_hdr_t *hdr, uint32_t payload_len)
{
    return 0 == hdr->piggy_ack.mask && 0 == hdr->piggy_ack.vfrag
           && 0 == (hdr->flags & ~PML_DR2_HDR_FLAG_ACK_NOW)
           && pml_dr2_hdr_envelope_fits_tiny(&hdr->match, payload_len);
}

/* Encode the message with envelope `match` (ctx, src, tag, seq and vfrag are read) as a
 * TINY followed by a copy of the payload, checksummed while it is copied. Returns the wire
 * length, or 0 if it does not fit (pml_dr2_hdr_envelope_fits_tiny) or buf_len is too
 * small. A TINY's vfrag id is only its low PML_DR2_HDR_TINY_VFRAG_BITS bits; decode
 * returns it so (type TINY), for the receiver to complete. */
size_t pml_dr2_hdr_pack_tiny_envelope(const pml_dr2_match_hdr_t *match, void *buf,
                                      size_t buf_len, const void *payload, uint32_t payload_len);

/* Encode the message with envelope `match` (ctx, src, tag and seq are read) as a LOCAL
 * followed by a copy of the payload. Returns the wire length, or 0 if it does not fit
 * (pml_dr2_hdr_envelope_fits_short, PML_DR2_HDR_LOCAL_MAX_PAYLOAD) or buf_len is too
 * small. Decode returns it as type LOCAL, frag_count 1, msg_len frag_len, vfrag and
 * data_crc 0. */
size_t pml_dr2_hdr_pack_local(const pml_dr2_match_hdr_t *match, void *buf, size_t buf_len,
                              const void *payload, uint32_t payload_len);

/* The same for an EAGER header that pml_dr2_hdr_fits_tiny; 0 for any other header. */
size_t pml_dr2_hdr_pack_tiny(const pml_dr2_hdr_t *hdr, void *buf, size_t buf_len,
                             const void *payload, uint32_t payload_len);

/* An ACK or NACK header (`type`) with `flags` and `ack` into buf, in one pass: the header
 * that travels alone most often (one per small message in a ping-pong of TINYs). Returns
 * PML_DR2_HDR_ACK_LEN, or 0 for another type, a flag the type does not define, an empty
 * mask or a buf_len too small. pml_dr2_hdr_encode of such a header writes the same bytes. */
size_t pml_dr2_hdr_pack_ack(uint8_t type, uint8_t flags, const pml_dr2_ack_hdr_t *ack, void *buf,
                            size_t buf_len);

/* FROM: a process name. */
typedef struct {
    uint32_t jobid;
    uint32_t vpid;
} pml_dr2_from_hdr_t;

/* A FROM header naming `from` into buf. Returns PML_DR2_HDR_FROM_LEN, or 0 if buf_len is
 * too small. */
size_t pml_dr2_hdr_pack_from(const pml_dr2_from_hdr_t *from, void *buf, size_t buf_len);

/* Check and decode the FROM header at the start of buf[0 .. buf_len-1] (type, version,
 * length, checksum, flags 0). Never reads outside buf; *from is meaningful only when
 * PML_DR2_HDR_OK is returned. */
pml_dr2_hdr_status_t pml_dr2_hdr_decode_from(const void *buf, size_t buf_len,
                                             pml_dr2_from_hdr_t *from);

/* A short name for a status ("ok", "hdr-crc", ...), for counters and logs. */
const char *pml_dr2_hdr_status_name(pml_dr2_hdr_status_t status);

#endif /* PML_DR2_HDR_H */
