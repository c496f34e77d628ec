/* MobileTransformers variant selection, sized download plans and the repo-id sanitize rule:
   every case of sanitize_repo_id_cases.json, the acceptance figures on tiny_package (arm64
   and genai → cpu-int4, 1024 MB → nothing, 2,700 bytes, the 3,000 / 2,999 storage boundary and the
   fallback), each filter and tie-break, and the plan's refusals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define TINY "conformance/mobiletransformers/tiny_package/mobiletransformers_manifest.json"

/* ---------------------------------------------------------------- fixtures */

/* tiny_package's manifest, edited by `edit` (may be NULL), parsed. */
static mpk_mt_manifest *tiny_with(void (*edit)(json_t *root)) {
  json_t *root = tu_load_json(tu_shared(TINY));
  if (edit) edit(root);
  char *text = tu_dumps(root);
  json_decref(root);
  mpk_mt_manifest *m = NULL;
  mpk_error err;
  if (mpk_mt_manifest_parse(text, strlen(text), NULL, &m, &err)) fail_msg("%s", tu_err(&err));
  free(text);
  return m;
}

static json_t *variant_obj(json_t *root, const char *id) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(root, "variants"), i, v) if (strcmp(json_string_value(json_object_get(v, "id")), id) == 0) return v;
  fail_msg("no variant %s", id);
  return NULL;
}

static const mpk_mt_candidate *cand(const mpk_mt_selection *s, const char *id) {
  for (size_t i = 0; i < s->n_candidates; i++)
    if (strcmp(s->candidates[i].variant->id, id) == 0) return &s->candidates[i];
  fail_msg("no candidate %s", id);
  return NULL;
}

/* Select on tiny_package (or `m`), expecting `want` (NULL: MPK_ENOVARIANT). */
static mpk_mt_selection *select_on(const mpk_mt_manifest *m, const mpk_mt_select_options *o, const char *want,
                                   mpk_error *err) {
  mpk_mt_selection *s = NULL;
  int rc = mpk_mt_select(m, o, &s, err);
  assert_non_null(s);
  if (want) {
    if (rc) fail_msg("expected %s: %s", want, tu_err(err));
    assert_non_null(s->chosen);
    assert_string_equal(s->chosen->id, want);
    assert_int_equal(cand(s, want)->chosen, 1);
  } else {
    assert_int_equal(rc, MPK_ENOVARIANT);
    assert_null(s->chosen);
    assert_string_equal(err->pointer, "/variants");
    assert_string_equal(err->file, "mobiletransformers_manifest.json");
    assert_string_equal(err->message, s->summary);
  }
  return s;
}

/* ---------------------------------------------------------------- sanitize_repo_id */

static void test_sanitize_oracle(void **state) {
  (void)state;
  json_t *root = tu_load_json(tu_shared("conformance/mobiletransformers/sanitize_repo_id_cases.json")), *c;
  size_t i, ran = 0;
  json_array_foreach(json_object_get(root, "cases"), i, c) {
    char out[MPK_MT_REPO_DIR_MAX + 1];
    mpk_error err;
    const char *in = json_string_value(json_object_get(c, "input"));
    if (mpk_mt_sanitize_repo_id(in, out, sizeof out, &err)) fail_msg("case %zu \"%s\": %s", i, in, tu_err(&err));
    assert_string_equal(out, json_string_value(json_object_get(c, "expected")));
    ran++;
  }
  assert_int_equal(ran, 10);
  json_decref(root);
}

static void test_sanitize_code_points(void **state) {
  (void)state;
  char out[MPK_MT_REPO_DIR_MAX + 1];
  mpk_error err;
  /* One '_' per code point, whatever its UTF-8 length (2, 3, 4 bytes). */
  assert_int_equal(mpk_mt_sanitize_repo_id("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80/x", out, sizeof out, &err), 0);
  assert_string_equal(out, "_____x");
  assert_int_equal(mpk_mt_sanitize_repo_id("U+10FFFF \xf4\x8f\xbf\xbf.", out, sizeof out, &err), 0);
  assert_string_equal(out, "U_10FFFF__.");
  assert_int_equal(mpk_mt_sanitize_repo_id("...", out, sizeof out, &err), 0);
  assert_string_equal(out, "...");
  assert_int_equal(mpk_mt_sanitize_repo_id("../etc", out, sizeof out, &err), 0);
  assert_string_equal(out, "..__etc");
  assert_int_equal(mpk_mt_sanitize_repo_id("/", out, sizeof out, &err), 0);
  assert_string_equal(out, "__");
  assert_int_equal(mpk_mt_sanitize_repo_id("a\tb~c", out, sizeof out, &err), 0);
  assert_string_equal(out, "a_b_c");
}

