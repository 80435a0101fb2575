/* tests/test_safetensors.c — the safetensors reader on in-memory files built here.
 *
 * Checks the rules a reader can get subtly wrong with cJSON: names compared exactly ("a" and "A" are two
 * tensors, an exact repeat is rejected), offsets exact integers (2^53+1, 1e300, -1, 1.5 rejected), JSON key
 * order independent of data order, __metadata__ accepted, trailing header spaces accepted. F16/BF16 widening
 * is checked over all 65536 patterns against ldexp arithmetic. Last, a few thousand random mutations of a
 * valid file (seed printed) must each give a tensor list or a message, never a crash (run under ASan by
 * make asan). Every input lives in a heap block of its exact size so ASan sees any read past it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "weights/safetensors.h"

/* An exact-size heap copy of: u64 header length, header text, data_len bytes of pattern. */
static unsigned char *mk(const char *hdr, size_t data_len, size_t *len) {
    size_t n = strlen(hdr);
    *len = 8 + n + data_len;
    unsigned char *b = malloc(*len);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(b + 8, hdr, n);
    for (size_t i = 0; i < data_len; i++)
        b[8 + n + i] = (unsigned char)(i * 37 + 11);
    return b;
}

/* Parses hdr + data_len bytes; returns 1 if accepted. err receives the message. */
static int try_parse(const char *hdr, size_t data_len, char *err, size_t errlen) {
    size_t len;
    unsigned char *b = mk(hdr, data_len, &len);
    snprintf(err, errlen, "poison");
    sg_st_file *f = sg_st_open_memory(b, len, "t", err, errlen);
    int ok = f != NULL;
    sg_st_close(f);
    free(b);
    return ok;
}

static float f16_reference(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -24);
    else
        v = ldexp(1024 + m, e - 25);
    return (float)(s ? -v : v);
}

static void test_f16_bf16(void) {
    int bad = 0, bad_bf = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        float got = sg_f16_to_f32((uint16_t)i), want = f16_reference((uint16_t)i);
        if (isnan(want))
            bad += !isnan(got) || signbit(got) != signbit(want);
        else
            bad += memcmp(&got, &want, 4) != 0; /* bitwise, so -0 and +0 differ */
        /* bfloat16 = float32 with the low 16 mantissa bits dropped: value = sign * (1.m) * 2^(e-127) */
        int s = i >> 15, e = (i >> 7) & 255, m = i & 127;
        double bv = e == 255 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
        float bw = (float)(s ? -bv : bv), bg = sg_bf16_to_f32((uint16_t)i);
        if (isnan(bw))
            bad_bf += !isnan(bg) || signbit(bg) != signbit(bw);
        else
            bad_bf += memcmp(&bg, &bw, 4) != 0;
    }
    CHECK(bad == 0, "F16 -> F32 exact for all 65536 patterns vs ldexp (subnormals, +-0, +-inf, NaN): %d wrong", bad);
    CHECK(bad_bf == 0, "BF16 -> F32 exact for all 65536 patterns vs ldexp: %d wrong", bad_bf);
    /* The bulk path (used by the loader) from an odd address must agree bit for bit with the scalar one. */
    unsigned char *src = malloc(2 * 65536 + 1);
    float *dst = malloc(65536 * sizeof *dst);
    for (uint32_t i = 0; i < 65536; i++) {
        src[1 + 2 * i] = (unsigned char)i;
        src[2 + 2 * i] = (unsigned char)(i >> 8);
    }
    int bulk_bad = 0;
    for (int t = 1; t <= 2; t++) {
        sg_st_widen((sg_st_dtype)t, src + 1, dst, 65536);
        for (uint32_t i = 0; i < 65536; i++) {
            float want = t == SG_ST_F16 ? sg_f16_to_f32((uint16_t)i) : sg_bf16_to_f32((uint16_t)i);
            bulk_bad += memcmp(&want, &dst[i], 4) != 0;
        }
    }
    CHECK(bulk_bad == 0,
          "sg_st_widen (F16, BF16) from an unaligned source equals the scalar conversion bitwise: %d wrong", bulk_bad);
    free(src);
    free(dst);
    CHECK(sg_f16_to_f32(0x0001) == 0x1p-24f && sg_f16_to_f32(0x7bff) == 65504.0f && sg_f16_to_f32(0x3c00) == 1.0f,
          "F16 spot values: smallest subnormal 2^-24, max 65504, 1.0");
}

