#define _GNU_SOURCE
/* mpk_mlc_embed's rewrite of the _metadata text, on hand-built WebAssembly modules: an existing
   artifact replaced wherever it is (first, last, its key written with escapes), strings holding
   JSON punctuation and whitespace and numbers kept byte for byte, trailing whitespace inside the
   length, the exact fit and one byte over, and the API's argument rules. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ARTIFACT                                                                              \
  "{\"schema\":\"mlc.compiled-program\",\"schema_version\":1,\"interface_id\":\"sha256:" HEX64 \
  "\",\"parameter_schema_id\":\"sha256:" HEX64                                                \
  "\",\"programs\":{\"generation\":{\"kind\":\"token_generation\",\"exports\":{\"embed_tokens\":" \
  "\"embed\"}}},\"resources\":{\"required_features\":[],\"max_storage_buffer_binding_size\":0,"  \
  "\"estimated_device_memory_bytes\":0}}"
/* The same with other ids: an "old" artifact to be replaced. */
#define OLD_ARTIFACT                                                                          \
  "{\"schema\":\"mlc.compiled-program\",\"schema_version\":1,\"interface_id\":\"sha256:" HEX64 \
  "\",\"parameter_schema_id\":\"sha256:" HEX64                                                \
  "\",\"programs\":{\"g\":{\"kind\":\"token_generation\",\"exports\":{\"embed_tokens\":"      \
  "\"e\"}}},\"resources\":{\"required_features\":[],\"max_storage_buffer_binding_size\":0,"   \
  "\"estimated_device_memory_bytes\":0}}"

static const char *dir;

static void leb(FILE *f, uint64_t v) {
  do {
    uint8_t c = v & 0x7f;
    v >>= 7;
    fputc(c | (v ? 0x80 : 0), f);
  } while (v);
}

/* A module with one page of memory and one active segment at 64: u64 length + `text`. */
static const char *module(const char *name, const char *text) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t n = strlen(text);
  uint8_t seg_hdr[16];
  size_t h = 0;
  seg_hdr[h++] = 0, seg_hdr[h++] = 0x41, seg_hdr[h++] = 0xC0, seg_hdr[h++] = 0x00, seg_hdr[h++] = 0x0b; /* i32.const 64 */
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fwrite("\0asm\x01\0\0\0", 1, 8, f);
  fwrite("\x05\x03\x01\x00\x01", 1, 5, f); /* memory: 1 page */
  /* data section: count 1, the header, the size, the bytes */
  size_t payload = 8 + n, len_bytes = payload < 128 ? 1 : payload < 16384 ? 2 : 3;
  fputc(11, f);
  leb(f, 1 + h + len_bytes + payload);
  leb(f, 1);
  fwrite(seg_hdr, 1, h, f);
  leb(f, payload);
  for (int k = 0; k < 8; k++) fputc((int)((uint64_t)n >> (8 * k)) & 0xff, f);
  fwrite(text, 1, n, f);
  fclose(f);
  return path;
}

static const char *artifact_file(const char *text) {
  static char path[512];
  snprintf(path, sizeof path, "%s/artifact.json", dir);
  FILE *f = fopen(path, "wb");
  fputs(text, f);
  fclose(f);
  return path;
}

/* Embed ARTIFACT (pretty: with whitespace) into a module holding `text`; the new text, or NULL with
   *rc set. */
static char *embed(const char *text, int *rc_out, mpk_error *err) {
  char lib[512], out[512];
  snprintf(lib, sizeof lib, "%s", module("in.wasm", text));
  snprintf(out, sizeof out, "%s/out.wasm", dir);
  remove(out);
  const char *art = artifact_file("  {\n \"schema\": \"mlc.compiled-program\",\"schema_version\":1,\"interface_id\":\"sha256:" HEX64
                                  "\",\t\"parameter_schema_id\":\"sha256:" HEX64
                                  "\",\"programs\":{\"generation\":{\"kind\":\"token_generation\",\"exports\":{\"embed_tokens\":"
                                  "\"embed\"}}},\"resources\":{\"required_features\":[],\"max_storage_buffer_binding_size\":0,"
                                  "\"estimated_device_memory_bytes\":0}}\n");
  mpk_mlc_embed_options o = MPK_MLC_EMBED_OPTIONS_INIT;
  *rc_out = mpk_mlc_embed(lib, art, out, &o, err);
  if (*rc_out) return NULL;
  mpk_mlc_metadata *md = NULL;
  int rc = mpk_mlc_metadata_load(out, &md, err);
  if (rc) fail_msg("%s", tu_err(err));
  assert_int_equal(md->json_len, strlen(text));
  assert_non_null(md->artifact);
  char *t = strndup(md->json, md->json_len);
  mpk_mlc_metadata_free(md);
  return t;
}

