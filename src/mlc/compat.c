/* Runtime descriptions and a library's compatibility with a runtime (docs/mlc-library.md, "Runtime
   descriptions" and "mlc compat").

   A description (one JSON file per runtime in data/runtimes/, schema runtime.schema.json there) is
   read strictly through core's document skeleton: every field checked, unknown fields refused,
   names listed twice refused. Each list is kept sorted for lookups. The comparison takes a library read by
   mpk_mlc_library_open (or a struct filled by hand: nothing in it is assumed sorted) and reports
   each kind of missing name sorted and without duplicates. */
#include <stdlib.h>
#include <string.h>

#include "mlc/mlc.h"

#define RT_MAX_ITEMS 65536
#define RT_MAX_NAME 4096

typedef enum rt_when { WHEN_ALWAYS = 0, WHEN_CHAT, WHEN_EMBEDDING, WHEN_OPTIONAL } rt_when;
static const char *const when_names[] = {"always", "chat", "embedding", "optional", NULL};

typedef struct rt_item {
  const char *module; /* provides.imports only; "" elsewhere */
  const char *name;
  const char *where;  /* NULL: not said */
  rt_when when;
  size_t index;       /* its position in the document, for messages */
} rt_item;

typedef struct rt_list {
  rt_item *items;     /* sorted by (module, name) */
  size_t n;
} rt_list;

struct mpk_mlc_runtime {
  mpk_arena *arena;
  const char *name;
  rt_list imports, provided, req_globals, req_functions, req_exports;
};

struct mpk_mlc_compat_priv {
  mpk_arena *arena;
};

static int item_cmp(const void *a, const void *b) {
  const rt_item *x = a, *y = b;
  int c = strcmp(x->module, y->module);
  return c ? c : strcmp(x->name, y->name);
}

/* ---------------------------------------------------------------------------------- loading */

/* A name: a non-empty string of at most RT_MAX_NAME bytes without control characters (names are
   printed to terminals and compared with a library's, which never hold any). */
static int rt_name(mpk_jv *v, const json_t *value, mpk_arena *a, const char **out) {
  const char *s;
  int rc = mpk_jv_string(v, value, &s);
  if (rc) return rc;
  size_t n = json_string_length(value);
  if (n > RT_MAX_NAME) return mpk_jv_fail(v, MPK_ELIMIT, "longer than %d bytes", RT_MAX_NAME);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c == 0x7f) return mpk_jv_fail(v, MPK_EMALFORMED, "a name must not contain control characters");
  }
  return mpk_jv_strdup(v, a, s, out);
}

typedef enum list_kind { LIST_IMPORTS, LIST_PROVIDED, LIST_NEEDS } list_kind;

static int rt_item_parse(mpk_jv *v, const json_t *obj, list_kind kind, mpk_arena *a, rt_item *it) {
  static const char *const imp_allowed[] = {"module", "name", "where", NULL}, *const imp_required[] = {"module", "name", NULL};
  static const char *const prov_allowed[] = {"name", "where", NULL}, *const need_allowed[] = {"name", "when", "where", NULL};
  static const char *const name_required[] = {"name", NULL};
  int rc = mpk_jv_object(v, obj);
  if (!rc)
    rc = mpk_jv_exact_keys(v, obj, kind == LIST_IMPORTS ? imp_allowed : kind == LIST_PROVIDED ? prov_allowed : need_allowed,
                           kind == LIST_IMPORTS ? imp_required : name_required);
  if (rc) return rc;
  it->module = "";
  if (kind == LIST_IMPORTS) MPK_JV_AT(v, "module", rt_name(v, json_object_get(obj, "module"), a, &it->module));
  MPK_JV_AT(v, "name", rt_name(v, json_object_get(obj, "name"), a, &it->name));
  const json_t *w = json_object_get(obj, "where");
  if (w) MPK_JV_AT(v, "where", rt_name(v, w, a, &it->where));
  it->when = WHEN_ALWAYS;
  const json_t *when = json_object_get(obj, "when");
  if (when) {
    size_t i = 0;
    if (json_is_string(when))
      for (; when_names[i]; i++)
        if (strcmp(json_string_value(when), when_names[i]) == 0) break;
    if (!json_is_string(when) || !when_names[i])
      MPK_JV_AT(v, "when", mpk_jv_fail(v, MPK_EMALFORMED, "expected one of \"always\", \"chat\", \"embedding\", \"optional\""));
    it->when = (rt_when)i;
  }
  return 0;
}

