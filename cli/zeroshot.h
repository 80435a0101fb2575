/* cli/zeroshot.h — zero-shot labels for image rows: the scores HF's zero-shot-image-classification pipeline
 * gives for SigLIP, and the hypothesis template.
 *
 * transformers pipelines/zero_shot_image_classification.py: each label becomes hypothesis_template.format(label)
 * (default "This is a photo of {}."), tokenised with padding="max_length", max_length=64, truncation; the
 * model's logits_per_image are exp(logit_scale) * cos(image, text) + logit_bias (SiglipModel.forward: both
 * embeddings L2-normalised); for a model_type containing "siglip" the score is sigmoid(logit) per label (no
 * softmax across labels: scores do not sum to 1), sorted by score, highest first. Here cosines and scores are
 * computed in double from the fp32 embeddings; label embeddings are normalised once per run.
 */
#ifndef SG_CLI_ZEROSHOT_H
#define SG_CLI_ZEROSHOT_H

#include <stddef.h>

typedef struct sg_zeroshot {
    int n;             /* labels */
    int dim;
    int top_k;         /* labels written per row (1..n) */
    char **labels;     /* the labels as given (what rows print), owned */
    double *emb;       /* [n, dim] unit-norm label embeddings */
    double scale;      /* exp(logit_scale) */
    double bias;       /* logit_bias */
} sg_zeroshot;

/* Takes the n labels (copied) and their text embeddings label_emb [n, dim] (any norm; a zero vector is an
 * error naming the label). top_k is clamped to 1..n. 0, or -1 with a reason. */
int sg_zeroshot_init(sg_zeroshot *z, char *const *labels, int n, const float *label_emb, int dim, float logit_scale,
                     float logit_bias, int top_k, char *err, size_t errlen);

/* scores[j] = sigmoid(exp(logit_scale) * cos(v, label j) + logit_bias) for the image embedding v [dim]. */
void sg_zeroshot_scores(const sg_zeroshot *z, const float *v, double *scores);

/* The top_k label indices by score, highest first (ties keep label order), into idx [top_k]. */
void sg_zeroshot_top(const sg_zeroshot *z, const double *scores, int *idx);

void sg_zeroshot_free(sg_zeroshot *z);

/* *out = template.format(label) as Python gives it: the one field that takes the label ({}, or its equivalents
 * {0} {:} {0:}) replaced by it, "{{" and "}}" literal braces. A template that is not valid UTF-8, has no such
 * field or two, any other field ({!r}, {1}, {name}, {:>5}, ...: named in the error) or a lone brace is an error
 * about the template. *out is malloc'd. 0, or -1 with a reason. */
int sg_zeroshot_format(const char *tmpl, const char *label, char **out, char *err, size_t errlen);

#endif
