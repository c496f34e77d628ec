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

/* plan.c: a plan's group by name (NULL when absent), and whether a group's patterns select a path. */
const mpk_mt_group *mpk_mt_plan_group(const mpk_mt_plan *plan, const char *name);
bool mpk_mt_group_selects(const mpk_mt_group *g, const char *path);

#endif
