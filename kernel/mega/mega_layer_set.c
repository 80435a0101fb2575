/* kernel/mega/mega_layer_set.c — parsing a set of encoder layers ("none", "all", "2-11", "0,3-5,8"); see the header.
 */
#include "mega_layer_set.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* A layer number at *p (decimal digits only), advancing *p; -1 if there is none or it is absurdly long. */
static int layer_number(const char **p) {
    int v = 0, digits = 0;
    while (isdigit((unsigned char)**p)) {
        if (++digits > 3) return -1;
        v = 10 * v + (**p - '0');
        (*p)++;
    }
    return digits ? v : -1;
}

int sg_mega_layer_set_parse(const char *s, int L, unsigned *mask, char *err, size_t errlen) {
    if (L < 1 || L > 32) {
        snprintf(err, errlen, "layer set for %d layers (1..32 supported)", L);
        return -1;
    }
    const unsigned all = L == 32 ? ~0u : (1u << L) - 1u;
    if (!strcmp(s, "none")) {
        *mask = 0;
        return 0;
    }
    if (!strcmp(s, "all")) {
        *mask = all;
        return 0;
    }
    unsigned m = 0;
    const char *p = s;
    for (;;) {
        const char *item = p;
        const int a = layer_number(&p);
        int b = a;
        if (a >= 0 && *p == '-') {
            p++;
            b = layer_number(&p);
        }
        if (a < 0 || b < 0 || (*p != ',' && *p != '\0')) {
            snprintf(err, errlen, "'%s': expected none, all, or layers and ranges such as 2-11 or 0,3-5 (at '%s')", s,
                     item);
            return -1;
        }
        if (b < a || b >= L) {
            snprintf(err, errlen, "'%s': %d-%d is not a range of layers 0..%d", s, a, b, L - 1);
            return -1;
        }
        for (int l = a; l <= b; l++) m |= 1u << l;
        if (*p == '\0') break;
        p++;  /* the comma; an item must follow */
    }
    *mask = m;
    return 0;
}
