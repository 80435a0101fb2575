/* weights/checkpoint.h — the files of a checkpoint and binding its tensors by name (internal to weights/).
 *
 * Shared by the two towers' loaders (model_load.c: vision, text_load.c: text). Opening resolves the path as
 * model_load.h describes (a directory with model.safetensors or a sharded model.safetensors.index.json, or
 * one file; config.json beside it) and maps the safetensors files; with an index only the shards holding a
 * tensor the caller wants are opened. Binding looks a tensor up under "<prefix><name>" (and, when
 * allow_bare, "<name>"), checks shape and dtype, and gives fp32: F32 aligned to 4 bytes in place from the
 * mapping, anything else widened into a buffer the checkpoint owns. Every message names the file, the
 * tensor and expected vs found.
 *
 * sg_ckpt_load_tower is the sequence both loads share (open, config.json or the defaults, the note, the
 * layers, bind, keep the storage); a tower gives what differs through sg_ckpt_tower: which tensors it wants,
 * how it reads its config, the config class its defaults come from, and its bind.
 */
#ifndef SG_WEIGHTS_CHECKPOINT_H
#define SG_WEIGHTS_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include "safetensors.h"
#include "../kernel/model.h"

typedef struct sg_ckpt sg_ckpt;

/* Opens the checkpoint at path. wants(name) says whether a tensor named in a shard index belongs to the
 * tower being loaded (a shard is opened when it holds one). NULL + message on any problem. */
sg_ckpt *sg_ckpt_open(const char *path, int (*wants)(const char *name), char *err, size_t errlen);

/* The directory of the weights, the config.json beside them ("" if there is none), and the weights file
 * (or index) named in messages. */
const char *sg_ckpt_dir(const sg_ckpt *c);
const char *sg_ckpt_config(const sg_ckpt *c);
const char *sg_ckpt_where(const sg_ckpt *c);

/* Text appended to shape errors (e.g. " (config: DIR/config.json)"). Copied. */
void sg_ckpt_set_note(sg_ckpt *c, const char *note);
const char *sg_ckpt_note(const sg_ckpt *c);

/* The tensor called prefix+name (or name, when allow_bare), exactly one of them across the files; *out is NULL
 * when neither exists. -1 (message) when both or two files hold it. Marks nothing. */
int sg_ckpt_lookup(sg_ckpt *c, const char *prefix, int allow_bare, const char *name, const sg_st_tensor **out,
                   int *file);

/* Binds the tensor (as sg_ckpt_lookup) of shape [d0..d(nd-1)] into *dst as fp32 and marks it used. 0, or -1
 * with "not found: expected shape ..." or "shape ... expected, found ...". */
int sg_ckpt_bind(sg_ckpt *c, const float **dst, const char *prefix, int allow_bare, const char *name, int nd,
                 int64_t d0, int64_t d1, int64_t d2, int64_t d3);

/* Binds the L encoder layers "encoder.layers.<l>.*" (the same 16 tensors in both towers: sg_layer) with
 * hidden size D and MLP size F. 0, or -1 with the first problem. */
int sg_ckpt_bind_layers(sg_ckpt *c, const char *prefix, int allow_bare, sg_layer *layers, int L, int64_t D, int64_t F);

/* Marks tensor t of file f used (for tensors bound without conversion). */
void sg_ckpt_mark(sg_ckpt *c, int file, const sg_st_tensor *t);

/* The first tensor for which is_ours(name) holds that was not bound, or NULL; *file set to its file. */
const sg_st_tensor *sg_ckpt_first_unused(const sg_ckpt *c, int (*is_ours)(const char *name), int *file);

/* The label (path) of file f. */
const char *sg_ckpt_file_label(const sg_ckpt *c, int file);

/* After the bind: the first tensor for which is_ours(name) holds that was not bound is an error ("... is not
 * part of the <tower> model the config describes (<L> layers); config and weights disagree<note>"). 0 or -1. */
int sg_ckpt_refuse_unused(const sg_ckpt *c, int (*is_ours)(const char *name), const char *tower, int L, char *err,
                          size_t errlen);

/* What differs between the towers' loads. */
typedef struct sg_ckpt_tower {
    int (*wants)(const char *name); /* as sg_ckpt_open */
    const char *defaults;           /* the config class named when there is no config.json: "SiglipVisionConfig" */
    /* config.json at cfg_path into model's config, or its defaults when cfg_path is NULL; *num_layers from it.
     * 0, or -1 + message. */
    int (*config)(void *model, const char *cfg_path, int *num_layers, char *err, size_t errlen);
    /* Binds every tensor (model's layers are allocated, the note is set). 0, or -1 + message. */
    int (*bind)(sg_ckpt *c, void *model, char *err, size_t errlen);
} sg_ckpt_tower;

/* Where a tower's model keeps what every load fills in (pointers into the caller's model). */
typedef struct sg_ckpt_slots {
    char *path;        /* the weights file (or index), as sg_ckpt_where */
    size_t path_len;
    sg_layer **layers; /* [num_layers], calloc'ed */
    void **storage;    /* sg_ckpt_keep_storage's value */
} sg_ckpt_slots;

/* Loads the checkpoint at path into model (zeroed by the caller) for the tower t: opens it, reads the config
 * (or takes the defaults), sets the note " (config: ...)", allocates the layers, binds, keeps the storage.
 * 0, or -1 + message with all it allocated freed (model itself stays the caller's). */
int sg_ckpt_load_tower(const char *path, const sg_ckpt_tower *t, void *model, sg_ckpt_slots s, char *err,
                       size_t errlen);

/* Hands the mappings and buffers over (the value for a model's storage pointer) and frees the rest of c. */
void *sg_ckpt_keep_storage(sg_ckpt *c);
/* Frees what sg_ckpt_keep_storage returned. NULL is allowed. */
void sg_ckpt_storage_free(void *storage);
/* Frees everything (a failed load). NULL is allowed. */
void sg_ckpt_close(sg_ckpt *c);

#endif
