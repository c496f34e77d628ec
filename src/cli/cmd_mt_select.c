/* modelpkg mt select DIR [device and request options] [--json]: which variant this device gets,
   with every candidate's size and why it won, lost or was excluded.
   modelpkg mt plan DIR --variant ID [--features F,...] [--json]: the exact files and bytes to
   download for a variant's feature groups. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char select_about[] =
    "Choose the variant of a MobileTransformers package (DIR, its manifest file, or an http(s) base\n"
    "URL) for a device, and explain the choice (docs/mt-select.md). Hard filters, in order: --abi,\n"
    "--ep, --quant, --engine, --features, --memory-mb, --api-level (an option not given filters\n"
    "nothing), and the variant's download plan must give every file a size and a sha256 digest.\n"
    "Among the rest, ranked: the earliest quantization of --prefer-quant (default: int4; unlisted\n"
    "last), then the smallest download for the features, then the defaultVariant, then the id;\n"
    "with --storage-bytes the best-ranked variant that fits wins.\n";
static const char select_more[] =
    "exit status: 0 a variant was chosen, 1 none fits (each variant with the first filter that\n"
    "excluded it) or the manifest is refused, 2 usage error\n";
static const char plan_about[] =
    "The exact files and bytes to download for a variant of a MobileTransformers package (DIR, its\n"
    "manifest file, or an http(s) base URL): the files the manifest lists that the download\n"
    "plan's groups select — core and checksums always, then --features (default: inference) —\n"
    "each with its group, size and sha256 digest, and the total. The manifest itself (in core) is\n"
    "already in hand: it is not counted. A planned file without a size or a digest is marked: the\n"
    "installer refuses files it cannot verify, so such a plan is refused.\n";
static const char plan_more[] =
    "exit status: 0 every planned file can be verified, 1 the plan is refused or the manifest is,\n"
    "2 usage error\n";

/* The manifest of a package source: an http(s) base URL (read as the installer reads it), else a
   directory or a manifest file. */
static int load_manifest(const char *source, mpk_mt_manifest **m, mpk_error *err) {
  if (strncmp(source, "http://", 7) == 0 || strncmp(source, "https://", 8) == 0)
    return mpk_mt_manifest_open_source(source, m, err);
  return mpk_mt_manifest_load(source, m, err);
}

static json_t *json_opt_int(const mpk_opt_int *v) { return v->present ? json_integer(v->value) : json_null(); }

static json_t *json_error(const mpk_error *e) {
  json_t *a = mpk_cli_json_problems(e, 1), *o = json_incref(json_array_get(a, 0));
  json_decref(a);
  return o;
}

/* ---------------------------------------------------------------- mt select */

static const char *const select_keys[] = {"source", "chosen", "fell_back", "summary", "device", "features", "groups",
                                          "prefer_quant", "preferred_quant", "budget_bytes", "candidates", "error",
                                          NULL};