/* The array at v->path (the field `key` of `parent`, required or not) into a sorted list. */
static int rt_list_parse(mpk_jv *v, const json_t *parent, const char *key, list_kind kind, mpk_arena *a, rt_list *out) {
  const json_t *arr = json_object_get(parent, key);
  out->items = NULL;
  out->n = 0;
  if (!arr) return 0; /* optional lists; required ones were checked with the keys */
  size_t prev = mpk_path_push_key(&v->path, key);
  int rc = 0;
  if (!json_is_array(arr)) rc = mpk_jv_fail(v, MPK_EMALFORMED, "expected an array");
  else if (json_array_size(arr) > RT_MAX_ITEMS)
    rc = mpk_jv_fail(v, MPK_ELIMIT, "more than %d entries", RT_MAX_ITEMS);
  size_t n = rc ? 0 : json_array_size(arr);
  rt_item *items = n ? mpk_arena_array(a, n, sizeof *items) : NULL;
  if (n && !items) rc = mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  for (size_t i = 0; !rc && i < n; i++) {
    size_t p = mpk_path_push_index(&v->path, i);
    rc = rt_item_parse(v, json_array_get(arr, i), kind, a, &items[i]);
    items[i].index = i;
    mpk_path_pop(&v->path, p);
  }
  if (!rc && n > 1) {
    mpk_sort(items, n, sizeof *items, item_cmp);
    for (size_t i = 1; i < n; i++) {
      if (item_cmp(&items[i - 1], &items[i])) continue;
      size_t later = items[i].index > items[i - 1].index ? items[i].index : items[i - 1].index;
      size_t first = items[i].index > items[i - 1].index ? items[i - 1].index : items[i].index;
      size_t p = mpk_path_push_index(&v->path, later);
      if (kind == LIST_IMPORTS)
        rc = mpk_jv_fail(v, MPK_EMALFORMED, "%s.%s is listed twice (first at index %zu)", items[i].module,
                         items[i].name, first);
      else
        rc = mpk_jv_fail(v, MPK_EMALFORMED, "%s is listed twice (first at index %zu)", items[i].name, first);
      mpk_path_pop(&v->path, p);
      break;
    }
  }
  mpk_path_pop(&v->path, prev);
  out->items = items;
  out->n = n;
  return rc;
}

/* "source": where the description was derived from. */
static int rt_source(mpk_jv *v, const json_t *src, mpk_arena *a) {
  static const char *const allowed[] = {"package", "file", "sha256", "generator", NULL};
  static const char *const required[] = {"package", "file", "sha256", NULL};
  const char *s;
  int rc = mpk_jv_object(v, src);
  if (!rc) rc = mpk_jv_exact_keys(v, src, allowed, required);
  if (rc) return rc;
  MPK_JV_AT(v, "package", rt_name(v, json_object_get(src, "package"), a, &s));
  MPK_JV_AT(v, "file", rt_name(v, json_object_get(src, "file"), a, &s));
  const json_t *h = json_object_get(src, "sha256");
  bool ok = json_is_string(h) && json_string_length(h) == 64;
  for (size_t i = 0; ok && i < 64; i++) {
    char c = json_string_value(h)[i];
    ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  }
  if (!ok) MPK_JV_AT(v, "sha256", mpk_jv_fail(v, MPK_EMALFORMED, "expected 64 lowercase hexadecimal digits (the file's SHA-256)"));
  if (json_object_get(src, "generator")) MPK_JV_AT(v, "generator", rt_name(v, json_object_get(src, "generator"), a, &s));
  return 0;
}

