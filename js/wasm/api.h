/* The WebAssembly module's operations (api.c dispatches, the op files implement). */
#ifndef MPKJS_API_H
#define MPKJS_API_H

#include <stddef.h>

#include <jansson.h>
#include <modelpkg.h>

/* An operation: its options (a JSON object, or NULL) and input bytes; the result, or NULL with err set. */
typedef json_t *(*mpkjs_op)(const json_t *args, const void *data, size_t len, mpk_error *err);

/* Set err (code, where, rule) and return NULL. */
json_t *mpkjs_fail(mpk_error *err, int code, const char *file, const char *pointer, const char *message);

/* prefill.c */
json_t *mpkjs_op_prefill_plan(const json_t *args, const void *data, size_t len, mpk_error *err);
json_t *mpkjs_op_legacy_chunks(const json_t *args, const void *data, size_t len, mpk_error *err);

/* mt.c */
json_t *mpkjs_op_mt_manifest_parse(const json_t *args, const void *data, size_t len, mpk_error *err);
json_t *mpkjs_op_mt_plan_files(const json_t *args, const void *data, size_t len, mpk_error *err);
json_t *mpkjs_op_mt_check_versions(const json_t *args, const void *data, size_t len, mpk_error *err);
json_t *mpkjs_op_mt_sanitize_repo_id(const json_t *args, const void *data, size_t len, mpk_error *err);

/* media.c (the tensor goes to the module's blob: mpkjs_blob_ptr/len/free) */
json_t *mpkjs_op_audio_decode(const json_t *args, const void *data, size_t len, mpk_error *err);
json_t *mpkjs_op_image_decode(const json_t *args, const void *data, size_t len, mpk_error *err);
json_t *mpkjs_op_image_plan(const json_t *args, const void *data, size_t len, mpk_error *err);

#endif
