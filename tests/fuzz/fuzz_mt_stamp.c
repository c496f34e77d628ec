/* Fuzz target: the load gate's verification stamp reader (.modelpkg-verified.json, docs/mt.md "The
   verification stamp"): a document whose checksum does not cover its body, or whose body is not a
   stamp, is ignored with a reason; an accepted one yields, for each entry, a digest of 64 lowercase
   hex digits when the entry's own values are presented as the file's, and never for other values. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "mt/mt.h"

static int hex64(const char *s) {
  if (strlen(s) != 64) return 0;
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_mt_stamp s;
  char why[256];
  int rc = mpk_mt_stamp_parse(data, size, 0, &s, why, sizeof why);
  if (rc < 0) {
    if (s.root || !why[0]) __builtin_trap();
    return 0;
  }
  if (rc != 1 || !s.root || !json_is_object(s.files)) __builtin_trap();
  const char *name;
  json_t *e;
  json_object_foreach(s.files, name, e) {
    struct stat st;
    memset(&st, 0, sizeof st);
    int64_t mt = (int64_t)json_integer_value(json_object_get(e, "mtime_ns"));
    int64_t ct = (int64_t)json_integer_value(json_object_get(e, "ctime_ns"));
    st.st_dev = (dev_t)json_integer_value(json_object_get(e, "dev"));
    st.st_ino = (ino_t)json_integer_value(json_object_get(e, "ino"));
    st.st_size = (off_t)json_integer_value(json_object_get(e, "size"));
    st.st_mtim.tv_sec = mt / 1000000000, st.st_mtim.tv_nsec = mt % 1000000000;
    st.st_ctim.tv_sec = ct / 1000000000, st.st_ctim.tv_nsec = ct % 1000000000;
    char hex[65] = "";
    int64_t at = 0;
    if (mpk_mt_stamp_lookup(&s, name, &st, hex, &at) && !hex64(hex)) __builtin_trap();
    st.st_size += 1; /* another size: never accepted */
    if (mpk_mt_stamp_lookup(&s, name, &st, hex, &at)) __builtin_trap();
  }
  mpk_mt_stamp_free(&s);
  return 0;
}
