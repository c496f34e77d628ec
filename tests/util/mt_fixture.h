/* MobileTransformers merge fixtures: a copy of examples/mt-tiny whose default variant (cpu-fp16)
   gets a handoff map of the test's entries, random shipped .bin files with their sidecars, a
   train/training_config.json, and an adapter .safetensors with each entry's factors. */
#ifndef MPK_MT_FIXTURE_H
#define MPK_MT_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

typedef struct fx_entry {
  const char *layer;       /* trainingBaseLayerName ("backbone.model.layers.0.q.base_layer") */
  const char *dtype;       /* the weight's on-disk dtype: float32, float16, bfloat16 */
  int64_t rows, cols;      /* its on-disk shape */
  int64_t out, in, rank;   /* B is [out, rank], A is [rank, in] */
  const char *policy;      /* declared transposePolicy; NULL: no_transpose */
} fx_entry;

typedef struct fx_options {
  const char *exported_at; /* NULL: keep the example's (2026-08-20T00:00:00Z) */
  double alpha;            /* training_config.json alpha (0: none written) */
  int64_t rank;            /* training_config.json rank (0: none written) */
  int frozen;              /* 1: the adapter also holds each entry's frozen base (checkpoint layout) */
  int peft_names;          /* 1: factors under PEFT names, no checkpointNames for the adapters */
  uint32_t seed;
} fx_options;

/* Build the package at root/pkg and the adapter at root/adapter.safetensors. The inference
   directory is root/pkg/variants/cpu-fp16/inference. */
void fx_build(const char *root, const fx_entry *es, size_t n, const fx_options *o);
/* The package path and the adapter path of a fixture root (static buffers). */
const char *fx_pkg(const char *root);
const char *fx_adapter(const char *root);
const char *fx_inference(const char *root);
/* The shipped weight of entry i as float32 in its on-disk layout, and the factors (malloc'ed),
   regenerated from the seed exactly as fx_build wrote them. */
void fx_values(const fx_entry *es, size_t i, const fx_options *o, float **w, float **a, float **b);
/* Write a safetensors file of float32 tensors. */
void fx_write_safetensors(const char *path, const char *const *names, const float *const *data,
                          const int64_t (*shapes)[2], size_t n);

#endif
