/* The device and request options of variant selection (--abi --ep --quant --engine --memory-mb
   --api-level --features --prefer-quant --storage-bytes), parsed one way for every command that
   selects a variant (mt select, mt install). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int mpk_cli_parse_list(const char *cmd, const char *opt, const char *val, mpk_cli_list *l) {
  if (l->given) return mpk_cli_usage_error(cmd, "%s given twice", opt);
  l->given = true;
  if (!(l->copy = strdup(val))) return mpk_cli_usage_error(cmd, "out of memory");
  for (char *p = l->copy;;) {
    char *comma = strchr(p, ',');
    if (comma) *comma = '\0';
    if (!*p) return mpk_cli_usage_error(cmd, "%s '%s' has an empty item", opt, val);
    if (l->n == MPK_CLI_MAX_LIST) return mpk_cli_usage_error(cmd, "%s lists more than %d items", opt, MPK_CLI_MAX_LIST);
    l->items[l->n++] = p;
    if (!comma) break;
    p = comma + 1;
  }
  return MPK_EXIT_OK;
}

static int parse_count(const char *cmd, const char *opt, const char *val, mpk_opt_int *out) {
  long long n;
  if (out->present) return mpk_cli_usage_error(cmd, "%s given twice", opt);
  if (!mpk_cli_parse_int(val, 0, MPK_CLI_SAFE_INT_MAX, &n))
    return mpk_cli_usage_error(cmd, "%s needs a non-negative integer, not '%s'", opt, val);
  out->present = 1;
  out->value = n;
  return MPK_EXIT_OK;
}

static const char *const names[] = {"--abi", "--ep", "--quant", "--engine", "--memory-mb", "--api-level",
                                    "--features", "--prefer-quant", "--storage-bytes"};
enum { N_NAMES = sizeof names / sizeof names[0] };

static size_t option_index(const char *opt) {
  size_t k = 0;
  while (k < N_NAMES && strcmp(opt, names[k]) != 0) k++;
  return k;
}

bool mpk_cli_is_select_option(const char *opt) { return option_index(opt) < N_NAMES; }

int mpk_cli_select_option(const char *cmd, const char *opt, const char *val, mpk_cli_select *s) {
  size_t k = option_index(opt);
  if (k == N_NAMES) return -1;
  mpk_mt_select_options *o = &s->o;
  if (k != 6) s->device_given = true;
  const char **str = k == 1 ? &o->execution_provider : k == 2 ? &o->quantization : k == 3 ? &o->engine : NULL;
  if (str) {
    if (*str) return mpk_cli_usage_error(cmd, "%s given twice", opt);
    if (!*val) return mpk_cli_usage_error(cmd, "%s needs a non-empty value", opt);
    *str = val;
    return MPK_EXIT_OK;
  }
  if (k == 0) return mpk_cli_parse_list(cmd, opt, val, &s->abis);
  if (k == 6) return mpk_cli_parse_list(cmd, opt, val, &s->features);
  if (k == 7) return mpk_cli_parse_list(cmd, opt, val, &s->prefer);
  return parse_count(cmd, opt, val, k == 4 ? &o->memory_mb : k == 5 ? &o->api_level : &o->free_bytes);
}

void mpk_cli_select_finish(mpk_cli_select *s) {
  s->o.abis = s->abis.items;
  s->o.n_abis = s->abis.n;
  s->o.features = s->features.given ? s->features.items : NULL;
  s->o.n_features = s->features.n;
  s->o.prefer_quant = s->prefer.given ? s->prefer.items : NULL;
  s->o.n_prefer_quant = s->prefer.n;
}

void mpk_cli_select_free(mpk_cli_select *s) {
  free(s->abis.copy);
  free(s->features.copy);
  free(s->prefer.copy);
}
