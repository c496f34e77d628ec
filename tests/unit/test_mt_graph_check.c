/* The handoff map against the inference graph (issue 11): a package assembled from examples/mt-tiny
   with its cpu-fp16 variant replaced by the generated reference layout (scripts/gen_onnx_graphs.py);
   each disagreement (dtype, shape, location, offset, missing initializer, no data, past the frozen
   blob) named with its entry, role and rule; the declared precision against the measured one; the
   hook into mpk_mt_check; and mpk_mt_handoff_build, whose bytes must equal the generator's
   restatement of the reference codec (expected_map.json). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "testutil.h"

#define VARIANT "cpu-fp16"
#define INF "variants/cpu-fp16/inference/"
#define TRAIN "variants/cpu-fp16/train/"

static char graphs[512], root[512], pkg[600];

static const char *g(const char *rel) {
  static char buf[2048];
  snprintf(buf, sizeof buf, "%s/%s", graphs, rel);
  return buf;
}

static const char *at(const char *rel) {
  static char buf[2048];
  snprintf(buf, sizeof buf, "%s/%s", pkg, rel);
  return buf;
}

static void reseal(void) {
  mpk_mt_build_input in = {0};
  mpk_mt_build_result res;
  mpk_error err;
  if (mpk_mt_build(pkg, &in, &res, &err)) fail_msg("reseal: %s", tu_err(&err));
  mpk_mt_build_result_free(&res);
}

/* examples/mt-tiny with cpu-fp16's inference/ and train/ replaced by generated `which` (ref, quant);
   the map is the expected one; resealed. */
static void assemble(const char *which) {
  snprintf(pkg, sizeof pkg, "%s/pkg", root);
  tu_sh("rm -rf '%s' && cp -r '%s/examples/mt-tiny' '%s' && rm -f '%s/" INF "'* '%s/" TRAIN "'* && "
        "cp '%s/%s/inference/'* '%s/" INF "' && cp '%s/%s/train/'* '%s/" TRAIN "' && "
        "cp '%s/%s/expected_map.json' '%s/" INF "weight_handoff_map.json'",
        pkg, MPK_SOURCE_DIR, pkg, pkg, pkg, graphs, which, pkg, graphs, which, pkg, graphs, which, pkg);
  reseal();
}

static mpk_mt_graph_report *report(void) {
  mpk_mt_graph_report *r = NULL;
  mpk_error err;
  if (mpk_mt_graph_report_open(pkg, VARIANT, NULL, &r, &err)) fail_msg("report: %s", tu_err(&err));
  return r;
}

/* The problem whose message holds `needle`; fails when none does. */
static const mpk_error *find_problem(const mpk_mt_graph_report *r, const char *needle) {
  for (size_t i = 0; i < r->n_problems; i++)
    if (strstr(r->problems[i].message, needle)) return &r->problems[i];
  for (size_t i = 0; i < r->n_problems; i++) fprintf(stderr, "problem: %s\n", tu_err(&r->problems[i]));
  fail_msg("no problem says \"%s\"", needle);
  return NULL;
}

static int setup(void **state) {
  (void)state;
  snprintf(graphs, sizeof graphs, "%s", MPK_ONNX_GRAPHS);
  snprintf(root, sizeof root, "%s", tu_tmpdir());
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tu_sh("rm -rf '%s'", root);
  return 0;
}

/* ---------------------------------------------------------------- agreement */

