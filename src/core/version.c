/* The library's version, and MobileTransformers-style "MAJOR.MINOR" document versions. */
#include <string.h>

#include "core/core.h"

const char *mpk_version(void) { return MPK_VERSION_STRING; }
int mpk_version_number(void) { return MPK_VERSION_NUMBER; }

/* Exactly two non-negative decimal integers separated by one '.': no sign, no space, no third
   part. Leading zeros are accepted ("01.0" is 1.0), as int() accepts them. */
int mpk_doc_version_parse(const char *s, mpk_doc_version *out) {
  if (!s || !out) return MPK_EINVAL;
  unsigned long part[2] = {0, 0};
  const char *p = s;
  for (int k = 0; k < 2; k++) {
    if (*p < '0' || *p > '9') return MPK_EMALFORMED;
    while (*p >= '0' && *p <= '9') {
      if (part[k] > 100000000UL) return MPK_EMALFORMED; /* absurd: refuse rather than overflow */
      part[k] = part[k] * 10 + (unsigned long)(*p++ - '0');
    }
    if (k == 0 && *p++ != '.') return MPK_EMALFORMED;
  }
  if (*p) return MPK_EMALFORMED;
  out->major = (unsigned)part[0];
  out->minor = (unsigned)part[1];
  return 0;
}

int mpk_doc_version_check(const char *doc, const char *min_reader, const char *reader, mpk_error *err) {
  mpk_doc_version d, m, r;
  if (mpk_doc_version_parse(reader, &r))
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "reader version \"%s\" is not MAJOR.MINOR", reader ? reader : "(null)");
  if (!doc) return mpk_fail(err, MPK_EMALFORMED, NULL, "/schemaVersion", "schemaVersion is missing");
  if (mpk_doc_version_parse(doc, &d))
    return mpk_fail(err, MPK_EMALFORMED, NULL, "/schemaVersion",
                    "schemaVersion \"%s\" is malformed: expected MAJOR.MINOR (two non-negative integers)", doc);
  if (!min_reader) return mpk_fail(err, MPK_EMALFORMED, NULL, "/minReaderVersion", "minReaderVersion is missing");
  if (mpk_doc_version_parse(min_reader, &m))
    return mpk_fail(err, MPK_EMALFORMED, NULL, "/minReaderVersion",
                    "minReaderVersion \"%s\" is malformed: expected MAJOR.MINOR (two non-negative integers)", min_reader);
  if (d.major > r.major)
    return mpk_fail(err, MPK_EVERSION, NULL, "/schemaVersion",
                    "schemaVersion %s is a newer major version than this reader supports (%s)", doc, reader);
  if (m.major > r.major || (m.major == r.major && m.minor > r.minor))
    return mpk_fail(err, MPK_EVERSION, NULL, "/minReaderVersion",
                    "minReaderVersion %s is newer than this reader (%s)", min_reader, reader);
  return 0;
}
