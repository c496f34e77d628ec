/* Sealing MobileTransformers packages (mpk_mt_build): the committed tiny_package re-sealed byte
   for byte, one changed file changing exactly its entries, a BUILD.json reproducing the same
   bytes, the exporter's defaults, escaping, dry runs, cancellation, and the refusals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#define TINY "conformance/mobiletransformers/tiny_package"

/* ---------------------------------------------------------------- helpers */

/* A writable copy of the fixture in a fresh temporary directory; static buffer. */
static const char *tiny_copy(void) {
  static char dir[512];
  snprintf(dir, sizeof dir, "%s/pkg", tu_tmpdir());
  tu_sh("cp -r '%s' '%s' && chmod -R u+w '%s'", tu_shared(TINY), dir, dir);
  return dir;
}

/* Remove the temporary directory holding `pkg`. */
static void cleanup(const char *pkg) {
  char parent[512];
  snprintf(parent, sizeof parent, "%s", pkg);
  char *slash = strrchr(parent, '/');
  if (slash) *slash = '\0';
  tu_sh("rm -rf '%s'", parent);
}

static char *read_rel(const char *dir, const char *rel, size_t *len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  return (char *)tu_read_file(path, len);
}

static void write_rel(const char *dir, const char *rel, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  FILE *f = fopen(path, "wb");
  if (!f) fail_msg("cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

static void assert_same_file(const char *a_dir, const char *b_dir, const char *rel) {
  size_t na, nb;
  char *a = read_rel(a_dir, rel, &na), *b = read_rel(b_dir, rel, &nb);
  if (na != nb || memcmp(a, b, na) != 0) fail_msg("%s differs", rel);
  free(a);
  free(b);
}

/* The committed manifest with the two keys it predates, null, where json.dumps(sort_keys) puts them. */
static char *fixture_plus_counts(size_t *len) {
  size_t n;
  char *text = read_rel(tu_shared(TINY), MPK_MT_MANIFEST_FILENAME, &n);
  static const char anchor[] = "  \"transformersVersion\": ";
  static const char added[] = "  \"trainableParameterCount\": null,\n  \"trainingParameterCount\": null,\n";
  char *at = strstr(text, anchor);
  assert_non_null(at);
  char *out = malloc(n + sizeof added);
  size_t head = (size_t)(at - text);
  memcpy(out, text, head);
  memcpy(out + head, added, sizeof added - 1);
  memcpy(out + head + sizeof added - 1, at, n - head);
  *len = n + sizeof added - 1;
  out[*len] = '\0';
  free(text);
  return out;
}

static int build(const char *dir, const char *describe, mpk_mt_build_result *res, mpk_error *err) {
  mpk_mt_build_input in = {.describe = describe, .describe_len = describe ? strlen(describe) : 0, .workers = 3};
  return mpk_mt_build(dir, &in, res, err);
}

static void assert_manifest_is(const char *dir, const char *expected, size_t len) {
  size_t n;
  char *got = read_rel(dir, MPK_MT_MANIFEST_FILENAME, &n);
  if (n != len || memcmp(got, expected, n) != 0) fail_msg("manifest differs from the expected bytes:\n%s", got);
  free(got);
}

static json_t *load_rel(const char *dir, const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  return tu_load_json(path);
}

/* The tiny package described as BUILD.json: what its manifest's descriptive half says. */
static const char tiny_build_json[] =
    "{\"baseModelId\": \"MobileTransformers/Tiny-0.1B\", \"exportedAt\": \"2026-07-14T00:00:00Z\",\n"
    " \"mobiletransformersVersion\": \"0.2.0\", \"architectures\": [\"LlamaForCausalLM\"],\n"
    " \"supportedTasks\": [\"text-generation\", \"text-generation-with-past\"],\n"
    " \"selectedTask\": \"text-generation-with-past\", \"trustRemoteCode\": false,\n"
    " \"optimumOnnxVersion\": \"0.1.0\", \"transformersVersion\": \"4.46.2\",\n"
    " \"onnxRuntimeTrainingVersion\": \"1.23.0\", \"onnxRuntimeGenAIVersion\": \"0.14.0\",\n"
    " \"peftMethods\": [\"lora\"], \"quantization\": [\"int4\", \"fp16\"],\n"
    " \"androidRuntime\": {\"minimumAndroidApi\": 28, \"recommendedDeviceMemoryMb\": 3072, \"requiredAbis\": [\"arm64-v8a\"]},\n"
    " \"license\": {\"framework\": \"Apache-2.0\", \"baseModelWeights\": \"Apache-2.0\", \"noticeFile\": \"licenses/BASE_MODEL_LICENSE\"},\n"
    " \"defaultVariant\": \"cpu-int4\",\n"
    " \"variants\": [\n"
    "  {\"id\": \"cpu-int4\", \"executionProvider\": \"cpu\", \"quantization\": \"int4\", \"supportedEngines\": [\"native\", \"genai\"],\n"
    "   \"abi\": [\"arm64-v8a\"], \"features\": [\"core\", \"inference\", \"train\", \"rag\", \"genai\"],\n"
    "   \"minimumAndroidApi\": 28, \"recommendedDeviceMemoryMb\": 3072},\n"
    "  {\"id\": \"cpu-fp16\", \"executionProvider\": \"cpu\", \"quantization\": \"fp16\", \"supportedEngines\": [\"native\"],\n"
    "   \"abi\": null, \"features\": [\"core\", \"inference\", \"train\"], \"minimumAndroidApi\": 28,\n"
    "   \"recommendedDeviceMemoryMb\": 6144}]}\n";

/* ---------------------------------------------------------------- tiny_package */

/* Re-sealing an unchanged copy reproduces the committed files byte for byte, except that the
   manifest gains "trainableParameterCount": null and "trainingParameterCount": null — the two keys
   the current exporter always writes and the fixture predates. A second run writes nothing. */
static void test_reseal_tiny_package_byte_exact(void **state) {
  (void)state;
  const char *pkg = tiny_copy();
  mpk_mt_build_result res;
  mpk_error err;
  if (build(pkg, NULL, &res, &err)) fail_msg("%s", tu_err(&err));
  size_t len;
  char *expected = fixture_plus_counts(&len);
  assert_int_equal(res.manifest_len, len);
  assert_memory_equal(res.manifest, expected, len);
  assert_manifest_is(pkg, expected, len);
  assert_same_file(pkg, tu_shared(TINY), "variants/cpu-int4/checksums.json");
  assert_same_file(pkg, tu_shared(TINY), "variants/cpu-fp16/checksums.json");
  assert_true(res.had_manifest);
  assert_int_equal(res.n_files, 31);
  assert_int_equal(res.n_changes, 0);
  assert_int_equal(res.n_written, 1); /* only the manifest, for the two keys */
  assert_string_equal(res.written[0], MPK_MT_MANIFEST_FILENAME);
  mpk_mt_build_result_free(&res);

  if (build(pkg, NULL, &res, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(res.n_written, 0); /* a fixpoint */
  assert_int_equal(res.n_changes, 0);
  mpk_mt_build_result_free(&res);
  free(expected);
  cleanup(pkg);
}

/* Every difference between two manifests' objects under `key`, as "key/member" strings. */
static void differing_members(const json_t *a, const json_t *b, const char *key, char *out, size_t cap) {
  const json_t *oa = json_object_get(a, key), *ob = json_object_get(b, key);
  const char *k;
  json_t *x;
  json_object_foreach((json_t *)oa, k, x) {
    if (!json_equal(x, json_object_get(ob, k))) {
      strncat(out, key, cap - strlen(out) - 1);
      strncat(out, "/", cap - strlen(out) - 1);
      strncat(out, k, cap - strlen(out) - 1);
      strncat(out, " ", cap - strlen(out) - 1);
    }
  }
  assert_int_equal(json_object_size(oa), json_object_size(ob));
}

/* One changed file changes exactly its fileSizes/sha256 entries, its variant's checksums.json
   entry, and (through the second pass) that checksums.json's own digest — nothing else. */
static void test_reseal_after_one_file_changed(void **state) {
  (void)state;
  const char *pkg = tiny_copy();
  mpk_mt_build_result res;
  mpk_error err;
  if (build(pkg, NULL, &res, &err)) fail_msg("%s", tu_err(&err));
  mpk_mt_build_result_free(&res);
  json_t *before = load_rel(pkg, MPK_MT_MANIFEST_FILENAME);
  json_t *sums_before = load_rel(pkg, "variants/cpu-fp16/checksums.json");

  const char *changed = "variants/cpu-fp16/inference/model.onnx";
  write_rel(pkg, changed, "ONNX_PLACEHOLDER, now longer\n");
  if (build(pkg, NULL, &res, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(res.n_changes, 2);
  assert_string_equal(res.changes[0].path, "variants/cpu-fp16/checksums.json");
  assert_int_equal(res.changes[0].kind, MPK_MT_FILE_CHANGED);
  assert_string_equal(res.changes[1].path, changed);
  assert_int_equal(res.changes[1].kind, MPK_MT_FILE_CHANGED);
  assert_int_equal(res.n_written, 2);
  assert_string_equal(res.written[0], "variants/cpu-fp16/checksums.json");
  assert_string_equal(res.written[1], MPK_MT_MANIFEST_FILENAME);
  mpk_mt_build_result_free(&res);

  json_t *after = load_rel(pkg, MPK_MT_MANIFEST_FILENAME);
  char diff[2048] = "";
  differing_members(before, after, "fileSizes", diff, sizeof diff);
  differing_members(before, after, "sha256", diff, sizeof diff);
  assert_string_equal(diff, "fileSizes/variants/cpu-fp16/inference/model.onnx "
                            "sha256/variants/cpu-fp16/checksums.json sha256/variants/cpu-fp16/inference/model.onnx ");
  /* Everything but the integrity maps is unchanged. */
  json_object_del(before, "fileSizes"), json_object_del(before, "sha256");
  json_object_del(after, "fileSizes"), json_object_del(after, "sha256");
  assert_true(json_equal(before, after));

  /* The variant's checksums.json: only the changed file's entry; the other variant's untouched. */
  json_t *sums_after = load_rel(pkg, "variants/cpu-fp16/checksums.json");
  char sdiff[1024] = "";
  json_t *wrap_b = json_pack("{s:O}", "c", sums_before), *wrap_a = json_pack("{s:O}", "c", sums_after);
  differing_members(wrap_b, wrap_a, "c", sdiff, sizeof sdiff);
  assert_string_equal(sdiff, "c/variants/cpu-fp16/inference/model.onnx ");
  assert_same_file(pkg, tu_shared(TINY), "variants/cpu-int4/checksums.json");

  /* The digests are the bytes' SHA-256: the changed file's, and the new checksums.json's. */
  size_t n;
  char *bytes = read_rel(pkg, changed, &n);
  char id[MPK_SHA256_ID_SIZE];
  mpk_sha256_id(bytes, n, id);
  assert_string_equal(json_string_value(json_object_get(sums_after, changed)), id + 7);
  free(bytes);
  json_t *m = load_rel(pkg, MPK_MT_MANIFEST_FILENAME);
  bytes = read_rel(pkg, "variants/cpu-fp16/checksums.json", &n);
  mpk_sha256_id(bytes, n, id);
  assert_string_equal(json_string_value(json_object_get(json_object_get(m, "sha256"), "variants/cpu-fp16/checksums.json")),
                      id + 7);
  free(bytes);
  json_decref(m);
  json_decref(wrap_a), json_decref(wrap_b);
  json_decref(sums_after), json_decref(sums_before);
  json_decref(after), json_decref(before);
  cleanup(pkg);
}

/* `mt build` with a BUILD.json describing the tiny package writes the same bytes as re-sealing,
   also from a fresh export's initial condition (no checksums files yet, no manifest). */
static void test_build_from_describe_reproduces(void **state) {
  (void)state;
  size_t len;
  char *expected = fixture_plus_counts(&len);
  for (int fresh = 0; fresh < 2; fresh++) {
    const char *pkg = tiny_copy();
    if (fresh)
      tu_sh("rm '%s/%s' '%s/variants/cpu-int4/checksums.json' '%s/variants/cpu-fp16/checksums.json'", pkg,
         MPK_MT_MANIFEST_FILENAME, pkg, pkg);
    mpk_mt_build_result res;
    mpk_error err;
    if (build(pkg, tiny_build_json, &res, &err)) fail_msg("%s", tu_err(&err));
    assert_int_equal(res.had_manifest, !fresh);
    assert_int_equal(res.n_written, fresh ? 3 : 1);
    assert_manifest_is(pkg, expected, len);
    assert_same_file(pkg, tu_shared(TINY), "variants/cpu-int4/checksums.json");
    assert_same_file(pkg, tu_shared(TINY), "variants/cpu-fp16/checksums.json");
    mpk_mt_build_result_free(&res);
    cleanup(pkg);
  }
  free(expected);
}

/* What the exporter writes for what BUILD.json leaves out. */
static void test_build_defaults(void **state) {
  (void)state;
  const char *pkg = tiny_copy();
  mpk_mt_build_result res;
  mpk_error err;
  const char *desc = "{\"baseModelId\": \"org/m\", \"variants\": [{\"id\": \"cpu-int4\", \"executionProvider\": \"cpu\", "
                     "\"quantization\": null}]}";
  if (build(pkg, desc, &res, &err)) fail_msg("%s", tu_err(&err));
  json_t *m = load_rel(pkg, MPK_MT_MANIFEST_FILENAME);
  json_t *want = json_pack(
      "{s:s, s:s, s:i, s:s, s:s, s:[], s:[], s:n, s:b, s:n, s:n, s:n, s:n, s:[], s:[], s:n, s:n, s:s, s:s,"
      " s:{s:n, s:n, s:[]}, s:{s:s, s:n, s:n}}",
      "schemaVersion", "1.0", "minReaderVersion", "1.0", "artifactFormatVersion", 1, "baseModelId", "org/m",
      "exportedAt", "", "architectures", "supportedTasks", "selectedTask", "trustRemoteCode", 0,
      "optimumOnnxVersion", "transformersVersion", "onnxRuntimeTrainingVersion", "onnxRuntimeGenAIVersion",
      "peftMethods", "quantization", "trainableParameterCount", "trainingParameterCount", "defaultVariant",
      "cpu-int4", "mobiletransformersVersion", "", "androidRuntime", "minimumAndroidApi",
      "recommendedDeviceMemoryMb", "requiredAbis", "license", "framework", "Apache-2.0", "baseModelWeights",
      "noticeFile");
  const char *k;
  json_t *x;
  json_object_foreach(want, k, x) {
    if (!json_equal(x, json_object_get(m, k))) fail_msg("%s: %s", k, tu_dumps(json_object_get(m, k)));
  }
  json_t *var = json_array_get(json_object_get(m, "variants"), 0);
  json_t *want_var = json_pack(
      "{s:s, s:s, s:n, s:[s], s:n, s:[], s:n, s:n, s:s, s:{s:s, s:s, s:s, s:s}}", "id", "cpu-int4",
      "executionProvider", "cpu", "quantization", "supportedEngines", "native", "abi", "features",
      "minimumAndroidApi", "recommendedDeviceMemoryMb", "weightHandoff",
      "variants/cpu-int4/inference/weight_handoff_map.json", "paths", "embedding", "variants/cpu-int4/embedding",
      "inference", "variants/cpu-int4/inference", "tokenizer", "shared/tokenizer", "train", "variants/cpu-int4/train");
  if (!json_equal(var, want_var)) fail_msg("variant: %s", tu_dumps(var));
  /* No features: the four feature groups are present and empty. */
  json_t *plan = json_object_get(json_object_get(m, "downloadPlan"), "cpu-int4");
  json_t *want_plan = json_pack("{s:[s,s,s,s,s], s:[], s:[], s:[], s:[], s:[s]}", "core", MPK_MT_MANIFEST_FILENAME,
                                "shared/tokenizer/**", "shared/chat_template.jinja", "shared/config.json",
                                "shared/generation_config.json", "inference", "train", "rag", "genai", "checksums",
                                "variants/cpu-int4/checksums.json");
  if (!json_equal(plan, want_plan)) fail_msg("plan: %s", tu_dumps(plan));
  /* The undeclared variant's directory is just files: its stale checksums.json is listed as one. */
  assert_non_null(json_object_get(json_object_get(m, "sha256"), "variants/cpu-fp16/checksums.json"));
  assert_null(json_object_get(json_object_get(m, "downloadPlan"), "cpu-fp16"));
  json_decref(want_plan), json_decref(want_var), json_decref(want), json_decref(m);
  mpk_mt_build_result_free(&res);
  cleanup(pkg);
}

/* ASCII escaping as Python writes it: lowercase \uXXXX, astral characters as surrogate pairs. */
static void test_escaping(void **state) {
  (void)state;
  const char *pkg = tiny_copy();
  write_rel(pkg, "shared/tokenizer/caf\xc3\xa9 \xf0\x9f\x9a\x80.txt", "x");
  const char *desc = "{\"baseModelId\": \"org/m\\u00e9\", \"exportedAt\": \"\\\"\\t\\u001f\xe2\x82\xac\", "
                     "\"variants\": [{\"id\": \"cpu-int4\", \"executionProvider\": \"cpu\", \"quantization\": \"int4\"}]}";
  mpk_mt_build_result res;
  mpk_error err;
  if (build(pkg, desc, &res, &err)) fail_msg("%s", tu_err(&err));
  assert_non_null(strstr(res.manifest, "\"baseModelId\": \"org/m\\u00e9\""));
  assert_non_null(strstr(res.manifest, "\"exportedAt\": \"\\\"\\t\\u001f\\u20ac\""));
  assert_non_null(strstr(res.manifest, "\"shared/tokenizer/caf\\u00e9 \\ud83d\\ude80.txt\": 1,"));
  for (size_t i = 0; i < res.manifest_len; i++) assert_true((unsigned char)res.manifest[i] < 0x80);
  mpk_mt_build_result_free(&res);
  cleanup(pkg);
}

/* A dry run computes and reports everything and writes nothing; a cancelled run writes nothing. */
static int cancel_at_once(void *ctx, uint64_t done, uint64_t total) {
  (void)ctx, (void)done, (void)total;
  return 1;
}

static void test_dry_run_and_cancel(void **state) {
  (void)state;
  const char *pkg = tiny_copy();
  write_rel(pkg, "variants/cpu-int4/train/training_config.json", "{}\n");
  mpk_mt_build_input in = {.dry_run = 1};
  mpk_mt_build_result res;
  mpk_error err;
  if (mpk_mt_build(pkg, &in, &res, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(res.n_written, 2);
  assert_string_equal(res.written[0], "variants/cpu-int4/checksums.json");
  assert_int_equal(res.n_changes, 2);
  mpk_mt_build_result_free(&res);
  assert_same_file(pkg, tu_shared(TINY), MPK_MT_MANIFEST_FILENAME);
  assert_same_file(pkg, tu_shared(TINY), "variants/cpu-int4/checksums.json");

  mpk_mt_build_input cancel = {.progress = cancel_at_once};
  assert_int_equal(mpk_mt_build(pkg, &cancel, &res, &err), MPK_ECANCELLED);
  assert_null(res.manifest);
  assert_same_file(pkg, tu_shared(TINY), MPK_MT_MANIFEST_FILENAME);
  mpk_mt_build_result_free(&res);
  cleanup(pkg);
}

/* ---------------------------------------------------------------- refusals */

typedef struct bad_case {
  const char *describe; /* a BUILD.json text */
  int code;
  const char *pointer;
  const char *message; /* a fragment */
} bad_case;

#define V0 "{\"id\": \"cpu-int4\", \"executionProvider\": \"cpu\", \"quantization\": \"int4\""
#define V1 "{\"id\": \"cpu-fp16\", \"executionProvider\": \"cpu\", \"quantization\": \"fp16\""
#define DOC(extra, variants) "{\"baseModelId\": \"org/m\"" extra ", \"variants\": [" variants "]}"

static const bad_case bad_cases[] = {
    {"{\"baseModelId\": ", MPK_EMALFORMED, "", "invalid JSON"},
    {"[]", MPK_EMALFORMED, "", "expected an object"},
    {DOC(", \"defaultVariant\": \"gpu\"", V0 "}"), MPK_EMALFORMED, "/defaultVariant",
     "defaultVariant \"gpu\" is not among the variants (\"cpu-int4\")"},
    {DOC("", V0 "}, " V0 "}"), MPK_EMALFORMED, "/variants/1/id", "variant id \"cpu-int4\" appears twice"},
    {DOC("", ""), MPK_EMALFORMED, "/variants", "expected a non-empty array"},
    {"{\"variants\": [" V0 "}]}", MPK_EMALFORMED, "", "missing field \"baseModelId\""},
    {"{\"baseModelId\": \"\", \"variants\": [" V0 "}]}", MPK_EMALFORMED, "/baseModelId", "expected a non-empty string"},
    {DOC(", \"bogus\": 1", V0 "}"), MPK_EMALFORMED, "/bogus", "unknown field \"bogus\""},
    {DOC(", \"fileSizes\": {}", V0 "}"), MPK_EMALFORMED, "/fileSizes", "derived from the package tree"},
    {DOC("", V0 ", \"paths\": {}}"), MPK_EMALFORMED, "/variants/0/paths", "derived from the package tree"},
    {DOC("", V0 ", \"colour\": 1}"), MPK_EMALFORMED, "/variants/0/colour", "unknown field \"colour\""},
    {DOC("", "{\"id\": \"a/b\", \"executionProvider\": \"cpu\", \"quantization\": null}"), MPK_EMALFORMED,
     "/variants/0/id", "contains a slash"},
    {DOC("", "{\"id\": \"..\", \"executionProvider\": \"cpu\", \"quantization\": null}"), MPK_EMALFORMED,
     "/variants/0/id", "variant id \"..\""},
    {DOC("", "{\"id\": \"cpu-int4\", \"quantization\": null}"), MPK_EMALFORMED, "/variants/0",
     "missing field \"executionProvider\""},
    {DOC("", "{\"id\": \"cpu-int4\", \"executionProvider\": \"cpu\"}"), MPK_EMALFORMED, "/variants/0",
     "missing field \"quantization\""},
    {DOC("", V0 ", \"minimumAndroidApi\": -1}"), MPK_EMALFORMED, "/variants/0/minimumAndroidApi",
     "expected a non-negative integer or null"},
    {DOC("", V0 ", \"recommendedDeviceMemoryMb\": 1.5}"), MPK_EMALFORMED, "/variants/0/recommendedDeviceMemoryMb",
     "expected a non-negative integer or null"},
    {DOC("", V0 ", \"supportedEngines\": \"native\"}"), MPK_EMALFORMED, "/variants/0/supportedEngines",
     "expected an array of strings"},
    {DOC("", V0 ", \"abi\": [\"arm64-v8a\", 7]}"), MPK_EMALFORMED, "/variants/0/abi/1", "expected a string"},
    {DOC(", \"architectures\": null", V0 "}"), MPK_EMALFORMED, "/architectures", "expected an array of strings"},
    {DOC(", \"trustRemoteCode\": \"yes\"", V0 "}"), MPK_EMALFORMED, "/trustRemoteCode", "expected true or false"},
    {DOC(", \"exportedAt\": 20260714", V0 "}"), MPK_EMALFORMED, "/exportedAt", "expected a string or null"},
    {DOC(", \"trainableParameterCount\": \"34\"", V0 "}"), MPK_EMALFORMED, "/trainableParameterCount",
     "expected a non-negative integer or null"},
    {DOC(", \"androidRuntime\": {\"minimumAndroidApi\": 28}", V0 "}"), MPK_EMALFORMED, "/androidRuntime",
     "missing field \"recommendedDeviceMemoryMb\""},
    {DOC(", \"androidRuntime\": null", V0 "}"), MPK_EMALFORMED, "/androidRuntime", "expected an object"},
    {DOC(", \"license\": {\"framework\": null, \"baseModelWeights\": null, \"noticeFile\": null, \"url\": \"x\"}",
         V0 "}"),
     MPK_EMALFORMED, "/license/url", "unknown field \"url\""},
    {DOC(", \"license\": {\"framework\": null, \"baseModelWeights\": null, \"noticeFile\": \"../LICENSE\"}", V0 "}"),
     MPK_EMALFORMED, "/license/noticeFile", "leaves the package"},
    {DOC(", \"license\": {\"framework\": null, \"baseModelWeights\": null, \"noticeFile\": \"NOTICE\"}", V0 "}"),
     MPK_ENOTFOUND, "", "license noticeFile is missing"},
    {DOC("", "{\"id\": \"gpu-int4\", \"executionProvider\": \"gpu\", \"quantization\": \"int4\"}"), MPK_ENOTFOUND,
     "/variants/0/id", "variant \"gpu-int4\" has no directory variants/gpu-int4/ in the package"},
};

static void test_refusals(void **state) {
  (void)state;
  const char *pkg = tiny_copy();
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    const bad_case *c = &bad_cases[i];
    mpk_mt_build_result res;
    mpk_error err;
    mpk_error_clear(&err);
    int rc = build(pkg, c->describe, &res, &err);
    if (rc != c->code || strcmp(err.pointer, c->pointer) != 0 || !strstr(err.message, c->message))
      fail_msg("case %zu: got %d %s (pointer \"%s\")", i, rc, tu_err(&err), err.pointer);
    assert_null(res.manifest);
  }
  /* A variant id names a directory: at most 255 bytes. */
  char desc[1024], id[300];
  memset(id, 'a', 256);
  id[256] = '\0';
  snprintf(desc, sizeof desc, DOC("", "{\"id\": \"%s\", \"executionProvider\": \"cpu\", \"quantization\": null}"), id);
  mpk_mt_build_result res;
  mpk_error err;
  assert_int_equal(build(pkg, desc, &res, &err), MPK_EMALFORMED);
  assert_string_equal(err.pointer, "/variants/0/id");
  assert_non_null(strstr(err.message, "is longer than 255 bytes"));
  /* Nothing was written by any of them. */
  assert_same_file(pkg, tu_shared(TINY), MPK_MT_MANIFEST_FILENAME);
  cleanup(pkg);
}

static void expect_tree_refusal(const char *setup, int code, const char *message) {
  const char *pkg = tiny_copy();
  tu_sh(setup, pkg, pkg);
  mpk_mt_build_result res;
  mpk_error err;
  int rc = build(pkg, NULL, &res, &err);
  if (rc != code || !strstr(err.message, message)) fail_msg("%s: got %d %s", setup, rc, tu_err(&err));
  assert_same_file(pkg, tu_shared(TINY), MPK_MT_MANIFEST_FILENAME);
  cleanup(pkg);
}

/* The tree: symbolic links and special files refused (the exporter would follow a file link);
   required files must exist; a re-seal needs a manifest. */
static void test_tree_refusals(void **state) {
  (void)state;
  expect_tree_refusal("ln -s ../config.json '%s/shared/tokenizer/link.json' # %s", MPK_EUNSUPPORTED,
                      "\"shared/tokenizer/link.json\" is a symbolic link");
  expect_tree_refusal("ln -s /tmp '%s/variants/cpu-int4/extra' # %s", MPK_EUNSUPPORTED, "is a symbolic link");
  expect_tree_refusal("mkfifo '%s/shared/pipe' # %s", MPK_EUNSUPPORTED, "\"shared/pipe\" is a special file");
  expect_tree_refusal("rm '%s/shared/tokenizer/tokenizer.json' # %s", MPK_ENOTFOUND, "required file is missing");
  expect_tree_refusal("rm '%s/variants/cpu-int4/inference/model.onnx' # %s", MPK_ENOTFOUND,
                      "required file is missing: requiredFiles lists it for the defaultVariant");
  expect_tree_refusal("rm -r '%s/variants/cpu-fp16' # %s", MPK_ENOTFOUND, "variant \"cpu-fp16\" has no directory");
  expect_tree_refusal("rm -r '%s/variants/cpu-fp16' && ln -s cpu-int4 '%s/variants/cpu-fp16'", MPK_EUNSUPPORTED,
                      "variants/cpu-fp16/ is a symbolic link");
  expect_tree_refusal("rm '%s/variants/cpu-fp16/checksums.json' && mkdir '%s/variants/cpu-fp16/checksums.json'",
                      MPK_EUNSUPPORTED, "not a regular file");
  expect_tree_refusal("touch \"%s/shared/back\\\\slash\" # %s", MPK_EUNSUPPORTED,
                      "cannot be listed in a manifest: the path contains a backslash");
  expect_tree_refusal("touch \"$(printf '%s/shared/bad\\377name')\" # %s", MPK_EUNSUPPORTED, "not valid UTF-8");

  const char *pkg = tiny_copy();
  tu_sh("rm '%s/%s'", pkg, MPK_MT_MANIFEST_FILENAME);
  mpk_mt_build_result res;
  mpk_error err;
  assert_int_equal(build(pkg, NULL, &res, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, "no manifest to re-seal"));
  write_rel(pkg, MPK_MT_MANIFEST_FILENAME, "{\"schemaVersion\": \"2.0\", \"minReaderVersion\": \"2.0\"}");
  assert_int_equal(build(pkg, NULL, &res, &err), MPK_EVERSION);
  cleanup(pkg);
}

/* Re-sealing reads the descriptive inputs from the manifest the way the exporter's re-emit does:
   other fields are dropped, androidRuntime and license are carried over as they are, and what the
   manifest leaves out takes the exporter's defaults. */
static void test_reseal_reads_like_the_exporter(void **state) {
  (void)state;
  const char *pkg = tiny_copy();
  json_t *m = load_rel(pkg, MPK_MT_MANIFEST_FILENAME);
  json_object_set_new(m, "extraTopLevel", json_string("dropped"));
  json_object_set_new(json_object_get(m, "androidRuntime"), "vendorHint", json_string("kept"));
  json_object_del(m, "exportedAt");
  json_object_del(m, "onnxRuntimeGenAIVersion");
  json_object_set_new(m, "trustRemoteCode", json_null());
  json_object_set_new(m, "trainableParameterCount", json_integer(34));
  json_t *v0 = json_array_get(json_object_get(m, "variants"), 0);
  json_object_set_new(v0, "paths", json_pack("{s:s}", "bogus", "x")); /* derived: recomputed */
  json_object_del(json_array_get(json_object_get(m, "variants"), 1), "supportedEngines");
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", pkg, MPK_MT_MANIFEST_FILENAME);
  json_dump_file(m, path, JSON_INDENT(1));
  json_decref(m);

  mpk_mt_build_result res;
  mpk_error err;
  if (build(pkg, NULL, &res, &err)) fail_msg("%s", tu_err(&err));
  mpk_mt_build_result_free(&res);
  m = load_rel(pkg, MPK_MT_MANIFEST_FILENAME);
  assert_null(json_object_get(m, "extraTopLevel"));
  assert_string_equal(json_string_value(json_object_get(json_object_get(m, "androidRuntime"), "vendorHint")), "kept");
  assert_string_equal(json_string_value(json_object_get(m, "exportedAt")), "");
  assert_true(json_is_null(json_object_get(m, "onnxRuntimeGenAIVersion")));
  assert_true(json_is_false(json_object_get(m, "trustRemoteCode")));
  assert_int_equal(json_integer_value(json_object_get(m, "trainableParameterCount")), 34);
  v0 = json_array_get(json_object_get(m, "variants"), 0);
  assert_null(json_object_get(json_object_get(v0, "paths"), "bogus"));
  assert_string_equal(json_string_value(json_object_get(json_object_get(v0, "paths"), "embedding")),
                      "variants/cpu-int4/embedding");
  json_t *engines = json_object_get(json_array_get(json_object_get(m, "variants"), 1), "supportedEngines");
  assert_int_equal(json_array_size(engines), 1);
  assert_string_equal(json_string_value(json_array_get(engines, 0)), "native");
  json_decref(m);
  cleanup(pkg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reseal_tiny_package_byte_exact),
      cmocka_unit_test(test_reseal_after_one_file_changed),
      cmocka_unit_test(test_build_from_describe_reproduces),
      cmocka_unit_test(test_build_defaults),
      cmocka_unit_test(test_escaping),
      cmocka_unit_test(test_dry_run_and_cancel),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_tree_refusals),
      cmocka_unit_test(test_reseal_reads_like_the_exporter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
