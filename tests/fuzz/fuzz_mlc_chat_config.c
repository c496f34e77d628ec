/* Fuzz target: mlc-chat-config.json through the loaders that read it — the named dimensions
   (mpk_mlc_named_dims_from_chat_config: mlc build, fit) and `fit` on a package (context window,
   model_config), in a scratch copy of examples/gemma4-audio. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_fixture.h"
#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *dir = fuzz_fixture("gemma4-audio");
  if (fuzz_put(dir, MPK_MLC_CHAT_CONFIG_FILENAME, data, size)) abort();
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, MPK_MLC_CHAT_CONFIG_FILENAME);
  mpk_error err;
  mpk_mlc_named_dim *dims = NULL;
  size_t n = 0;
  if (mpk_mlc_named_dims_from_chat_config(path, &dims, &n, &err) == 0)
    for (size_t i = 0; i < n; i++)
      if (!dims[i].name) __builtin_trap();
  mpk_free(dims);
  mpk_mlc_fit_options o = {0};
  mpk_mlc_fit_report *r = NULL;
  mpk_mlc_fit_package(dir, &o, &r, &err);
  mpk_mlc_fit_report_free(r);
  return 0;
}
