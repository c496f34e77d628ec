/* Runtime descriptions (mpk_mlc_runtime_load: every malformed field refused naming the file, the
   JSON pointer and the rule; the committed WebLLM 0.2.86 description loads) and a library's
   compatibility with a runtime (mpk_mlc_compat on mpk_mlc_library structs filled by hand: each kind
   of missing name, the pipeline's needs, sorting, duplicates, refusals). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ---------------------------------------------------------------- helpers */

/* One temporary directory for the whole run (tu_tmpdir() makes a new one each call). */
static const char *dir(void) {
  static char d[1024];
  if (!d[0]) snprintf(d, sizeof d, "%s", tu_tmpdir());
  return d;
}

static const char *write_tmp(const char *name, const char *text) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir(), name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
  fclose(f);
  return path;
}

/* A valid description: every field, each list of needs with each "when". */
static const char base_doc[] =
    "{\"schema\": \"modelpkg.runtime\", \"schema_version\": 1, \"name\": \"Test Runtime 1.0\","
    " \"source\": {\"package\": \"test@1.0\", \"file\": \"lib/index.js\","
    "  \"sha256\": \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\", \"generator\": \"hand\"},"
    " \"provides\": {\"imports\": [{\"module\": \"env\", \"name\": \"b\", \"where\": \"Env.b (x:1)\"},"
    "   {\"module\": \"env\", \"name\": \"a\"}, {\"module\": \"wasi\", \"name\": \"c\"}],"
    "  \"globals\": [{\"name\": \"rt.g1\", \"where\": \"Instance.init (x:2)\"}]},"
    " \"requires\": {\"globals\": [{\"name\": \"need.always\", \"where\": \"Ctx.ctor (x:3)\"},"
    "   {\"name\": \"need.chat\", \"when\": \"chat\"}, {\"name\": \"need.emb\", \"when\": \"embedding\"},"
    "   {\"name\": \"need.opt\", \"when\": \"optional\"}, {\"name\": \"rt.g1\", \"when\": \"always\"}],"
    "  \"functions\": [{\"name\": \"_metadata\"}, {\"name\": \"chatfn\", \"when\": \"chat\"},"
    "   {\"name\": \"prefill\", \"when\": \"embedding\"}],"
    "  \"exports\": [{\"name\": \"E1\"}, {\"name\": \"E2\", \"when\": \"optional\"}]},"
    " \"notes\": [\"a note\"]}";

/* base_doc with the value at `pointer` replaced by `value` (JSON text), or removed (value NULL). */
static char *mutate(const char *pointer, const char *value) {
  json_error_t je;
  json_t *root = json_loads(base_doc, 0, &je);
  assert_non_null(root);
  char buf[512];
  snprintf(buf, sizeof buf, "%s", pointer);
  json_t *parent = root;
  char *seg = buf + 1, *slash;
  while ((slash = strchr(seg, '/'))) {
    *slash = '\0';
    parent = json_is_array(parent) ? json_array_get(parent, (size_t)atoi(seg)) : json_object_get(parent, seg);
    assert_non_null(parent);
    seg = slash + 1;
  }
  json_t *v = value ? json_loads(value, JSON_DECODE_ANY, &je) : NULL;
  if (value) assert_non_null(v);
  if (json_is_array(parent)) {
    size_t i = (size_t)atoi(seg);
    if (v && i < json_array_size(parent)) json_array_set_new(parent, i, v);
    else if (v) json_array_append_new(parent, v);
    else json_array_remove(parent, i);
  } else if (v) {
    json_object_set_new(parent, seg, v);
  } else {
    json_object_del(parent, seg);
  }
  char *text = json_dumps(root, JSON_PRESERVE_ORDER);
  json_decref(root);
  return text;
}

static void expect_refused(const char *text, int code, const char *pointer, const char *message) {
  const char *path = write_tmp("runtime.json", text);
  mpk_mlc_runtime *rt = (mpk_mlc_runtime *)1;
  mpk_error err;
  mpk_error_clear(&err);
  int rc = mpk_mlc_runtime_load(path, &rt, &err);
  if (rc != code || !strstr(err.message, message) || (pointer && strcmp(err.pointer, pointer) != 0) ||
      !strstr(err.file, "runtime.json"))
    fail_msg("document %.200s\n  expected %d at \"%s\" with \"%s\"\n  got %d at \"%s\": %s (file %s)", text, code,
             pointer ? pointer : "(any)", message, rc, err.pointer, err.message, err.file);
  assert_null(rt);
}

