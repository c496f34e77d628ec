/* A stand-in "ONNX Runtime" for test_ort's version refusals: it exports OrtGetApiBase, reports the
   version in $FAKE_ORT_VERSION (default "1.11.0") and gives no API of any version (GetApi NULL).
   Never called past GetApi: modelpkg must refuse it with MPK_EVERSION. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct fake_base {
  const void *(*GetApi)(uint32_t version);
  const char *(*GetVersionString)(void);
} fake_base;

static const void *get_api(uint32_t version) {
  (void)version;
  return NULL;
}

static const char *version_string(void) {
  const char *v = getenv("FAKE_ORT_VERSION");
  return v ? v : "1.11.0";
}

static const fake_base base = {get_api, version_string};

__attribute__((visibility("default"))) const fake_base *OrtGetApiBase(void) { return &base; }
