/* cli/resume_check.h — --resume: were the file's rows made by this run's model and labels?
 *
 * sg_cli_resume_prepare (resume.h) checks what a row shows by itself: our row grammar, the model's dim, unit norm
 * or raw, labels or none. Two rows of one dim from two checkpoints look alike, and so do labels scored through two
 * --template texts. So before a resumed run appends, a few of the file's rows (its probe rows: first, last, and
 * at a quarter, half and three quarters of its bytes) are checked against this run:
 *   - the model: up to SG_RESUME_CHECK_IMAGES of their inputs that can still be read are embedded again with
 *     this run's backend, weights and preprocessing, and compared with their rows by cosine. One model with the
 *     same settings agrees with itself to better than 0.999 whatever the backends (each is within 0.999 of HF
 *     fp32, FP8's gate; measured on an H100 with a full-size random checkpoint, the lowest pair is cpu against
 *     sm90 FP8 at 0.99909, docs/gpu-runs/2026-11-27-h100-s30-resume-check.txt). If every input compared is
 *     below SG_RESUME_MIN_COSINE, the run is refused and the file left as it was (tests/test_cli_resume.py: a
 *     checkpoint of the same shape with every other value of each weight matrix negated gives -0.22 to 0.26).
 *     One below it among others above is an input changed since its row was written: a warning names it and the
 *     run goes on (its row stays). A setting that moves an image only a little (--resample, --fast-decode,
 *     --pillow-version) is not told apart.
 *   - the labels (--labels runs): each probe row's scores are computed again from its own embedding with this
 *     run's label embeddings. Scores are sigmoid(scale * cos + bias), so a score's log-odds give its cosine; a
 *     --template or text model other than the file's moves those cosines, the text tower on another backend
 *     (bf16 on a GPU) by at most 4.6e-4 (the same run: 13 photos x 40 labels, cpu against cuda). Refused when
 *     one moved by more than SG_RESUME_MAX_COS (in that run "a photo of a {}." instead of the default template
 *     moved the first label checked by 7.6e-3 and was refused; how far the real checkpoint's scores move with
 *     a template is not measured: its weights cannot be fetched here).
 * Rows of inputs that no longer exist, or that fail to decode now, are skipped; with none left to compare, -v says
 * the model was not checked.
 */
#ifndef SG_CLI_RESUME_CHECK_H
#define SG_CLI_RESUME_CHECK_H

#include <stddef.h>
#include "../kernel/backend.h"
#include "../preprocess/preprocess.h"
#include "resume.h"
#include "zeroshot.h"

#define SG_RESUME_CHECK_IMAGES 3
#define SG_RESUME_MIN_COSINE 0.99
#define SG_RESUME_MAX_COS 0.005

typedef struct sg_cli_resume_check_cfg {
    const char *path;               /* the JSONL file being resumed */
    const sg_cli_resume_info *info; /* from sg_cli_resume_prepare */
    sg_backend *backend;            /* this run's, started */
    const sg_preprocess_opts *pre;  /* this run's preprocessing */
    int normalize;                  /* this run writes unit-norm rows */
    const sg_zeroshot *zs;          /* this run's labels, NULL without --labels */
    int verbose, quiet;
} sg_cli_resume_check_cfg;

/* 0: the rows agree with this run (warnings on stderr for inputs changed since), or nothing could be compared;
 * -1: refused, the reason in err. */
int sg_cli_resume_check(const sg_cli_resume_check_cfg *c, char *err, size_t errlen);

#endif
