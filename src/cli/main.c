/* modelpkg: the command table and the dispatch to a command. Each command parses its own options
   with its table (args.c) and prints its own --help; a group (mlc, mt, mt handoff) alone, or with
   --help, lists its subcommands. */
#include <string.h>

#include "cli.h"

typedef struct command {
  const char *name;     /* the word on the command line */
  int (*run)(int argc, char **argv); /* argv[0] is this word */
  const char *synopsis; /* the arguments, for the listing (the command's --help has them all) */
  const char *summary;  /* one line (or two) */
} command;

static const command mlc_commands[] = {
    {"id", mpk_cmd_mlc_id, "DIR|MANIFEST [--json]",
     "print the interface_id recomputed from the tasks of DIR's mlc-model-manifest.json"},
    {"metadata", mpk_cmd_mlc_metadata, "LIB [--json]",
     "print the _metadata JSON embedded in a compiled model library, byte-exact"},
    {"build", mpk_cmd_mlc_build, "DIR --tasks TASKS.json [--lib FILE | --params FILE] [...]",
     "write DIR/mlc-model-manifest.json and print the artifact to embed"},
    {"plan", mpk_cmd_mlc_plan, "--package DIR --lib LIB --segments SEGMENTS.json [--json]",
     "plan a prompt's prefill calls: text and adapter rows in chunks, context checks"},
    {"install", mpk_cmd_mlc_install, "SOURCE --cache DIR [--name NAME] [--lib URL|FILE] [...]",
     "install a model (directory or URL) into a cache: checked first, verified, resumable, atomic"},
    {"urls", mpk_cmd_mlc_urls, "MODEL_URL [--manifest FILE] [--no-clean] [--json]",
     "where WebLLM finds a model's documents: the cleaned model URL and the resource URLs"},
    {"functions", mpk_cmd_mlc_functions, "LIB [--json]",
     "list a compiled library's VM functions (parameter counts and names) and its legacy ABI"},
    {"compat", mpk_cmd_mlc_compat, "LIB --runtime RUNTIME.json [--json]",
     "the host functions and globals a library needs against what a runtime provides"},
    {"embed", mpk_cmd_mlc_embed, "LIB.wasm --artifact ARTIFACT.json -o OUT.wasm [--force]",
     "write _metadata.artifact into an existing WebAssembly library"},
    {0}};

static const command handoff_commands[] = {
    {"fmt", mpk_cmd_mt_handoff_fmt, "FILE [--json]", "rewrite a weight handoff map in canonical form"},
    {"build", mpk_cmd_mt_handoff_build, "DIR [--variant ID] [--peft METHOD] [--dry-run] [--json]",
     "write a variant's weight handoff map from its training config and inference graph"},
    {0}};

static const command mt_commands[] = {
    {"build", mpk_cmd_mt_build, "DIR --describe BUILD.json [--jobs N] [--dry-run] [--json]",
     "seal a new MobileTransformers package: its manifest and checksums files"},
    {"reseal", mpk_cmd_mt_build, "DIR [--jobs N] [--dry-run] [--json]",
     "seal an existing package again after its files changed"},
    {"handoff", mpk_cmd_mt_handoff, "fmt FILE | build DIR",
     "rewrite a weight handoff map canonically; build one from the graph"},
    {"graph", mpk_cmd_mt_graph, "DIR [--variant ID] [--json]",
     "a variant's inference graph against its handoff map and declared precision"},
    {"inspect", mpk_cmd_mt_inspect, "DIR [--json]", "per variant: training quantization beside measured precision"},
    {"tensors", mpk_cmd_mt_tensors, "DIR [--variant ID] [--jobs N] [--stamp] [--rehash] [--json]",
     "the merged-weight tensors of a variant under the load gate"},
    {"merge", mpk_cmd_mt_merge, "DIR --adapter ADAPTER.safetensors [options]",
     "merge a trained LoRA adapter into a variant's weights (one transaction)"},
    {"parity", mpk_cmd_mt_parity, "DIR [--variant ID] [--tokens TOKENS.json | --seed N --length L] [--json]",
     "the train/inference parity gate: both graphs' cross-entropy in ONNX Runtime"},
    {"restore", mpk_cmd_mt_restore, "DIR [--source DIR|URL] [--json]",
     "return merged tensors to the shipped bytes (kept base or re-fetched; one transaction)"},
    {"select", mpk_cmd_mt_select, "DIR [device options] [--json]", "the variant a device gets, and why"},
    {"plan", mpk_cmd_mt_plan, "DIR [--variant ID] [--features F,...] [--json]",
     "the exact files and bytes to download for a variant"},
    {"install", mpk_cmd_mt_install, "SOURCE --repo-id ORG/NAME --cache DIR [options]",
     "install a variant from a directory or URL: verified, resumable, atomic"},
    {"list", mpk_cmd_mt_list, "--cache DIR [--json]", "the models installed in a cache"},
    {"remove", mpk_cmd_mt_remove, "--cache DIR --repo-id ORG/NAME [--wait] [--json]",
     "remove an installed model (kept retired while a reader holds it)"},
    {"gc", mpk_cmd_mt_gc, "--cache DIR [--dry-run] [--json]",
     "collect a cache's garbage: partial downloads, retired trees, orphaned locks"},
    {0}};

