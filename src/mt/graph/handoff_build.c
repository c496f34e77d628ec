/* Building weight_handoff_map.json from the training side's peft_mapping and the initializers the
   inference graph actually holds, the way the reference codec does (TrainableTensorCodec.
   from_peft_mapping, the exporter's _classify_initializers, derive_transpose_policy and
   resolve_package_transpose_policy, HandoffMap.to_json). Names are observed, never derived: a layer
   whose names drifted is an error naming it, never a silent skip. The result is read back by the
   map reader and checked against the graph before it replaces anything. Rules: docs/mt-graph.md. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mt/graph/graph.h"

#define TRAINING_CONFIG "training_config.json"
#define FROZEN_BASE_BLOB "frozen_base.onnx.data"
#define BASE_SUFFIX ".base_layer"

/* One initializer of the graph recognised as a trainable role (ObservedInit). */
typedef struct observed {
  const mpk_mt_initializer *in;
  char *seed;
  int role;
} observed;

typedef struct adapter {
  const char *role;  /* borrowed from the config */
  const json_t *dtype, *shape;
} adapter;

typedef struct build {
  const char *cfg_file, *graph_file;
  mpk_mt_located loc;
  json_t *cfg;
  const json_t *mapping, *specs;
  mpk_mt_graph *graph;
  observed *obs;
  size_t n_obs;
  const char *attn;
  const char *const *known_roles; /* NULL-ended; NULL: every role of the mapping is kept */
  mpk_error *err;
} build;

/* ---------------------------------------------------------------- names */

/* Python's str.replace: every non-overlapping occurrence, left to right. Malloc'ed. */
static char *replace_all(const char *s, const char *from, const char *to) {
  size_t nf = strlen(from), nt = strlen(to), count = 0;
  for (const char *p = s; (p = strstr(p, from)); p += nf) count++;
  char *out = malloc(strlen(s) + count * nt + 1), *o = out;
  if (!out) return NULL;
  for (const char *p = s, *hit; (hit = strstr(p, from)); p = hit + nf) {
    memcpy(o, p, (size_t)(hit - p));
    o += hit - p;
    memcpy(o, to, nt);
    o += nt;
    s = hit + nf;
  }
  strcpy(o, s);
  return out;
}

static bool starts_with(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The training wrappers, removed repeatedly, the longer first (backbone.base_model.model.x -> x). */
static const char *strip_wrappers(const char *name) {
  static const char *const prefixes[] = {"backbone.", "base_model.model.", "base_model."};
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < 3 && !changed; i++)
      if (starts_with(name, prefixes[i])) {
        name += strlen(prefixes[i]);
        changed = true;
      }
  }
  return name;
}

/* Candidate seeds of a training base layer (candidate_inference_names): the "attn" spelling first,
   then the module name unchanged; duplicates dropped. Returns how many (0: out of memory). */
static size_t candidates(const char *base, const char *attn, char *out[2]) {
  char *name = replace_all(strip_wrappers(base), BASE_SUFFIX, ".MatMul");
  if (!name) return 0;
  size_t n = 0;
  if (attn[0] && strcmp(attn, "attn") != 0) {
    char from[256];
    snprintf(from, sizeof from, ".%s.", attn);
    if (!(out[n++] = replace_all(name, from, ".attn."))) {
      free(name);
      return 0;
    }
  }
  if (n && strcmp(out[0], name) == 0) free(name);
  else out[n++] = name;
  return n;
}

/* The token after the last '.' names the role (the exporter's _ROLE_BY_TOKEN: both the QDQ names the
   merger emits and the GPTQ/int4 names). */
static int role_of_token(const char *token) {
  static const struct {
    const char *token;
    int role;
  } roles[] = {{"weight", MPK_MT_ROLE_WEIGHT},          {"weight_quantized", MPK_MT_ROLE_WEIGHT_QUANTIZED},
               {"weight_scale", MPK_MT_ROLE_SCALE},     {"weight_zero_point", MPK_MT_ROLE_ZERO_POINT},
               {"qweight", MPK_MT_ROLE_WEIGHT_QUANTIZED}, {"scales", MPK_MT_ROLE_SCALE},
               {"qzeros", MPK_MT_ROLE_ZERO_POINT}};
  for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
    if (strcmp(token, roles[i].token) == 0) return roles[i].role;
  return -1;
}

