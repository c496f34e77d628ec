/* Internal declarations shared by the MobileTransformers contract module. */
#ifndef MPK_MT_INTERNAL_H
#define MPK_MT_INTERNAL_H

#include "../core/core.h"

struct mpk_mt_manifest_priv {
  mpk_arena *arena;
  json_t *root; /* the document as read: unknown fields are kept for writing it back */
};

/* The parsed document (borrowed; valid while the manifest lives). */
const json_t *mpk_mt_manifest_root(const mpk_mt_manifest *m);

#endif