static void test_reference_layout_agrees(void **state) {
  (void)state;
  assemble("ref");
  mpk_mt_graph_report *r = report();
  for (size_t i = 0; i < r->n_problems; i++) fprintf(stderr, "problem: %s\n", tu_err(&r->problems[i]));
  assert_int_equal(r->n_problems, 0);
  assert_true(r->graph_present);
  assert_non_null(r->graph);
  assert_string_equal(r->measured, "float32");
  assert_string_equal(r->declared, "float32");
  assert_string_equal(r->quantization, "fp16"); /* the training side: never the inference precision */
  /* Claims: the three weights by entries (sorted by weight name: o, q, v), the rest frozen. */
  size_t claimed = 0;
  for (size_t i = 0; i < r->graph->n_initializers; i++)
    if (r->claim_entry[i] >= 0) {
      claimed++;
      assert_int_equal(r->claim_role[i], MPK_MT_ROLE_WEIGHT);
      assert_string_equal(r->map->entries[r->claim_entry[i]].inference_initializer_names[0], r->graph->initializers[i].name);
    }
  assert_int_equal(claimed, 3);
  mpk_mt_graph_report_free(r);

  /* The same through mpk_mt_check: every check holds, the graph is noted. */
  mpk_mt_check_options o = {.variant = VARIANT};
  mpk_mt_report *c = NULL;
  mpk_error err;
  if (mpk_mt_check(pkg, &o, &c, &err)) fail_msg("%s", tu_err(&err));
  for (size_t i = 0; i < c->n_problems; i++) fprintf(stderr, "problem: %s\n", tu_err(&c->problems[i]));
  assert_int_equal(c->n_problems, 0);
  bool noted = false;
  for (size_t i = 0; i < c->n_notes; i++) noted |= strstr(c->notes[i], "model.onnx: 7 initializers (7 external), precision float32") != NULL;
  assert_true(noted);
  mpk_mt_report_free(c);
}

static void test_quantized_layout_agrees(void **state) {
  (void)state;
  assemble("quant");
  mpk_mt_graph_report *r = report();
  for (size_t i = 0; i < r->n_problems; i++) fprintf(stderr, "problem: %s\n", tu_err(&r->problems[i]));
  assert_int_equal(r->n_problems, 0);
  assert_string_equal(r->measured, "mixed(float32/uint8)");
  mpk_mt_graph_report_free(r);
}

/* ---------------------------------------------------------------- each disagreement */

