/* The LoRA merge's plan: for each handoff entry its factors (by checkpointNames, else PEFT names),
   its scale (never a default) and its on-disk layout; then the package-wide orientation, observed
   from the non-square entries and never taken on trust (spec "Weight orientation"). Rules:
   docs/mt-merge.md. Nothing here writes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/txn.h"
#include "mt/merge/merge.h"

const char *mpk_mt_orientation_name(mpk_mt_orientation o) {
  switch (o) {
    case MPK_MT_ORIENT_NO_TRANSPOSE: return "no_transpose";
    case MPK_MT_ORIENT_ALREADY_TRANSPOSED: return "already_transposed_for_inference";
    default: return "undecided";
  }
}

/* ---------------------------------------------------------------- layer names */

/* The reference's wrapper vocabulary (layer_name.h / handoff_map.py): peft's raw prefix, ORT's
   checkpoint prefix and peft's ".base_layer" suffix. */
static const char raw_prefix[] = "base_model.model.model.";
static const char ckpt_prefix[] = "backbone.model.";
static const char base_suffix[] = ".base_layer";

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* `s` with prefix `from` replaced by `to` (a copy of `s` when it does not start with `from`). */
static void swap_prefix(const char *s, const char *from, const char *to, char *out, size_t size) {
  size_t k = strlen(from);
  if (strncmp(s, from, k) == 0) snprintf(out, size, "%s%s", to, s + k);
  else snprintf(out, size, "%s", s);
}

/* The module path in peft's raw space, without ".base_layer":
   backbone.model.layers.0.q_proj.base_layer -> base_model.model.model.layers.0.q_proj */
static void raw_module(const char *layer, char *out, size_t size) {
  swap_prefix(layer, ckpt_prefix, raw_prefix, out, size);
  if (ends_with(out, base_suffix)) out[strlen(out) - strlen(base_suffix)] = '\0';
}

/* ---------------------------------------------------------------- the scale's sources */

typedef struct scale_config {
  const char *file;          /* NULL: absent */
  json_t *root;
  int has_ratio;             /* alpha and rank both usable */
  double alpha;
  int64_t rank;
  int rslora;                /* adapter_config.json: use_rslora → alpha / sqrt(r) */
} scale_config;

static int number_at(const json_t *obj, const char *key, double *out) {
  const json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v)) return 0;
  if (!json_is_number(v)) return -1;
  *out = json_number_value(v);
  return isfinite(*out) ? 1 : -1;
}

static int rank_at(const json_t *obj, const char *key, int64_t *out) {
  const json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v)) return 0;
  return mpk_json_safe_integer(v, out) && *out >= 1 ? 1 : -1;
}

/* Read alpha/rank from `file` (absent: no config). kind 0: training_config.json (alpha, rank);
   kind 1: PEFT adapter_config.json (lora_alpha, r, use_rslora; alpha_pattern/rank_pattern are
   per-module overrides this reader does not apply, so a non-empty one is refused). */
static int scale_config_load(const char *file, int kind, scale_config *c, mpk_error *err) {
  memset(c, 0, sizeof *c);
  if (!mpk_file_exists(file)) return 0;
  c->file = file;
  int rc = mpk_json_load_file(file, NULL, &c->root, err);
  if (rc) return rc;
  if (!json_is_object(c->root)) return mpk_fail(err, MPK_EMALFORMED, file, "", "expected an object");
  const char *ak = kind ? "lora_alpha" : "alpha", *rk = kind ? "r" : "rank";
  int ha = number_at(c->root, ak, &c->alpha), hr = rank_at(c->root, rk, &c->rank);
  char ptr[32];
  if (ha < 0) {
    snprintf(ptr, sizeof ptr, "/%s", ak);
    return mpk_fail(err, MPK_EMALFORMED, file, ptr, "%s must be a finite number", ak);
  }
  if (hr < 0) {
    snprintf(ptr, sizeof ptr, "/%s", rk);
    return mpk_fail(err, MPK_EMALFORMED, file, ptr, "%s must be an integer >= 1", rk);
  }
  c->has_ratio = ha > 0 && hr > 0;
  if (kind) {
    const json_t *rs = json_object_get(c->root, "use_rslora");
    if (rs && !json_is_boolean(rs) && !json_is_null(rs))
      return mpk_fail(err, MPK_EMALFORMED, file, "/use_rslora", "use_rslora must be true or false");
    c->rslora = json_is_true(rs);
    static const char *const patterns[] = {"alpha_pattern", "rank_pattern"};
    for (size_t i = 0; i < 2; i++) {
      const json_t *pat = json_object_get(c->root, patterns[i]);
      if (pat && !json_is_null(pat) && !(json_is_object(pat) && json_object_size(pat) == 0)) {
        snprintf(ptr, sizeof ptr, "/%s", patterns[i]);
        return mpk_fail(err, MPK_EUNSUPPORTED, file, ptr,
                        "per-module %s is not supported: give the scale with --scale", patterns[i]);
      }
    }
  }
  return 0;
}

