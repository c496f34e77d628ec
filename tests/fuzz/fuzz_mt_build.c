/* Fuzz target: BUILD.json, the descriptive inputs of `mt build --describe`, sealed over a scratch
   copy of examples/mt-tiny (dry run: nothing is written). A manifest that is built reads back. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_fixture.h"
#include <string.h>

#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *dir = fuzz_fixture("mt-tiny");
  mpk_error err;
  mpk_mt_build_input in = {.describe = (const char *)data, .describe_len = size, .workers = 1, .dry_run = 1};
  mpk_mt_build_result r;
  memset(&r, 0, sizeof r);
  if (mpk_mt_build(dir, &in, &r, &err) == 0) {
    mpk_mt_manifest *m = NULL;
    if (mpk_mt_manifest_parse(r.manifest, strlen(r.manifest), "built", &m, &err) != 0) __builtin_trap();
    mpk_mt_manifest_free(m);
  }
  mpk_mt_build_result_free(&r);
  return 0;
}