static int rt_validate(void *ctx, mpk_jv *v, json_t *root, mpk_arena *a) {
  static const char *const allowed[] = {"schema", "schema_version", "name", "source", "provides", "requires", "notes", NULL};
  static const char *const required[] = {"schema", "schema_version", "name", "source", "provides", "requires", NULL};
  static const char *const prov_keys[] = {"imports", "globals", NULL};
  static const char *const req_allowed[] = {"globals", "functions", "exports", NULL}, *const req_required[] = {"globals", NULL};
  int rc = mpk_jv_object(v, root);
  if (rc) return rc;
  /* The gate first: another schema_version may have changed everything else. */
  const json_t *schema = json_object_get(root, "schema"), *version = json_object_get(root, "schema_version");
  if (!schema) return mpk_jv_fail(v, MPK_EMALFORMED, "missing field \"schema\" (a runtime description has \"schema\": \"modelpkg.runtime\")");
  MPK_JV_AT(v, "schema", mpk_jv_literal(v, schema, "modelpkg.runtime"));
  if (!version) return mpk_jv_fail(v, MPK_EMALFORMED, "missing field \"schema_version\"");
  int64_t ver;
  MPK_JV_AT(v, "schema_version", mpk_jv_integer(v, version, 1, &ver));
  if (ver != 1)
    MPK_JV_AT(v, "schema_version",
              mpk_jv_fail(v, MPK_EVERSION, "schema_version %lld: this modelpkg reads runtime descriptions of version 1",
                          (long long)ver));
  if ((rc = mpk_jv_exact_keys(v, root, allowed, required))) return rc;

  mpk_mlc_runtime *rt = mpk_arena_alloc(a, sizeof *rt);
  if (!rt) return mpk_jv_fail(v, MPK_ENOMEM, "out of memory");
  rt->arena = a;
  MPK_JV_AT(v, "name", rt_name(v, json_object_get(root, "name"), a, &rt->name));

  const json_t *src = json_object_get(root, "source");
  const char *s;
  MPK_JV_AT(v, "source", rt_source(v, src, a));

  const json_t *prov = json_object_get(root, "provides"), *req = json_object_get(root, "requires");
  MPK_JV_AT(v, "provides", mpk_jv_object(v, prov));
  MPK_JV_AT(v, "provides", mpk_jv_exact_keys(v, prov, prov_keys, prov_keys));
  MPK_JV_AT(v, "provides", rt_list_parse(v, prov, "imports", LIST_IMPORTS, a, &rt->imports));
  MPK_JV_AT(v, "provides", rt_list_parse(v, prov, "globals", LIST_PROVIDED, a, &rt->provided));
  MPK_JV_AT(v, "requires", mpk_jv_object(v, req));
  MPK_JV_AT(v, "requires", mpk_jv_exact_keys(v, req, req_allowed, req_required));
  MPK_JV_AT(v, "requires", rt_list_parse(v, req, "globals", LIST_NEEDS, a, &rt->req_globals));
  MPK_JV_AT(v, "requires", rt_list_parse(v, req, "functions", LIST_NEEDS, a, &rt->req_functions));
  MPK_JV_AT(v, "requires", rt_list_parse(v, req, "exports", LIST_NEEDS, a, &rt->req_exports));

  const json_t *notes = json_object_get(root, "notes");
  if (notes) {
    size_t prev = mpk_path_push_key(&v->path, "notes");
    if (!json_is_array(notes)) rc = mpk_jv_fail(v, MPK_EMALFORMED, "expected an array of strings");
    else if (json_array_size(notes) > RT_MAX_ITEMS) rc = mpk_jv_fail(v, MPK_ELIMIT, "more than %d entries", RT_MAX_ITEMS);
    for (size_t i = 0; !rc && i < json_array_size(notes); i++) {
      size_t p = mpk_path_push_index(&v->path, i);
      rc = mpk_jv_string(v, json_array_get(notes, i), &s);
      mpk_path_pop(&v->path, p);
    }
    mpk_path_pop(&v->path, prev);
    if (rc) return rc;
  }
  *(mpk_mlc_runtime **)ctx = rt;
  return 0;
}

int mpk_mlc_runtime_load(const char *path, mpk_mlc_runtime **out, mpk_error *err) {
  if (!path || !out) {
    if (out) *out = NULL;
    return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  }
  *out = NULL;
  const mpk_document d = {.name = "runtime.json", .validate = rt_validate, .ctx = out};
  return mpk_document_load(&d, path, err);
}

int mpk_mlc_runtime_parse(const void *data, size_t len, const char *file, mpk_mlc_runtime **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  *out = NULL;
  const mpk_document d = {.name = "runtime.json", .validate = rt_validate, .ctx = out};
  return mpk_document_parse(&d, data, len, file, err);
}

void mpk_mlc_runtime_free(mpk_mlc_runtime *rt) {
  if (rt) mpk_arena_free(rt->arena);
}

static const rt_item *rt_find(const rt_list *l, const char *module, const char *name) {
  rt_item key = {.module = module ? module : "", .name = name};
  return l->n ? bsearch(&key, l->items, l->n, sizeof *l->items, item_cmp) : NULL;
}