static void test_each_disagreement(void **state) {
  (void)state;
  assemble("ref");
  static const struct {
    const char *graph, *needle, *pointer, *where;
    int code;
  } cases[] = {
      {"dtype", "entry \"base_model.model.model.layers.0.self_attn.q_proj.base_layer\" role \"weight\": the graph's "
                "initializer \"model.layers.0.attn.q_proj.MatMul.weight\" is float16 (ONNX data type 10), the map declares float32",
       "/entries/1/tensorDtypes/weight", "map", MPK_EMISMATCH},
      {"shape", "entry \"base_model.model.model.layers.0.self_attn.v_proj.base_layer\" role \"weight\": the graph's "
                "initializer \"model.layers.0.attn.v_proj.MatMul.weight\" has dims [4, 8], the map declares [8, 4]",
       "/entries/2/tensorShapes/weight", "map", MPK_EMISMATCH},
      {"location", "role \"weight\": externalDataLocation is \"model.layers.0.attn.v_proj.MatMul.weight.bin\", but the "
                   "graph reads initializer \"model.layers.0.attn.v_proj.MatMul.weight\" from \"other.bin\"",
       "/entries/2/externalDataLocation/weight", "map", MPK_EMISMATCH},
      {"offset", "the graph reads initializer \"model.layers.0.attn.v_proj.MatMul.weight\" at offset 16 of "
                 "\"model.layers.0.attn.v_proj.MatMul.weight.bin\"; a one_file_per_tensor file holds its tensor alone, at offset 0",
       "/entries/2/externalDataLocation/weight", "map", MPK_EMISMATCH},
      {"missing", "entry \"base_model.model.model.layers.0.self_attn.v_proj.base_layer\" role \"weight\": "
                  "inferenceInitializerNames names \"model.layers.0.attn.v_proj.MatMul.weight\", which is not an initializer",
       "/entries/2/inferenceInitializerNames/weight", "map", MPK_EMISMATCH},
      {"nodata", "initializer \"model.layers.0.attn.v_proj.bias\" is left without data: it is neither external nor embedded",
       "", "graph", MPK_EMALFORMED},
      {"beyond", "initializer \"model.reshape_shape\": bytes [100000, 100000 + 16) lie beyond the end of "
                 "\"frozen_base.onnx.data\" (576 bytes)",
       "", "graph", MPK_EMISMATCH},
      {"link", "initializer \"model.reshape_shape\" reads external data from \"link.bin\", but no map entry claims it: "
               "every other external initializer must live in frozenBaseBlob \"frozen_base.onnx.data\"",
       "", "graph", MPK_EMISMATCH},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char src[600];
    snprintf(src, sizeof src, "cases/%s.onnx", cases[i].graph);
    tu_sh("cp '%s' '%s'", g(src), at(INF "model.onnx"));
    mpk_mt_graph_report *r = report();
    const mpk_error *e = find_problem(r, cases[i].needle);
    assert_int_equal(e->code, cases[i].code);
    assert_string_equal(e->pointer, cases[i].pointer);
    assert_non_null(strstr(e->file, strcmp(cases[i].where, "map") == 0 ? "weight_handoff_map.json" : "model.onnx"));
    mpk_mt_graph_report_free(r);
  }
  /* The dtype case also changes the measured precision: a second problem, at the declaration. */
  tu_sh("cp '%s' '%s'", g("cases/dtype.onnx"), at(INF "model.onnx"));
  mpk_mt_graph_report *r = report();
  const mpk_error *e = find_problem(r, "inferenceGraphPrecision is \"float32\", but the initializers of");
  assert_int_equal(e->code, MPK_EMISMATCH);
  assert_string_equal(e->pointer, "/inferenceGraphPrecision");
  assert_non_null(strstr(e->message, "measure \"mixed(float32/float16)\""));
  mpk_mt_graph_report_free(r);
  /* A missing .bin leaves its initializer without data. */
  tu_sh("cp '%s' '%s'", g("ref/inference/model.onnx"), at(INF "model.onnx"));
  tu_sh("rm '%s'", at(INF "model.layers.0.attn.o_proj.MatMul.weight.bin"));
  r = report();
  find_problem(r, "initializer \"model.layers.0.attn.o_proj.MatMul.weight\" (entry "
                  "\"base_model.model.model.layers.0.self_attn.o_proj.base_layer\" role \"weight\") is left without data: "
                  "its external file \"model.layers.0.attn.o_proj.MatMul.weight.bin\" is missing");
  mpk_mt_graph_report_free(r);
}

/* A map edited to disagree with an unchanged graph: the same rules from the other side. */
static void test_map_side_disagreements(void **state) {
  (void)state;
  assemble("ref");
  tu_sh("sed -i 's/\"frozenBaseBlob\": \"frozen_base.onnx.data\"/\"frozenBaseBlob\": \"base.data\"/' '%s'",
        at(INF "weight_handoff_map.json"));
  mpk_mt_graph_report *r = report();
  const mpk_error *e = find_problem(r, "initializer \"model.embed_tokens.weight\" reads external data from "
                                       "\"frozen_base.onnx.data\", but no map entry claims it");
  assert_int_equal(e->code, MPK_EMISMATCH);
  assert_int_equal(r->n_problems, 4); /* embed, norm, bias, shape constant */
  mpk_mt_graph_report_free(r);
}