static void test_sanitize_refusals(void **state) {
  (void)state;
  char out[MPK_MT_REPO_DIR_MAX + 1];
  mpk_error err;
  const char *invalid[] = {"", ".", "..",
                           "\x80",             /* a lone continuation byte */
                           "a\xc0\xaf",        /* overlong '/' */
                           "\xe0\x80\xaf",     /* overlong, 3 bytes */
                           "\xed\xa0\x80",     /* a UTF-16 surrogate */
                           "\xf4\x90\x80\x80", /* above U+10FFFF */
                           "\xf5\x80\x80\x80", "\xff",
                           "x\xe2\x82",        /* truncated */
                           "\xc3(",            /* a lead byte without its continuation */
                           "\xf0\x9f\x98"};
  for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
    strcpy(out, "stale");
    if (mpk_mt_sanitize_repo_id(invalid[i], out, sizeof out, &err) != MPK_EINVAL) fail_msg("case %zu accepted", i);
    assert_string_equal(out, "");
  }
  assert_int_equal(mpk_mt_sanitize_repo_id("\xc3\xa9\x80", out, sizeof out, &err), MPK_EINVAL);
  assert_string_equal(err.message, "repo id: byte 2 (0x80) is not valid UTF-8");
  assert_int_equal(mpk_mt_sanitize_repo_id("..", out, sizeof out, &err), MPK_EINVAL);
  assert_string_equal(err.message, "repo id: \"..\" would name the cache directory itself or its parent");

  /* 255 bytes is a directory name; 256 is not (no truncation: two ids must never share one by cutting). */
  char id[600];
  memset(id, 'a', 255);
  id[255] = '\0';
  assert_int_equal(mpk_mt_sanitize_repo_id(id, out, sizeof out, &err), 0);
  assert_int_equal(strlen(out), 255);
  strcat(id, "a");
  assert_int_equal(mpk_mt_sanitize_repo_id(id, out, sizeof out, &err), MPK_ELIMIT);
  assert_string_equal(out, "");
  memset(id, '/', 128);
  id[128] = '\0';
  assert_int_equal(mpk_mt_sanitize_repo_id(id, out, sizeof out, &err), MPK_ELIMIT); /* 256 bytes out */
  id[127] = '\0';
  assert_int_equal(mpk_mt_sanitize_repo_id(id, out, sizeof out, &err), 0); /* 254 */
  /* A buffer too small for the name. */
  char small[4];
  assert_int_equal(mpk_mt_sanitize_repo_id("abcd", small, sizeof small, &err), MPK_ELIMIT);
  assert_int_equal(mpk_mt_sanitize_repo_id("abc", small, sizeof small, &err), 0);
  assert_string_equal(small, "abc");
  assert_int_equal(mpk_mt_sanitize_repo_id(NULL, out, sizeof out, &err), MPK_EINVAL);
  assert_int_equal(mpk_mt_sanitize_repo_id("a", out, 0, &err), MPK_EINVAL);
}

/* ---------------------------------------------------------------- storage budget */

static void test_storage_budget(void **state) {
  (void)state;
  assert_int_equal(mpk_mt_storage_budget(3000), 2700);
  assert_int_equal(mpk_mt_storage_budget(2999), 2699); /* 2699.1, rounded down */
  assert_int_equal(mpk_mt_storage_budget(0), 0);
  assert_int_equal(mpk_mt_storage_budget(1), 0);
  assert_int_equal(mpk_mt_storage_budget(9), 8);
  assert_int_equal(mpk_mt_storage_budget(10), 9);
  assert_int_equal(mpk_mt_storage_budget(2557), 2301);
  assert_int_equal(mpk_mt_storage_budget(2556), 2300);
  assert_true(mpk_mt_storage_budget(UINT64_MAX) == UINT64_C(16602069666338596453)); /* exact, no overflow */
}

/* ---------------------------------------------------------------- download plans */

static void test_plan_tiny_int4(void **state) {
  (void)state;
  mpk_mt_manifest *m = tiny_with(NULL);
  mpk_mt_download_plan *p = NULL;
  mpk_error err;
  if (mpk_mt_plan_download(m, "cpu-int4", NULL, &p, &err)) fail_msg("%s", tu_err(&err));
  static const char *const want[][3] = {
      {"shared/chat_template.jinja", "core", "15"},
      {"shared/config.json", "core", "28"},
      {"shared/generation_config.json", "core", "24"},
      {"shared/tokenizer/tokenizer.json", "core", "19"},
      {"variants/cpu-int4/checksums.json", "checksums", "1383"},
      {"variants/cpu-int4/inference/frozen_base.onnx.data", "inference", "24"},
      {"variants/cpu-int4/inference/genai_config.json", "inference", "41"},
      {"variants/cpu-int4/inference/generation_config.json", "inference", "23"},
      {"variants/cpu-int4/inference/model.layers.0.attn.q_proj.MatMul.weight.bin", "inference", "23"},
      {"variants/cpu-int4/inference/model.layers.0.attn.q_proj.MatMul.weight.bin.sha256", "inference", "65"},
      {"variants/cpu-int4/inference/model.onnx", "inference", "17"},
      {"variants/cpu-int4/inference/weight_handoff_map.json", "inference", "1038"},
  };
  assert_int_equal(p->n_files, 12);
  for (size_t i = 0; i < 12; i++) {
    assert_string_equal(p->files[i].path, want[i][0]);
    assert_string_equal(p->files[i].group, want[i][1]);
    assert_true(p->files[i].has_size);
    assert_int_equal(p->files[i].size, strtoull(want[i][2], NULL, 10));
    assert_string_equal(p->files[i].sha256, mpk_mt_manifest_file(m, want[i][0])->sha256);
  }
  assert_string_equal(p->files[0].sha256, "7f3de14b4a359865a98f84be7a9314754b7e14e8e23524e2553e4effaa9d18e1");
  assert_int_equal(p->total_bytes, 2700); /* the figure for cpu-int4 core+inference */
  assert_int_equal(p->includes_manifest, 1);
  assert_int_equal(p->n_unverifiable, 0);
  assert_int_equal(p->n_problems, 0);
  assert_int_equal(p->n_notes, 0);
  assert_string_equal(p->variant, "cpu-int4");
  assert_int_equal(p->n_features, 1);
  assert_string_equal(p->features[0], "inference");
  assert_int_equal(p->n_groups, 3);
  assert_string_equal(p->groups[0], "core");
  assert_string_equal(p->groups[1], "checksums");
  assert_string_equal(p->groups[2], "inference");
  mpk_mt_download_plan_free(p);
  mpk_mt_manifest_free(m);
}