/* ---------------------------------------------------------------- loading */

static void test_load_valid(void **state) {
  (void)state;
  mpk_mlc_runtime *rt = NULL;
  mpk_error err;
  if (mpk_mlc_runtime_load(write_tmp("runtime.json", base_doc), &rt, &err)) fail_msg("%s", tu_err(&err));
  assert_string_equal(mpk_mlc_runtime_where(rt, "provides.imports", "env", "b"), "Env.b (x:1)");
  assert_null(mpk_mlc_runtime_where(rt, "provides.imports", "env", "a")); /* no "where" given */
  assert_null(mpk_mlc_runtime_where(rt, "provides.imports", "wasi", "b")); /* another module */
  assert_string_equal(mpk_mlc_runtime_where(rt, "provides.globals", NULL, "rt.g1"), "Instance.init (x:2)");
  assert_string_equal(mpk_mlc_runtime_where(rt, "requires.globals", NULL, "need.always"), "Ctx.ctor (x:3)");
  assert_null(mpk_mlc_runtime_where(rt, "requires.globals", NULL, "nothing"));
  assert_null(mpk_mlc_runtime_where(rt, "requires.nothing", NULL, "need.always"));
  mpk_mlc_runtime_free(rt);
  /* A directory holding runtime.json is the document too (core's loader). */
  rt = NULL;
  if (mpk_mlc_runtime_load(dir(), &rt, &err)) fail_msg("%s", tu_err(&err));
  mpk_mlc_runtime_free(rt);
}

static void test_load_committed(void **state) {
  (void)state;
  char path[4096];
  snprintf(path, sizeof path, "%s/data/runtimes/webllm-0.2.86.json", MPK_SOURCE_DIR);
  mpk_mlc_runtime *rt = NULL;
  mpk_error err;
  if (mpk_mlc_runtime_load(path, &rt, &err)) fail_msg("%s", tu_err(&err));
  /* What the bundle's tvmjs does (lib/index.js): RuntimeContext's constructor looks up
     ffi.ModuleGetFunction, Environment.environment() gives env.TVMFFIWasmSafeCall, initWebGPU
     registers wasm.WebGPUDeviceAPI, EmccWASI gives wasi_snapshot_preview1.fd_write. */
  const char *w = mpk_mlc_runtime_where(rt, "requires.globals", NULL, "ffi.ModuleGetFunction");
  assert_non_null(w);
  assert_non_null(strstr(w, "RuntimeContext"));
  assert_non_null(mpk_mlc_runtime_where(rt, "provides.imports", "env", "TVMFFIWasmSafeCall"));
  assert_non_null(mpk_mlc_runtime_where(rt, "provides.imports", "wasi_snapshot_preview1", "fd_write"));
  assert_non_null(mpk_mlc_runtime_where(rt, "provides.globals", NULL, "wasm.WebGPUDeviceAPI"));
  assert_non_null(mpk_mlc_runtime_where(rt, "requires.functions", NULL, "_metadata"));
  assert_non_null(mpk_mlc_runtime_where(rt, "requires.exports", NULL, "TVMFFIFunctionGetGlobal"));
  /* The older generation's host functions are not given. */
  assert_null(mpk_mlc_runtime_where(rt, "provides.imports", "env", "TVMWasmPackedCFunc"));
  mpk_mlc_runtime_free(rt);
}

