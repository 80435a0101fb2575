/* preprocess/text/utf8.h — strict UTF-8 decoding and encoding, shared by the JSON reader and the tokenizer.
 *
 * "Strict" is what Rust's str and Python's str.encode("utf-8") accept: shortest form only, no UTF-16
 * surrogates (U+D800..U+DFFF), nothing above U+10FFFF. A query that fails here is one HF could never have
 * received (Python cannot encode it), so the tokenizer refuses it and says where.
 */
#ifndef SG_TEXT_UTF8_H
#define SG_TEXT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the character at s (n bytes available): returns its length 1..4 and the code point in *cp, or 0 if
 * the bytes there are not valid UTF-8 (truncated, overlong, surrogate, above U+10FFFF, stray continuation). */
static inline int sg_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c < 0xC2) return 0; /* continuation byte, or C0/C1 (overlong 2-byte) */
    if (c < 0xE0) {
        if (n < 2 || (s[1] & 0xC0) != 0x80) return 0;
        *cp = ((c & 0x1Fu) << 6) | (s[1] & 0x3Fu);
        return 2;
    }
    if (c < 0xF0) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
        uint32_t v = ((c & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
        if (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF)) return 0;
        *cp = v;
        return 3;
    }
    if (c < 0xF5) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
        uint32_t v = ((c & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu);
        if (v < 0x10000 || v > 0x10FFFF) return 0;
        *cp = v;
        return 4;
    }
    return 0;
}

/* Writes code point cp (<= U+10FFFF, not a surrogate) as UTF-8 at out (4 bytes of room); returns the length. */
static inline int sg_utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The byte offset of the first invalid UTF-8 sequence in s[0..n), or n if all of it is valid. */
static inline size_t sg_utf8_check(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        int k = sg_utf8_decode(u + i, n - i, &cp);
        if (!k) return i;
        i += (size_t)k;
    }
    return n;
}

#endif
