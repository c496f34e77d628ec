/* modelpkg mlc compat LIB --runtime RUNTIME.json [--json]: what a compiled library needs from its
   host against what a runtime provides (docs/mlc-library.md, "mlc compat"). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char about[] =
    "Compare what a compiled WebAssembly library needs from its host with what a runtime provides,\n"
    "as a runtime description states it (data/runtimes/webllm-0.2.86.json: WebLLM 0.2.86, derived from\n"
    "its published bundle). Missing: the library's imports the runtime does not supply (it cannot be\n"
    "instantiated), the global functions the runtime looks up that the library's own runtime does not\n"
    "define (\"Cannot find global function\"), the globals the library's VM code calls that neither\n"
    "defines, the VM functions the runtime calls by name, and the exports it calls. Needs of one\n"
    "pipeline are checked when the library is one: chat (it has decode) or embedding (prefill, no\n"
    "decode).\n";
static const char more[] = "exit status: 0 compatible, 1 not compatible or refused (the reason on stderr), 2 usage error\n";

static const char *const keys[] = {"library", "runtime", "compatible", "missing", "pipeline", "missing_imports",
                                   "missing_required", "missing_globals", "missing_functions", "missing_exports", NULL};

static size_t missing_count(const mpk_mlc_compat_report *r) {
  return r->n_missing_imports + r->n_missing_required + r->n_missing_globals + r->n_missing_functions +
         r->n_missing_exports;
}

/* One kind of missing names: what they are, what it means for the library, then each name (and
   where the description says the runtime needs it, when `list` names that list). */
static void group(const char *kind, const char *what, const char *means, const char *const *names, size_t n,
                  const mpk_mlc_runtime *rt, const char *list) {
  if (!n) return;
  printf("\n%s (%zu): %s\n  what it means: %s\n", kind, n, what, means);
  for (size_t i = 0; i < n; i++) {
    const char *where = list ? mpk_mlc_runtime_where(rt, list, NULL, names[i]) : NULL;
    if (where) printf("  - %s  (%s)\n", names[i], where);
    else printf("  - %s\n", names[i]);
  }
}

static void print_text(const char *lib_path, const mpk_mlc_compat_report *r, const mpk_mlc_runtime *rt) {
  if (r->compatible) printf("%s: compatible with %s\n", lib_path, r->runtime);
  else printf("%s: NOT compatible with %s: %zu missing\n", lib_path, r->runtime, missing_count(r));
  printf("checked as: %s\n", !r->pipeline                        ? "neither a chat nor an embedding library (what every library needs)"
                             : strcmp(r->pipeline, "chat") == 0 ? "a chat library (it has a decode function)"
                                                                : "an embedding library (prefill, no decode)");
  char what[256];
  if (r->n_missing_imports) {
    printf("\nmissing imports (%zu): host functions %s does not provide\n"
           "  what it means: the library cannot be instantiated (WebAssembly LinkError: function import requires a "
           "callable)\n",
           r->n_missing_imports, r->runtime);
    for (size_t i = 0; i < r->n_missing_imports; i++) {
      const mpk_mlc_import *im = &r->missing_imports[i];
      if (im->module) printf("  - %s.%s\n", im->module, im->name);
      else printf("  - %s\n", im->name);
    }
  }
  snprintf(what, sizeof what, "global functions %s looks up that the library's runtime does not define",
           r->runtime);
  group("missing runtime globals", what, "the library's runtime is another generation (Cannot find global function NAME)", r->missing_required,
        r->n_missing_required, rt, "requires.globals");
  snprintf(what, sizeof what, "global functions the library's VM code calls that neither it nor %s defines",
           r->runtime);
  group("missing VM globals", what, "the call fails when the VM reaches it", r->missing_globals, r->n_missing_globals, rt, NULL);
  snprintf(what, sizeof what, "functions %s calls by name that the library's function table lacks",
           r->runtime);
  group("missing VM functions", what, "Cannot find required VM function NAME", r->missing_functions, r->n_missing_functions, rt,
        "requires.functions");
  snprintf(what, sizeof what, "functions %s calls that the library does not export", r->runtime);
  group("missing exports", what, "its C API is another generation (TypeError: ... is not a function)", r->missing_exports,
        r->n_missing_exports, rt, "requires.exports");
  if (!r->exports_checked) printf("\nnote: the library's exports were not read: not compared\n");
}

