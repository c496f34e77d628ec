/* modelpkg mlc functions LIB [--json]: a compiled library's Relax VM function table, where it was
   found, the legacy ABI it offers, its imports and the runtime globals it needs (docs/mlc-library.md). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char about[] =
    "Read a compiled model library (WebAssembly, ELF or Mach-O shared object, a .tar (gzip'd too) or ar\n"
    "archive of objects) and list its Relax VM function table: each function's kind (vm: an entrypoint;\n"
    "packed: a kernel of the library or a runtime global such as vm.builtin.*), name, number of arguments\n"
    "and parameter names. Also prints the container, the architecture, where the VM executable and the\n"
    "_metadata were found, the legacy ABI the library offers WebLLM 0.2.86 without a manifest\n"
    "(prefill/decode/embed, batch_*, image_embed, the KV-cache or RNN-state creator), and how many host\n"
    "functions it imports and runtime globals it needs (the full lists with --json).\n";
static const char more[] =
    "exit status: 0 the table was read (a library without a legacy ABI is a note, not a failure: check --lib\n"
    "decides), 1 refused (no function table found, not a library; the reason on stderr), 2 usage error\n";

static const char *const keys[] = {"library", "container", "arch", "vm", "metadata", "functions", "legacy_abi",
                                   "imports", "globals_needed", "globals_defined", NULL};

static json_t *functions_json(const mpk_mlc_library *lib) {
  json_t *arr = json_array();
  for (size_t i = 0; i < lib->n_functions; i++) {
    const mpk_mlc_function *f = &lib->functions[i];
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(f->name));
    json_object_set_new(o, "kind", json_string(mpk_mlc_function_kind_name(f->kind)));
    json_object_set_new(o, "num_args", json_integer(f->num_args));
    json_object_set_new(o, "param_names", mpk_cli_json_strings(f->param_names, f->n_param_names));
    json_array_append_new(arr, o);
  }
  return arr;
}

static json_t *imports_json(const mpk_mlc_library *lib) {
  json_t *arr = json_array();
  for (size_t i = 0; i < lib->n_imports; i++) {
    json_t *o = json_object();
    json_object_set_new(o, "module", mpk_cli_json_str(lib->imports[i].module));
    json_object_set_new(o, "name", json_string(lib->imports[i].name));
    json_array_append_new(arr, o);
  }
  return arr;
}

static void print_table(const mpk_mlc_library *lib) {
  size_t packed = 0;
  for (size_t i = 0; i < lib->n_functions; i++) {
    const mpk_mlc_function *f = &lib->functions[i];
    if (f->kind == MPK_MLC_FUNCTION_PACKED) {
      packed++;
      continue;
    }
    printf("  %-6s %-32s %2lld (", mpk_mlc_function_kind_name(f->kind), f->name, (long long)f->num_args);
    for (size_t k = 0; k < f->n_param_names; k++) printf("%s%s", k ? ", " : "", f->param_names[k]);
    printf(")\n");
  }
  if (packed) {
    printf("  packed functions (%zu): ", packed);
    size_t shown = 0;
    for (size_t i = 0; i < lib->n_functions; i++)
      if (lib->functions[i].kind == MPK_MLC_FUNCTION_PACKED) printf("%s%s", shown++ ? ", " : "", lib->functions[i].name);
    printf("\n");
  }
}

static int run(const char *path, bool json) {
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mlc_library *lib = NULL;
  if (mpk_mlc_library_open(path, &lib, &err)) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("mlc functions", keys, &err);
    return MPK_EXIT_FAIL;
  }
  if (!lib->n_functions && !lib->vm_where) {
    mpk_fail(&err, MPK_ENOTFOUND, path, NULL, "no Relax VM function table found (the _metadata was: %s)",
             lib->metadata_where ? lib->metadata_where : "not found either");
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("mlc functions", keys, &err);
    mpk_mlc_library_free(lib);
    return MPK_EXIT_FAIL;
  }
  /* the legacy ABI: a note when the library offers none (or the check cannot run) */
  mpk_mlc_legacy_abi abi;
  memset(&abi, 0, sizeof abi);
  mpk_error abi_err;
  mpk_error_clear(&abi_err);
  int abi_rc = mpk_mlc_legacy_abi_of(lib, &abi, &abi_err);
  char note[1200] = "";
  if (abi_rc) mpk_error_format(&abi_err, note, sizeof note);
  const char *notes[2];
  size_t n_notes = 0;
  if (note[0]) notes[n_notes++] = note;
  if (!lib->metadata && lib->metadata_problem) notes[n_notes++] = lib->metadata_problem;

  if (json) {
    json_t *root = mpk_cli_json_begin("mlc functions", true);
    json_object_set_new(root, "library", json_string(path));
    json_object_set_new(root, "container", json_string(lib->container));
    json_object_set_new(root, "arch", mpk_cli_json_str(lib->arch));
    json_t *vm = json_object();
    json_object_set_new(vm, "where", mpk_cli_json_str(lib->vm_where));
    json_object_set_new(vm, "type_key", mpk_cli_json_str(lib->vm_type_key));
    json_object_set_new(vm, "version", mpk_cli_json_str(lib->vm_version));
    json_object_set_new(root, "vm", vm);
    json_t *md = json_object();
    json_object_set_new(md, "where", mpk_cli_json_str(lib->metadata_where));
    json_object_set_new(md, "member", mpk_cli_json_str(lib->metadata_member));
    json_object_set_new(md, "offset", lib->metadata ? json_integer(lib->metadata->source_offset) : json_null());
    json_object_set_new(md, "bytes", lib->metadata ? json_integer((json_int_t)lib->metadata->json_len) : json_null());
    json_object_set_new(md, "scanned", json_boolean(lib->metadata_scanned));
    json_object_set_new(md, "problem", mpk_cli_json_str(lib->metadata ? NULL : lib->metadata_problem));
    json_object_set_new(root, "metadata", md);
    json_object_set_new(root, "functions", functions_json(lib));
    json_t *abi_j = json_object();
    json_object_set_new(abi_j, "offered", json_boolean(abi_rc == 0));
    json_object_set_new(abi_j, "chat", json_boolean(abi.chat));
    json_object_set_new(abi_j, "batch", json_boolean(abi.batch));
    json_object_set_new(abi_j, "embedding", json_boolean(abi.embedding));
    json_object_set_new(abi_j, "image_embed", json_boolean(abi.image_embed));
    json_object_set_new(abi_j, "state_creator", mpk_cli_json_str(abi.state_creator));
    json_object_set_new(abi_j, "summary", mpk_cli_json_str(abi_rc ? (note[0] ? note : NULL) : abi.summary));
    json_object_set_new(root, "legacy_abi", abi_j);
    json_object_set_new(root, "imports", imports_json(lib));
    json_object_set_new(root, "globals_needed", mpk_cli_json_strings(lib->globals_needed, lib->n_globals_needed));
    json_object_set_new(root, "globals_defined", mpk_cli_json_strings(lib->globals_defined, lib->n_globals_defined));
    mpk_cli_json_end(root, NULL, 0, notes, n_notes);
  } else {
    printf("library: %s\n", path);
    printf("container: %s%s%s\n", lib->container, lib->arch ? ", " : "", lib->arch ? lib->arch : "");
    printf("vm executable: %s (%s, TVM %s)\n", lib->vm_where, lib->vm_type_key, lib->vm_version);
    if (lib->metadata)
      printf("_metadata: %s, %zu bytes%s\n", lib->metadata_where, lib->metadata->json_len,
             lib->metadata_scanned ? " (found by the fallback scan)" : "");
    else
      printf("_metadata: none (%s)\n", lib->metadata_problem ? lib->metadata_problem : "not found");
    size_t vm = 0;
    for (size_t i = 0; i < lib->n_functions; i++) vm += lib->functions[i].kind != MPK_MLC_FUNCTION_PACKED;
    printf("functions: %zu (%zu VM, %zu packed)\n", lib->n_functions, vm, lib->n_functions - vm);
    print_table(lib);
    printf("legacy ABI: %s\n", abi_rc ? "none" : abi.summary ? abi.summary : "offered");
    printf("imports: %zu host functions; globals needed: %zu; globals defined: %zu\n", lib->n_imports,
           lib->n_globals_needed, lib->n_globals_defined);
    for (size_t i = 0; i < n_notes; i++) fprintf(stderr, "modelpkg: note: %s\n", notes[i]);
  }
  mpk_mlc_library_free(lib);
  return MPK_EXIT_OK;
}

int mpk_cmd_mlc_functions(int argc, char **argv) {
  bool json = false;
  const mpk_cli_opt opts[] = {
      {"--json", 0, NULL,
       "print one JSON document: the table, where it was found, the legacy ABI, the full import and\n"
       "globals lists (docs/CLI.md)",
       .flag = &json},
      {0}};
  const mpk_cli_spec spec = {.name = "mlc functions", .usage = "LIB [--json]", .about = about, .opts = opts,
                             .more = more, .json_keys = keys, .max_args = 1};
  mpk_cli_args a;
  int st = mpk_cli_parse(&spec, argc, argv, &a);
  if (st != MPK_CLI_GO_ON) return st;
  if (!a.n) return mpk_cli_usage(&spec, a.json, "functions needs a library file");
  return run(a.arg[0], a.json);
}
