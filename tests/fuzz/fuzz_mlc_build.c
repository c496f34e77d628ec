/* Fuzz target: TASKS.json, the input of `mlc build --tasks` (tasks, optionally with programs), built
   into the manifest pair against the parameters of examples/gemma4-audio's tensor cache and the named
   dimensions of its chat config (read once, never written); what is built reads back with the
   consumer's rules. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mpk_mlc_params *params;
  static mpk_mlc_named_dim *dims;
  static size_t n_dims;
  mpk_error err;
  if (!params) {
    mpk_mlc_tensor_cache *tc = NULL;
    if (mpk_mlc_tensor_cache_load(MPK_SOURCE_DIR "/examples/gemma4-audio/tensor-cache.json", &tc, &err) ||
        mpk_mlc_params_from_tensor_cache(tc, &params, &err) ||
        mpk_mlc_named_dims_from_chat_config(MPK_SOURCE_DIR "/examples/gemma4-audio/mlc-chat-config.json", &dims, &n_dims,
                                            &err)) {
      fprintf(stderr, "fuzz_mlc_build: %s\n", err.message);
      abort();
    }
    mpk_mlc_tensor_cache_free(tc);
  }
  static const char *const feat[] = {"shader-f16"};
  mpk_mlc_build_input in = {.tasks_json = (const char *)data, .tasks_len = size, .params = params, .dims = dims,
                            .n_dims = n_dims, .required_features = feat, .n_required_features = 1};
  mpk_mlc_build_result out;
  memset(&out, 0, sizeof out);
  if (mpk_mlc_build(&in, &out, &err) == 0) {
    mpk_mlc_package *p = NULL;
    if (mpk_mlc_package_parse(out.manifest, out.manifest_len, "built", 0, &p, &err) != 0) __builtin_trap();
    mpk_mlc_package_free(p);
  }
  mpk_mlc_build_result_free(&out);
  return 0;
}
