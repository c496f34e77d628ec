/* mt install over a merged install (docs/mt-install.md, "Updating a merged install"): the adapters
   recorded in the installed tree's membership re-applied to the staged new tree before the commit
   point, or dropped with the entry that no longer fits named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mt/mt.h"
#include "mt/install/install.h"
#include "mt/merge/merge.h"
#include "fetch/engine.h"

static int add_adapter(mpk_mt_install_result *out, const char *sha, bool reapplied, const char *reason, mpk_error *err) {
  if (!out) return 0;
  mpk_mt_install_adapter *n = realloc(out->adapters, (out->n_adapters + 1) * sizeof *n);
  if (!n) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  out->adapters = n;
  mpk_mt_install_adapter *a = &n[out->n_adapters];
  a->sha256 = strdup(sha ? sha : "");
  a->reapplied = reapplied;
  a->reason = reason ? strdup(reason) : NULL;
  out->n_adapters++;
  if (!a->sha256 || (reason && !a->reason)) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  return 0;
}

static void shape_text(const json_t *shape, char *out, size_t size) {
  size_t n = 0, i;
  const json_t *d;
  n += (size_t)snprintf(out + n, size - n, "[");
  json_array_foreach(shape, i, d) if (n < size) n += (size_t)snprintf(out + n, size - n, "%s%lld", i ? ", " : "",
                                                                          (long long)json_integer_value(d));
  if (n < size) snprintf(out + n, size - n, "]");
}

/* Whether every entry the adapter was merged into is in the new map with the same tensors, shape
   and dtype, and the new map has no entry the adapter does not cover; else the first misfit, in
   words (old vs new). */