/* The peft_mapping member for `layer` under any of the reference's four spellings (raw or
   checkpoint prefix, with or without ".base_layer"); NULL when none. */
static const json_t *peft_mapping_for(const json_t *training, const char *layer, const char **key_out) {
  const json_t *pm = json_object_get(training, "peft_mapping");
  if (!json_is_object(pm)) return NULL;
  /* forms: the name as given, then with the other prefix; each with and without the suffix */
  char given[512], swapped[512], given_t[600], swapped_t[600];
  snprintf(given, sizeof given, "%s", layer);
  swap_prefix(layer, ckpt_prefix, raw_prefix, swapped, sizeof swapped);
  if (strcmp(swapped, layer) == 0) swap_prefix(layer, raw_prefix, ckpt_prefix, swapped, sizeof swapped);
  const char *bases[2] = {given, swapped};
  char *toggled[2] = {given_t, swapped_t};
  for (int i = 0; i < 2; i++) {
    const char *b = bases[i];
    size_t n = strlen(b), k = strlen(base_suffix);
    if (ends_with(b, base_suffix)) snprintf(toggled[i], 600, "%.*s", (int)(n - k), b);
    else snprintf(toggled[i], 600, "%s%s", b, base_suffix);
  }
  const char *forms[4] = {given, given_t, swapped, swapped_t};
  for (int i = 0; i < 4; i++) {
    const json_t *m = json_object_get(pm, forms[i]);
    if (m) {
      *key_out = json_object_iter_key(json_object_iter_at((json_t *)pm, forms[i]));
      return m;
    }
  }
  return NULL;
}

/* The item's scale: --scale; else a per-layer peft_mapping "alpha" (the reference passes it to the
   merger as the multiplier itself: MARS writes it already divided by the rank); else alpha / rank
   from training_config.json and from adapter_config.json, which must agree when both exist. */