static uint64_t plan_total(const mpk_mt_manifest *m, const char *variant, const char *const *f, size_t n, size_t *files) {
  mpk_mt_download_plan *p = NULL;
  mpk_error err;
  mpk_mt_plan_options o = {.features = f, .n_features = n};
  if (mpk_mt_plan_download(m, variant, &o, &p, &err)) fail_msg("%s: %s", variant, tu_err(&err));
  uint64_t t = p->total_bytes;
  if (files) *files = p->n_files;
  mpk_mt_download_plan_free(p);
  return t;
}

static void test_plan_feature_sets(void **state) {
  (void)state;
  mpk_mt_manifest *m = tiny_with(NULL);
  size_t n;
  assert_int_equal(plan_total(m, "cpu-fp16", NULL, 0, &n), 2301);
  assert_int_equal(n, 11);
  const char *train[] = {"train"};
  assert_int_equal(plan_total(m, "cpu-int4", train, 1, &n), 86 + 1383 + 40 + 1038); /* no inference */
  assert_int_equal(n, 7);
  const char *all[] = {"inference", "train", "rag", "genai", "train", "core", "checksums"};
  assert_int_equal(plan_total(m, "cpu-int4", all, 7, &n), 2700 + 1078 + 55); /* genai_config.json counted once */
  assert_int_equal(n, 16);
  const char *core[] = {"core"};
  assert_int_equal(plan_total(m, "cpu-int4", core, 1, &n), 86 + 1383);

  /* Each file under its first group: genai_config.json is the inference group's when both are planned. */
  mpk_mt_download_plan *p = NULL;
  mpk_error err;
  const char *gi[] = {"genai", "inference"};
  mpk_mt_plan_options o = {.features = gi, .n_features = 2};
  assert_int_equal(mpk_mt_plan_download(m, "cpu-int4", &o, &p, &err), 0);
  assert_int_equal(p->n_groups, 4);
  assert_string_equal(p->groups[2], "genai");
  for (size_t i = 0; i < p->n_files; i++)
    if (strstr(p->files[i].path, "genai_config.json")) assert_string_equal(p->files[i].group, "genai");
  assert_int_equal(p->total_bytes, 2700);
  mpk_mt_download_plan_free(p);
  mpk_mt_manifest_free(m);
}

static void test_plan_refusals(void **state) {
  (void)state;
  mpk_mt_manifest *m = tiny_with(NULL);
  mpk_mt_download_plan *p = (void *)1;
  mpk_error err;
  assert_int_equal(mpk_mt_plan_download(m, "cpu-int8", NULL, &p, &err), MPK_ENOTFOUND);
  assert_null(p);
  assert_string_equal(err.message, "no variant \"cpu-int8\"");
  const char *rag[] = {"rag"};
  mpk_mt_plan_options o = {.features = rag, .n_features = 1};
  assert_int_equal(mpk_mt_plan_download(m, "cpu-fp16", &o, &p, &err), MPK_ENOTFOUND);
  assert_string_equal(err.pointer, "/variants/1/features");
  assert_string_equal(err.message, "variant \"cpu-fp16\" does not declare feature \"rag\" (its features: core, inference, train)");
  const char *empty[] = {"inference", ""};
  o = (mpk_mt_plan_options){.features = empty, .n_features = 2};
  assert_int_equal(mpk_mt_plan_download(m, "cpu-int4", &o, &p, &err), MPK_EINVAL);
  assert_int_equal(mpk_mt_plan_download(NULL, "cpu-int4", NULL, &p, &err), MPK_EINVAL);
  assert_int_equal(mpk_mt_plan_download(m, "cpu-int4", NULL, NULL, &err), MPK_EINVAL);
  mpk_mt_manifest_free(m);
}

static void drop_checksums_group(json_t *root) {
  json_object_del(json_object_get(json_object_get(root, "downloadPlan"), "cpu-int4"), "checksums");
}

static void test_plan_missing_group(void **state) {
  (void)state;
  mpk_mt_manifest *m = tiny_with(drop_checksums_group);
  mpk_mt_download_plan *p = NULL;
  mpk_error err;
  assert_int_equal(mpk_mt_plan_download(m, "cpu-int4", NULL, &p, &err), MPK_ENOTFOUND);
  assert_string_equal(err.pointer, "/downloadPlan/cpu-int4");
  assert_string_equal(err.message, "the download plan of variant \"cpu-int4\" has no group \"checksums\"");
  mpk_mt_manifest_free(m);
}

