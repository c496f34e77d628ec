/* The reference runtime's install record (InstallRecord.kt): what Gson's toJson writes for it, so
   that a runtime built on the reference sees what modelpkg installed (docs/mt-install.md). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mt/mt.h"
#include "mt/install/install.h"

/* Kotlin's String order (List<String>.sorted()): UTF-16 code units compared as unsigned numbers.
   It differs from UTF-8 byte order only between U+E000..U+FFFF and the supplementary planes, whose
   surrogates (D800..DFFF) sort before E000. */
static unsigned utf16_unit(const unsigned char *s, size_t *i, unsigned *pending) {
  if (*pending) {
    unsigned u = *pending;
    *pending = 0;
    return u;
  }
  unsigned c = s[*i];
  int extra = c < 0x80 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
  if (extra) c &= 0x3Fu >> extra;
  for (int k = 1; k <= extra && s[*i + (size_t)k]; k++) c = (c << 6) | (s[*i + (size_t)k] & 0x3F);
  *i += (size_t)extra + 1;
  if (c < 0x10000) return c;
  c -= 0x10000;
  *pending = 0xDC00 + (c & 0x3FF);
  return 0xD800 + (c >> 10);
}

static int utf16_cmp(const void *a, const void *b) {
  const unsigned char *x = *(const unsigned char *const *)a, *y = *(const unsigned char *const *)b;
  size_t i = 0, j = 0;
  unsigned px = 0, py = 0;
  for (;;) {
    bool ex = !px && !x[i], ey = !py && !y[j];
    if (ex || ey) return ex && ey ? 0 : ex ? -1 : 1;
    unsigned u = utf16_unit(x, &i, &px), w = utf16_unit(y, &j, &py);
    if (u != w) return u < w ? -1 : 1;
  }
}

int mpk_mt_reference_record(const char *repo_id, const char *variant, const char *const *features, size_t n,
                            int64_t installed_at_ms, char **text, size_t *len, mpk_error *err) {
  *text = NULL;
  *len = 0;
  const char **sorted = calloc(n ? n : 1, sizeof *sorted);
  json_t *feat = json_array(), *doc = json_object();
  int rc = 0;
  if (!sorted || !feat || !doc) {
    rc = mpk_fail(err, MPK_ENOMEM, MPK_MT_REFERENCE_INSTALL_RECORD, NULL, "out of memory");
    goto out;
  }
  if (n) memcpy(sorted, features, n * sizeof *sorted);
  mpk_sort(sorted, n, sizeof *sorted, utf16_cmp);
  for (size_t i = 0; i < n; i++) json_array_append_new(feat, json_string(sorted[i]));
  /* InstallRecord's fields in declaration order: Gson writes them so. */
  json_object_set_new(doc, "repoId", json_string(repo_id));
  json_object_set_new(doc, "variantId", json_string(variant));
  json_object_set(doc, "features", feat);
  json_object_set_new(doc, "installedAtEpochMs", json_integer((json_int_t)installed_at_ms));
  if (json_object_size(doc) != 4) {
    rc = mpk_fail(err, MPK_EINVAL, MPK_MT_REFERENCE_INSTALL_RECORD, NULL, "a field is not valid UTF-8");
    goto out;
  }
  rc = mpk_json_dumps_gson(doc, text, len, err);
out:
  free(sorted);
  json_decref(feat);
  json_decref(doc);
  return rc;
}