static int item_scale(merge_item *it, const mpk_mt_merge_options *o, const json_t *p_in_recorded,
                      const scale_config *train, const scale_config *peft, mpk_error *err) {
  const char *layer = it->e->training_base_layer_name;
  if (p_in_recorded) {
    /* Re-applied by an update: the scale this adapter was merged with, as recorded. */
    const json_t *es = json_object_get(p_in_recorded, "entries"), *e;
    size_t k;
    json_array_foreach(es, k, e) {
      if (strcmp(json_string_value(json_object_get(e, "layer")), layer) != 0) continue;
      it->scale = json_number_value(json_object_get(e, "scale"));
      snprintf(it->scale_source, sizeof it->scale_source, "re-applied as recorded: %.150s",
               json_string_value(json_object_get(e, "scale_source")));
      return 0;
    }
    return mpk_fail(err, MPK_ENOTFOUND, o->adapter, NULL, "entry \"%.200s\": the recorded adapter has no scale for it",
                    layer);
  }
  if (o->has_scale) {
    it->scale = o->scale;
    snprintf(it->scale_source, sizeof it->scale_source, "--scale");
    return 0;
  }
  if (train->root) {
    const char *key = NULL;
    const json_t *m = peft_mapping_for(train->root, layer, &key);
    if (json_is_object(m)) {
      double a;
      int64_t r;
      int ha = number_at(m, "alpha", &a), hr = rank_at(m, "rank", &r);
      if (ha < 0 || hr < 0)
        return mpk_fail(err, MPK_EMALFORMED, train->file, "/peft_mapping",
                        "peft_mapping[\"%.200s\"]: alpha must be a finite number and rank an integer >= 1", key);
      if (hr > 0 && r != it->rank)
        return mpk_fail(err, MPK_EMISMATCH, train->file, "/peft_mapping",
                        "peft_mapping[\"%.200s\"] declares rank %lld but the adapter's factors have rank %lld", key,
                        (long long)r, (long long)it->rank);
      if (ha > 0) {
        it->scale = a;
        snprintf(it->scale_source, sizeof it->scale_source, "training_config.json peft_mapping alpha %g (per layer)", a);
        return 0;
      }
    }
  }
  const scale_config *src[2] = {train, peft};
  const char *names[2] = {"training_config.json alpha/rank", "adapter_config.json lora_alpha/r"};
  int have = -1;
  double s[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    if (!src[k]->has_ratio) continue;
    if (src[k]->rank != it->rank)
      return mpk_fail(err, MPK_EMISMATCH, src[k]->file, NULL,
                      "entry \"%.200s\": the rank here is %lld but its factors have rank %lld (adapter_A is [%lld, %lld])",
                      layer, (long long)src[k]->rank, (long long)it->rank, (long long)it->rank, (long long)it->in);
    s[k] = src[k]->rslora ? src[k]->alpha / sqrt((double)src[k]->rank) : src[k]->alpha / (double)src[k]->rank;
    if (have >= 0 && fabs(s[k] - s[have]) > 1e-12 * fabs(s[have]))
      return mpk_fail(err, MPK_EMISMATCH, src[k]->file, NULL,
                      "the scale here (%g) disagrees with %s (%g): give the right one with --scale", s[k],
                      src[have]->file, s[have]);
    if (have < 0) have = k;
  }
  if (have < 0)
    return mpk_fail(err, MPK_ENOTFOUND, o->adapter, NULL,
                    "entry \"%.200s\": no usable scale: training_config.json has no alpha and rank, there is no "
                    "adapter_config.json with lora_alpha and r beside the adapter, and no --scale was given",
                    layer);
  it->scale = s[have];
  snprintf(it->scale_source, sizeof it->scale_source, "%s = %g / %lld%s", names[have], src[have]->alpha,
           (long long)src[have]->rank, src[have]->rslora ? " (rsLoRA: alpha / sqrt(r))" : "");
  return 0;
}

/* ---------------------------------------------------------------- factors */

static const char *checkpoint_name(const mpk_mt_handoff_entry *e, const char *role) {
  for (size_t i = 0; i < e->n_checkpoint_names; i++)
    if (strcmp(e->checkpoint_names[i].key, role) == 0) return e->checkpoint_names[i].value;
  return NULL;
}

/* A factor by checkpointNames[role], else by its PEFT names: <module>.lora_X.weight with the module
   in raw space (base_model.model.model....) or without peft's "base_model.model." wrapper. */
static const mpk_safetensors_tensor *find_factor(const mpk_safetensors *st, const mpk_mt_handoff_entry *e, const char *role,
                                        const char *lora) {
  const char *cn = checkpoint_name(e, role);
  const mpk_safetensors_tensor *t = cn ? mpk_safetensors_find(st, cn) : NULL;
  if (t) return t;
  char module[512], name[600];
  raw_module(e->training_base_layer_name, module, sizeof module);
  snprintf(name, sizeof name, "%s.%s.weight", module, lora);
  if ((t = mpk_safetensors_find(st, name))) return t;
  static const char wrapper[] = "base_model.model.";
  if (strncmp(module, wrapper, strlen(wrapper)) == 0) {
    snprintf(name, sizeof name, "%s.%s.weight", module + strlen(wrapper), lora);
    t = mpk_safetensors_find(st, name);
  }
  return t;
}

static int factor_f32(const mpk_safetensors_tensor *t, const char *file, const char *layer, float **out, mpk_error *err) {
  mpk_error why; /* the caller's err may be NULL */
  mpk_error_clear(&why);
  int rc = mpk_safetensors_tensor_to_f32(t, out, &why);
  if (rc)
    return mpk_fail(err, rc, file, NULL, "entry \"%.200s\": factor \"%.200s\" (%s) cannot be read as float: %s", layer,
                    t->name, t->dtype, why.message);
  return 0;
}