/* shared/config.json loses its digest, model.onnx its size, and genai_config.json both. */
static void drop_integrity(json_t *root) {
  json_object_del(json_object_get(root, "sha256"), "shared/config.json");
  json_object_del(json_object_get(root, "fileSizes"), "variants/cpu-int4/inference/model.onnx");
  json_object_del(json_object_get(root, "sha256"), "variants/cpu-int4/inference/genai_config.json");
  json_object_del(json_object_get(root, "fileSizes"), "variants/cpu-int4/inference/genai_config.json");
}

static void test_plan_unverifiable(void **state) {
  (void)state;
  mpk_mt_manifest *m = tiny_with(drop_integrity);
  mpk_mt_download_plan *p = NULL;
  mpk_error err;
  /* Fail closed by default, naming the file and the missing field. */
  assert_int_equal(mpk_mt_plan_download(m, "cpu-int4", NULL, &p, &err), MPK_EMALFORMED);
  assert_null(p);
  assert_string_equal(err.pointer, "/sha256/shared~1config.json");
  assert_string_equal(err.message, "planned file \"shared/config.json\" (variant \"cpu-int4\", group \"core\") has no sha256 "
                                   "digest: the installer refuses a file it cannot verify");
  /* For display: reported, every one. genai_config.json is gone from the listing (neither size nor
     digest), so it is simply not planned. */
  mpk_mt_plan_options o = {.allow_unverifiable = 1};
  assert_int_equal(mpk_mt_plan_download(m, "cpu-int4", &o, &p, &err), 0);
  assert_int_equal(p->n_files, 11);
  assert_int_equal(p->n_unverifiable, 2);
  assert_int_equal(p->n_problems, 2);
  assert_string_equal(p->problems[0].pointer, "/sha256/shared~1config.json");
  assert_string_equal(p->problems[1].pointer, "/fileSizes/variants~1cpu-int4~1inference~1model.onnx");
  assert_int_equal(p->problems[1].code, MPK_EMALFORMED);
  assert_string_equal(p->problems[1].message,
                      "planned file \"variants/cpu-int4/inference/model.onnx\" (variant \"cpu-int4\", group \"inference\") "
                      "has no fileSizes entry: the installer refuses a file whose size it cannot check");
  assert_int_equal(p->total_bytes, 2700 - 41 - 17);
  mpk_mt_download_plan_free(p);
  /* cpu-fp16 shares the core files: its plan is refused for the same one, and only that one. */
  assert_int_equal(mpk_mt_plan_download(m, "cpu-fp16", NULL, &p, &err), MPK_EMALFORMED);
  assert_string_equal(err.pointer, "/sha256/shared~1config.json");
  assert_int_equal(mpk_mt_plan_download(m, "cpu-fp16", &o, &p, &err), 0);
  assert_int_equal(p->n_unverifiable, 1);
  assert_int_equal(p->total_bytes, 2301);
  mpk_mt_download_plan_free(p);
  mpk_mt_manifest_free(m);
}

static void add_stale_patterns(json_t *root) {
  json_t *plan = json_object_get(json_object_get(root, "downloadPlan"), "cpu-int4");
  json_array_append_new(json_object_get(plan, "core"), json_string("shared/nope.txt"));
  json_array_append_new(json_object_get(plan, "inference"), json_string("variants/cpu-int4/none/**"));
}

static void test_plan_notes(void **state) {
  (void)state;
  mpk_mt_manifest *m = tiny_with(add_stale_patterns);
  mpk_mt_download_plan *p = NULL;
  mpk_error err;
  assert_int_equal(mpk_mt_plan_download(m, "cpu-int4", NULL, &p, &err), 0);
  assert_int_equal(p->n_notes, 2);
  assert_string_equal(p->notes[0], "warning: download pattern \"shared/nope.txt\" (group \"core\") names a file the manifest does not list");
  assert_string_equal(p->notes[1], "warning: download pattern \"variants/cpu-int4/none/**\" (group \"inference\") selects no file the manifest lists");
  assert_int_equal(p->total_bytes, 2700);
  mpk_mt_download_plan_free(p);
  mpk_mt_manifest_free(m);
}

/* 2,049 files of 2^53 - 1 bytes (the largest size the reader accepts) add up past 2^64. */
static void huge_files(json_t *root) {
  json_t *sizes = json_object_get(root, "fileSizes"), *sums = json_object_get(root, "sha256");
  for (int i = 0; i < 2049; i++) {
    char path[96];
    snprintf(path, sizeof path, "variants/cpu-int4/inference/x%d.bin", i);
    json_object_set_new(sizes, path, json_integer((json_int_t)((UINT64_C(1) << 53) - 1)));
    json_object_set_new(sums, path, json_string("0000000000000000000000000000000000000000000000000000000000000000"));
  }
}

static void test_plan_total_overflow(void **state) {
  (void)state;
  mpk_mt_manifest *m = tiny_with(huge_files);
  mpk_mt_download_plan *p = NULL;
  mpk_error err;
  assert_int_equal(mpk_mt_plan_download(m, "cpu-int4", NULL, &p, &err), MPK_ELIMIT);
  assert_null(p);
  assert_string_equal(err.message, "the planned files of variant \"cpu-int4\" add up to more than 18446744073709551615 bytes");
  mpk_mt_selection *s = NULL;
  assert_int_equal(mpk_mt_select(m, NULL, &s, &err), 0);
  assert_string_equal(s->chosen->id, "cpu-fp16");
  assert_int_equal(cand(s, "cpu-int4")->excluded_by, MPK_MT_FILTER_PLAN);
  mpk_mt_selection_free(s);
  mpk_mt_manifest_free(m);
}

