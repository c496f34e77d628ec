/* modelpkg mlc embed (docs/mlc-library.md). FOUNDATION STUB. */
#include "cli.h"

int mpk_cmd_mlc_embed(int argc, char **argv) {
  (void)argc, (void)argv;
  fprintf(stderr, "modelpkg: mlc embed: not built yet\n");
  return MPK_EXIT_FAIL;
}
