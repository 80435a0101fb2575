/* tests/fuzz/jpeg_stage_bench.c — a lab timer: how much of a JPEG decode each stage of libjpeg costs; not product
 * code, not a test.
 *
 * The end-to-end rate on photo folders is set by the CPU's JPEG decoding (docs/perf-notes.md, preprocess/ section
 * 8). Moving stages of it to the GPU can only save what those stages cost on the CPU; this measures it with
 * libjpeg's own APIs and Pillow's settings (ISLOW, fancy upsampling), per file, on bytes already in memory:
 *   full    jpeg_read_scanlines to RGB, 16 rows a call (what sg_pre_jpeg_to_resized runs before the resize);
 *   raw     raw_data_out: entropy decoding and the IDCT, planes at their own sampling (no upsampling, no colour
 *           conversion): what the CPU would keep if the GPU upsampled, converted and resized;
 *   coef    jpeg_read_coefficients, every block read once: entropy decoding only (the GPU would also run the IDCT).
 * Prints the mean thread CPU milliseconds per image of each (the median of REPS runs per file) and the ratios
 * to full.
 *
 * Usage: jpeg_stage_bench REPS FILE...   Built by hand (Debian's libjpeg62-turbo-dev, as `make deps` installs):
 *   cc -O2 -I. tests/fuzz/jpeg_stage_bench.c -ljpeg -o /tmp/jpeg_stage_bench
 */
#include "tests/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>

/* A decompressor on the n bytes at b, its header read (libjpeg's default error handler exits on a broken file). */
static void open_jpeg(struct jpeg_decompress_struct *d, struct jpeg_error_mgr *e, const unsigned char *b, size_t n) {
    d->err = jpeg_std_error(e);
    jpeg_create_decompress(d);
    jpeg_mem_src(d, b, (unsigned long)n);
    jpeg_read_header(d, TRUE);
}

static void full(const unsigned char *b, size_t n) {
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr e;
    open_jpeg(&d, &e, b, n);
    d.out_color_space = JCS_RGB;
    jpeg_start_decompress(&d);
    unsigned char *buf = malloc((size_t)d.output_width * 3 * 16);
    JSAMPROW rows[16];
    for (int k = 0; k < 16; k++) rows[k] = buf + (size_t)k * d.output_width * 3;
    while (d.output_scanline < d.output_height) jpeg_read_scanlines(&d, rows, 16);
    jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    free(buf);
}

static void raw(const unsigned char *b, size_t n) {
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr e;
    open_jpeg(&d, &e, b, n);
    d.raw_data_out = TRUE;
    jpeg_start_decompress(&d);
    JSAMPROW rows[MAX_COMPONENTS][4 * DCTSIZE];
    JSAMPARRAY planes[MAX_COMPONENTS];
    for (int c = 0; c < d.num_components; c++) {
        const int h = d.comp_info[c].v_samp_factor * DCTSIZE;
        for (int k = 0; k < h; k++) rows[c][k] = malloc(d.comp_info[c].width_in_blocks * DCTSIZE + 64);
        planes[c] = rows[c];
    }
    while (d.output_scanline < d.output_height) jpeg_read_raw_data(&d, planes, d.max_v_samp_factor * DCTSIZE);
    jpeg_finish_decompress(&d);
    for (int c = 0; c < d.num_components; c++)
        for (int k = 0; k < d.comp_info[c].v_samp_factor * DCTSIZE; k++) free(rows[c][k]);
    jpeg_destroy_decompress(&d);
}

static long coef(const unsigned char *b, size_t n) {
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr e;
    open_jpeg(&d, &e, b, n);
    jvirt_barray_ptr *arr = jpeg_read_coefficients(&d);
    long nonzero = 0;
    for (int c = 0; c < d.num_components; c++) {
        jpeg_component_info *ci = d.comp_info + c;
        for (JDIMENSION by = 0; by < ci->height_in_blocks; by++) {
            JBLOCKARRAY row = d.mem->access_virt_barray((j_common_ptr)&d, arr[c], by, 1, FALSE);
            for (JDIMENSION bx = 0; bx < ci->width_in_blocks; bx++)
                for (int k = 0; k < DCTSIZE2; k++) nonzero += row[0][bx][k] != 0;
        }
    }
    jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    return nonzero;
}

static double median_ms(int stage, const unsigned char *b, size_t n, int reps, double *scratch) {
    for (int r = 0; r < reps; r++) {
        const double t0 = sg_test_clock_s(CLOCK_THREAD_CPUTIME_ID);
        if (stage == 0) full(b, n);
        else if (stage == 1) raw(b, n);
        else coef(b, n);
        scratch[r] = (sg_test_clock_s(CLOCK_THREAD_CPUTIME_ID) - t0) * 1e3;
    }
    sg_test_sort_doubles(scratch, (size_t)reps);
    return scratch[reps / 2];
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s REPS FILE...\n", argv[0]);
        return 2;
    }
    const int reps = atoi(argv[1]) > 0 ? atoi(argv[1]) : 3;
    double sum[3] = {0, 0, 0}, *scratch = sg_test_xmalloc(sizeof(double) * (size_t)reps);
    int files = 0;
    for (int i = 2; i < argc; i++) {
        size_t n;
        unsigned char *b = sg_test_read_file(argv[i], &n);
        if (!b) {
            fprintf(stderr, "%s: cannot read\n", argv[i]);
            continue;
        }
        for (int s = 0; s < 3; s++) sum[s] += median_ms(s, b, n, reps, scratch);
        files++;
        free(b);
    }
    if (!files) return 1;
    printf("%d JPEGs, median of %d runs each, mean ms per image: full %.2f  raw (no upsampling / colour) %.2f "
           "(%.2fx)  coefficients only %.2f (%.2fx)\n",
           files, reps, sum[0] / files, sum[1] / files, sum[1] / sum[0], sum[2] / files, sum[2] / sum[0]);
    free(scratch);
    return 0;
}