/* ---------------------------------------------------------------- selection: the acceptance */

static void test_select_arm64(void **state) {
  (void)state;
  mpk_mt_manifest *m = tiny_with(NULL);
  mpk_error err;
  const char *abi[] = {"arm64-v8a"};
  mpk_mt_select_options o = {.abis = abi, .n_abis = 1};
  mpk_mt_selection *s = select_on(m, &o, "cpu-int4", &err);
  const mpk_mt_candidate *i4 = cand(s, "cpu-int4"), *f16 = cand(s, "cpu-fp16");
  assert_int_equal(i4->rank, 1);
  assert_int_equal(i4->excluded_by, MPK_MT_FILTER_NONE);
  assert_int_equal(i4->download_bytes, 2700);
  assert_string_equal(i4->reason, "its quantization \"int4\" is the most preferred among the candidates");
  /* abi null runs anywhere: cpu-fp16 passes the ABI filter and loses on preference. */
  assert_int_equal(f16->rank, 2);
  assert_int_equal(f16->excluded_by, MPK_MT_FILTER_NONE);
  assert_int_equal(f16->has_bytes, 1);
  assert_int_equal(f16->download_bytes, 2301);
  assert_string_equal(f16->reason, "ranks below cpu-int4: its quantization \"fp16\" is not in the preference list; \"int4\" is");
  assert_string_equal(s->preferred_quant, "int4");
  assert_int_equal(s->n_prefer_quant, 1);
  assert_string_equal(s->prefer_quant[0], MPK_MT_DEFAULT_PREFER_QUANT);
  assert_int_equal(s->fell_back, 0);
  assert_int_equal(s->has_budget, 0);
  assert_string_equal(s->summary, "chose cpu-int4: its quantization \"int4\" is the most preferred among the candidates");
  mpk_mt_selection_free(s);
  /* No options at all: the same. */
  s = select_on(m, NULL, "cpu-int4", &err);
  mpk_mt_selection_free(s);
  mpk_mt_manifest_free(m);
}

static void test_select_genai(void **state) {
  (void)state;
  mpk_mt_manifest *m = tiny_with(NULL);
  mpk_error err;
  mpk_mt_select_options o = {.engine = "genai"};
  mpk_mt_selection *s = select_on(m, &o, "cpu-int4", &err);
  assert_int_equal(cand(s, "cpu-fp16")->excluded_by, MPK_MT_FILTER_ENGINE);
  assert_int_equal(cand(s, "cpu-fp16")->rank, 0);
  assert_string_equal(cand(s, "cpu-fp16")->reason, "supportedEngines [native] does not include the requested \"genai\"");
  assert_string_equal(cand(s, "cpu-int4")->reason, "the only variant that passes every filter");
  mpk_mt_selection_free(s);
  mpk_mt_manifest_free(m);
}

static void test_select_memory_1024(void **state) {
  (void)state;
  mpk_mt_manifest *m = tiny_with(NULL);
  mpk_error err;
  mpk_mt_select_options o = {.memory_mb = {1, 1024}};
  mpk_mt_selection *s = select_on(m, &o, NULL, &err);
  assert_string_equal(err.message, "no variant fits: cpu-int4: recommendedDeviceMemoryMb 3072 exceeds the device memory "
                                   "of 1024 MB; cpu-fp16: recommendedDeviceMemoryMb 6144 exceeds the device memory of 1024 MB");
  assert_int_equal(err.code, MPK_ENOVARIANT);
  for (size_t i = 0; i < 2; i++) {
    assert_int_equal(s->candidates[i].excluded_by, MPK_MT_FILTER_MEMORY);
    assert_int_equal(s->candidates[i].rank, 0);
    assert_int_equal(s->candidates[i].chosen, 0);
  }
  assert_null(s->preferred_quant);
  mpk_mt_selection_free(s);
  /* The bound is inclusive: 3072 MB runs cpu-int4; 3071 runs nothing. */
  o.memory_mb.value = 3072;
  s = select_on(m, &o, "cpu-int4", &err);
  assert_int_equal(cand(s, "cpu-fp16")->excluded_by, MPK_MT_FILTER_MEMORY);
  mpk_mt_selection_free(s);
  o.memory_mb.value = 3071;
  mpk_mt_selection_free(select_on(m, &o, NULL, &err));
  mpk_mt_manifest_free(m);
}