/* The new text is `want` padded with spaces before its last '}' to the old length. */
static void expect_text(const char *old, const char *want) {
  int rc;
  mpk_error err;
  char *got = embed(old, &rc, &err);
  if (!got) fail_msg("%s", tu_err(&err));
  size_t n = strlen(want), len = strlen(old);
  assert_true(n <= len);
  assert_memory_equal(got, want, n - 1);
  for (size_t i = n - 1; i < len - 1; i++) assert_int_equal(got[i], ' ');
  assert_int_equal(got[len - 1], '}');
  free(got);
}

static void test_rewrites(void **state) {
  (void)state;
  char pad[1001];
  memset(pad, ' ', 1000);
  pad[1000] = 0;
  char old[8192];
  /* no artifact yet: whitespace goes, strings and numbers stay as written */
  snprintf(old, sizeof old,
           "{ \"model_type\" : \"a, }{ \\\" ]\\n  b\",\n \"params\": [ ],\t\"x\": 1.50e+10, \"y\": [ 1 , {\"artifact\": 2} ] %s}",
           pad);
  expect_text(old, "{\"model_type\":\"a, }{ \\\" ]\\n  b\",\"params\":[],\"x\":1.50e+10,\"y\":[1,{\"artifact\":2}],"
                   "\"artifact\":" ARTIFACT "}");
  /* an artifact first: replaced, the new one last */
  snprintf(old, sizeof old, "{\"artifact\": " OLD_ARTIFACT ", \"model_type\": \"m\", \"params\": []%s}", pad);
  expect_text(old, "{\"model_type\":\"m\",\"params\":[],\"artifact\":" ARTIFACT "}");
  /* an artifact in the middle, its key written with an escape */
  snprintf(old, sizeof old, "{\"model_type\": \"m\", \"\\u0061rtifact\": " OLD_ARTIFACT ", \"params\": [] %s}", pad);
  expect_text(old, "{\"model_type\":\"m\",\"params\":[],\"artifact\":" ARTIFACT "}");
  /* an artifact last, and whitespace after the final '}' inside the length */
  snprintf(old, sizeof old, "{\"model_type\": \"m\", \"params\": [], %s\"artifact\": " OLD_ARTIFACT "}\n\n  ", pad);
  expect_text(old, "{\"model_type\":\"m\",\"params\":[],\"artifact\":" ARTIFACT "}");
}

static void test_fit(void **state) {
  (void)state;
  const char *want = "{\"model_type\":\"m\",\"params\":[],\"artifact\":" ARTIFACT "}";
  size_t need = strlen(want);
  char old[4096];
  /* exactly the room needed: no padding */
  size_t base = strlen("{\"model_type\":\"m\",\"params\":[]}");
  snprintf(old, sizeof old, "{\"model_type\":\"m\",\"params\":[]%*s}", (int)(need - base), "");
  assert_int_equal(strlen(old), need);
  expect_text(old, want);
  /* one byte less: refused, saying both numbers, and nothing written */
  snprintf(old, sizeof old, "{\"model_type\":\"m\",\"params\":[]%*s}", (int)(need - base - 1), "");
  int rc;
  mpk_error err;
  assert_null(embed(old, &rc, &err));
  assert_int_equal(rc, MPK_ELIMIT);
  char msg[128];
  snprintf(msg, sizeof msg, "needs %zu bytes, and only %zu are available", need, need - 1);
  assert_non_null(strstr(err.message, msg));
  char out[512];
  snprintf(out, sizeof out, "%s/out.wasm", dir);
  FILE *f = fopen(out, "rb");
  assert_null(f);
}

static void test_arguments(void **state) {
  (void)state;
  mpk_error err;
  assert_int_equal(mpk_mlc_embed(NULL, "a", "b", NULL, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_embed("a", NULL, "b", NULL, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_embed("a", "b", NULL, NULL, &err), MPK_EINVAL);
  mpk_mlc_embed_options o = MPK_MLC_EMBED_OPTIONS_INIT;
  o.struct_size = 3;
  assert_int_equal(mpk_mlc_embed("a", "b", "c", &o, &err), MPK_EINVAL);
}

int main(void) {
  dir = tu_tmpdir();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rewrites),
      cmocka_unit_test(test_fit),
      cmocka_unit_test(test_arguments),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  tu_sh("rm -rf '%s'", dir);
  return rc;
}