static void test_precision_declaration(void **state) {
  (void)state;
  assemble("ref");
  tu_sh("sed -i 's/\"inferenceGraphPrecision\": \"float32\"/\"inferenceGraphPrecision\": \"uint8\"/' '%s'",
        at(INF "optimum_config.json"));
  mpk_mt_graph_report *r = report();
  assert_int_equal(r->n_problems, 1);
  assert_string_equal(r->declared, "uint8");
  assert_int_equal(r->problems[0].code, MPK_EMISMATCH);
  assert_string_equal(r->problems[0].pointer, "/inferenceGraphPrecision");
  mpk_mt_graph_report_free(r);
  tu_sh("sed -i 's/\"inferenceGraphPrecision\": \"uint8\"/\"inferenceGraphPrecision\": 3/' '%s'", at(INF "optimum_config.json"));
  r = report();
  find_problem(r, "inferenceGraphPrecision must be a non-empty string");
  mpk_mt_graph_report_free(r);
  tu_sh("rm '%s'", at(INF "optimum_config.json"));
  r = report();
  assert_int_equal(r->n_problems, 0);
  assert_null(r->declared);
  bool noted = false;
  for (size_t i = 0; i < r->n_notes; i++) noted |= strstr(r->notes[i], "declares inferenceGraphPrecision (measured: float32)") != NULL;
  assert_true(noted);
  mpk_mt_graph_report_free(r);
}