const char *mpk_mlc_runtime_where(const mpk_mlc_runtime *rt, const char *list, const char *module, const char *name) {
  if (!rt || !list || !name) return NULL;
  const rt_list *l = strcmp(list, "provides.imports") == 0     ? &rt->imports
                     : strcmp(list, "provides.globals") == 0   ? &rt->provided
                     : strcmp(list, "requires.globals") == 0   ? &rt->req_globals
                     : strcmp(list, "requires.functions") == 0 ? &rt->req_functions
                     : strcmp(list, "requires.exports") == 0   ? &rt->req_exports
                                                               : NULL;
  if (!l) return NULL;
  const rt_item *it = rt_find(l, l == &rt->imports ? module : "", name);
  return it ? it->where : NULL;
}

/* ---------------------------------------------------------------------------------- comparing */

static int str_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* A sorted copy of a library's name list (hand-filled structs need not be sorted); NULL names skipped. */
typedef struct name_set {
  const char **v;
  size_t n;
} name_set;

static int set_make(mpk_arena *a, const char *const *names, size_t n, name_set *out) {
  out->v = NULL;
  out->n = 0;
  if (!n || !names) return 0;
  out->v = mpk_arena_array(a, n, sizeof *out->v);
  if (!out->v) return MPK_ENOMEM;
  for (size_t i = 0; i < n; i++)
    if (names[i]) out->v[out->n++] = names[i];
  mpk_sort(out->v, out->n, sizeof *out->v, str_cmp);
  return 0;
}

static bool set_has(const name_set *s, const char *name) {
  return s->n && bsearch(&name, s->v, s->n, sizeof *s->v, str_cmp);
}

/* Sort and deduplicate a list built in `v[0..*n)`. */
static void sort_unique(const char **v, size_t *n) {
  if (*n < 2) return;
  mpk_sort(v, *n, sizeof *v, str_cmp);
  size_t o = 1;
  for (size_t i = 1; i < *n; i++)
    if (strcmp(v[i], v[o - 1])) v[o++] = v[i];
  *n = o;
}

static int import_cmp(const void *a, const void *b) {
  const mpk_mlc_import *x = a, *y = b;
  int c = strcmp(x->module ? x->module : "", y->module ? y->module : "");
  return c ? c : strcmp(x->name, y->name);
}

static bool applies(rt_when w, const char *pipeline) {
  if (w == WHEN_ALWAYS) return true;
  if (!pipeline) return false;
  return (w == WHEN_CHAT && strcmp(pipeline, "chat") == 0) || (w == WHEN_EMBEDDING && strcmp(pipeline, "embedding") == 0);
}

/* Which of WebLLM's pipelines would load the library: a VM function decode* (decode,
   decode_tokens, decode_embeds, batch_decode is not needed) makes it a chat model; prefill
   without one an embedding model (WebLLM's EmbeddingPipeline). Packed entries are kernels (older
   MLC builds name dequantization kernels "decode", "decode1", ...), never counted. */
static const char *pipeline_of(const mpk_mlc_library *lib) {
  bool prefill = false;
  for (size_t i = 0; lib->functions && i < lib->n_functions; i++) {
    const mpk_mlc_function *f = &lib->functions[i];
    if (f->kind == MPK_MLC_FUNCTION_PACKED || !f->name) continue;
    if (strncmp(f->name, "decode", 6) == 0) return "chat";
    if (strcmp(f->name, "prefill") == 0) prefill = true;
  }
  return prefill ? "embedding" : NULL;
}

static bool is_wasm(const mpk_mlc_library *lib) {
  return (lib->arch && strcmp(lib->arch, "wasm32") == 0) ||
         (lib->container && strncmp(lib->container, "WebAssembly", 11) == 0);
}

