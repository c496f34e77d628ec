/* What this build of the library holds: its components (CMake options MPK_WITH_<X>, passed as
   compile definitions; docs/components.md) and what hashes in this process. */
#include <string.h>

#include "core/core.h"
#include "core/hash.h"

#ifndef MPK_WITH_MLC
#define MPK_WITH_MLC 1
#endif
#ifndef MPK_WITH_MT
#define MPK_WITH_MT 1
#endif
#ifndef MPK_WITH_FETCH
#define MPK_WITH_FETCH 1
#endif
#ifndef MPK_WITH_AUDIO
#define MPK_WITH_AUDIO 1
#endif
#ifndef MPK_WITH_IMAGE
#define MPK_WITH_IMAGE 1
#endif
#ifndef MPK_WITH_ONNX
#define MPK_WITH_ONNX 1
#endif

static const struct {
  const char *name;
  int built;
} components[] = {
    {"core", 1},
    {"mlc", MPK_WITH_MLC},
    {"mt", MPK_WITH_MT},
    {"fetch", MPK_WITH_FETCH},
    {"audio", MPK_WITH_AUDIO},
    {"image", MPK_WITH_IMAGE},
    {"onnx", MPK_WITH_ONNX},
};

const char *mpk_components(void) {
  /* Concatenated at compile time: which components are built is a compile-time fact. */
  static const char list[] = "core"
#if MPK_WITH_MLC
                             " mlc"
#endif
#if MPK_WITH_MT
                             " mt"
#endif
#if MPK_WITH_FETCH
                             " fetch"
#endif
#if MPK_WITH_AUDIO
                             " audio"
#endif
#if MPK_WITH_IMAGE
                             " image"
#endif
#if MPK_WITH_ONNX
                             " onnx"
#endif
      ;
  return list;
}

int mpk_has_component(const char *name) {
  if (!name) return 0;
  for (size_t i = 0; i < sizeof components / sizeof components[0]; i++)
    if (strcmp(components[i].name, name) == 0) return components[i].built;
  return 0;
}

const char *mpk_hash_implementation(void) { return mpk_hasher_implementation(); }