static int plan_item(merge_plan *p, const mpk_mt_merge_options *o, const mpk_mt_handoff_entry *e, merge_item *it,
                     mpk_error *err) {
  const char *layer = e->training_base_layer_name, *af = o->adapter;
  it->e = e;
  it->a = find_factor(p->adapter, e, "adapter_A", "lora_A");
  it->b = find_factor(p->adapter, e, "adapter_B", "lora_B");
  if (!it->a || !it->b) {
    char module[512];
    raw_module(layer, module, sizeof module);
    const char *cn = checkpoint_name(e, it->a ? "adapter_B" : "adapter_A");
    return mpk_fail(err, MPK_ENOTFOUND, af, NULL,
                    "entry \"%.200s\": the adapter has no %s factor (looked for \"%.200s\" from checkpointNames and "
                    "\"%.200s.%s.weight\")",
                    layer, it->a ? "adapter_B" : "adapter_A", cn ? cn : "(none)", module, it->a ? "lora_B" : "lora_A");
  }
  if (it->a->ndim != 2 || it->b->ndim != 2 || it->a->shape[0] != it->b->shape[1] || it->a->shape[0] < 1 ||
      it->a->shape[1] < 1 || it->b->shape[0] < 1)
    return mpk_fail(err, MPK_EMISMATCH, af, NULL,
                    "entry \"%.200s\": adapter_A must be [rank, in] and adapter_B [out, rank] with the same rank; "
                    "got %s %s-D [%lld, %lld] and %s %s-D [%lld, %lld]",
                    layer, it->a->name, it->a->ndim == 2 ? "2" : "not 2", (long long)it->a->shape[0],
                    (long long)(it->a->ndim > 1 ? it->a->shape[1] : 0), it->b->name, it->b->ndim == 2 ? "2" : "not 2",
                    (long long)it->b->shape[0], (long long)(it->b->ndim > 1 ? it->b->shape[1] : 0));
  it->rank = it->a->shape[0];
  it->in = it->a->shape[1];
  it->out = it->b->shape[0];
  const char *fc = checkpoint_name(e, "weight");
  it->frozen = fc && !(p->in && p->in->ignore_frozen) ? mpk_safetensors_find(p->adapter, fc) : NULL;

  /* The weight-like role and its declared on-disk layout. */
  it->role = e->quantized ? MPK_MT_ROLE_WEIGHT_QUANTIZED : MPK_MT_ROLE_WEIGHT;
  if (!e->external_data_location[it->role])
    return mpk_fail(err, MPK_EMALFORMED, p->loc.map_file, NULL, "entry \"%.200s\": role \"%s\" has no externalDataLocation",
                    layer, mpk_mt_role_name(it->role));
  const int64_t *shape;
  size_t ndim;
  mpk_error why;
  mpk_error_clear(&why);
  int rc = mpk_mt_handoff_role_layout(e, it->role, &it->dtype, &shape, &ndim, &why);
  if (rc) return mpk_fail(err, rc, p->loc.map_file, NULL, "%s", why.message);
  if (ndim != 2)
    return mpk_fail(err, MPK_EUNSUPPORTED, p->loc.map_file, NULL,
                    "entry \"%.200s\": the %s is %zu-D; a LoRA delta merges into a 2-D weight", layer,
                    mpk_mt_role_name(it->role), ndim);
  it->rows = shape[0];
  it->cols = shape[1];
  /* Observe: the delta is (B rows, A cols) = (out, in). */
  if (it->rows == it->out && it->cols == it->in)
    it->observed = it->out == it->in ? MPK_MT_ORIENT_UNDECIDED : MPK_MT_ORIENT_NO_TRANSPOSE;
  else if (it->rows == it->in && it->cols == it->out)
    it->observed = MPK_MT_ORIENT_ALREADY_TRANSPOSED;
  else
    return mpk_fail(err, MPK_EMISMATCH, af, NULL,
                    "entry \"%.200s\": the delta B @ A is [%lld, %lld] but the weight on disk is [%lld, %lld] "
                    "(neither that nor its transpose): these factors do not belong to this weight",
                    layer, (long long)it->out, (long long)it->in, (long long)it->rows, (long long)it->cols);
  if (it->frozen) {
    bool same = it->frozen->ndim == 2 && it->frozen->shape[0] == it->out && it->frozen->shape[1] == it->in;
    if (!same)
      return mpk_fail(err, MPK_EMISMATCH, af, NULL,
                      "entry \"%.200s\": the frozen base weight \"%.200s\" must be [out, in] = [%lld, %lld], the "
                      "checkpoint's layout",
                      layer, it->frozen->name, (long long)it->out, (long long)it->in);
  }
  if ((rc = factor_f32(it->a, af, layer, &it->A, err)) || (rc = factor_f32(it->b, af, layer, &it->B, err))) return rc;
  return 0;
}