/* to_checkpoint_name: the PEFT module path's "base_model.model.model." is "backbone.model." in the
   training graph. Malloc'ed. */
static char *checkpoint_name(const char *module) {
  static const char raw[] = "base_model.model.model.", ckpt[] = "backbone.model.";
  size_t n = strlen(module) + sizeof ckpt + 8;
  char *s = malloc(n);
  if (!s) return NULL;
  if (starts_with(module, raw)) snprintf(s, n, "%s%s", ckpt, module + strlen(raw));
  else snprintf(s, n, "%s", module);
  return s;
}

/* ---------------------------------------------------------------- failures */

static int cfail(build *b, int code, const char *pointer, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int cfail(build *b, int code, const char *pointer, const char *fmt, ...) {
  char msg[480];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mpk_fail(b->err, code, b->cfg_file, pointer, "%s", msg);
}

static const char *layer_ptr(mpk_path *p, const char *layer, const char *k2) {
  mpk_path_init(p);
  mpk_path_push_key(p, "peft_mapping");
  mpk_path_push_key(p, layer);
  if (k2) mpk_path_push_key(p, k2);
  return p->buf;
}

#define OOM(b) mpk_fail((b)->err, MPK_ENOMEM, NULL, NULL, "out of memory")

/* ---------------------------------------------------------------- inputs */

static int peft_roles(build *b, const mpk_mt_manifest *m, const char *method) {
  static const char *const lora[] = {"adapter_A", "adapter_B", NULL}, *const mars[] = {"shared_A", "adapter_B", NULL};
  if (!method) {
    const json_t *pm = json_object_get(mpk_mt_manifest_root(m), "peftMethods");
    if (!json_is_array(pm) || json_array_size(pm) != 1 || !json_is_string(json_array_get(pm, 0)))
      return mpk_fail(b->err, MPK_EINVAL, b->loc.manifest_file, "/peftMethods",
                      "the manifest's peftMethods does not name exactly one method: give the PEFT method (--peft)");
    method = json_string_value(json_array_get(pm, 0));
  }
  if (strcmp(method, "lora") == 0 || strcmp(method, "lora-xs") == 0) b->known_roles = lora;
  else if (strcmp(method, "mars") == 0) b->known_roles = mars;
  else if (strcmp(method, "all") == 0 || strcmp(method, "nolora") == 0) b->known_roles = NULL;
  else
    return mpk_fail(b->err, MPK_EUNSUPPORTED, NULL, NULL,
                    "PEFT method \"%.60s\" is unknown (lora, lora-xs, mars, all, nolora)", method);
  return 0;
}

static int read_config(build *b) {
  if (!b->loc.train_dir)
    return mpk_fail(b->err, MPK_ENOTFOUND, b->loc.manifest_file, NULL,
                    "variant \"%s\" has no \"train\" path: its train/%s holds the peft_mapping", b->loc.variant->id,
                    TRAINING_CONFIG);
  int rc = mpk_json_load_file(b->cfg_file, NULL, &b->cfg, b->err);
  if (rc) return rc;
  if (!json_is_object(b->cfg)) return cfail(b, MPK_EMALFORMED, "", "expected an object");
  b->mapping = json_object_get(b->cfg, "peft_mapping");
  if (!b->mapping || json_is_null(b->mapping) || (json_is_object(b->mapping) && json_object_size(b->mapping) == 0))
    return cfail(b, MPK_EMALFORMED, "/peft_mapping", "training_config has no peft_mapping: nothing to hand off to the merger");
  if (!json_is_object(b->mapping))
    return cfail(b, MPK_EMALFORMED, "/peft_mapping", "peft_mapping must be an object: layer -> {role: checkpoint name}");
  const json_t *rank = json_object_get(b->cfg, "rank"), *alpha = json_object_get(b->cfg, "alpha");
  int64_t r;
  if (rank && !json_is_null(rank) && (!mpk_json_safe_integer(rank, &r) || r < 1))
    return cfail(b, MPK_EMALFORMED, "/rank", "rank must be an integer >= 1");
  if (alpha && !json_is_null(alpha) && (!json_is_number(alpha) || !isfinite(json_number_value(alpha))))
    return cfail(b, MPK_EMALFORMED, "/alpha", "alpha must be a finite number");
  b->specs = json_object_get(b->cfg, "trainable_tensor_specs");
  if (b->specs && json_is_null(b->specs)) b->specs = NULL;
  if (b->specs && !json_is_object(b->specs))
    return cfail(b, MPK_EMALFORMED, "/trainable_tensor_specs", "trainable_tensor_specs must be an object: name -> {dtype, shape}");
  return 0;
}

/* The initializers whose seed is an adapted layer's candidate and whose token is a role. */
static int observe(build *b, const char *const *keys, size_t n_keys) {
  char **seeds = calloc(2 * n_keys + 1, sizeof *seeds);
  size_t n_seeds = 0;
  if (!seeds) return OOM(b);
  int rc = 0;
  for (size_t i = 0; i < n_keys && !rc; i++) {
    char base[1024];
    snprintf(base, sizeof base, "%s%s", keys[i], ends_with(keys[i], BASE_SUFFIX) ? "" : BASE_SUFFIX);
    size_t k = candidates(base, b->attn, seeds + n_seeds);
    if (!k) rc = OOM(b);
    n_seeds += k;
  }
  b->obs = calloc(b->graph->n_initializers ? b->graph->n_initializers : 1, sizeof *b->obs);
  if (!rc && !b->obs) rc = OOM(b);
  for (size_t i = 0; !rc && i < b->graph->n_initializers; i++) {
    const mpk_mt_initializer *in = &b->graph->initializers[i];
    const char *dot = strrchr(in->name, '.');
    size_t sl = dot ? (size_t)(dot - in->name) : 0;
    int role = role_of_token(dot ? dot + 1 : in->name);
    if (role < 0) continue;
    bool trainable = false;
    for (size_t s = 0; s < n_seeds && !trainable; s++) trainable = strlen(seeds[s]) == sl && strncmp(seeds[s], in->name, sl) == 0;
    if (!trainable) continue;
    if (!in->dtype)
      rc = mpk_fail(b->err, MPK_EUNSUPPORTED, b->graph_file, NULL, "initializer \"%.200s\": ONNX data type %d is unknown",
                    in->name, (int)in->data_type);
    else if (!(b->obs[b->n_obs].seed = strndup(in->name, sl))) rc = OOM(b);
    else {
      b->obs[b->n_obs].in = in;
      b->obs[b->n_obs++].role = role;
    }
  }
  for (size_t s = 0; s < n_seeds; s++) free(seeds[s]);
  free(seeds);
  return rc;
}

/* ---------------------------------------------------------------- orientation */

static bool shape2(const json_t *s, int64_t out[2]) {
  return json_is_array(s) && json_array_size(s) == 2 && mpk_json_safe_integer(json_array_get(s, 0), &out[0]) &&
         mpk_json_safe_integer(json_array_get(s, 1), &out[1]);
}

/* derive_transpose_policy: the merger's delta B @ A is [B.rows, A.cols]; equal to the on-disk weight
   shape: no_transpose; equal to its reverse: already_transposed_for_inference; else refused. */
static int derive(build *b, const char *layer, const mpk_mt_initializer *w, const json_t *ashapes, const char **policy) {
  mpk_path p;
  const json_t *a = json_object_get(ashapes, "adapter_A"), *bb = json_object_get(ashapes, "adapter_B");
  if (!a || json_array_size(a) == 0) a = json_object_get(ashapes, "shared_A");
  if (a && json_array_size(a) == 0) a = NULL;
  if (bb && json_array_size(bb) == 0) bb = NULL;
  *policy = "no_transpose";
  if (bb && !a)
    return cfail(b, MPK_EUNSUPPORTED, layer_ptr(&p, layer, NULL),
                 "layer \"%.200s\": adapter shapes describe an up-projection (adapter_B) but no down-projection under "
                 "adapter_A or shared_A, so the weight's orientation cannot be observed",
                 layer);
  int64_t as[2], bs[2];
  if (!a || !bb || !shape2(a, as) || !shape2(bb, bs) || w->ndim != 2) return 0; /* nothing to observe */
  if (w->dims[0] == bs[0] && w->dims[1] == as[1]) return 0;
  if (w->dims[0] == as[1] && w->dims[1] == bs[0]) {
    *policy = "already_transposed_for_inference";
    return 0;
  }
  return cfail(b, MPK_EMISMATCH, layer_ptr(&p, layer, NULL),
               "layer \"%.200s\": adapter factors B [%lld, %lld] @ A [%lld, %lld] make a [%lld, %lld] delta, which is neither "
               "the weight \"%.150s\" [%lld, %lld] nor its transpose: the merge could not add them",
               layer, (long long)bs[0], (long long)bs[1], (long long)as[0], (long long)as[1], (long long)bs[0],
               (long long)as[1], w->name, (long long)w->dims[0], (long long)w->dims[1]);
}

/* ---------------------------------------------------------------- one entry */

static json_t *dims_json(const int64_t *d, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, json_integer(d[i]))) {
      json_decref(a);
      return NULL;
    }
  return a;
}

