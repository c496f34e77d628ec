/* modelpkg mlc compat (docs/mlc-library.md). FOUNDATION STUB. */
#include "cli.h"

int mpk_cmd_mlc_compat(int argc, char **argv) {
  (void)argc, (void)argv;
  fprintf(stderr, "modelpkg: mlc compat: not built yet\n");
  return MPK_EXIT_FAIL;
}