/* ---------------------------------------------------------------- orientation */

/* exportedAt on or after 2026-08-14, the day the producer started assigning transposePolicy. */
static bool exported_after_fix(const char *at) {
  if (!at || strlen(at) < 10) return false;
  for (int i = 0; i < 10; i++)
    if (i == 4 || i == 7 ? at[i] != '-' : (at[i] < '0' || at[i] > '9')) return false;
  return strncmp(at, "2026-08-14", 10) >= 0;
}

static int decide_orientation(merge_plan *p, const mpk_mt_merge_options *o, mpk_error *err) {
  const merge_item *first = NULL;
  size_t n_decided = 0;
  for (size_t i = 0; i < p->n_items; i++) {
    const merge_item *it = &p->items[i];
    if (it->observed == MPK_MT_ORIENT_UNDECIDED) continue;
    n_decided++;
    if (!first) first = it;
    else if (it->observed != first->observed)
      return mpk_fail(err, MPK_EMISMATCH, p->loc.map_file, NULL,
                      "mixed orientations: entry \"%.200s\" is %s (on disk [%lld, %lld], delta [%lld, %lld]) but entry "
                      "\"%.200s\" is %s: one export uses one convention, so nothing is merged",
                      first->e->training_base_layer_name, mpk_mt_orientation_name(first->observed),
                      (long long)first->rows, (long long)first->cols, (long long)first->out, (long long)first->in,
                      it->e->training_base_layer_name, mpk_mt_orientation_name(it->observed));
  }
  if (first) {
    if (o->orientation && o->orientation != first->observed)
      return mpk_fail(err, MPK_EMISMATCH, p->loc.map_file, NULL,
                      "--orientation %s contradicts the tensors: entry \"%.200s\" is [%lld, %lld] on disk and its delta "
                      "[%lld, %lld], so it is %s",
                      mpk_mt_orientation_name(o->orientation), first->e->training_base_layer_name, (long long)first->rows,
                      (long long)first->cols, (long long)first->out, (long long)first->in,
                      mpk_mt_orientation_name(first->observed));
    p->orientation = first->observed;
    snprintf(p->evidence, sizeof p->evidence,
             "observed from %zu non-square entr%s, e.g. \"%.150s\": on disk [%lld, %lld], delta B @ A [%lld, %lld]",
             n_decided, n_decided == 1 ? "y" : "ies", first->e->training_base_layer_name, (long long)first->rows,
             (long long)first->cols, (long long)first->out, (long long)first->in);
    return 0;
  }
  /* Every weight is square: the tensors cannot tell. */
  mpk_mt_transpose_policy declared = p->items[0].e->transpose_policy;
  for (size_t i = 1; i < p->n_items; i++)
    if (p->items[i].e->transpose_policy != declared) {
      if (o->orientation) break;
      return mpk_fail(err, MPK_EMISMATCH, p->loc.map_file, NULL,
                      "every weight is square and the entries declare different transposePolicy values: give "
                      "--orientation");
    }
  mpk_mt_orientation d = declared == MPK_MT_ALREADY_TRANSPOSED_FOR_INFERENCE ? MPK_MT_ORIENT_ALREADY_TRANSPOSED
                                                                              : MPK_MT_ORIENT_NO_TRANSPOSE;
  const char *at = p->loc.manifest->exported_at;
  if (o->orientation) {
    p->orientation = o->orientation;
    snprintf(p->evidence, sizeof p->evidence,
             "every weight is square, so the tensors cannot tell: --orientation %s as given",
             mpk_mt_orientation_name(o->orientation));
    return 0;
  }
  if (!exported_after_fix(at))
    return mpk_fail(err, MPK_EUNSUPPORTED, p->loc.manifest_file, "/exportedAt",
                    "every weight is square, so the orientation cannot be observed, and transposePolicy cannot be "
                    "trusted for a package exported %s%s%s (packages before 2026-08-14 declare no_transpose "
                    "unconditionally): give --orientation no_transpose or already_transposed_for_inference",
                    at && *at ? "at \"" : "without an exportedAt", at && *at ? at : "", at && *at ? "\"" : "");
  p->orientation = d;
  snprintf(p->evidence, sizeof p->evidence,
           "every weight is square; the declared transposePolicy %s is trusted because the package was exported at "
           "%.40s (on or after 2026-08-14)",
           mpk_mt_orientation_name(d), at);
  return 0;
}