/* SHA-256 of the shipped inference/<file>, which must be a plain file name resolving inside. */
static int digest(build *b, const char *file, char hex[65]) {
  if (strchr(file, '/') || strcmp(file, "..") == 0)
    return mpk_fail(b->err, MPK_EMALFORMED, b->graph_file, NULL,
                    "\"%.200s\" is not a plain file name: one_file_per_tensor keeps each tensor beside model.onnx", file);
  char *path = mpk_path_join(b->loc.inference_dir, file);
  if (!path) return OOM(b);
  int rc = 0, fd = -1;
  if (!mpk_file_exists(path))
    rc = mpk_fail(b->err, MPK_ENOTFOUND, path, NULL, "the shipped tensor file is missing (a regular file is needed)");
  else if (!mpk_path_resolves_inside(b->loc.inference_dir, path))
    rc = mpk_fail(b->err, MPK_EMALFORMED, path, NULL, "resolves outside the inference directory (through a symbolic link)");
  else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || mpk_sha256_fd(fd, hex))
    rc = mpk_fail(b->err, MPK_EIO, path, NULL, "cannot read: %s", strerror(errno));
  if (fd >= 0) close(fd);
  free(path);
  return rc;
}

static int add_entry(build *b, const char *layer, const json_t *role_names, json_t *entries, const char **policy,
                     bool *has_adapters) {
  mpk_path p;
  char base[1024];
  snprintf(base, sizeof base, "%s%s", layer, ends_with(layer, BASE_SUFFIX) ? "" : BASE_SUFFIX);
  if (!json_is_object(role_names))
    return cfail(b, MPK_EMALFORMED, layer_ptr(&p, layer, NULL),
                 "peft_mapping[\"%.200s\"] must be an object of adapter role -> checkpoint name", layer);
  char *seeds[2] = {NULL, NULL};
  size_t ns = candidates(base, b->attn, seeds);
  if (!ns) return OOM(b);
  /* The first candidate that observed initializers share, in graph order. */
  const observed *group[MPK_MT_ROLE_COUNT * 4];
  size_t ng = 0;
  for (size_t s = 0; s < ns && !ng; s++)
    for (size_t i = 0; i < b->n_obs && ng < sizeof group / sizeof group[0]; i++)
      if (strcmp(b->obs[i].seed, seeds[s]) == 0) group[ng++] = &b->obs[i];
  if (!ng) {
    int rc = cfail(b, MPK_ENOTFOUND, layer_ptr(&p, layer, NULL),
                   "layer \"%.200s\": no initializer of %s matches it (tried seeds \"%s\"%s%s%s): inference/training naming "
                   "drifted",
                   layer, b->graph_file, seeds[0], ns > 1 ? ", \"" : "", ns > 1 ? seeds[1] : "", ns > 1 ? "\"" : "");
    free(seeds[0]);
    free(seeds[1]);
    return rc;
  }
  free(seeds[0]);
  free(seeds[1]);

  const mpk_mt_initializer *names[MPK_MT_ROLE_COUNT] = {NULL}; /* a later role wins, as in a dict */
  const observed *weight_like = NULL;
  bool quantized = false;
  for (size_t i = 0; i < ng; i++) {
    names[group[i]->role] = group[i]->in;
    if (!weight_like && (group[i]->role == MPK_MT_ROLE_WEIGHT || group[i]->role == MPK_MT_ROLE_WEIGHT_QUANTIZED))
      weight_like = group[i];
    quantized |= group[i]->role != MPK_MT_ROLE_WEIGHT;
  }
  if (!weight_like) weight_like = group[0];

  json_t *e = json_object(), *ckpt = json_object(), *adt = json_object(), *ash = json_object(), *mon = json_object(),
         *mtn = json_object(), *iin = json_object(), *edl = json_object(), *sha = json_object(), *tdt = json_object(),
         *tsh = json_object();
  int rc = (!e || !ckpt || !adt || !ash || !mon || !mtn || !iin || !edl || !sha || !tdt || !tsh) ? OOM(b) : 0;
  /* checkpointNames: the adapter roles of the PEFT schema, plus the frozen base weight. */
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)role_names, k, v) {
    if (rc) break;
    bool keep = !b->known_roles;
    for (size_t i = 0; b->known_roles && b->known_roles[i] && !keep; i++) keep = strcmp(k, b->known_roles[i]) == 0;
    if (!keep) continue;
    if (!json_is_string(v) || !json_string_value(v)[0])
      rc = cfail(b, MPK_EMALFORMED, layer_ptr(&p, layer, k), "the checkpoint name of role \"%.60s\" must be a non-empty string", k);
    else if (json_object_set(ckpt, k, v)) rc = OOM(b);
  }
  if (!rc && !json_object_get(ckpt, "weight")) {
    char w[1100];
    snprintf(w, sizeof w, "%s.weight", base);
    if (json_object_set_new(ckpt, "weight", json_string(w))) rc = OOM(b);
  }
  /* adapterDtypes/adapterShapes from the training graph's specs, looked up by checkpoint name. */
  json_object_foreach(ckpt, k, v) {
    if (rc || !b->specs || strcmp(k, "weight") == 0) continue;
    char *cn = checkpoint_name(json_string_value(v));
    char key[1100];
    if (!cn) {
      rc = OOM(b);
      break;
    }
    snprintf(key, sizeof key, "%s.weight", cn);
    free(cn);
    const json_t *spec = json_object_get(b->specs, key);
    if (!spec) continue;
    const json_t *dt = json_object_get(spec, "dtype"), *sh = json_object_get(spec, "shape");
    bool ok = json_is_object(spec) && json_is_string(dt) && json_is_array(sh);
    for (size_t i = 0; ok && i < json_array_size(sh); i++) {
      int64_t d;
      ok = mpk_json_safe_integer(json_array_get(sh, i), &d);
    }
    if (!ok) {
      mpk_path_init(&p);
      mpk_path_push_key(&p, "trainable_tensor_specs");
      mpk_path_push_key(&p, key);
      rc = cfail(b, MPK_EMALFORMED, p.buf, "a tensor spec must be {\"dtype\": string, \"shape\": [integers]}");
    } else if (json_object_set(adt, k, (json_t *)dt) || json_object_set(ash, k, (json_t *)sh)) {
      rc = OOM(b);
    }
  }
  /* The adapters' rank must be the config's (per layer when peft_mapping gives one). */
  const json_t *rank = json_object_get(role_names, "rank");
  if (!rank || json_is_null(rank)) rank = json_object_get(b->cfg, "rank");
  int64_t r;
  if (!rc && rank && json_is_integer(rank) && mpk_json_safe_integer(rank, &r)) {
    const json_t *a = json_object_get(ash, "adapter_A");
    if (!a) a = json_object_get(ash, "shared_A");
    const json_t *bb = json_object_get(ash, "adapter_B");
    int64_t s[2];
    if ((a && shape2(a, s) && s[0] != r) || (bb && shape2(bb, s) && s[1] != r))
      rc = cfail(b, MPK_EMISMATCH, layer_ptr(&p, layer, NULL),
                 "layer \"%.200s\": the adapter factors' rank is not the configured rank %lld", layer, (long long)r);
  }
  for (int role = 0; !rc && role < MPK_MT_ROLE_COUNT; role++) {
    const mpk_mt_initializer *in = names[role];
    if (!in) continue;
    const char *rn = mpk_mt_role_name((mpk_mt_role)role);
    char merged[64], file[1100], hex[65];
    snprintf(merged, sizeof merged, "merged_%s", rn);
    snprintf(file, sizeof file, "%s.bin", in->name);
    if ((rc = digest(b, file, hex))) break;
    if (json_object_set_new(mon, rn, json_string(merged)) || json_object_set_new(mtn, rn, json_string(in->name)) ||
        json_object_set_new(iin, rn, json_string(in->name)) || json_object_set_new(edl, rn, json_string(file)) ||
        json_object_set_new(sha, rn, json_string(hex)) || json_object_set_new(tdt, rn, json_string(in->dtype)) ||
        json_object_set_new(tsh, rn, dims_json(in->dims, in->ndim)))
      rc = OOM(b);
  }
  if (!rc && (rc = derive(b, layer, weight_like->in, ash, policy)) == 0) {
    *has_adapters = json_object_size(ash) > 0;
    const mpk_mt_initializer *w = weight_like->in;
    if (json_object_set_new(e, "trainingBaseLayerName", json_string(base)) || json_object_set(e, "checkpointNames", ckpt) ||
        json_object_set(e, "adapterDtypes", adt) || json_object_set(e, "adapterShapes", ash) ||
        json_object_set(e, "mergerOutputNames", mon) || json_object_set(e, "mergedTensorNames", mtn) ||
        json_object_set(e, "inferenceInitializerNames", iin) || json_object_set(e, "externalDataLocation", edl) ||
        json_object_set(e, "sha256", sha) || json_object_set_new(e, "genaiInputNames", json_object()) ||
        json_object_set_new(e, "dtype", json_string(w->dtype)) || json_object_set_new(e, "shape", dims_json(w->dims, w->ndim)) ||
        json_object_set(e, "tensorDtypes", tdt) || json_object_set(e, "tensorShapes", tsh) ||
        json_object_set_new(e, "transposePolicy", json_string(*policy)))
      rc = OOM(b);
    if (!rc && quantized) {
      const mpk_mt_initializer *q = names[MPK_MT_ROLE_WEIGHT_QUANTIZED], *s = names[MPK_MT_ROLE_SCALE],
                               *z = names[MPK_MT_ROLE_ZERO_POINT];
      if (json_object_set_new(e, "quantization",
                              json_pack("{s:s, s:s, s:s}", "weightQuantizedName", q ? q->name : "", "scaleName",
                                        s ? s->name : "", "zeroPointName", z ? z->name : "")))
        rc = OOM(b);
    }
    if (!rc && json_array_append(entries, e)) rc = OOM(b);
  }
  json_t *all[] = {e, ckpt, adt, ash, mon, mtn, iin, edl, sha, tdt, tsh};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) json_decref(all[i]);
  return rc;
}

