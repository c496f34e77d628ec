/* modelpkg mlc embed LIB.wasm --artifact ARTIFACT.json -o OUT.wasm [--force] [--json]
   (docs/mlc-library.md, "Embedding an artifact"). */
#include <string.h>

#include "cli.h"

static const char about[] =
    "Write an artifact (mlc build's output, \"schema\": \"mlc.compiled-program\") into an existing\n"
    "WebAssembly model library as its _metadata.artifact, replacing any artifact already there.\n";
static const char more[] =
    "The _metadata text keeps its length (TVM addresses it by memory address): its insignificant\n"
    "whitespace makes the room, and a library without enough is refused with the bytes needed and\n"
    "available. Every other byte of the library is copied unchanged; the result is read back before\n"
    "it is written (atomically). Other containers (.so, .dylib, .tar) are refused: recompile them.\n"
    "exit status: 0 written, 1 refused (the reason on stderr), 2 usage error\n";

static const char *const embed_keys[] = {"library", "artifact", "output", "metadata_offset", "metadata_bytes",
                                         "padding_bytes", NULL};

typedef struct args {
  const char *lib, *artifact, *output;
  bool force;
} args;

static int parse_args(int argc, char **argv, args *a, bool *json) {
  const mpk_cli_opt opts[] = {
      {"--artifact", 0, "FILE", "the artifact object to embed (validated with WebLLM's rules first)",
       .str = &a->artifact},
      {"-o", 0, "FILE", "the library to write (atomically; - is standard output); never LIB itself",
       .str = &a->output},
      {"--force", 0, NULL, "replace an existing output file", .flag = &a->force},
      {"--json", 0, NULL, "print one JSON document (docs/CLI.md): where the _metadata was rewritten\n"
                          "(not with -o -)", .flag = json},
      {0}};
  const mpk_cli_spec spec = {.name = "mlc embed",
                             .usage = "LIB.wasm --artifact ARTIFACT.json -o OUT.wasm [--force] [--json]",
                             .about = about, .opts = opts, .more = more, .json_keys = embed_keys, .max_args = 1};
  mpk_cli_args p;
  int st = mpk_cli_parse(&spec, argc, argv, &p);
  if (st != MPK_CLI_GO_ON) return st;
  *json = p.json;
  a->lib = p.arg[0];
  if (!a->lib) return mpk_cli_usage(&spec, *json, "missing the library (LIB.wasm)");
  if (!a->artifact) return mpk_cli_usage(&spec, *json, "missing --artifact");
  if (!a->output) return mpk_cli_usage(&spec, *json, "missing -o (the library is never rewritten in place)");
  if (*json && mpk_output_is_stdout(a->output))
    return mpk_cli_usage(&spec, *json, "--json prints its document on standard output, which -o writes the library "
                                       "to; write the library to a file, or drop --json");
  return MPK_CLI_GO_ON;
}

int mpk_cmd_mlc_embed(int argc, char **argv) {
  args a = {0};
  bool json = false;
  int rc = parse_args(argc, argv, &a, &json);
  if (rc != MPK_CLI_GO_ON) return rc;
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mlc_embed_options o = MPK_MLC_EMBED_OPTIONS_INIT;
  o.force = a.force;
  if ((rc = mpk_mlc_embed(a.lib, a.artifact, a.output, &o, &err))) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("mlc embed", embed_keys, &err);
    return MPK_EXIT_FAIL;
  }
  /* Where it went, from the written file itself (standard output cannot be read back). */
  mpk_mlc_metadata *md = NULL;
  size_t pad = 0;
  bool to_stdout = mpk_output_is_stdout(a.output);
  if (!to_stdout && mpk_mlc_metadata_load(a.output, &md, &err) == 0)
    for (size_t i = md->json_len - 1; i > 0 && md->json[i - 1] == ' '; i--) pad++;
  if (json) {
    json_t *root = mpk_cli_json_begin("mlc embed", true);
    json_object_set_new(root, "library", json_string(a.lib));
    json_object_set_new(root, "artifact", json_string(a.artifact));
    json_object_set_new(root, "output", json_string(a.output));
    json_object_set_new(root, "metadata_offset", md ? json_integer(md->source_offset) : json_null());
    json_object_set_new(root, "metadata_bytes", md ? json_integer((json_int_t)md->json_len) : json_null());
    json_object_set_new(root, "padding_bytes", md ? json_integer((json_int_t)pad) : json_null());
    mpk_cli_json_end(root, NULL, 0, NULL, 0);
  }
  if (md)
    fprintf(stderr, "modelpkg: wrote %s: _metadata.artifact embedded at byte %lld (%zu bytes, %zu of them padding)\n",
            a.output, (long long)md->source_offset, md->json_len, pad);
  else
    fprintf(stderr, "modelpkg: wrote %s: _metadata.artifact embedded\n", to_stdout ? "standard output" : a.output);
  mpk_mlc_metadata_free(md);
  return MPK_EXIT_OK;
}