/* ---------------------------------------------------------------- the plan */

void mpk_merge_plan_free(merge_plan *p) {
  for (size_t i = 0; i < p->n_items; i++) {
    mpk_free(p->items[i].A);
    mpk_free(p->items[i].B);
  }
  free(p->items);
  mpk_safetensors_free(p->adapter);
  mpk_mt_handoff_free(p->map);
  mpk_unmap_file(&p->adapter_bytes);
  if (p->borrowed_manifest) p->loc.manifest = NULL;
  mpk_mt_located_free(&p->loc);
  if (p->inference_fd >= 0) close(p->inference_fd);
  mpk_findings_free(&p->notes);
  memset(p, 0, sizeof *p);
  p->inference_fd = -1;
}

/* Adapter tensors no entry used: a note each (the first few), so a wrong adapter is visible. */
static void note_unused(merge_plan *p) {
  size_t unused = 0;
  for (size_t k = 0; k < p->adapter->n_tensors; k++) {
    const mpk_safetensors_tensor *t = &p->adapter->tensors[k];
    bool used = false;
    for (size_t i = 0; i < p->n_items && !used; i++)
      used = p->items[i].a == t || p->items[i].b == t || p->items[i].frozen == t;
    if (!used && unused++ < 5) mpk_findings_note(&p->notes, "adapter tensor \"%.200s\" belongs to no handoff entry", t->name);
  }
  if (unused > 5) mpk_findings_note(&p->notes, "... and %zu more adapter tensors that belong to no handoff entry", unused - 5);
}

static int plan_items(const mpk_mt_merge_options *o, merge_plan *p, mpk_error *err);

/* An interrupted merge is finished or undone first: the bases below must be what they are. */
static int plan_recover(merge_plan *p, mpk_error *err) {
  mpk_txn_outcome how;
  int rc = mpk_txn_recover_at(p->inference_fd, p->loc.inference_dir, MPK_MT_MERGE_TXN, &how, err);
  if (rc) return rc;
  size_t files = how.action == MPK_TXN_ROLLED_FORWARD ? how.files : how.removed;
  if (how.action == MPK_TXN_ROLLED_FORWARD)
    mpk_findings_note(&p->notes, "an interrupted merge had committed: finished it (%zu file%s renamed)", files,
                      files == 1 ? "" : "s");
  else if (how.action == MPK_TXN_ROLLED_BACK)
    mpk_findings_note(&p->notes, "an interrupted merge had not committed: undone (%zu temporary file%s removed)",
                      files, files == 1 ? "" : "s");
  return 0;
}

/* The adapter: mapped once, then parsed within its budget from those bytes (the copy a merge keeps
   in the tree is made from the same bytes, so what was merged is what is kept). */
static int plan_adapter(const mpk_mt_merge_options *o, merge_plan *p, mpk_error *err) {
  int rc = mpk_map_file(o->adapter, 0, &p->adapter_bytes, err);
  if (rc) return rc;
  return mpk_safetensors_parse_budget(p->adapter_bytes.data, p->adapter_bytes.size, o->adapter, &o->adapter_budget,
                                      &p->adapter, err);
}

