/* Fuzz target: the merge record reader (.modelpkg-merge-record.json, docs/mt-merge.md), then what
   the load gate does with a record it accepted: every named tensor is found, with a post-merge
   digest of 64 lowercase hex digits and a shipped digest that is one too or absent. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mt/mt.h"

static int hex64(const char *s) {
  if (!s || strlen(s) != 64) return 0;
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  json_t *rec = NULL;
  if (mpk_mt_record_parse(data, size, NULL, &rec, &err) != 0) {
    if (rec) __builtin_trap();
    return 0;
  }
  const char *name;
  json_t *v;
  json_object_foreach(json_object_get(rec, "tensors"), name, v) {
    const char *shipped = NULL, *merged = NULL;
    if (!mpk_mt_record_find(rec, name, &shipped, &merged)) __builtin_trap();
    if (!hex64(merged) || (shipped && !hex64(shipped)) || strchr(name, '/')) __builtin_trap();
  }
  const char *s, *m;
  if (mpk_mt_record_find(rec, "", &s, &m)) __builtin_trap(); /* an empty name is never accepted */
  json_decref(rec);
  return 0;
}
