/* The device a command is asked about: --device-features F,... and --max-binding-size N. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int mpk_cli_device_init(mpk_cli_device *d, const char *cmd, const char *features, long long max_binding) {
  memset(d, 0, sizeof *d);
  d->dev.features = d->names;
  d->dev.max_storage_buffer_binding_size = max_binding;
  d->given = features != NULL || max_binding >= 0;
  if (!features) return MPK_EXIT_OK;
  d->dev.has_features = 1;
  if (!(d->copy = strdup(features))) return MPK_EXIT_FAIL;
  for (char *save = NULL, *tok = strtok_r(d->copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ') tok++;
    if (!*tok) continue;
    if (d->dev.n_features == MPK_CLI_MAX_FEATURES)
      return mpk_cli_usage_error(cmd, "more than %d device features", MPK_CLI_MAX_FEATURES);
    /* "f16" is shorthand for WebGPU's "shader-f16". */
    d->names[d->dev.n_features++] = strcmp(tok, "f16") == 0 ? "shader-f16" : tok;
  }
  return MPK_EXIT_OK;
}

void mpk_cli_device_free(mpk_cli_device *d) {
  free(d->copy);
  d->copy = NULL;
}
