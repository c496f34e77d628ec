/* Fuzz target: TASKS.json, the input of `mlc build --tasks` (tasks, optionally with programs), built
   into the manifest pair; what is built reads back with the consumer's rules. */
#include <stddef.h>
#include <stdint.h>

#include <string.h>

#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  static const char *const feat[] = {"shader-f16"};
  mpk_mlc_build_input in = {.tasks_json = (const char *)data, .tasks_len = size, .required_features = feat,
                            .n_required_features = 1};
  mpk_mlc_build_output out;
  memset(&out, 0, sizeof out);
  if (mpk_mlc_build(&in, &out, &err) == 0) {
    mpk_mlc_package *p = NULL;
    if (mpk_mlc_package_parse(out.manifest, out.manifest_len, "built", 0, &p, &err) != 0) __builtin_trap();
    mpk_mlc_package_free(p);
  }
  mpk_mlc_build_output_free(&out);
  return 0;
}