static void print_json(const char *lib_path, const mpk_mlc_compat_report *r) {
  json_t *root = mpk_cli_json_begin("mlc compat", r->compatible);
  json_object_set_new(root, "library", json_string(lib_path));
  json_object_set_new(root, "runtime", json_string(r->runtime));
  json_object_set_new(root, "compatible", json_boolean(r->compatible));
  json_object_set_new(root, "missing", json_integer((json_int_t)missing_count(r)));
  json_object_set_new(root, "pipeline", mpk_cli_json_str(r->pipeline));
  json_t *imports = json_array();
  for (size_t i = 0; i < r->n_missing_imports; i++) {
    json_t *o = json_object();
    json_object_set_new(o, "module", mpk_cli_json_str(r->missing_imports[i].module));
    json_object_set_new(o, "name", json_string(r->missing_imports[i].name));
    json_array_append_new(imports, o);
  }
  json_object_set_new(root, "missing_imports", imports);
  json_object_set_new(root, "missing_required", mpk_cli_json_strings(r->missing_required, r->n_missing_required));
  json_object_set_new(root, "missing_globals", mpk_cli_json_strings(r->missing_globals, r->n_missing_globals));
  json_object_set_new(root, "missing_functions", mpk_cli_json_strings(r->missing_functions, r->n_missing_functions));
  json_object_set_new(root, "missing_exports", r->exports_checked
                                                   ? mpk_cli_json_strings(r->missing_exports, r->n_missing_exports)
                                                   : json_null());
  /* "ok" is true exactly when "problems" is empty: one problem per kind of missing name (the
     names themselves are in the missing_* keys). */
  mpk_error problems[5];
  size_t np = 0;
  if (r->n_missing_imports)
    mpk_fail(&problems[np++], MPK_EMISMATCH, lib_path, NULL,
             "%zu imported host functions %s does not provide (missing_imports): the library cannot be instantiated",
             r->n_missing_imports, r->runtime);
  if (r->n_missing_required)
    mpk_fail(&problems[np++], MPK_EMISMATCH, lib_path, NULL,
             "%zu global functions %s looks up are not defined by the library's runtime (missing_required): another "
             "generation",
             r->n_missing_required, r->runtime);
  if (r->n_missing_globals)
    mpk_fail(&problems[np++], MPK_EMISMATCH, lib_path, NULL,
             "%zu global functions the library's VM code calls are defined by neither it nor %s (missing_globals)",
             r->n_missing_globals, r->runtime);
  if (r->n_missing_functions)
    mpk_fail(&problems[np++], MPK_EMISMATCH, lib_path, NULL,
             "%zu VM functions %s calls by name are not in the library (missing_functions)", r->n_missing_functions,
             r->runtime);
  if (r->n_missing_exports)
    mpk_fail(&problems[np++], MPK_EMISMATCH, lib_path, NULL,
             "%zu functions %s calls are not exported by the library (missing_exports)", r->n_missing_exports,
             r->runtime);
  const char *note = "the library's exports were not read: not compared";
  mpk_cli_json_end(root, problems, np, r->exports_checked ? NULL : &note, r->exports_checked ? 0 : 1);
}

int mpk_cmd_mlc_compat(int argc, char **argv) {
  const char *runtime = NULL;
  bool json = false;
  const mpk_cli_opt opts[] = {
      {"--runtime", 0, "RUNTIME.json", "the runtime description (data/runtimes/webllm-0.2.86.json)", .str = &runtime,
       .once = true},
      {"--json", 0, NULL, "print one JSON document (docs/CLI.md)", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {.name = "mlc compat", .usage = "LIB --runtime RUNTIME.json [--json]", .about = about,
                             .opts = opts, .more = more, .json_keys = keys, .max_args = 1};
  mpk_cli_args a;
  int st = mpk_cli_parse(&spec, argc, argv, &a);
  if (st != MPK_CLI_GO_ON) return st;
  if (!a.n) return mpk_cli_usage(&spec, a.json, "compat needs a library");
  if (!runtime) return mpk_cli_usage(&spec, a.json, "compat needs --runtime RUNTIME.json");

  mpk_error err;
  mpk_error_clear(&err);
  mpk_mlc_runtime *rt = NULL;
  mpk_mlc_library *lib = NULL;
  mpk_mlc_compat_report *r = NULL;
  int rc = mpk_mlc_runtime_load(runtime, &rt, &err);
  if (!rc) rc = mpk_mlc_library_open(a.arg[0], &lib, &err);
  if (!rc) rc = mpk_mlc_compat(lib, rt, &r, &err);
  if (rc) {
    mpk_cli_error(&err);
    if (a.json) mpk_cli_json_refuse("mlc compat", keys, &err);
    mpk_mlc_library_free(lib);
    mpk_mlc_runtime_free(rt);
    return MPK_EXIT_FAIL;
  }
  if (a.json) print_json(a.arg[0], r);
  else print_text(a.arg[0], r, rt);
  int status = r->compatible ? MPK_EXIT_OK : MPK_EXIT_FAIL;
  mpk_mlc_compat_report_free(r);
  mpk_mlc_library_free(lib);
  mpk_mlc_runtime_free(rt);
  return status;
}
