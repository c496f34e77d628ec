/*
 * modelpkg/ort.h — ONNX Runtime, loaded at run time: the numerical gates' engine (docs/ort.md).
 *
 * modelpkg is not an inference engine. The gates that need one (the train/inference parity gate,
 * the post-merge check: mt.h) run the package's graphs in ONNX Runtime, the engine the
 * MobileTransformers packages are built for. It is optional: nothing links it. mpk_ort_open()
 * dlopen()s its shared library (libonnxruntime.so.1) and asks it for the part of its versioned C
 * API modelpkg declares itself (src/ort/ort_api.h); without it every function here fails with
 * MPK_EUNSUPPORTED "ONNX Runtime not available: ..." naming what was tried, and the rest of the
 * library is unaffected.
 *
 * Threads: an mpk_ort is immutable once opened and may be shared; a session is one thread's at a
 * time (ONNX Runtime runs it on its own intra-op threads).
 */
#ifndef MODELPKG_ORT_H
#define MODELPKG_ORT_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif
/* component: mt */

/** The environment variable naming the library when mpk_ort_options.library is NULL. */
#define MPK_ORT_LIBRARY_ENV "MPK_ORT_LIBRARY"
/** The name searched last (the dynamic loader's search path): ONNX Runtime's soname on Linux. */
#define MPK_ORT_DEFAULT_LIBRARY "libonnxruntime.so.1"
/** The ONNX Runtime C API version modelpkg asks for; a library that cannot give it, or older than
    release 1.12, is refused (MPK_EVERSION). Every function modelpkg calls is older than API 12; 12 is
    the floor because the no-copy settings (the "session.disable_prepacking" entry) are not checked by
    older releases and were not tested there (docs/ort.md, "API version"). */
#define MPK_ORT_API_VERSION 12

typedef struct mpk_ort mpk_ort;
typedef struct mpk_ort_session mpk_ort_session;

typedef struct mpk_ort_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro */
  const char *library; /**< path of the shared library; NULL: $MPK_ORT_LIBRARY, else MPK_ORT_DEFAULT_LIBRARY */
  unsigned threads;    /**< intra-op threads of every session; 0: ONNX Runtime's default */
} mpk_ort_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_ORT_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_ort_options)

/**
 * Load ONNX Runtime: the library (opts->library, else $MPK_ORT_LIBRARY, else the loader's search
 * for MPK_ORT_DEFAULT_LIBRARY), its OrtGetApiBase, the API of version MPK_ORT_API_VERSION, and one
 * environment (logging at warnings, to stderr). Not found or not loadable: MPK_EUNSUPPORTED, the
 * message starting "ONNX Runtime not available:" and naming each path tried and dlerror(); an API
 * too old: MPK_EVERSION naming the library's version. `opts` may be NULL.
 */
MPK_API int mpk_ort_open(const mpk_ort_options *opts, mpk_ort **out, mpk_error *err);
/** The library's version string ("1.30.0"). */
MPK_API const char *mpk_ort_version(const mpk_ort *ort);
/** The path the library was loaded from, as resolved by the loader (dladdr). */
MPK_API const char *mpk_ort_library(const mpk_ort *ort);
/** Release the environment and the library handle; every session must be closed first. The library
    itself stays mapped (it is opened RTLD_NODELETE: ONNX Runtime does not support being unloaded). Accepts NULL. */
MPK_API void mpk_ort_close(mpk_ort *ort);

/** An initializer the caller supplies in place of the graph's own: ONNX Runtime reads `view`'s
    bytes where they are (no copy), so they must outlive the session. The graph must declare an
    initializer of that name with the view's dtype and shape (MPK_EMISMATCH otherwise, naming it and
    both layouts). */
typedef struct mpk_ort_initializer {
  const char *name;
  const mpk_tensor_view *view;
} mpk_ort_initializer;

typedef struct mpk_ort_session_options {
  size_t struct_size;                      /**< sizeof as compiled, set by the _INIT macro */
  const mpk_ort_initializer *initializers; /**< handed over without a copy (AddInitializer) */
  size_t n_initializers;
  /** 1: no graph optimization and no weight prepacking, so that no initializer is copied into a
      second, transformed form (set automatically when initializers are given). */
  int no_copies;
} mpk_ort_session_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_ORT_SESSION_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_ort_session_options)

/**
 * A session of the ONNX model at `model_path` (its external data resolved by ONNX Runtime relative
 * to the model's directory, except the initializers the caller supplies). Errors name the model
 * and carry ONNX Runtime's message.
 */
MPK_API int mpk_ort_session_open(mpk_ort *ort, const char *model_path, const mpk_ort_session_options *opts,
                                 mpk_ort_session **out, mpk_error *err);
/** Accepts NULL. */
MPK_API void mpk_ort_session_close(mpk_ort_session *s);

/** A causal language model's mean next-token cross-entropy over one token sequence. */
typedef struct mpk_ort_lm_result {
  double cross_entropy;   /**< mean over positions 0..n-2 of -log softmax(logits[t])[ids[t+1]], nats */
  double uniform_floor;   /**< ln(vocab): the cross-entropy of a model that knows nothing */
  int64_t vocab;          /**< the logits' last dimension */
  size_t n_tokens;        /**< the sequence's length */
  size_t n_predicted;     /**< n_tokens - 1 */
  char logits_output[128];/**< the output read as logits */
  char logits_sha256[65]; /**< SHA-256 (hex) of the logits' bytes as ONNX Runtime returned them: two runs
                               computed the same numbers bit for bit iff these are equal */
} mpk_ort_lm_result;

/**
 * Run token ids `ids[0..n)` (n >= 2) through a decoder-style graph and compute the mean next-token
 * cross-entropy (log-softmax in double precision). Inputs the session is fed (docs/ort.md, "Language
 * model inputs"): `input_ids` int64 [1, n] (required); `attention_mask` [1, n] of ones and
 * `position_ids` [1, n] of 0..n-1 when the graph has them; past key/value inputs of an empty past.
 * Any other input is refused (MPK_EUNSUPPORTED, naming it). The logits are the output named
 * "logits", else the only float output, [1, n, vocab]; a token id outside [0, vocab) is MPK_EINVAL.
 */
MPK_API int mpk_ort_lm_cross_entropy(mpk_ort_session *s, const int64_t *ids, size_t n, mpk_ort_lm_result *out,
                                     mpk_error *err);

#ifdef __cplusplus
}
#endif

#endif /* MODELPKG_ORT_H */