static void test_select_storage_boundary(void **state) {
  (void)state;
  mpk_mt_manifest *m = tiny_with(NULL);
  mpk_error err;
  const char *abi[] = {"arm64-v8a"};
  mpk_mt_select_options o = {.abis = abi, .n_abis = 1, .free_bytes = {1, 3000}};
  mpk_mt_selection *s = select_on(m, &o, "cpu-int4", &err);
  assert_int_equal(s->budget_bytes, 2700);
  assert_int_equal(s->free_bytes, 3000);
  assert_int_equal(s->fell_back, 0);
  mpk_mt_selection_free(s);

  /* 2,999 free: budget 2,699 < 2,700. The reference gives up here; the fallback takes cpu-fp16. */
  o.free_bytes.value = 2999;
  s = select_on(m, &o, "cpu-fp16", &err);
  assert_int_equal(s->budget_bytes, 2699);
  assert_int_equal(s->fell_back, 1);
  const mpk_mt_candidate *i4 = cand(s, "cpu-int4"), *f16 = cand(s, "cpu-fp16");
  assert_int_equal(i4->excluded_by, MPK_MT_FILTER_STORAGE);
  assert_int_equal(i4->rank, 1);
  assert_string_equal(i4->reason, "its download of 2700 bytes exceeds the storage budget of 2699 bytes (90% of 2999 free, rounded down)");
  assert_int_equal(f16->rank, 2);
  assert_string_equal(f16->reason, "the best-ranked variant whose download fits the storage budget (2301 of 2699 bytes); "
                                   "cpu-int4 ranks above it but does not fit");
  mpk_mt_selection_free(s);

  /* cpu-fp16 needs 2,301: 2,557 free (budget 2,301) fits exactly, 2,556 (2,300) fits nothing. */
  o.free_bytes.value = 2557;
  mpk_mt_selection_free(select_on(m, &o, "cpu-fp16", &err));
  o.free_bytes.value = 2556;
  s = select_on(m, &o, NULL, &err);
  assert_int_equal(cand(s, "cpu-fp16")->excluded_by, MPK_MT_FILTER_STORAGE);
  assert_int_equal(cand(s, "cpu-fp16")->rank, 2);
  assert_non_null(strstr(err.message, "cpu-fp16: its download of 2301 bytes exceeds the storage budget of 2300 bytes"));
  mpk_mt_selection_free(s);
  mpk_mt_manifest_free(m);
}

/* ---------------------------------------------------------------- selection: each filter */

static void test_select_filters(void **state) {
  (void)state;
  mpk_mt_manifest *m = tiny_with(NULL);
  mpk_error err;
  mpk_mt_selection *s;

  const char *x86[] = {"x86_64"};
  mpk_mt_select_options o = {.abis = x86, .n_abis = 1};
  s = select_on(m, &o, "cpu-fp16", &err);
  assert_int_equal(cand(s, "cpu-int4")->excluded_by, MPK_MT_FILTER_ABI);
  assert_string_equal(cand(s, "cpu-int4")->reason, "abi [arm64-v8a] shares no ABI with the device (x86_64)");
  assert_int_equal(cand(s, "cpu-int4")->download_bytes, 2700); /* sized even when excluded */
  mpk_mt_selection_free(s);
  const char *both[] = {"x86_64", "arm64-v8a"};
  o = (mpk_mt_select_options){.abis = both, .n_abis = 2};
  mpk_mt_selection_free(select_on(m, &o, "cpu-int4", &err));

  o = (mpk_mt_select_options){.execution_provider = "nnapi"};
  s = select_on(m, &o, NULL, &err);
  assert_int_equal(cand(s, "cpu-int4")->excluded_by, MPK_MT_FILTER_EXECUTION_PROVIDER);
  assert_string_equal(cand(s, "cpu-int4")->reason, "executionProvider \"cpu\" is not the requested \"nnapi\"");
  mpk_mt_selection_free(s);
  o = (mpk_mt_select_options){.execution_provider = "cpu"};
  mpk_mt_selection_free(select_on(m, &o, "cpu-int4", &err));

  o = (mpk_mt_select_options){.quantization = "fp16"};
  s = select_on(m, &o, "cpu-fp16", &err);
  assert_int_equal(cand(s, "cpu-int4")->excluded_by, MPK_MT_FILTER_QUANTIZATION);
  assert_string_equal(cand(s, "cpu-int4")->reason, "quantization \"int4\" is not the requested \"fp16\"");
  mpk_mt_selection_free(s);
  o = (mpk_mt_select_options){.quantization = "FP16"}; /* exact: no case folding */
  mpk_mt_selection_free(select_on(m, &o, NULL, &err));

  const char *rag[] = {"rag"};
  o = (mpk_mt_select_options){.features = rag, .n_features = 1};
  s = select_on(m, &o, "cpu-int4", &err);
  assert_int_equal(cand(s, "cpu-fp16")->excluded_by, MPK_MT_FILTER_FEATURES);
  assert_string_equal(cand(s, "cpu-fp16")->reason, "features [core, inference, train] lack the requested \"rag\"");
  assert_int_equal(cand(s, "cpu-fp16")->has_bytes, 0); /* it has no rag to size */
  assert_int_equal(cand(s, "cpu-int4")->download_bytes, 86 + 1383 + 55);
  assert_int_equal(s->n_groups, 3);
  assert_string_equal(s->groups[2], "rag");
  mpk_mt_selection_free(s);

  o = (mpk_mt_select_options){.api_level = {1, 27}};
  s = select_on(m, &o, NULL, &err);
  assert_int_equal(cand(s, "cpu-int4")->excluded_by, MPK_MT_FILTER_API_LEVEL);
  assert_string_equal(cand(s, "cpu-int4")->reason, "minimumAndroidApi 28 exceeds the device API level 27");
  mpk_mt_selection_free(s);
  o.api_level.value = 28;
  mpk_mt_selection_free(select_on(m, &o, "cpu-int4", &err));

  /* The first filter that excludes is the one named: ABI before memory. */
  o = (mpk_mt_select_options){.abis = x86, .n_abis = 1, .memory_mb = {1, 1024}};
  s = select_on(m, &o, NULL, &err);
  assert_int_equal(cand(s, "cpu-int4")->excluded_by, MPK_MT_FILTER_ABI);
  assert_int_equal(cand(s, "cpu-fp16")->excluded_by, MPK_MT_FILTER_MEMORY);
  mpk_mt_selection_free(s);
  mpk_mt_manifest_free(m);
}