/* ---------------------------------------------------------------- the map */

static void first_problem(void *ctx, const mpk_error *e) {
  mpk_error *first = ctx;
  if (!first->code) *first = *e;
}

static int run(build *b, const mpk_mt_handoff_build_options *o, mpk_mt_handoff_build_result *out) {
  int rc = peft_roles(b, b->loc.manifest, o->peft_method);
  if (!rc) rc = read_config(b);
  if (rc) return rc;
  if (!b->loc.inference_dir)
    return mpk_fail(b->err, MPK_ENOTFOUND, b->loc.manifest_file, NULL, "variant \"%s\" has no inference directory",
                    b->loc.variant->id);
  char *gf = mpk_path_join(b->loc.inference_dir, MPK_MT_GRAPH_FILENAME);
  if (!gf) return OOM(b);
  b->graph_file = gf;
  if ((rc = mpk_mt_graph_load(gf, NULL, &b->graph, b->err))) return rc;

  const char **keys = NULL;
  size_t n_keys = 0;
  if (mpk_json_keys_insertion(b->mapping, &keys, &n_keys)) return OOM(b);
  json_t *entries = json_array(), *doc = NULL;
  rc = entries ? observe(b, keys, n_keys) : OOM(b);
  const char **policies = calloc(n_keys ? n_keys : 1, sizeof *policies);
  bool *adapters = calloc(n_keys ? n_keys : 1, sizeof *adapters);
  if (!rc && (!policies || !adapters)) rc = OOM(b);
  for (size_t i = 0; !rc && i < n_keys; i++)
    rc = add_entry(b, keys[i], json_object_get(b->mapping, keys[i]), entries, &policies[i], &adapters[i]);

  /* Specs given, yet no entry described by them: the spelling drifted, and orientation would be
     unobservable (the package would silently say no_transpose). */
  bool any = false;
  for (size_t i = 0; i < n_keys; i++) any |= adapters[i];
  if (!rc && b->specs && json_object_size(b->specs) && n_keys && !any)
    rc = cfail(b, MPK_EMISMATCH, "/trainable_tensor_specs",
               "%zu trainable tensor specs are given but none matches an adapter role of any of the %zu layers (looked up "
               "as <to_checkpoint_name(checkpoint name)>.weight): weight orientation would be unobservable",
               json_object_size(b->specs), n_keys);
  /* One orientation per package, decided by the non-square weights that have adapters. */
  const char *decided = NULL;
  for (size_t i = 0; !rc && i < n_keys; i++) {
    json_t *e = json_array_get(entries, i);
    const json_t *shape = json_object_get(e, "shape");
    int64_t s[2];
    if (!adapters[i] || !shape2(shape, s) || s[0] == s[1]) continue;
    if (decided && strcmp(decided, policies[i]) != 0) {
      mpk_path p;
      rc = cfail(b, MPK_EMISMATCH, layer_ptr(&p, keys[i], NULL),
                 "layer \"%.200s\" is %s but an earlier non-square layer is %s: a package must use one weight orientation "
                 "throughout",
                 keys[i], policies[i], decided);
    }
    decided = policies[i];
  }
  for (size_t i = 0; !rc && i < n_keys; i++)
    if (json_object_set_new(json_array_get(entries, i), "transposePolicy", json_string(decided ? decided : "no_transpose")))
      rc = OOM(b);
  out->policy = decided && strcmp(decided, "no_transpose") != 0 ? MPK_MT_ALREADY_TRANSPOSED_FOR_INFERENCE : MPK_MT_NO_TRANSPOSE;
  free(policies);
  free(adapters);
  free(keys);

  /* mergerModels: the merger graphs the package ships are not built here; keep the current map's. */
  json_t *mergers = NULL;
  char *path = mpk_path_join(b->loc.inference_dir, MPK_MT_HANDOFF_FILENAME);
  if (!path && !rc) rc = OOM(b);
  if (!rc) {
    mpk_mt_handoff *old = NULL;
    mergers = json_object();
    for (size_t i = 0; mergers && mpk_mt_handoff_load(path, &old, NULL) == 0 && i < old->n_merger_models; i++)
      json_object_set_new(mergers, old->merger_models[i].key, json_string(old->merger_models[i].value));
    mpk_mt_handoff_free(old);
    doc = json_pack("{s:s, s:s, s:s, s:[ss], s:s, s:s, s:o, s:O}", "schemaVersion", "1.1", "minReaderVersion", "1.0",
                    "handoffMode", "external_initializer", "engines", "native", "genai", "externalDataLayout",
                    "one_file_per_tensor", "frozenBaseBlob", FROZEN_BASE_BLOB, "mergerModels", mergers, "entries", entries);
    if (!doc) rc = OOM(b);
  }
  json_decref(entries);
  /* Read back: the map reader's every invariant, the canonical bytes, then the graph check. */
  char *compact = NULL, *text = NULL;
  size_t len = 0;
  mpk_mt_handoff *map = NULL;
  if (!rc && !(compact = json_dumps(doc, JSON_COMPACT))) rc = OOM(b);
  if (!rc) rc = mpk_mt_handoff_parse(compact, strlen(compact), path, &map, b->err);
  if (!rc) rc = mpk_mt_handoff_json(map, &text, &len, b->err);
  if (!rc) {
    mpk_error first;
    mpk_error_clear(&first);
    size_t n = 0;
    rc = mpk_mt_graph_check(b->graph, map, path, b->loc.inference_dir, first_problem, &first, &n, b->err);
    if (!rc && n) {
      if (b->err) *b->err = first;
      rc = first.code ? first.code : MPK_EMISMATCH;
    }
  }
  if (!rc) {
    out->n_entries = map->n_entries;
    mpk_mapped old;
    out->changed = 1;
    if (mpk_map_file(path, MPK_JSON_DEFAULT_MAX_BYTES, &old, NULL) == 0) {
      out->changed = !(old.size == len && memcmp(old.data, text, len) == 0);
      mpk_unmap_file(&old);
    }
    if (out->changed && !o->dry_run) rc = mpk_write_file_atomic(path, text, len, b->err);
  }
  if (!rc) {
    out->path = path;
    out->map = text;
    out->map_len = len;
    path = text = NULL;
  }
  mpk_mt_handoff_free(map);
  free(compact);
  free(text);
  free(path);
  json_decref(doc);
  return rc;
}