static bool fits(const json_t *adapter, const mpk_mt_handoff *map, char *why, size_t size) {
  const json_t *es = json_object_get(adapter, "entries"), *e;
  size_t i;
  json_array_foreach(es, i, e) {
    const char *layer = json_string_value(json_object_get(e, "layer"));
    const mpk_mt_handoff_entry *ne = NULL;
    for (size_t k = 0; k < map->n_entries && !ne; k++)
      if (strcmp(map->entries[k].training_base_layer_name, layer) == 0) ne = &map->entries[k];
    char old[96], now[96];
    shape_text(json_object_get(e, "shape"), old, sizeof old);
    const char *odt = json_string_value(json_object_get(e, "dtype"));
    if (!ne) {
      snprintf(why, size, "entry \"%.200s\" (%s %s) is no longer in the new version's map", layer, odt, old);
      return false;
    }
    mpk_mt_role role = ne->quantized ? MPK_MT_ROLE_WEIGHT_QUANTIZED : MPK_MT_ROLE_WEIGHT;
    const char *dt = NULL;
    const int64_t *shape = NULL;
    size_t nd = 0;
    mpk_error ignored;
    if (mpk_mt_handoff_role_layout(ne, role, &dt, &shape, &nd, &ignored) || !dt) {
      snprintf(why, size, "entry \"%.200s\": the new map gives no layout for its %s", layer, mpk_mt_role_name(role));
      return false;
    }
    size_t n = 0;
    n += (size_t)snprintf(now + n, sizeof now - n, "[");
    for (size_t d = 0; d < nd && n < sizeof now; d++)
      n += (size_t)snprintf(now + n, sizeof now - n, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (n < sizeof now) snprintf(now + n, sizeof now - n, "]");
    bool quant = json_is_true(json_object_get(e, "quantized"));
    if (strcmp(dt, odt) != 0 || strcmp(old, now) != 0 || quant != (bool)ne->quantized) {
      snprintf(why, size, "entry \"%.200s\": was %s %s%s, now %s %s%s", layer, odt, old, quant ? " quantized" : "", dt,
               now, ne->quantized ? " quantized" : "");
      return false;
    }
    const json_t *ts = json_object_get(e, "tensors"), *t;
    size_t j;
    json_array_foreach(ts, j, t) {
      bool found = false;
      for (int r = 0; r < MPK_MT_ROLE_COUNT && !found; r++)
        found = ne->external_data_location[r] && strcmp(ne->external_data_location[r], json_string_value(t)) == 0;
      if (!found) {
        snprintf(why, size, "entry \"%.200s\": its tensor %s is no longer in the new version's map", layer,
                 json_string_value(t));
        return false;
      }
    }
  }
  for (size_t k = 0; k < map->n_entries; k++) {
    bool covered = false;
    json_array_foreach(es, i, e) covered = covered || strcmp(json_string_value(json_object_get(e, "layer")),
                                                             map->entries[k].training_base_layer_name) == 0;
    if (!covered) {
      snprintf(why, size, "entry \"%.200s\" is new in this version: the adapter has no factors for it",
               map->entries[k].training_base_layer_name);
      return false;
    }
  }
  return true;
}

/* The adapters merged into the installed tree (read under the stage lock: no merge runs), re-applied
   to the staged new tree before the commit — the recorded copy, scale and orientation, onto the new
   shipped bases — when every entry still fits; else reported as dropped and the base installed. A
   crash leaves new/ with merged tensors: the next download re-hashes them against the manifest,
   fetches them again and removes the membership files as strays, then re-applies. */
int mpk_mt_install_reapply(const mpk_mt_variant *v, const mpk_mt_manifest *m, mpk_fetch_stage *st,
                           mpk_mt_install_result *out, mpk_error *err) {
  int tree = -1, ifd = -1, nfd = -1, rc = 0;
  json_t *members = NULL, *record = NULL;
  mpk_mt_handoff *map = NULL;
  char *map_rel = NULL, old_inf[4200], new_inf[4200], why[600];
  if ((rc = mpk_fx_open_tree(st->cache_fd, st->cache_dir, st->name, &tree, err)) || tree < 0) goto out;
  /* Both trees keep their weights in inference/: every installed variant has an "inference" path
     (check's manifest rule, applied before install fetches), which the installed layout flattens. */
  snprintf(old_inf, sizeof old_inf, "%s/inference", st->target);
  mpk_error e;
  mpk_error_clear(&e);
  if (mpk_open_dir_at(tree, st->target, "inference", &ifd, &e) != 0) goto out; /* no inference: nothing merged */
  /* An interrupted merge of the old tree is finished or undone first: its record must be the truth. */
  /* Only when one is pending: recovery takes the directory's lock exclusively, and a reader (the load
     gate) may hold the old tree while it is updated — its tree is then retired, not deleted. */
  mpk_txn_state pending;
  if ((rc = mpk_txn_inspect_at(ifd, old_inf, MPK_MT_MERGE_TXN, &pending, err))) goto out;
  if (pending.pending != MPK_TXN_NOTHING && (rc = mpk_txn_recover_at(ifd, old_inf, MPK_MT_MERGE_TXN, NULL, err)))
    goto out;
  if ((rc = mpk_mt_record_load(ifd, old_inf, &record, err)) || (rc = mpk_mt_members_load(ifd, old_inf, &members, err)))
    goto out;
  size_t n_adapters = json_array_size(json_object_get(members, "adapters"));
  if (!n_adapters) {
    if (record && json_object_size(json_object_get(record, "tensors")))
      rc = add_adapter(out, NULL, false,
                       "the installed tree has merged tensors but no recorded adapter (merged before adapters were "
                       "recorded): installed the base",
                       err);
    goto out;
  }
  const char *drop = NULL;
  if (!v->weight_handoff) drop = "the new version's variant has no weight handoff map: installed the base";
  else if ((rc = mpk_mt_installed_path(v, v->weight_handoff, &map_rel, err))) goto out;
  char map_path[4400];
  if (!drop) {
    snprintf(map_path, sizeof map_path, "%s/%s", st->new_dir, map_rel);
    mpk_error me;
    if (mpk_mt_handoff_load(map_path, &map, &me) != 0) {
      snprintf(why, sizeof why, "the new version's map cannot be read (%.400s): installed the base", me.message);
      drop = why;
    }
  }
  bool keep = json_object_size(json_object_get(members, "kept_base")) > 0;
  for (size_t i = 0; i < n_adapters && !rc; i++) {
    const json_t *a = json_array_get(json_object_get(members, "adapters"), i);
    const char *sha = json_string_value(json_object_get(a, "sha256"));
    if (drop) {
      rc = add_adapter(out, sha, false, drop, err);
      continue;
    }
    if (!fits(a, map, why, sizeof why)) {
      rc = add_adapter(out, sha, false, why, err);
      continue;
    }
    char adapter[4400];
    snprintf(adapter, sizeof adapter, "%s/%s", old_inf, json_string_value(json_object_get(a, "file")));
    const char *orient = json_string_value(json_object_get(a, "orientation"));
    mpk_mt_merge_options mo = {.struct_size = sizeof mo, .adapter = adapter, .keep_base = keep,
                               .orientation = strcmp(orient, "no_transpose") == 0 ? MPK_MT_ORIENT_NO_TRANSPOSE
                                                                                  : MPK_MT_ORIENT_ALREADY_TRANSPOSED};
    merge_internal in = {.recorded = a, .ignore_frozen = true};
    snprintf(new_inf, sizeof new_inf, "%s/inference", st->new_dir);
    if ((rc = mpk_open_dir_at(st->new_fd, st->new_dir, "inference", &nfd, err))) break;
    merge_plan p;
    mpk_error pe;
    mpk_error_clear(&pe);
    int prc = mpk_merge_plan_at(m, v, nfd, new_inf, map_path, &mo, &in, &p, &pe); /* owns nfd */
    nfd = -1;
    if (prc) {
      snprintf(why, sizeof why, "the recorded adapter does not apply to the new version: %.500s", pe.message);
      rc = add_adapter(out, sha, false, why, err);
      continue;
    }
    uint8_t d[32];
    char got[65];
    mpk_sha256(p.adapter_bytes.data, p.adapter_bytes.size, d);
    mpk_hex(d, 32, got);
    if (strcmp(got, sha) != 0) {
      snprintf(why, sizeof why, "the kept copy of the adapter is damaged (sha256 %s, recorded %s): installed the base",
               got, sha);
      mpk_merge_plan_free(&p);
      rc = add_adapter(out, sha, false, why, err);
      continue;
    }
    mpk_mt_merge_report *r = NULL;
    rc = mpk_merge_execute(&p, &mo, &r, err);
    mpk_merge_plan_free(&p);
    mpk_mt_merge_report_free(r);
    if (!rc) rc = add_adapter(out, sha, true, NULL, err);
  }
out:
  if (nfd >= 0) close(nfd);
  if (ifd >= 0) close(ifd);
  if (tree >= 0) close(tree);
  mpk_free(map_rel);
  mpk_mt_handoff_free(map);
  json_decref(members);
  json_decref(record);
  return rc;
}