static int run_group(const char *group, const command *table, int argc, char **argv);
static int cmd_mlc(int argc, char **argv) { return run_group("mlc", mlc_commands, argc, argv); }
static int cmd_mt(int argc, char **argv) { return run_group("mt", mt_commands, argc, argv); }
int mpk_cmd_mt_handoff(int argc, char **argv) { return run_group("mt handoff", handoff_commands, argc, argv); }

static const command commands[] = {
    {"check", mpk_cmd_check, "DIR [--lib FILE] [--device-features F,...] [--max-binding-size N] [--json]",
     "check an MLC package directory, and bind it to a compiled model library;\n"
     "or a MobileTransformers package directory: DIR [--variant ID | --all-variants] [--no-hash] [--no-graph]"},
    {"fit", mpk_cmd_fit,
     "DIR [--lib FILE] [--context N] [--device-memory BYTES] [--max-binding-size N]\n"
     "    [--device-features F,...] [--set NAME=VALUE ...] [--json]",
     "the memory a model needs (parameters + KV cache + workspace) and whether it fits a device"},
    {"mlc", cmd_mlc, "id | metadata | functions | compat | embed | build | plan | urls | install",
     "the MLC manifest: interface_id, libraries (_metadata, functions, runtime compatibility, embedding), producer, prefill plans, model URLs, installs"},
    {"mt", cmd_mt,
     "build | reseal | handoff | graph | inspect | tensors | merge | restore | select | plan | install | list | remove | gc",
     "MobileTransformers packages: seal, inspect, merge, select, plan, install; the installed cache"},
    {"audio", mpk_cmd_audio, "IN.wav --package DIR [-o OUT.f32] [--json]",
     "a recording to the mono float32 PCM of the package's audio_decode processor"},
    {"image", mpk_cmd_image, "IN --package DIR [-o OUT.raw] [--png PREVIEW.png] [--json]",
     "a JPEG, PNG or WebP photo to the [1, H, W, 3] pixel tensor of the package's image_decode\n"
     "processor (EXIF orientation applied, WebLLM's resize plan)"},
    {0}};

static void list(FILE *out, const char *group, const command *table) {
  for (const command *c = table; c->name; c++) {
    fprintf(out, "  %s%s%s %s\n", group, *group ? " " : "", c->name, c->synopsis);
    for (const char *s = c->summary; s;) {
      const char *nl = strchr(s, '\n');
      fprintf(out, "                 %.*s\n", nl ? (int)(nl - s) : (int)strlen(s), s);
      s = nl ? nl + 1 : NULL;
    }
  }
}

static void group_help(FILE *out, const char *group, const command *table) {
  fprintf(out, "usage: modelpkg %s <subcommand> [options]\n\nsubcommands:\n", group);
  char prefix[64];
  snprintf(prefix, sizeof prefix, "modelpkg %s", group);
  list(out, prefix, table);
  fprintf(out,
          "\nEach subcommand prints its own help: modelpkg %s <subcommand> --help\n"
          "exit status: 0 ok, 1 a check failed or the input is refused, 2 usage error\n",
          group);
}

static int run_group(const char *group, const command *table, int argc, char **argv) {
  if (argc < 2 || mpk_cli_is_help(argv[1])) {
    group_help(argc < 2 ? stderr : stdout, group, table);
    return argc < 2 ? MPK_EXIT_USAGE : MPK_EXIT_OK;
  }
  for (const command *c = table; c->name; c++)
    if (strcmp(c->name, argv[1]) == 0) return c->run(argc - 1, argv + 1);
  return mpk_cli_usage_error(group, "unknown subcommand '%s'", argv[1]);
}

static void usage(FILE *out) {
  fputs("usage: modelpkg <command> [options]\n"
        "\n"
        "Check on-device ML model packages against their contracts, fail-closed.\n"
        "\n"
        "commands:\n",
        out);
  list(out, "", commands);
  fputs("\n"
        "options:\n"
        "  -h, --help     show help (also after a command: modelpkg check --help)\n"
        "  --version      print the version\n"
        "\n"
        "Every command takes --help; every command that reports takes --json (docs/CLI.md).\n"
        "exit status: 0 all checks hold, 1 a check failed or the input is invalid, 2 usage error\n",
        out);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return MPK_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (mpk_cli_is_help(cmd) || strcmp(cmd, "help") == 0) {
    usage(stdout);
    return MPK_EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("modelpkg %s\ncomponents: %s\nhashing: %s\n", mpk_version(), mpk_components(), mpk_hash_implementation());
    return MPK_EXIT_OK;
  }
  for (const command *c = commands; c->name; c++)
    if (strcmp(c->name, cmd) == 0) return c->run(argc - 1, argv + 1);
  fprintf(stderr, "modelpkg: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return MPK_EXIT_USAGE;
}