static void test_load_malformed(void **state) {
  (void)state;
  static const struct {
    const char *pointer, *value; /* mutation of base_doc ("" pointer: the whole text) */
    int code;
    const char *at, *message;
  } cases[] = {
      {"", "[]", MPK_EMALFORMED, "", "expected an object"},
      {"", "{\"schema\": \"modelpkg.runtime\", \"schema_version\": 1,}", MPK_EMALFORMED, NULL, "invalid JSON"},
      {"/schema", NULL, MPK_EMALFORMED, "", "missing field \"schema\""},
      {"/schema", "\"modelpkg.runtimes\"", MPK_EMALFORMED, "/schema", "expected \"modelpkg.runtime\""},
      {"/schema", "1", MPK_EMALFORMED, "/schema", "expected \"modelpkg.runtime\""},
      {"/schema_version", NULL, MPK_EMALFORMED, "", "missing field \"schema_version\""},
      {"/schema_version", "2", MPK_EVERSION, "/schema_version", "schema_version 2"},
      {"/schema_version", "0", MPK_EMALFORMED, "/schema_version", "greater than or equal to 1"},
      {"/schema_version", "\"1\"", MPK_EMALFORMED, "/schema_version", "expected an integer"},
      {"/schema_version", "1.5", MPK_EMALFORMED, "/schema_version", "expected an integer"},
      {"/extra", "true", MPK_EMALFORMED, "", "unknown field \"extra\""},
      {"/name", NULL, MPK_EMALFORMED, "", "missing field \"name\""},
      {"/name", "\"\"", MPK_EMALFORMED, "/name", "non-empty string"},
      {"/name", "\"Web\\u001b[31mLLM\"", MPK_EMALFORMED, "/name", "control characters"},
      {"/name", "[\"x\"]", MPK_EMALFORMED, "/name", "non-empty string"},
      {"/source", "\"x\"", MPK_EMALFORMED, "/source", "expected an object"},
      {"/source/sha256", NULL, MPK_EMALFORMED, "/source", "missing field \"sha256\""},
      {"/source/sha256", "\"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\"", MPK_EMALFORMED,
       "/source/sha256", "64 lowercase hexadecimal digits"},
      {"/source/sha256", "\"0123456789abcdef\"", MPK_EMALFORMED, "/source/sha256", "64 lowercase hexadecimal"},
      {"/source/url", "\"https://x\"", MPK_EMALFORMED, "/source", "unknown field \"url\""},
      {"/source/package", "\"\"", MPK_EMALFORMED, "/source/package", "non-empty string"},
      {"/source/generator", "7", MPK_EMALFORMED, "/source/generator", "non-empty string"},
      {"/provides", NULL, MPK_EMALFORMED, "", "missing field \"provides\""},
      {"/provides/imports", NULL, MPK_EMALFORMED, "/provides", "missing field \"imports\""},
      {"/provides/imports", "{}", MPK_EMALFORMED, "/provides/imports", "expected an array"},
      {"/provides/imports/0", "\"env.b\"", MPK_EMALFORMED, "/provides/imports/0", "expected an object"},
      {"/provides/imports/1/module", NULL, MPK_EMALFORMED, "/provides/imports/1", "missing field \"module\""},
      {"/provides/imports/1/module", "\"\"", MPK_EMALFORMED, "/provides/imports/1/module", "non-empty string"},
      {"/provides/imports/1/kind", "\"function\"", MPK_EMALFORMED, "/provides/imports/1", "unknown field \"kind\""},
      {"/provides/imports/3", "{\"module\": \"env\", \"name\": \"b\"}", MPK_EMALFORMED, "/provides/imports/3",
       "env.b is listed twice (first at index 0)"},
      {"/provides/globals", "[\"rt.g1\"]", MPK_EMALFORMED, "/provides/globals/0", "expected an object"},
      {"/provides/globals/0/when", "\"always\"", MPK_EMALFORMED, "/provides/globals/0", "unknown field \"when\""},
      {"/provides/extra", "[]", MPK_EMALFORMED, "/provides", "unknown field \"extra\""},
      {"/requires", NULL, MPK_EMALFORMED, "", "missing field \"requires\""},
      {"/requires/globals", NULL, MPK_EMALFORMED, "/requires", "missing field \"globals\""},
      {"/requires/globals/1/when", "\"sometimes\"", MPK_EMALFORMED, "/requires/globals/1/when",
       "expected one of \"always\", \"chat\", \"embedding\", \"optional\""},
      {"/requires/globals/1/when", "1", MPK_EMALFORMED, "/requires/globals/1/when", "expected one of"},
      {"/requires/globals/2/name", NULL, MPK_EMALFORMED, "/requires/globals/2", "missing field \"name\""},
      {"/requires/globals/2/where", "\"\"", MPK_EMALFORMED, "/requires/globals/2/where", "non-empty string"},
      {"/requires/functions/3", "{\"name\": \"chatfn\", \"when\": \"embedding\"}", MPK_EMALFORMED,
       "/requires/functions/3", "chatfn is listed twice (first at index 1)"},
      {"/requires/exports", "\"E1\"", MPK_EMALFORMED, "/requires/exports", "expected an array"},
      {"/requires/imports", "[]", MPK_EMALFORMED, "/requires", "unknown field \"imports\""},
      {"/notes", "\"x\"", MPK_EMALFORMED, "/notes", "expected an array of strings"},
      {"/notes/1", "3", MPK_EMALFORMED, "/notes/1", "non-empty string"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *text = cases[i].pointer[0] ? mutate(cases[i].pointer, cases[i].value) : strdup(cases[i].value);
    expect_refused(text, cases[i].code, cases[i].at, cases[i].message);
    free(text);
  }
  /* A name longer than 4096 bytes; a list longer than 65536 entries. */
  char *long_name = malloc(5000 + 3);
  long_name[0] = '"';
  memset(long_name + 1, 'x', 5000);
  strcpy(long_name + 5001, "\"");
  char *text = mutate("/provides/globals/0/name", long_name);
  expect_refused(text, MPK_ELIMIT, "/provides/globals/0/name", "longer than 4096 bytes");
  free(text);
  free(long_name);
  size_t cap = 65537 * 24 + 16, o = 0; /* each entry at most ,{"name":"g65536"} */
  char *big = malloc(cap);
  o += (size_t)sprintf(big + o, "[");
  for (int i = 0; i < 65537; i++) o += (size_t)sprintf(big + o, "%s{\"name\":\"g%d\"}", i ? "," : "", i);
  sprintf(big + o, "]");
  text = mutate("/requires/globals", big);
  expect_refused(text, MPK_ELIMIT, "/requires/globals", "more than 65536 entries");
  free(text);
  free(big);
  /* A missing file; NULL arguments. */
  mpk_mlc_runtime *rt = (mpk_mlc_runtime *)1;
  mpk_error err;
  char path[4096];
  snprintf(path, sizeof path, "%s/absent.json", dir());
  assert_int_equal(mpk_mlc_runtime_load(path, &rt, &err), MPK_ENOTFOUND);
  assert_null(rt);
  assert_non_null(strstr(err.file, "absent.json"));
  assert_int_equal(mpk_mlc_runtime_load(NULL, &rt, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_runtime_load(path, NULL, &err), MPK_EINVAL);
  mpk_mlc_runtime_free(NULL);
}

/* ---------------------------------------------------------------- comparing */

static mpk_mlc_runtime *base_runtime(void) {
  mpk_mlc_runtime *rt = NULL;
  mpk_error err;
  if (mpk_mlc_runtime_load(write_tmp("runtime.json", base_doc), &rt, &err)) fail_msg("%s", tu_err(&err));
  return rt;
}

static void assert_names(const char *what, const char *const *got, size_t n, const char *const *want) {
  size_t w = 0;
  while (want[w]) w++;
  bool same = n == w;
  for (size_t i = 0; same && i < n; i++) same = strcmp(got[i], want[i]) == 0;
  if (!same) {
    fprintf(stderr, "%s: got", what);
    for (size_t i = 0; i < n; i++) fprintf(stderr, " %s", got[i]);
    fprintf(stderr, "; want");
    for (size_t i = 0; want[i]; i++) fprintf(stderr, " %s", want[i]);
    fprintf(stderr, "\n");
    fail();
  }
}

/* A library as mpk_mlc_library_open would fill it, by hand and on purpose unsorted, with
   duplicates. */
static const mpk_mlc_import lib_imports[] = {{"env", "b"}, {"env", "z"}, {"wasi", "c"}, {"env", "z"}, {"env", "y"},
                                             {"wasi", "a"}};
static const char *const lib_defined[] = {"need.always", "lib.own"};
static const char *const lib_needed[] = {"vm.x", "need.always", "rt.g1", "vm.a", "vm.x", "lib.own"};
static const char *const lib_exports[] = {"E1", "other"};
static mpk_mlc_function lib_functions[] = {
    {"decode", MPK_MLC_FUNCTION_PACKED, -2, NULL, 0}, /* an old dequantization kernel: not a VM function */
    {"prefill", MPK_MLC_FUNCTION_VM, 3, NULL, 0},
    {"decode", MPK_MLC_FUNCTION_VM, 3, NULL, 0},
    {"chatfn", MPK_MLC_FUNCTION_PACKED, -2, NULL, 0}, /* packed: does not count as the VM function */
};

static mpk_mlc_library hand_library(void) {
  mpk_mlc_library lib = {0};
  lib.path = "hand.wasm";
  lib.container = "WebAssembly module";
  lib.arch = "wasm32";
  lib.imports = lib_imports;
  lib.n_imports = sizeof lib_imports / sizeof *lib_imports;
  lib.globals_defined = lib_defined;
  lib.n_globals_defined = 2;
  lib.globals_needed = lib_needed;
  lib.n_globals_needed = sizeof lib_needed / sizeof *lib_needed;
  lib.functions = lib_functions;
  lib.n_functions = sizeof lib_functions / sizeof *lib_functions;
  lib.exports = lib_exports;
  lib.n_exports = 2;
  return lib;
}

static mpk_mlc_compat_report *compare(const mpk_mlc_library *lib, const mpk_mlc_runtime *rt) {
  mpk_mlc_compat_report *r = NULL;
  mpk_error err;
  if (mpk_mlc_compat(lib, rt, &r, &err)) fail_msg("%s", tu_err(&err));
  assert_string_equal(r->runtime, "Test Runtime 1.0");
  return r;
}

static void test_compat_chat(void **state) {
  (void)state;
  mpk_mlc_runtime *rt = base_runtime();
  mpk_mlc_library lib = hand_library();
  mpk_mlc_compat_report *r = compare(&lib, rt);
  assert_string_equal(r->pipeline, "chat");
  assert_false(r->compatible);
  /* env.y and env.z (once) and wasi.a, sorted by module then name; env.b and wasi.c are provided. */
  assert_int_equal(r->n_missing_imports, 3);
  assert_string_equal(r->missing_imports[0].module, "env");
  assert_string_equal(r->missing_imports[0].name, "y");
  assert_string_equal(r->missing_imports[1].name, "z");
  assert_string_equal(r->missing_imports[2].module, "wasi");
  assert_string_equal(r->missing_imports[2].name, "a");
  /* need.always and lib.own the library defines, rt.g1 the runtime: vm.a, vm.x (once). */
  assert_names("missing_globals", r->missing_globals, r->n_missing_globals, (const char *const[]){"vm.a", "vm.x", NULL});
  /* Chat needs: need.chat (need.emb is the embedding pipeline's, need.opt optional, rt.g1 the
     runtime's own). */
  assert_names("missing_required", r->missing_required, r->n_missing_required, (const char *const[]){"need.chat", NULL});
  /* _metadata is absent; chatfn exists only as a packed function. */
  assert_names("missing_functions", r->missing_functions, r->n_missing_functions,
               (const char *const[]){"_metadata", "chatfn", NULL});
  assert_true(r->exports_checked);
  assert_int_equal(r->n_missing_exports, 0); /* E1 exported, E2 optional */
  mpk_mlc_compat_report_free(r);
  mpk_mlc_runtime_free(rt);
}

static void test_compat_pipelines(void **state) {
  (void)state;
  mpk_mlc_runtime *rt = base_runtime();
  mpk_mlc_library lib = hand_library();
  /* Without the VM decode: an embedding library (prefill, no decode; the packed "decode" kernel
     does not count). */
  lib.n_functions = 2;
  mpk_mlc_compat_report *r = compare(&lib, rt);
  assert_string_equal(r->pipeline, "embedding");
  assert_names("missing_required", r->missing_required, r->n_missing_required, (const char *const[]){"need.emb", NULL});
  assert_names("missing_functions", r->missing_functions, r->n_missing_functions, (const char *const[]){"_metadata", NULL});
  mpk_mlc_compat_report_free(r);
  /* Neither: only "always" needs. */
  lib.n_functions = 1;
  r = compare(&lib, rt);
  assert_null(r->pipeline);
  assert_int_equal(r->n_missing_required, 0);
  assert_names("missing_functions", r->missing_functions, r->n_missing_functions, (const char *const[]){"_metadata", NULL});
  mpk_mlc_compat_report_free(r);
  /* decode_tokens (an artifact's role name) is a chat library too. */
  mpk_mlc_function fns[] = {{"decode_tokens", MPK_MLC_FUNCTION_VM, 3, NULL, 0}};
  lib.functions = fns;
  lib.n_functions = 1;
  r = compare(&lib, rt);
  assert_string_equal(r->pipeline, "chat");
  mpk_mlc_compat_report_free(r);
  mpk_mlc_runtime_free(rt);
}

static void test_compat_exports_and_verdict(void **state) {
  (void)state;
  mpk_mlc_runtime *rt = base_runtime();
  mpk_mlc_library lib = hand_library();
  /* Exports not read: not compared, never missing. */
  lib.exports = NULL;
  lib.n_exports = 0;
  mpk_mlc_compat_report *r = compare(&lib, rt);
  assert_false(r->exports_checked);
  assert_int_equal(r->n_missing_exports, 0);
  mpk_mlc_compat_report_free(r);
  /* Read and empty: E1 is missing (E2 is optional). */
  static const char *const none[] = {NULL};
  lib.exports = none;
  r = compare(&lib, rt);
  assert_true(r->exports_checked);
  assert_names("missing_exports", r->missing_exports, r->n_missing_exports, (const char *const[]){"E1", NULL});
  mpk_mlc_compat_report_free(r);
  /* A library that has everything: compatible, every list empty. */
  static const mpk_mlc_import ok_imports[] = {{"wasi", "c"}, {"env", "a"}};
  static const char *const ok_defined[] = {"need.chat", "need.always"};
  static const char *const ok_needed[] = {"rt.g1", "need.chat"};
  static mpk_mlc_function ok_fns[] = {{"decode", MPK_MLC_FUNCTION_VM, 3, NULL, 0},
                                      {"chatfn", MPK_MLC_FUNCTION_VM_TIR, 1, NULL, 0},
                                      {"_metadata", MPK_MLC_FUNCTION_VM, 0, NULL, 0}};
  mpk_mlc_library ok = hand_library();
  ok.imports = ok_imports;
  ok.n_imports = 2;
  ok.globals_defined = ok_defined;
  ok.globals_needed = ok_needed;
  ok.n_globals_needed = 2;
  ok.functions = ok_fns;
  ok.n_functions = 3;
  r = compare(&ok, rt);
  assert_true(r->compatible);
  assert_int_equal(r->n_missing_imports + r->n_missing_globals + r->n_missing_required + r->n_missing_functions +
                       r->n_missing_exports,
                   0);
  mpk_mlc_compat_report_free(r);
  /* Each kind alone makes it incompatible. */
  ok.imports = lib_imports;
  ok.n_imports = 1; /* env.b: provided */
  r = compare(&ok, rt);
  assert_true(r->compatible);
  mpk_mlc_compat_report_free(r);
  ok.n_imports = 2; /* env.z: not provided */
  r = compare(&ok, rt);
  assert_false(r->compatible);
  assert_int_equal(r->n_missing_imports, 1);
  mpk_mlc_compat_report_free(r);
  mpk_mlc_runtime_free(rt);
}

static void test_compat_refusals(void **state) {
  (void)state;
  mpk_mlc_runtime *rt = base_runtime();
  mpk_mlc_library lib = hand_library();
  mpk_mlc_compat_report *r = (mpk_mlc_compat_report *)1;
  mpk_error err;
  /* Not a WebAssembly module: the runtime cannot load it. */
  lib.container = "ELF shared object";
  lib.arch = "AArch64";
  assert_int_equal(mpk_mlc_compat(&lib, rt, &r, &err), MPK_EUNSUPPORTED);
  assert_null(r);
  assert_string_equal(err.file, "hand.wasm");
  assert_non_null(strstr(err.message, "ELF shared object"));
  assert_non_null(strstr(err.message, "Test Runtime 1.0 loads WebAssembly libraries only"));
  lib = hand_library();
  assert_int_equal(mpk_mlc_compat(NULL, rt, &r, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_compat(&lib, NULL, &r, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_compat(&lib, rt, NULL, &err), MPK_EINVAL);
  mpk_mlc_compat_report_free(NULL);
  /* An empty library (nothing read but its container): only what the runtime always needs. */
  mpk_mlc_library empty = {0};
  empty.arch = "wasm32";
  if (mpk_mlc_compat(&empty, rt, &r, &err)) fail_msg("%s", tu_err(&err));
  assert_null(r->pipeline);
  assert_names("missing_required", r->missing_required, r->n_missing_required, (const char *const[]){"need.always", NULL});
  assert_false(r->exports_checked);
  mpk_mlc_compat_report_free(r);
  mpk_mlc_runtime_free(rt);
  /* The runtime's lists in any order in the document: the report's are sorted. */
  char *text = mutate("/requires/globals", "[{\"name\": \"z.b\"}, {\"name\": \"a.c\"}, {\"name\": \"m\"}]");
  rt = NULL;
  if (mpk_mlc_runtime_load(write_tmp("runtime.json", text), &rt, &err)) fail_msg("%s", tu_err(&err));
  free(text);
  if (mpk_mlc_compat(&empty, rt, &r, &err)) fail_msg("%s", tu_err(&err));
  assert_names("missing_required", r->missing_required, r->n_missing_required, (const char *const[]){"a.c", "m", "z.b", NULL});
  mpk_mlc_compat_report_free(r);
  mpk_mlc_runtime_free(rt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_load_valid),        cmocka_unit_test(test_load_committed),
      cmocka_unit_test(test_load_malformed),    cmocka_unit_test(test_compat_chat),
      cmocka_unit_test(test_compat_pipelines),  cmocka_unit_test(test_compat_exports_and_verdict),
      cmocka_unit_test(test_compat_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
