/* modelpkg mt parity DIR [--variant ID] [--train-graph FILE] [--tokens TOKENS.json | --seed N --length L]
   [--ort-library PATH] [--json]: the train/inference parity gate (docs/mt-numeric.md).
   FOUNDATION STUB: the helper "parity" replaces this file. */
#include <stdio.h>

#include "cli.h"

int mpk_cmd_mt_parity(int argc, char **argv) {
  (void)argc, (void)argv;
  fprintf(stderr, "modelpkg mt parity: not implemented yet\n");
  return 1;
}
