/* mt/numeric: the numerical gates' shared parts (docs/mt-numeric.md). The parity gate (parity.c)
   and the merge's post-merge check (merge/merge.c, through probe.c) both run a variant's inference
   graph in ONNX Runtime (modelpkg/ort.h) over token sequences; this header is their one way to do
   it. Owner: the parity helper (inference session, cross-entropy, tokens); the merge helper uses it
   (and owns probe.c: PROBE.json). FOUNDATION: signatures only; refine comments, append fields. */
#ifndef MPK_MT_NUMERIC_H
#define MPK_MT_NUMERIC_H

#include <stddef.h>
#include <stdint.h>

#include "modelpkg/mt.h"
#include "modelpkg/ort.h"

/* Token sequences: a probe's, or the parity gate's one. Each sequence has >= 2 ids. */
typedef struct mpk_mtn_tokens {
  const int64_t *const *seq;
  const size_t *len;
  size_t n;
} mpk_mtn_tokens;

/* The mean next-token cross-entropy over every sequence (each sequence run alone; the mean is
   over all predicted positions, so a long sequence weighs more), and the logits' vocabulary. */
int mpk_mtn_cross_entropy(mpk_ort_session *s, const mpk_mtn_tokens *t, double *ce, int64_t *vocab, mpk_error *err);

/* A session of `inference_dir`/model.onnx in which the initializers `inits` (the handoff tensors:
   the load gate's views, or a merge's staged files) replace the graph's own, zero-copy. */
int mpk_mtn_open_inference(mpk_ort *ort, const char *inference_dir, const mpk_ort_initializer *inits, size_t n,
                           mpk_ort_session **out, mpk_error *err);

/* `n` token ids in [0, vocab) drawn from `seed` (splitmix64; the sequence is documented in
   docs/mt-numeric.md so that any implementation reproduces it): state = seed; for each id:
   state += 0x9E3779B97F4A7C15; z = state; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
   z = (z ^ (z >> 27)) * 0x94D049BB133111EB; z ^= z >> 31; id = z % vocab (uint64 arithmetic). */
void mpk_mtn_random_tokens(uint64_t seed, int64_t vocab, int64_t *out, size_t n);

/* PROBE.json (docs/mt-numeric.md, "The probe"): token sequences, read strictly. */
typedef struct mpk_mtn_probe {
  mpk_mtn_tokens tokens;
  void *priv_;
} mpk_mtn_probe;
int mpk_mtn_probe_load(const char *path, mpk_mtn_probe **out, mpk_error *err);
void mpk_mtn_probe_free(mpk_mtn_probe *p);

/* appended (parity helper): the load gate's zero-copy views of a variant's handoff tensors, as the
   initializers of its inference graph (for mpk_mtn_open_inference). */
typedef struct mpk_mtn_views {
  mpk_tensor_view *views;      /* n, each mapped read-only (mpk_mt_tensor_open beneath the inference dir) */
  mpk_ort_initializer *inits;  /* n: inferenceInitializerNames[role] -> &views[i] */
  size_t n;
} mpk_mtn_views;
/* Open the views of every tensor gate `g` verified, beneath `dir` (the package the gate was opened
   on). A gate that is not ready is refused with its first problem (naming the layer and the file);
   no map or no entries: zero views (the graph's own weights). Keep `g` (it holds the directory
   against merges) and the views until the session is closed. */
int mpk_mtn_gate_views(const char *dir, const mpk_mt_variant_gate *g, mpk_mtn_views *out, mpk_error *err);
/* Accepts NULL and a zeroed struct. */
void mpk_mtn_views_close(mpk_mtn_views *v);

/* mpk_mt_parity with the package's manifest given (parsed; taken over, freed in every case)
   instead of read from `dir`: mt build --parity runs the gate on the manifest it is about to
   write, before anything is written. NULL: read it. */
int mpk_mtn_parity_with(const char *dir, mpk_mt_manifest *given, const mpk_mt_parity_options *opts,
                        mpk_mt_parity_report **out, mpk_error *err);

#endif