/* The check hook: a disagreement is a problem of `modelpkg check`, a graph that is not ONNX too. */
static void test_check_hook(void **state) {
  (void)state;
  assemble("ref");
  tu_sh("cp '%s' '%s'", g("cases/shape.onnx"), at(INF "model.onnx"));
  reseal();
  mpk_mt_check_options o = {.variant = VARIANT};
  mpk_mt_report *c = NULL;
  mpk_error err;
  if (mpk_mt_check(pkg, &o, &c, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(c->n_problems, 1);
  assert_non_null(strstr(c->problems[0].message, "has dims [4, 8], the map declares [8, 4]"));
  mpk_mt_report_free(c);
  tu_sh("printf 'ONNX_PLACEHOLDER\\n' > '%s'", at(INF "model.onnx"));
  reseal();
  if (mpk_mt_check(pkg, &o, &c, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(c->n_problems, 1);
  assert_int_equal(c->problems[0].code, MPK_EMALFORMED);
  assert_int_equal(c->problems[0].offset, 0);
  mpk_mt_report_free(c);
  /* No graph: nothing to check, not a problem (the check's requiredFiles rule is another matter). */
  tu_sh("rm '%s'", at(INF "model.onnx"));
  mpk_mt_graph_report *r = report();
  assert_int_equal(r->n_problems, 0);
  assert_false(r->graph_present);
  assert_null(r->measured);
  mpk_mt_graph_report_free(r);
}

/* ---------------------------------------------------------------- building the map */

static mpk_mt_handoff_build_result built;

static int build(const char *peft, mpk_error *err) {
  mpk_mt_handoff_build_options o = {.variant = VARIANT, .peft_method = peft};
  mpk_mt_handoff_build_result_free(&built);
  mpk_error_clear(err);
  return mpk_mt_handoff_build(pkg, &o, &built, err);
}

static void expect_same_file(const char *a, const char *b) {
  size_t na, nb;
  uint8_t *x = tu_read_file(a, &na), *y = tu_read_file(b, &nb);
  if (na != nb || memcmp(x, y, na) != 0) fail_msg("%s differs from %s", a, b);
  free(x);
  free(y);
}

/* The generator restates the reference codec in Python; both must write the same bytes. */
static void test_build_reproduces_reference_codec(void **state) {
  (void)state;
  static const char *const which[] = {"ref", "quant"};
  for (size_t k = 0; k < 2; k++) {
    assemble(which[k]);
    tu_sh("rm '%s'", at(INF "weight_handoff_map.json"));
    mpk_error err;
    if (build(NULL, &err)) fail_msg("%s: %s", which[k], tu_err(&err)); /* peftMethods ["lora"] from the manifest */
    assert_true(built.changed);
    char expected[700];
    snprintf(expected, sizeof expected, "%s/expected_map.json", which[k]);
    expect_same_file(at(INF "weight_handoff_map.json"), g(expected));
    assert_int_equal(built.n_entries, 3); /* quant: q is the quantized one */
    /* [in, out] weights that are not square decide the package: already transposed. */
    assert_int_equal(built.policy, MPK_MT_ALREADY_TRANSPOSED_FOR_INFERENCE);
    /* Built again: the same bytes, nothing written. */
    if (build("lora", &err)) fail_msg("%s", tu_err(&err));
    assert_false(built.changed);
    /* The result passes the whole check once the package is resealed. */
    reseal();
    mpk_mt_check_options o = {.variant = VARIANT};
    mpk_mt_report *c = NULL;
    if (mpk_mt_check(pkg, &o, &c, &err)) fail_msg("%s", tu_err(&err));
    for (size_t i = 0; i < c->n_problems; i++) fprintf(stderr, "problem: %s\n", tu_err(&c->problems[i]));
    assert_int_equal(c->n_problems, 0);
    mpk_mt_report_free(c);
  }
  mpk_mt_handoff *m = NULL;
  mpk_error err;
  if (mpk_mt_handoff_load(at(INF "weight_handoff_map.json"), &m, &err)) fail_msg("%s", tu_err(&err));
  const mpk_mt_handoff_entry *q = &m->entries[0]; /* no weight role: sorted by its trainingBaseLayerName */
  assert_true(q->quantized);
  assert_string_equal(q->weight_quantized_name, "model.layers.0.attn.q_proj.MatMul.weight_quantized");
  assert_string_equal(q->scale_name, "model.layers.0.attn.q_proj.MatMul.weight_scale");
  assert_string_equal(q->zero_point_name, "model.layers.0.attn.q_proj.MatMul.weight_zero_point");
  assert_string_equal(q->tensor_dtypes[MPK_MT_ROLE_ZERO_POINT], "uint8");
  mpk_mt_handoff_free(m);
  mpk_mt_handoff_build_result_free(&built);
}

static void edit(const char *rel, const char *from, const char *to) { tu_replace_in_file(at(rel), from, to); }

static void test_build_refusals(void **state) {
  (void)state;
  static const struct {
    const char *from, *to, *needle, *pointer;
    int code;
  } cases[] = {
      /* naming drift: a layer no initializer matches */
      {"\"base_model.model.model.layers.0.self_attn.v_proj\": {", "\"base_model.model.model.layers.0.self_attn.k_proj\": {",
       "layer \"base_model.model.model.layers.0.self_attn.k_proj\": no initializer of", "/peft_mapping/"
       "base_model.model.model.layers.0.self_attn.k_proj", MPK_ENOTFOUND},
      /* v_proj's factors made B [8, 2] @ A [2, 4] = [8, 4]: no_transpose, against o_proj's (transposed) */
      {"\"backbone.model.layers.0.self_attn.v_proj.lora_A.default.weight\": {\n      \"dtype\": \"float32\",\n      \"shape\": [\n        2,\n        8",
       "\"backbone.model.layers.0.self_attn.v_proj.lora_A.default.weight\": {\n      \"dtype\": \"float32\",\n      \"shape\": [\n        2,\n        4",
       "use one weight orientation throughout", NULL, MPK_EMISMATCH},
      /* factors that fit neither orientation */
      {"\"backbone.model.layers.0.self_attn.q_proj.lora_A.default.weight\": {\n      \"dtype\": \"float32\",\n      \"shape\": [\n        2,\n        8",
       "\"backbone.model.layers.0.self_attn.q_proj.lora_A.default.weight\": {\n      \"dtype\": \"float32\",\n      \"shape\": [\n        2,\n        5",
       "which is neither the weight", NULL, MPK_EMISMATCH},
      /* the adapters' rank against the config's */
      {"\"rank\": 2", "\"rank\": 3", "the adapter factors' rank is not the configured rank 3", NULL, MPK_EMISMATCH},
      /* specs that describe nothing: orientation would be unobservable */
      {"\"trainable_tensor_specs\": {", "\"trainable_tensor_specs\": {\"x\": {},",
       "none matches an adapter role", "/trainable_tensor_specs", MPK_EMISMATCH},
      {"\"peft_mapping\": {", "\"peft_mapping\": {}, \"old_mapping\": {", "training_config has no peft_mapping",
       "/peft_mapping", MPK_EMALFORMED},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    assemble("ref");
    if (i == 4) /* every spec renamed away */
      tu_sh("sed -i 's/lora_\\([AB]\\).default.weight\"/lora_\\1.other.weight\"/' '%s'", at(TRAIN "training_config.json"));
    edit(TRAIN "training_config.json", cases[i].from, cases[i].to);
    if (i == 1)
      edit(TRAIN "training_config.json",
           "\"backbone.model.layers.0.self_attn.v_proj.lora_B.default.weight\": {\n      \"dtype\": \"float32\",\n      \"shape\": [\n        4,",
           "\"backbone.model.layers.0.self_attn.v_proj.lora_B.default.weight\": {\n      \"dtype\": \"float32\",\n      \"shape\": [\n        8,");
    size_t before_len;
    uint8_t *before = tu_read_file(at(INF "weight_handoff_map.json"), &before_len);
    mpk_error err;
    int rc = build(NULL, &err);
    if (rc != cases[i].code || !strstr(err.message, cases[i].needle))
      fail_msg("case %zu: want %d \"%s\", got %d: %s", i, cases[i].code, cases[i].needle, rc, tu_err(&err));
    if (cases[i].pointer) assert_non_null(strstr(err.pointer, cases[i].pointer));
    assert_non_null(strstr(err.file, "training_config.json"));
    /* Nothing was written. */
    size_t after_len;
    uint8_t *after = tu_read_file(at(INF "weight_handoff_map.json"), &after_len);
    assert_true(before_len == after_len && memcmp(before, after, after_len) == 0);
    free(before);
    free(after);
  }
  /* A graph that disagrees with what would be written: refused by the read-back check. */
  assemble("ref");
  tu_sh("cp '%s' '%s'", g("cases/offset.onnx"), at(INF "model.onnx"));
  mpk_error err;
  assert_int_equal(build(NULL, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "at offset 16"));
  /* Unknown PEFT method; under the MARS schema (shared_A, adapter_B) the LoRA down-projection is not
     an adapter role, so orientation cannot be observed: refused, never defaulted. */
  assemble("ref");
  assert_int_equal(build("dora", &err), MPK_EUNSUPPORTED);
  assert_int_equal(build("mars", &err), MPK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "no down-projection under adapter_A or shared_A"));
  /* "all" keeps every role of the mapping. */
  if (build("all", &err)) fail_msg("%s", tu_err(&err));
  mpk_mt_handoff *m = NULL;
  if (mpk_mt_handoff_parse(built.map, built.map_len, NULL, &m, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(m->entries[0].n_checkpoint_names, 3);
  assert_int_equal(m->entries[0].n_adapter_shapes, 2);
  mpk_mt_handoff_free(m);
  mpk_mt_handoff_build_result_free(&built);
}

int main(void) {
  /* The graphs are scripts/gen_onnx_graphs.py's (the gen_onnx_graphs fixture), written with Debian's
     python3-onnx and numpy: without them there are none, a skip; with them, none is a failure. */
  if (access(MPK_ONNX_GRAPHS "/ref", F_OK) != 0) {
    mpk_test_need_python_module("onnx");
    mpk_test_need_python_module("numpy");
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_layout_agrees),
      cmocka_unit_test(test_quantized_layout_agrees),
      cmocka_unit_test(test_each_disagreement),
      cmocka_unit_test(test_map_side_disagreements),
      cmocka_unit_test(test_precision_declaration),
      cmocka_unit_test(test_check_hook),
      cmocka_unit_test(test_build_reproduces_reference_codec),
      cmocka_unit_test(test_build_refusals),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