static void test_select_preference(void **state) {
  (void)state;
  mpk_mt_manifest *m = tiny_with(NULL);
  mpk_error err;
  const char *fp16_first[] = {"fp16", "int4"};
  mpk_mt_select_options o = {.prefer_quant = fp16_first, .n_prefer_quant = 2};
  mpk_mt_selection *s = select_on(m, &o, "cpu-fp16", &err);
  assert_string_equal(s->preferred_quant, "fp16");
  assert_string_equal(cand(s, "cpu-int4")->reason,
                      "ranks below cpu-fp16: its quantization \"int4\" comes after \"fp16\" in the preference list");
  mpk_mt_selection_free(s);
  /* A ranked list: the first entry any candidate has. */
  const char *q8_first[] = {"QInt8", "int4"};
  o = (mpk_mt_select_options){.prefer_quant = q8_first, .n_prefer_quant = 2};
  s = select_on(m, &o, "cpu-int4", &err);
  assert_string_equal(s->preferred_quant, "int4");
  mpk_mt_selection_free(s);
  /* No preference: the smallest download. */
  o = (mpk_mt_select_options){.prefer_quant = q8_first, .n_prefer_quant = 0};
  s = select_on(m, &o, "cpu-fp16", &err);
  assert_null(s->preferred_quant);
  assert_string_equal(cand(s, "cpu-fp16")->reason, "the smallest download (2301 < 2700 bytes)");
  assert_string_equal(cand(s, "cpu-int4")->reason, "ranks below cpu-fp16: its download is larger (2700 > 2301 bytes)");
  mpk_mt_selection_free(s);
  mpk_mt_manifest_free(m);
}

/* cpu-fp16 becomes an int4 twin of cpu-int4 (same files, same size); cpu-zzz, which runs nowhere,
   is added. Ties then fall to the defaultVariant, then to the id. */
static void make_twins(json_t *root) {
  json_t *f16 = variant_obj(root, "cpu-fp16");
  json_object_set_new(f16, "quantization", json_string("int4"));
  json_t *plans = json_object_get(root, "downloadPlan");
  json_object_set(plans, "cpu-fp16", json_object_get(plans, "cpu-int4"));
  json_t *zzz = json_deep_copy(f16);
  json_object_set_new(zzz, "id", json_string("cpu-zzz"));
  json_object_set_new(zzz, "abi", json_array());
  json_array_append_new(json_object_get(root, "variants"), zzz);
  json_object_set(plans, "cpu-zzz", json_object_get(plans, "cpu-int4"));
}

static void twins_default_fp16(json_t *root) {
  make_twins(root);
  json_object_set_new(root, "defaultVariant", json_string("cpu-fp16"));
}

static void twins_default_zzz(json_t *root) {
  make_twins(root);
  json_object_set_new(root, "defaultVariant", json_string("cpu-zzz"));
}

static void test_select_tie_breaks(void **state) {
  (void)state;
  mpk_error err;
  mpk_mt_manifest *m = tiny_with(make_twins);
  mpk_mt_selection *s = select_on(m, NULL, "cpu-int4", &err);
  assert_int_equal(cand(s, "cpu-fp16")->download_bytes, 2700);
  assert_string_equal(cand(s, "cpu-int4")->reason, "preference and size tie; it is the defaultVariant");
  assert_string_equal(cand(s, "cpu-fp16")->reason, "ranks below cpu-int4: preference and size tie; \"cpu-int4\" is the defaultVariant");
  assert_int_equal(cand(s, "cpu-zzz")->excluded_by, MPK_MT_FILTER_ABI);
  assert_string_equal(cand(s, "cpu-zzz")->reason, "abi is an empty list: it runs on no device");
  mpk_mt_selection_free(s);
  mpk_mt_manifest_free(m);

  m = tiny_with(twins_default_fp16);
  mpk_mt_selection_free(select_on(m, NULL, "cpu-fp16", &err));
  mpk_mt_manifest_free(m);

  /* The default runs nowhere: the id decides, bytewise. */
  m = tiny_with(twins_default_zzz);
  s = select_on(m, NULL, "cpu-fp16", &err);
  assert_string_equal(cand(s, "cpu-int4")->reason, "ranks below cpu-fp16: preference and size tie, neither is the "
                                                    "defaultVariant, and \"cpu-fp16\" sorts before \"cpu-int4\"");
  mpk_mt_selection_free(s);
  mpk_mt_manifest_free(m);
}

static void int4_unverifiable(json_t *root) {
  json_object_del(json_object_get(root, "sha256"), "variants/cpu-int4/inference/model.onnx");
}