int mpk_mt_handoff_build(const char *dir, const mpk_mt_handoff_build_options *opts, mpk_mt_handoff_build_result *out,
                         mpk_error *err) {
  if (out) memset(out, 0, sizeof *out); /* releasable whatever happens next */
  if (!dir || !out) return mpk_fail(err, MPK_EINVAL, dir, NULL, "NULL argument");
  mpk_mt_handoff_build_options opt;
  int orc = MPK_OPTIONS_READ(mpk_mt_handoff_build_options, &opt, opts, err);
  if (orc) return orc;
  const mpk_mt_handoff_build_options *o = &opt;
  build b = {.attn = o->attention_module ? o->attention_module : "self_attn", .err = err};
  int rc = mpk_mt_locate(dir, o->variant, &b.loc, err);
  if (rc) return rc;
  char *cfg = b.loc.train_dir ? mpk_path_join(b.loc.train_dir, TRAINING_CONFIG) : NULL;
  b.cfg_file = cfg ? cfg : TRAINING_CONFIG;
  rc = b.loc.train_dir && !cfg ? OOM(&b) : run(&b, o, out);
  if (rc) mpk_mt_handoff_build_result_free(out);
  for (size_t i = 0; i < b.n_obs; i++) free(b.obs[i].seed);
  free(b.obs);
  free((char *)b.graph_file);
  free(cfg);
  json_decref(b.cfg);
  mpk_mt_graph_free(b.graph);
  mpk_mt_located_free(&b.loc);
  return rc;
}

void mpk_mt_handoff_build_result_free(mpk_mt_handoff_build_result *r) {
  if (!r) return;
  free(r->path);
  free(r->map);
  memset(r, 0, sizeof *r);
}
