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
   docs/mt-numeric.md so that any implementation reproduces it). */
void mpk_mtn_random_tokens(uint64_t seed, int64_t vocab, int64_t *out, size_t n);

/* PROBE.json (docs/mt-numeric.md, "The probe"): token sequences, read strictly. */
typedef struct mpk_mtn_probe {
  mpk_mtn_tokens tokens;
  void *priv_;
} mpk_mtn_probe;
int mpk_mtn_probe_load(const char *path, mpk_mtn_probe **out, mpk_error *err);
void mpk_mtn_probe_free(mpk_mtn_probe *p);

#endif