static void select_text(const char *source, const mpk_mt_select_options *o, const mpk_mt_selection *s) {
  char buf[1024];
  printf("modelpkg mt select %s\n", source);
  printf("  device:   abi %s", o->n_abis ? "" : "any");
  for (size_t i = 0; i < o->n_abis; i++) printf("%s%s", i ? "," : "", o->abis[i]);
  printf("; execution provider %s; engine %s; quantization %s\n", o->execution_provider ? o->execution_provider : "any",
         o->engine ? o->engine : "any", o->quantization ? o->quantization : "any");
  printf("            memory %s", o->memory_mb.present ? "" : "any");
  if (o->memory_mb.present) printf("%" PRId64 " MB", o->memory_mb.value);
  printf("; API level %s", o->api_level.present ? "" : "any");
  if (o->api_level.present) printf("%" PRId64, o->api_level.value);
  printf("\n");
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < s->n_groups && len < sizeof buf; i++)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? ", " : "", s->groups[i]);
  printf("  download: groups %s\n", buf);
  len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < s->n_prefer_quant && len < sizeof buf; i++)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? ", " : "", s->prefer_quant[i]);
  printf("  prefer:   quantization %s\n", s->n_prefer_quant ? buf : "(no preference)");
  if (s->has_budget)
    printf("  storage:  %" PRIu64 " bytes free: budget %" PRIu64 " bytes (90%%, rounded down)\n", s->free_bytes,
           s->budget_bytes);
  else printf("  storage:  not given (no budget)\n");
  printf("  candidates, best first:\n");
  for (size_t r = 1; r <= s->n_candidates; r++)
    for (size_t i = 0; i < s->n_candidates; i++) {
      const mpk_mt_candidate *c = &s->candidates[i];
      if (c->rank != r) continue;
      printf("    #%-2zu %-16s %-8s %10" PRIu64 " bytes  %s: %s\n", r, c->variant->id,
             c->variant->quantization ? c->variant->quantization : "null", c->download_bytes,
             c->chosen ? "CHOSEN" : c->excluded_by == MPK_MT_FILTER_STORAGE ? "does not fit" : "lost", c->reason);
    }
  for (size_t i = 0; i < s->n_candidates; i++) {
    const mpk_mt_candidate *c = &s->candidates[i];
    if (c->rank) continue;
    char size[32] = "         ?";
    if (c->has_bytes) snprintf(size, sizeof size, "%10" PRIu64, c->download_bytes);
    printf("    --  %-16s %-8s %s bytes  excluded by %s: %s\n", c->variant->id,
           c->variant->quantization ? c->variant->quantization : "null", size, mpk_mt_filter_name(c->excluded_by),
           c->reason);
  }
  if (s->chosen) {
    const mpk_mt_candidate *c = NULL;
    for (size_t i = 0; i < s->n_candidates && !c; i++)
      if (s->candidates[i].chosen) c = &s->candidates[i];
    printf("chosen: %s (%" PRIu64 " bytes to download)%s\n", s->chosen->id, c->download_bytes,
           s->fell_back ? ", falling back: a better-ranked variant does not fit the storage budget" : "");
  } else {
    printf("NO VARIANT FITS: each variant above names the first filter that excluded it\n");
  }
}

static void select_json(const char *source, const mpk_mt_select_options *o, const mpk_mt_selection *s,
                        const mpk_error *err) {
  json_t *root = mpk_cli_json_begin("mt select", err == NULL), *dev = json_object(), *cands = json_array();
  json_object_set_new(root, "source", json_string(source));
  json_object_set_new(root, "chosen", mpk_cli_json_str(s->chosen ? s->chosen->id : NULL));
  json_object_set_new(root, "fell_back", json_boolean(s->fell_back));
  json_object_set_new(root, "summary", mpk_cli_json_str(s->summary));
  json_object_set_new(dev, "abis", o->n_abis ? mpk_cli_json_strings(o->abis, o->n_abis) : json_null());
  json_object_set_new(dev, "execution_provider", mpk_cli_json_str(o->execution_provider));
  json_object_set_new(dev, "quantization", mpk_cli_json_str(o->quantization));
  json_object_set_new(dev, "engine", mpk_cli_json_str(o->engine));
  json_object_set_new(dev, "memory_mb", json_opt_int(&o->memory_mb));
  json_object_set_new(dev, "api_level", json_opt_int(&o->api_level));
  json_object_set_new(dev, "storage_bytes", json_opt_int(&o->free_bytes));
  json_object_set_new(root, "device", dev);
  json_object_set_new(root, "features", mpk_cli_json_strings(s->features, s->n_features));
  json_object_set_new(root, "groups", mpk_cli_json_strings(s->groups, s->n_groups));
  json_object_set_new(root, "prefer_quant", mpk_cli_json_strings(s->prefer_quant, s->n_prefer_quant));
  json_object_set_new(root, "preferred_quant", mpk_cli_json_str(s->preferred_quant));
  json_object_set_new(root, "budget_bytes", s->has_budget ? json_integer((json_int_t)s->budget_bytes) : json_null());
  for (size_t i = 0; i < s->n_candidates; i++) {
    const mpk_mt_candidate *c = &s->candidates[i];
    json_t *j = json_object();
    json_object_set_new(j, "id", json_string(c->variant->id));
    json_object_set_new(j, "quantization", mpk_cli_json_str(c->variant->quantization));
    json_object_set_new(j, "execution_provider", mpk_cli_json_str(c->variant->execution_provider));
    json_object_set_new(j, "download_bytes", c->has_bytes ? json_integer((json_int_t)c->download_bytes) : json_null());
    json_object_set_new(j, "rank", c->rank ? json_integer((json_int_t)c->rank) : json_null());
    json_object_set_new(j, "excluded_by",
                        c->excluded_by ? json_string(mpk_mt_filter_name(c->excluded_by)) : json_null());
    json_object_set_new(j, "chosen", json_boolean(c->chosen));
    json_object_set_new(j, "reason", mpk_cli_json_str(c->reason));
    json_array_append_new(cands, j);
  }
  json_object_set_new(root, "candidates", cands);
  json_object_set_new(root, "error", err ? json_error(err) : json_null());
  mpk_cli_json_end(root, err, err ? 1 : 0, NULL, 0);
}