int main(void) {
    char err[1024];
    size_t len;

    /* A valid file: JSON order differs from data order, metadata present, header padded with spaces. */
    const char *hdr = "{\"__metadata__\":{\"format\":\"pt\"},"
                      "\"w\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[16,28]},"
                      "\"A\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
                      "\"a\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]},"
                      "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[28,32]},"
                      "\"z\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[32,32]}}   ";
    unsigned char *b = mk(hdr, 32, &len);
    snprintf(err, sizeof err, "poison");
    sg_st_file *f = sg_st_open_memory(b, len, "valid", err, sizeof err);
    CHECK(f != NULL, "valid file with __metadata__, keys out of offset order, trailing spaces parses (%s)",
          f ? "ok" : err);
    if (f) {
        const unsigned char *data = b + 8 + strlen(hdr);
        const sg_st_tensor *w = sg_st_find(f, "w"), *A = sg_st_find(f, "A"), *a = sg_st_find(f, "a"),
                           *s = sg_st_find(f, "s"), *z = sg_st_find(f, "z");
        CHECK(f->n_tensors == 5 && f->has_metadata && !sg_st_find(f, "__metadata__"),
              "5 tensors, __metadata__ noted and not a tensor (n=%zu)", f->n_tensors);
        CHECK(a && A && a != A && a->data == data && A->data == data + 8 && a->dtype == SG_ST_BF16 &&
                  A->dtype == SG_ST_F32,
              "'a' and 'A' are two distinct tensors with their own offsets and dtypes");
        CHECK(w && w->ndim == 2 && w->shape[0] == 2 && w->shape[1] == 3 && w->data == data + 16 && w->nbytes == 12,
              "'w' F16 [2, 3] at data + 16, 12 bytes");
        CHECK(s && s->ndim == 0 && s->nbytes == 4, "scalar shape [] has one element");
        CHECK(z && z->nbytes == 0 && z->begin == 32, "empty tensor [0, 5] at the end is accepted");
        CHECK(!sg_st_find(f, "W") && !sg_st_find(f, "") && !sg_st_find(NULL, "a"),
              "look-up is exact (no 'W'), NULL-safe");
    }
    sg_st_close(f);
    free(b);

    CHECK(try_parse("{}", 0, err, sizeof err), "empty header {} with no data is a valid file");
    CHECK(!try_parse("{}", 4, err, sizeof err) && strstr(err, "no tensors, but 4 bytes follow"),
          "{} followed by 4 data bytes is rejected: %s", err);
    CHECK(!try_parse("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                     "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                     8, err, sizeof err) &&
              strstr(err, "duplicate tensor name 'a'"),
          "exact duplicate key rejected: %s", err);
    CHECK(try_parse("{\"ab\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                    "\"aB\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                    8, err, sizeof err),
          "case-variant keys 'ab' and 'aB' accepted as two tensors");
    CHECK(!try_parse("{\"a\":{\"dtype\":\"F32\",\"Dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, err,
                     sizeof err) &&
              strstr(err, "unknown field 'Dtype'"),
          "field name case matters ('Dtype' is not 'dtype'): %s", err);
    CHECK(!try_parse("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, err,
                     sizeof err) &&
              strstr(err, "field 'dtype' appears twice"),
          "a repeated field is rejected: %s", err);
    CHECK(!try_parse("{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, err, sizeof err) &&
              strstr(err, "unsupported dtype 'f32'"),
          "dtype is case-sensitive: %s", err);

    static const struct {
        const char *num, *why;
    } offs[] = {
        {"9007199254740993", "2^53 or more"},
        {"9007199254740992", "2^53 or more"},
        {"1e300", "2^53 or more"},
        {"-1", "negative"},
        {"-0.5", "negative"},
        {"1.5", "not an integer"},
        {"4.000001", "not an integer"},
        {"18446744073709551620", "2^53 or more"},
    };
    for (size_t i = 0; i < sizeof offs / sizeof *offs; i++) {
        char h[256];
        snprintf(h, sizeof h, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,%s]}}", offs[i].num);
        CHECK(!try_parse(h, 4, err, sizeof err) && strstr(err, "data_offsets[1]") && strstr(err, offs[i].why),
              "offset %s rejected as %s: %s", offs[i].num, offs[i].why, err);
        snprintf(h, sizeof h, "{\"a\":{\"dtype\":\"F32\",\"shape\":[%s],\"data_offsets\":[0,4]}}", offs[i].num);
        CHECK(!try_parse(h, 4, err, sizeof err) && strstr(err, "shape[0]") && strstr(err, offs[i].why),
              "shape dimension %s rejected as %s: %s", offs[i].num, offs[i].why, err);
    }
    CHECK(try_parse("{\"a\":{\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4.0]}}", 4, err, sizeof err),
          "integral numbers written as 1e0 / 4.0 are exact and accepted");
    CHECK(!try_parse("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}", 0, err,
                     sizeof err) &&
              strstr(err, "overflows 64 bits"),
          "2^32 x 2^32 x 4 bytes: overflow caught: %s", err);
    CHECK(try_parse("{\"a\":{\"dtype\":\"F32\",\"shape\":[0,4294967296,4294967296],\"data_offsets\":[0,0]}}", 0, err,
                    sizeof err),
          "[0, 2^32, 2^32] has zero elements (no false overflow) and fits in [0, 0]");
    CHECK(!try_parse("{\"a\\u0000\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, err, sizeof err) &&
              strstr(err, "\\u0000"),
          "\\u0000 in a name rejected: %s", err);
    CHECK(try_parse("{\"a\\\\u0000\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, err, sizeof err),
          "an escaped backslash followed by u0000 is an ordinary name");
    CHECK(try_parse("{\"caf\xc3\xa9 \xf0\x9f\x98\x80\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                    err, sizeof err),
          "multi-byte UTF-8 names accepted");
    CHECK(!try_parse("{\"\\ud800\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, err, sizeof err) &&
              strstr(err, "not valid JSON"),
          "lone surrogate escape rejected: %s", err);

    snprintf(err, sizeof err, "poison");
    CHECK(!sg_st_open("/nonexistent/x.safetensors", err, sizeof err) && strstr(err, "cannot open"), "missing file: %s",
          err);
    CHECK(!sg_st_open("/", err, sizeof err) && strstr(err, "not a regular file"), "a directory: %s", err);
    CHECK(!sg_st_open_memory(NULL, 0, NULL, err, sizeof err) && strstr(err, "too short"), "empty memory: %s", err);

    test_f16_bf16();

    /* Random mutations of a valid file: no crash, and every rejection carries a message. */
    unsigned seed = (unsigned)time(NULL);
    srand(seed);
    const char *base_hdr = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                           "\"y\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[16,22]}}";
    size_t blen;
    unsigned char *base = mk(base_hdr, 22, &blen);
    int accepted = 0, rejected = 0, silent = 0;
    for (int it = 0; it < 4000; it++) {
        size_t len2 = blen;
        unsigned char *m = malloc(blen + 8);
        memcpy(m, base, blen);
        int kind = rand() % 4;
        if (kind == 0)
            len2 = (size_t)rand() % (blen + 1); /* truncate */
        else if (kind == 1)
            m[rand() % blen] = (unsigned char)rand(); /* random byte */
        else if (kind == 2)
            m[8 + rand() % (blen - 8)] = "{}[]\",:0123456789-.e "[rand() % 21]; /* JSON-ish byte */
        else { m[rand() % 8] = (unsigned char)rand(); }                         /* header length */
        unsigned char *exact = malloc(len2 ? len2 : 1);
        memcpy(exact, m, len2);
        err[0] = 0;
        sg_st_file *g = sg_st_open_memory(exact, len2, "mut", err, sizeof err);
        if (g)
            accepted++;
        else {
            rejected++;
            silent += strlen(err) < 10;
        }
        sg_st_close(g);
        free(exact);
        free(m);
    }
    free(base);
    CHECK(silent == 0 && rejected > 0,
          "4000 random mutations (seed %u): %d accepted, %d rejected, %d without a message", seed, accepted, rejected,
          silent);
    return CHECK_DONE();
}