static int plan_body(const char *dir, const mpk_mt_merge_options *o, merge_plan *p, mpk_error *err) {
  if (!o->adapter) return mpk_fail(err, MPK_EINVAL, dir, NULL, "no adapter file given");
  if (o->has_scale && !isfinite(o->scale)) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "the scale must be a finite number");
  int rc = mpk_mt_locate(dir, o->variant, &p->loc, err);
  if (rc) return rc;
  const char *vid = p->loc.variant->id;
  /* Every tensor, sidecar, journal and record is read and written through this handle: no
     component of the inference directory's path may be a link, and a package shipping a merge
     journal or record is refused before anything is replayed. */
  if ((rc = mpk_mt_open_inference(dir, &p->loc, &p->inference_fd, err))) return rc;
  if (p->inference_fd < 0)
    return mpk_fail(err, MPK_ENOTFOUND, p->loc.manifest_file, NULL,
                    "variant \"%s\" has no inference directory: there is nothing to merge into", vid);
  if ((rc = plan_recover(p, err))) return rc;
  if ((rc = mpk_mt_load_map(dir, &p->loc, &p->map, err))) {
    if (rc == MPK_ENOTFOUND && p->loc.map_file)
      mpk_fail(err, MPK_ENOTFOUND, p->loc.map_file, NULL,
               "variant \"%s\" has no weight handoff map: there is nothing to merge into", vid);
    return rc;
  }
  if (!p->map->n_entries)
    return mpk_fail(err, MPK_ENOTFOUND, p->loc.map_file, "/entries", "the map has no entries: there is nothing to merge into");
  return plan_items(o, p, err);
}

static int plan_items(const mpk_mt_merge_options *o, merge_plan *p, mpk_error *err) {
  int rc = plan_adapter(o, p, err);
  if (rc) return rc;
  const char *dir = p->loc.inference_dir;
  scale_config train = {0}, peft = {0};
  char *train_file = p->loc.train_dir ? mpk_path_join(p->loc.train_dir, "training_config.json") : NULL;
  char *peft_file = NULL;
  {
    const char *slash = strrchr(o->adapter, '/');
    char *adir = slash ? strndup(o->adapter, (size_t)(slash - o->adapter)) : strdup(".");
    peft_file = adir ? mpk_path_join(adir, "adapter_config.json") : NULL;
    free(adir);
  }
  if ((p->loc.train_dir && !train_file) || !peft_file) {
    rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
    goto out;
  }
  if (!o->has_scale && !(p->in && p->in->recorded) &&
      ((train_file && (rc = scale_config_load(train_file, 0, &train, err))) ||
       (rc = scale_config_load(peft_file, 1, &peft, err))))
    goto out;

  if (!(p->items = calloc(p->map->n_entries, sizeof *p->items))) {
    rc = mpk_fail(err, MPK_ENOMEM, dir, NULL, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < p->map->n_entries; i++) {
    merge_item *it = &p->items[p->n_items++];
    if ((rc = plan_item(p, o, &p->map->entries[i], it, err)) || (rc = item_scale(it, o, p->in ? p->in->recorded : NULL, &train, &peft, err))) goto out;
  }
  if ((rc = decide_orientation(p, o, err))) goto out;
  note_unused(p);
out:
  json_decref(train.root);
  json_decref(peft.root);
  free(train_file);
  free(peft_file);
  return rc;
}

int mpk_merge_plan(const char *dir, const mpk_mt_merge_options *o, merge_plan *p, mpk_error *err) {
  memset(p, 0, sizeof *p);
  p->inference_fd = -1;
  int rc = plan_body(dir, o, p, err);
  if (rc) mpk_merge_plan_free(p); /* whatever the body had taken when it stopped */
  return rc;
}

int mpk_merge_plan_at(const mpk_mt_manifest *m, const mpk_mt_variant *variant, int inference_fd,
                      const char *inference_shown, const char *map_path, const mpk_mt_merge_options *o,
                      const merge_internal *in, merge_plan *p, mpk_error *err) {
  memset(p, 0, sizeof *p);
  p->inference_fd = inference_fd;
  p->in = in;
  p->borrowed_manifest = true;
  p->loc.manifest = (mpk_mt_manifest *)m;
  p->loc.variant = variant;
  int rc = 0;
  if (!(p->loc.inference_dir = strdup(inference_shown)) || !(p->loc.map_file = strdup(map_path)))
    rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  if (!rc && !o->adapter) rc = mpk_fail(err, MPK_EINVAL, inference_shown, NULL, "no adapter file given");
  if (!rc) rc = plan_recover(p, err);
  if (!rc) rc = mpk_mt_handoff_load(map_path, &p->map, err);
  if (!rc && !p->map->n_entries)
    rc = mpk_fail(err, MPK_ENOTFOUND, map_path, "/entries", "the map has no entries: there is nothing to merge into");
  if (!rc) rc = plan_items(o, p, err);
  if (rc) mpk_merge_plan_free(p);
  return rc;
}