int mpk_cmd_mt_select(int argc, char **argv) {
  const char *cmd = "mt select";
  mpk_cli_select sel = {0};
  bool json = false;
  const mpk_cli_opt opts[] = {
      MPK_CLI_SELECT_OPTIONS(&sel),
      {"--json", 0, NULL, "the selection as one JSON document on stdout", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {.name = cmd,
                             .usage = "DIR|URL [--abi A[,B...]] [--ep E] [--quant Q] [--engine E] [--memory-mb N]\n"
                                      "DIR|URL [--api-level N] [--features F[,F...]] [--prefer-quant Q1[,Q2...]]\n"
                                      "DIR|URL [--storage-bytes N] [--json]",
                             .about = select_about, .opts = opts, .more = select_more, .json_keys = select_keys,
                             .max_args = 1};
  mpk_cli_args a;
  int status = mpk_cli_parse(&spec, argc, argv, &a);
  if (status == MPK_CLI_GO_ON) status = MPK_EXIT_OK;
  else goto out;
  json = a.json;
  if (!a.n) {
    status = mpk_cli_usage(&spec, json, "missing the package directory");
    goto out;
  }
  const char *source = a.arg[0];
  mpk_cli_select_finish(&sel);
  const mpk_mt_select_options o = sel.o;

  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_manifest *m = NULL;
  mpk_mt_selection *s = NULL;
  int rc = load_manifest(source, &m, &err);
  if (!rc) rc = mpk_mt_select(m, &o, &s, &err);
  if (s) {
    if (json) select_json(source, &o, s, rc ? &err : NULL);
    else select_text(source, &o, s);
  } else if (json) {
    mpk_cli_json_refuse(cmd, select_keys, &err);
  }
  if (rc) mpk_cli_error(&err);
  status = rc ? MPK_EXIT_FAIL : MPK_EXIT_OK;
  mpk_mt_selection_free(s);
  mpk_mt_manifest_free(m);
out:
  mpk_cli_select_free(&sel);
  return status;
}

/* ---------------------------------------------------------------- mt plan */

static void plan_text(const char *source, const mpk_mt_download_plan *p) {
  printf("modelpkg mt plan %s (variant %s; groups", source, p->variant);
  for (size_t i = 0; i < p->n_groups; i++) printf("%s %s", i ? "," : "", p->groups[i]);
  printf(")\n");
  for (size_t i = 0; i < p->n_files; i++) {
    const mpk_mt_planned_file *f = &p->files[i];
    char size[40], sum[40];
    if (f->has_size) snprintf(size, sizeof size, "%12" PRIu64 " bytes", f->size);
    else snprintf(size, sizeof size, "%18s", "NO SIZE");
    if (f->sha256) snprintf(sum, sizeof sum, "sha256 %.16s", f->sha256);
    else snprintf(sum, sizeof sum, "NO SHA256");
    printf("  %-10s %s  %s  %s\n", f->group, size, sum, f->path);
  }
  if (p->includes_manifest)
    printf("  %-10s %18s  %-23s  %s (the manifest, already read)\n", "core", "not counted", "", MPK_MT_MANIFEST_FILENAME);
  for (size_t i = 0; i < p->n_notes; i++) printf("  %s\n", p->notes[i]);
  if (p->n_unverifiable)
    printf("REFUSED: %zu of %zu planned files %s no size or no sha256 digest: the installer refuses files it "
           "cannot verify\n",
           p->n_unverifiable, p->n_files, p->n_unverifiable == 1 ? "has" : "have");
  else
    printf("OK: %zu file%s, %" PRIu64 " bytes to download\n", p->n_files, p->n_files == 1 ? "" : "s", p->total_bytes);
}

static const char *const plan_keys[] = {"source", "variant", "features", "groups", "files", "n_files", "total_bytes",
                                        "includes_manifest", "installable", NULL};

static void plan_json(const char *source, const mpk_mt_download_plan *p) {
  json_t *root = mpk_cli_json_begin("mt plan", p->n_unverifiable == 0 && p->n_problems == 0), *files = json_array();
  json_object_set_new(root, "source", json_string(source));
  json_object_set_new(root, "variant", json_string(p->variant));
  json_object_set_new(root, "features", mpk_cli_json_strings(p->features, p->n_features));
  json_object_set_new(root, "groups", mpk_cli_json_strings(p->groups, p->n_groups));
  for (size_t i = 0; i < p->n_files; i++) {
    const mpk_mt_planned_file *f = &p->files[i];
    json_t *j = json_object();
    json_object_set_new(j, "path", json_string(f->path));
    json_object_set_new(j, "group", json_string(f->group));
    json_object_set_new(j, "size", f->has_size ? json_integer((json_int_t)f->size) : json_null());
    json_object_set_new(j, "sha256", mpk_cli_json_str(f->sha256));
    json_array_append_new(files, j);
  }
  json_object_set_new(root, "files", files);
  json_object_set_new(root, "n_files", json_integer((json_int_t)p->n_files));
  json_object_set_new(root, "total_bytes", json_integer((json_int_t)p->total_bytes));
  json_object_set_new(root, "includes_manifest", json_boolean(p->includes_manifest));
  json_object_set_new(root, "installable", json_boolean(p->n_unverifiable == 0));
  if (p->n_unverifiable) json_object_set_new(root, "ok", json_false());
  mpk_cli_json_end(root, p->problems, p->n_problems, p->notes, p->n_notes);
}

int mpk_cmd_mt_plan(int argc, char **argv) {
  const char *cmd = "mt plan", *variant = NULL;
  mpk_cli_list features = {0};
  bool json = false;
  const mpk_cli_opt opts[] = {
      {"--variant", 0, "ID", "the variant (else the default rule: an installed model's recorded variant, else "
       "defaultVariant; modelpkg mt select chooses one for a device)", .str = &variant, .once = true},
      {"--features", 0, "F,...", "the feature groups wanted; each must be declared by the variant",
       .fn = mpk_cli_list_option, .ctx = &features},
      {"--json", 0, NULL, "the plan as one JSON document on stdout", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {.name = cmd, .usage = "DIR|URL [--variant ID] [--features F[,F...]] [--json]",
                             .about = plan_about, .opts = opts, .more = plan_more, .json_keys = plan_keys,
                             .max_args = 1};
  mpk_cli_args a;
  int status = mpk_cli_parse(&spec, argc, argv, &a);
  if (status == MPK_CLI_GO_ON) status = MPK_EXIT_OK;
  else goto out;
  json = a.json;
  const char *source = a.arg[0];
  if (!a.n) status = mpk_cli_usage(&spec, json, "missing the package directory");
  if (status != MPK_EXIT_OK) goto out;

  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_manifest *m = NULL;
  mpk_mt_download_plan *p = NULL;
  /* Unverifiable files are shown, then refused: the plan says which. */
  mpk_mt_plan_options po = {.struct_size = sizeof po, .features = features.given ? features.items : NULL, .n_features = features.n,
                            .allow_unverifiable = 1};
  int rc = load_manifest(source, &m, &err);
  mpk_mt_installed *inst = NULL;
  if (!rc && !variant) {
    /* the default rule; a directory that is an installed model says which variant it holds */
    mpk_error ie;
    int irc = mpk_cli_is_dir(source) ? mpk_mt_installed_open(source, &inst, &ie) : MPK_ENOTFOUND;
    if (irc && irc != MPK_ENOTFOUND) rc = irc, err = ie;
    else if (!(variant = mpk_mt_default_variant(m, inst)))
      rc = mpk_fail(&err, MPK_ENOTFOUND, source, "/defaultVariant", "no --variant and the manifest has no defaultVariant");
  }
  if (!rc) rc = mpk_mt_plan_download(m, variant, &po, &p, &err);
  if (rc) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse(cmd, plan_keys, &err);
    status = MPK_EXIT_FAIL;
  } else {
    if (json) plan_json(source, p);
    else plan_text(source, p);
    for (size_t i = 0; i < p->n_problems; i++) mpk_cli_error(&p->problems[i]);
    status = p->n_unverifiable ? MPK_EXIT_FAIL : MPK_EXIT_OK;
  }
  mpk_mt_download_plan_free(p);
  mpk_mt_manifest_free(m); /* after the plan's last use of `variant`, which may be the record's */
  mpk_mt_installed_free(inst);
out:
  free(features.copy);
  return status;
}
