/* modelpkg: dispatch to a verb. */
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: modelpkg <command> [options]\n"
    "\n"
    "Check on-device ML model packages against their contracts, fail-closed.\n"
    "\n"
    "commands:\n"
    "  check DIR [--lib FILE] [--device-features F,...] [--max-binding-size N] [--json]\n"
    "                 check an MLC package directory, and bind it to a compiled model library\n"
    "  check DIR [--variant ID | --all-variants] [--no-hash] [--no-graph] [--json]\n"
    "                 check a MobileTransformers package directory (mobiletransformers_manifest.json)\n"
    "  fit DIR [--lib FILE] [--context N] [--device-memory BYTES] [--max-binding-size N]\n"
    "      [--device-features F,...] [--set NAME=VALUE ...] [--json]\n"
    "                 report the memory a model needs (parameters + KV cache + workspace) and\n"
    "                 whether it fits a device\n"
    "  mlc id DIR     print the interface_id recomputed from the package's tasks\n"
    "  mlc metadata LIB\n"
    "                 print the _metadata JSON embedded in a compiled model library\n"
    "  mlc build DIR --tasks TASKS.json [--lib FILE | --params FILE]\n"
    "                 write the package sidecar and print the artifact for the library\n"
    "  mlc plan --package DIR --lib LIB --segments FILE\n"
    "                 plan a prompt's prefill calls: text and adapter rows in chunks, context checks\n"
    "  mt build DIR --describe BUILD.json | mt reseal DIR\n"
    "                 seal a MobileTransformers package: its manifest and checksums files\n"
    "  mt handoff fmt FILE | mt tensors DIR\n"
    "                 rewrite a weight handoff map canonically; list the tensors under the load gate\n"
    "  mt graph DIR | mt inspect DIR | mt handoff build DIR\n"
    "                 the inference graph against the map; precision per variant; build the map\n"
    "  mt merge DIR --adapter A.safetensors\n"
    "                 merge a trained LoRA adapter into a variant's weights (one transaction)\n"
    "  mt select DIR [device options] | mt plan DIR --variant ID\n"
    "                 the variant a device gets and why; the exact files and bytes to download\n"
    "  mt install SOURCE --repo-id ID --cache DIR\n"
    "                 install a variant from a directory or URL: verified, resumable, atomic\n"
    "  audio IN.wav --package DIR [-o OUT.f32] [--json]\n"
    "                 a recording to the mono float32 PCM of the package's audio_decode processor\n"
    "  image IN --package DIR [-o OUT.raw] [--png PREVIEW.png] [--json]\n"
    "                 a JPEG, PNG or WebP photo to the [1, H, W, 3] pixel tensor of the package's\n"
    "                 image_decode processor (EXIF orientation applied, WebLLM's resize plan)\n"
    "\n"
    "options:\n"
    "  -h, --help     show help (also after a command: modelpkg check --help)\n"
    "  --version      print the version\n"
    "\n"
    "exit status: 0 all checks hold, 1 a check failed or the input is invalid, 2 usage error\n";

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return MPK_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (mpk_cli_is_help(cmd) || strcmp(cmd, "help") == 0) {
    fputs(usage, stdout);
    return MPK_EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("modelpkg %s\n", mpk_version());
    return MPK_EXIT_OK;
  }
  if (strcmp(cmd, "check") == 0) return mpk_cmd_check(argc - 1, argv + 1);
  if (strcmp(cmd, "fit") == 0) return mpk_cmd_fit(argc - 1, argv + 1);
  if (strcmp(cmd, "mlc") == 0) return mpk_cmd_mlc(argc - 1, argv + 1);
  if (strcmp(cmd, "mt") == 0) return mpk_cmd_mt(argc - 1, argv + 1);
  if (strcmp(cmd, "audio") == 0) return mpk_cmd_audio(argc - 1, argv + 1);
  if (strcmp(cmd, "image") == 0) return mpk_cmd_image(argc - 1, argv + 1);
  fprintf(stderr, "modelpkg: unknown command '%s'\n\n%s", cmd, usage);
  return MPK_EXIT_USAGE;
}
