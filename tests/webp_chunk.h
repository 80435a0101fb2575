/* tests/webp_chunk.h — the payload of one top-level chunk of a RIFF WebP, found by tag, for the codec tests
 * (test_webp_vp8.c, test_webp_vp8l.c) and the hand-built lab drivers of tests/fuzz, which hand a codec its
 * chunk without the container (decode_webp.c is the real one). Header-only: each includer is one program.
 */
#ifndef SG_TEST_WEBP_CHUNK_H
#define SG_TEST_WEBP_CHUNK_H

#include <stdint.h>
#include <string.h>

/* The first top-level chunk called tag in the n bytes at d: its payload, and in *len its size, with the pad
 * byte of an odd size when padded (libwebp's demuxer hands the VP8 and VP8L decoders the padded chunk; ALPH is
 * read unpadded), cut to what the file holds. NULL when d is not RIFF WEBP, the tag is absent, or a chunk before
 * it runs past the end. */
static inline const uint8_t *sg_test_webp_chunk(const uint8_t *d, size_t n, const char *tag, int padded,
                                                size_t *len) {
    if (n < 12 || memcmp(d, "RIFF", 4) || memcmp(d + 8, "WEBP", 4)) return NULL;
    for (size_t off = 12; off + 8 <= n;) {
        const uint8_t *s = d + off + 4;
        size_t sz = (size_t)s[0] | (size_t)s[1] << 8 | (size_t)s[2] << 16 | (size_t)s[3] << 24;
        size_t avail = n - off - 8, want = padded ? sz + (sz & 1) : sz;
        if (!memcmp(d + off, tag, 4)) {
            *len = want < avail ? want : avail;
            return d + off + 8;
        }
        if (sz + (sz & 1) > avail) return NULL;
        off += 8 + sz + (sz & 1);
    }
    return NULL;
}

#endif