int mpk_mlc_compat(const mpk_mlc_library *lib, const mpk_mlc_runtime *rt, mpk_mlc_compat_report **out, mpk_error *err) {
  if (out) *out = NULL;
  if (!lib || !rt || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  if (!is_wasm(lib))
    return mpk_fail(err, MPK_EUNSUPPORTED, lib->path, NULL,
                    "the library is %s%s%s%s, not a WebAssembly module: %s loads WebAssembly libraries only",
                    lib->container ? "a " : "a library of another format", lib->container ? lib->container : "",
                    lib->arch ? " for " : "", lib->arch ? lib->arch : "", rt->name);
  mpk_arena *a = mpk_arena_new();
  mpk_mlc_compat_report *r = a ? mpk_arena_alloc(a, sizeof *r) : NULL;
  struct mpk_mlc_compat_priv *priv = r ? mpk_arena_alloc(a, sizeof *priv) : NULL;
  if (!priv) goto oom;
  priv->arena = a;
  r->priv_ = priv;
  r->runtime = rt->name;
  r->pipeline = pipeline_of(lib);

  /* Imports the runtime does not provide. */
  if (lib->imports && lib->n_imports) {
    mpk_mlc_import *mi = mpk_arena_array(a, lib->n_imports, sizeof *mi);
    if (!mi) goto oom;
    size_t n = 0;
    for (size_t i = 0; i < lib->n_imports; i++) {
      const mpk_mlc_import *im = &lib->imports[i];
      if (im->name && !rt_find(&rt->imports, im->module, im->name)) mi[n++] = *im;
    }
    if (n > 1) {
      mpk_sort(mi, n, sizeof *mi, import_cmp);
      size_t o = 1;
      for (size_t i = 1; i < n; i++)
        if (import_cmp(&mi[i], &mi[o - 1])) mi[o++] = mi[i];
      n = o;
    }
    r->missing_imports = mi;
    r->n_missing_imports = n;
  }

  name_set defined, exports;
  if (set_make(a, lib->globals_defined, lib->n_globals_defined, &defined) ||
      set_make(a, lib->exports, lib->n_exports, &exports))
    goto oom;

  /* Globals the library's VM code calls that neither it nor the runtime defines. */
  if (lib->globals_needed && lib->n_globals_needed) {
    const char **mg = mpk_arena_array(a, lib->n_globals_needed, sizeof *mg);
    if (!mg) goto oom;
    size_t n = 0;
    for (size_t i = 0; i < lib->n_globals_needed; i++) {
      const char *g = lib->globals_needed[i];
      if (g && !set_has(&defined, g) && !rt_find(&rt->provided, "", g)) mg[n++] = g;
    }
    sort_unique(mg, &n);
    r->missing_globals = mg;
    r->n_missing_globals = n;
  }

  /* What the runtime looks up, calls or reads, for this library's pipeline. The lists are sorted
     and unique already (the loader refused duplicates). */
  if (rt->req_globals.n) {
    const char **mr = mpk_arena_array(a, rt->req_globals.n, sizeof *mr);
    if (!mr) goto oom;
    size_t n = 0;
    for (size_t i = 0; i < rt->req_globals.n; i++) {
      const rt_item *it = &rt->req_globals.items[i];
      if (applies(it->when, r->pipeline) && !set_has(&defined, it->name) && !rt_find(&rt->provided, "", it->name))
        mr[n++] = it->name;
    }
    r->missing_required = mr;
    r->n_missing_required = n;
  }
  if (rt->req_functions.n) {
    name_set fns = {0};
    if (lib->functions && lib->n_functions) {
      fns.v = mpk_arena_array(a, lib->n_functions, sizeof *fns.v);
      if (!fns.v) goto oom;
      for (size_t i = 0; i < lib->n_functions; i++)
        if (lib->functions[i].name && lib->functions[i].kind != MPK_MLC_FUNCTION_PACKED) fns.v[fns.n++] = lib->functions[i].name;
      mpk_sort(fns.v, fns.n, sizeof *fns.v, str_cmp);
    }
    const char **mf = mpk_arena_array(a, rt->req_functions.n, sizeof *mf);
    if (!mf) goto oom;
    size_t n = 0;
    for (size_t i = 0; i < rt->req_functions.n; i++) {
      const rt_item *it = &rt->req_functions.items[i];
      if (applies(it->when, r->pipeline) && !set_has(&fns, it->name)) mf[n++] = it->name;
    }
    r->missing_functions = mf;
    r->n_missing_functions = n;
  }
  r->exports_checked = lib->exports != NULL;
  if (r->exports_checked && rt->req_exports.n) {
    const char **me = mpk_arena_array(a, rt->req_exports.n, sizeof *me);
    if (!me) goto oom;
    size_t n = 0;
    for (size_t i = 0; i < rt->req_exports.n; i++) {
      const rt_item *it = &rt->req_exports.items[i];
      if (applies(it->when, r->pipeline) && !set_has(&exports, it->name)) me[n++] = it->name;
    }
    r->missing_exports = me;
    r->n_missing_exports = n;
  }
  r->compatible = !r->n_missing_imports && !r->n_missing_globals && !r->n_missing_required && !r->n_missing_functions &&
                  !r->n_missing_exports;
  *out = r;
  return 0;
oom:
  mpk_arena_free(a);
  return mpk_fail(err, MPK_ENOMEM, lib->path, NULL, "out of memory");
}

void mpk_mlc_compat_report_free(mpk_mlc_compat_report *report) {
  if (report) mpk_arena_free(report->priv_->arena);
}
