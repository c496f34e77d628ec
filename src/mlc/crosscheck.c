/* Does a library belong to a package? The one cross-check `check` and `fit` both run: the
   library's model_type and quantization against the chat config's, and its parameters against
   the tensor cache's records (every difference reported, with a JSON pointer into the cache). */
#include <string.h>

#include "mlc/mlc.h"

static size_t same_string(const mpk_mlc_cross *c, const char *key, const char *lib_value, mpk_problem_fn fn, void *ctx) {
  const json_t *v = c->chat_config ? json_object_get(c->chat_config, key) : NULL;
  if (!json_is_string(v) || !lib_value || strcmp(json_string_value(v), lib_value) == 0) return 0;
  mpk_error e;
  char ptr[64];
  snprintf(ptr, sizeof ptr, "/%s", key);
  mpk_fail(&e, MPK_EMISMATCH, c->lib_path, ptr,
           "the library's %s is \"%s\", but the package's chat config (%s) says \"%s\": the library is "
           "not this package's",
           key, lib_value, c->chat_config_path, json_string_value(v));
  fn(ctx, &e);
  return 1;
}

size_t mpk_mlc_cross_check(const mpk_mlc_cross *c, mpk_problem_fn fn, void *ctx) {
  size_t n = 0;
  if (c->md && !c->md->artifact_only) {
    const char *quant = NULL;
    const json_t *root;
    json_t *owned;
    if (mpk_mlc_metadata_tree(c->md, c->lib_path, &root, &owned, NULL) == 0 &&
        json_is_string(json_object_get(root, "quantization")))
      quant = json_string_value(json_object_get(root, "quantization"));
    n += same_string(c, "model_type", c->md->model_type, fn, ctx);
    n += same_string(c, "quantization", quant, fn, ctx);
    json_decref(owned);
  }
  if (c->lib_params && c->weights)
    n += mpk_mlc_params_compare_each(c->lib_params, c->weights, c->tc, c->dims, c->n_dims, c->lib_path,
                                     c->tc_path, fn, ctx);
  return n;
}