static void fp16_no_requirements(json_t *root) {
  json_t *f16 = variant_obj(root, "cpu-fp16");
  json_object_set_new(f16, "recommendedDeviceMemoryMb", json_null());
  json_object_set_new(f16, "minimumAndroidApi", json_null());
  json_object_set_new(f16, "quantization", json_null());
}

static void test_select_plan_and_nulls(void **state) {
  (void)state;
  mpk_error err;
  /* A variant whose plan holds a file without a digest cannot be installed: excluded, not chosen. */
  mpk_mt_manifest *m = tiny_with(int4_unverifiable);
  mpk_mt_selection *s = select_on(m, NULL, "cpu-fp16", &err);
  assert_int_equal(cand(s, "cpu-int4")->excluded_by, MPK_MT_FILTER_PLAN);
  assert_int_equal(cand(s, "cpu-int4")->has_bytes, 0);
  assert_non_null(strstr(cand(s, "cpu-int4")->reason, "\"variants/cpu-int4/inference/model.onnx\" (variant \"cpu-int4\", group \"inference\") has no sha256 digest"));
  mpk_mt_selection_free(s);
  mpk_mt_manifest_free(m);

  /* Null requirements pass any device; a null quantization fails a requested one. */
  m = tiny_with(fp16_no_requirements);
  mpk_mt_select_options o = {.memory_mb = {1, 1}, .api_level = {1, 1}};
  s = select_on(m, &o, "cpu-fp16", &err);
  assert_int_equal(cand(s, "cpu-int4")->excluded_by, MPK_MT_FILTER_MEMORY);
  mpk_mt_selection_free(s);
  o = (mpk_mt_select_options){.quantization = "int8", .abis = (const char *[]){"x86_64"}, .n_abis = 1};
  s = select_on(m, &o, NULL, &err);
  assert_string_equal(cand(s, "cpu-fp16")->reason, "quantization is null, not the requested \"int8\"");
  mpk_mt_selection_free(s);
  /* Unranked: a null quantization sorts with the unlisted ones. */
  s = select_on(m, NULL, "cpu-int4", &err);
  assert_string_equal(cand(s, "cpu-fp16")->reason, "ranks below cpu-int4: it declares no quantization; \"int4\" is preferred");
  mpk_mt_selection_free(s);
  mpk_mt_manifest_free(m);
}

static void test_select_invalid_options(void **state) {
  (void)state;
  mpk_mt_manifest *m = tiny_with(NULL);
  mpk_error err;
  mpk_mt_selection *s = (void *)1;
  mpk_mt_select_options o = {.memory_mb = {1, -1}};
  assert_int_equal(mpk_mt_select(m, &o, &s, &err), MPK_EINVAL);
  assert_null(s);
  assert_string_equal(err.message, "memory_mb is negative (-1)");
  o = (mpk_mt_select_options){.engine = ""};
  assert_int_equal(mpk_mt_select(m, &o, &s, &err), MPK_EINVAL);
  o = (mpk_mt_select_options){.n_abis = 1};
  assert_int_equal(mpk_mt_select(m, &o, &s, &err), MPK_EINVAL);
  const char *bad[] = {"int4", ""};
  o = (mpk_mt_select_options){.prefer_quant = bad, .n_prefer_quant = 2};
  assert_int_equal(mpk_mt_select(m, &o, &s, &err), MPK_EINVAL);
  o = (mpk_mt_select_options){.features = bad, .n_features = 2};
  assert_int_equal(mpk_mt_select(m, &o, &s, &err), MPK_EINVAL);
  assert_null(s);
  assert_int_equal(mpk_mt_select(NULL, NULL, &s, &err), MPK_EINVAL);
  assert_int_equal(mpk_mt_select(m, NULL, NULL, &err), MPK_EINVAL);
  mpk_mt_manifest_free(m);
  assert_string_equal(mpk_mt_filter_name(MPK_MT_FILTER_MEMORY), "recommendedDeviceMemoryMb");
  assert_string_equal(mpk_mt_filter_name(MPK_MT_FILTER_STORAGE), "storage");
  assert_string_equal(mpk_mt_filter_name(MPK_MT_FILTER_PLAN), "downloadPlan");
  mpk_mt_selection_free(NULL);
  mpk_mt_download_plan_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sanitize_oracle),
      cmocka_unit_test(test_sanitize_code_points),
      cmocka_unit_test(test_sanitize_refusals),
      cmocka_unit_test(test_storage_budget),
      cmocka_unit_test(test_plan_tiny_int4),
      cmocka_unit_test(test_plan_feature_sets),
      cmocka_unit_test(test_plan_refusals),
      cmocka_unit_test(test_plan_missing_group),
      cmocka_unit_test(test_plan_unverifiable),
      cmocka_unit_test(test_plan_notes),
      cmocka_unit_test(test_plan_total_overflow),
      cmocka_unit_test(test_select_arm64),
      cmocka_unit_test(test_select_genai),
      cmocka_unit_test(test_select_memory_1024),
      cmocka_unit_test(test_select_storage_boundary),
      cmocka_unit_test(test_select_filters),
      cmocka_unit_test(test_select_preference),
      cmocka_unit_test(test_select_tie_breaks),
      cmocka_unit_test(test_select_plan_and_nulls),
      cmocka_unit_test(test_select_invalid_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
