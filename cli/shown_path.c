/* cli/shown_path.c — escaping paths for messages (rules in shown_path.h). */
#include "shown_path.h"

#include <stdio.h>
#include <string.h>

#include "../preprocess/text/utf8.h"

/* Characters that draw nothing or look like a plain space, escaped like control bytes (shown_path.h): the space
 * separators other than U+0020 and the line and paragraph separators (Unicode categories Zs, Zl, Zp), every
 * Default_Ignorable_Code_Point (Unicode 15: soft hyphen, zero-width characters, bidi marks, embeddings, overrides
 * and isolates, word joiner, invisible operators, fillers, variation selectors, U+FEFF, tags), and the
 * interlinear annotation controls U+FFF9..U+FFFB. Sorted, inclusive, disjoint: a binary search looks them up. */
static const struct { unsigned lo, hi; } k_unseen[] = {
    {0x00A0, 0x00A0},   /* no-break space */
    {0x00AD, 0x00AD},   /* soft hyphen */
    {0x034F, 0x034F},   /* combining grapheme joiner */
    {0x061C, 0x061C},   /* Arabic letter mark */
    {0x115F, 0x1160},   /* Hangul choseong and jungseong fillers */
    {0x1680, 0x1680},   /* Ogham space mark (Zs) */
    {0x17B4, 0x17B5},   /* Khmer inherent vowels */
    {0x180B, 0x180F},   /* Mongolian variation selectors and vowel separator */
    {0x2000, 0x200F},   /* en quad .. hair space, zero-width space / non-joiner / joiner, LRM, RLM */
    {0x2028, 0x202F},   /* line and paragraph separators, LRE .. RLO, narrow no-break space */
    {0x205F, 0x206F},   /* medium mathematical space, word joiner, invisible operators, LRI .. PDI, deprecated */
    {0x3000, 0x3000},   /* ideographic space */
    {0x3164, 0x3164},   /* Hangul filler */
    {0xFE00, 0xFE0F},   /* variation selectors */
    {0xFEFF, 0xFEFF},   /* zero-width no-break space, the byte order mark */
    {0xFFA0, 0xFFA0},   /* halfwidth Hangul filler */
    {0xFFF0, 0xFFFB},   /* unassigned default-ignorables, interlinear annotation anchor .. terminator */
    {0x1BCA0, 0x1BCA3}, /* shorthand format controls */
    {0x1D173, 0x1D17A}, /* musical symbol format controls */
    {0xE0000, 0xE0FFF}, /* tags, variation selectors supplement, the rest of the default-ignorable plane 14 block */
};

static int unseen(unsigned cp) {
    size_t lo = 0, hi = sizeof k_unseen / sizeof k_unseen[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < k_unseen[mid].lo) hi = mid;
        else if (cp > k_unseen[mid].hi) lo = mid + 1;
        else return 1;
    }
    return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4) that is a character shown as itself (not a C0/C1 control, not
 * DEL, not one of k_unseen), or 0: then each of its bytes is escaped. s is NUL-terminated: the strict decoder tests
 * each continuation byte before it reads the next, and a NUL fails that test, so it never reads past the end. */
static int printable_len(const unsigned char *s) {
    uint32_t cp;
    int n = sg_utf8_decode(s, 4, &cp);
    if (!n || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xA0)) return 0; /* invalid, C0, DEL, C1 */
    return unseen(cp) ? 0 : n;
}

void sg_cli_shown_path_put(sg_cli_buf *b, const char *path) {
    const unsigned char *s = (const unsigned char *)path;
    while (*s) {
        if (*s == '\\') {
            sg_cli_buf_puts(b, "\\\\");
            s++;
            continue;
        }
        int n = printable_len(s); /* reads at most up to the NUL: a NUL fails every continuation test */
        if (n) {
            sg_cli_buf_append(b, (const char *)s, (size_t)n);
            s += n;
            continue;
        }
        char e[8];
        if (*s == '\n' || *s == '\r' || *s == '\t') snprintf(e, sizeof e, "\\%c", *s == '\n' ? 'n' : *s == '\r' ? 'r' : 't');
        else snprintf(e, sizeof e, "\\x%02x", *s);
        sg_cli_buf_puts(b, e);
        s++;
    }
    if (!b->p) sg_cli_buf_append(b, "", 0);
}

const char *sg_cli_shown_path(const char *path, char *out, size_t outlen) {
    sg_cli_buf b = {0};
    sg_cli_shown_path_put(&b, path);
    if (b.len < outlen) {
        memcpy(out, b.p, b.len + 1);
    } else if (outlen >= 4) {
        memcpy(out, b.p, outlen - 4);
        memcpy(out + outlen - 4, "...", 4);
    } else if (outlen) {
        out[0] = '\0';
    }
    sg_cli_buf_free(&b);
    return out;
}
