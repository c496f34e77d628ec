/* modelpkg mlc functions (docs/mlc-library.md). FOUNDATION STUB. */
#include "cli.h"

int mpk_cmd_mlc_functions(int argc, char **argv) {
  (void)argc, (void)argv;
  fprintf(stderr, "modelpkg: mlc functions: not built yet\n");
  return MPK_EXIT_FAIL;
}
