/* bench_ort_zero_copy — initializers handed to ONNX Runtime without a copy (docs/ort.md, "Zero-copy,
 * measured"), through the public API only:
 *
 *   bench_ort_zero_copy PKG views   mpk_mt_variant_gate_open (verifies every handoff tensor's bytes)
 *                                   -> mpk_mt_tensor_open views (read-only file mappings)
 *                                   -> mpk_ort_session_open with the views as initializers -> run
 *   bench_ort_zero_copy PKG files   mpk_ort_session_open from the files (ONNX Runtime reads the
 *                                   external data itself; no_copies, the same kernels) -> run
 *   bench_ort_zero_copy PKG files-default   the same with ONNX Runtime's default session options
 *
 * Prints one JSON object: VmRSS, RssAnon and RssFile (kB, /proc/self/status) after each step, the
 * cross-entropy of the package's tokens and the SHA-256 of the logits' bytes (equal hashes: the
 * same outputs bit for bit). The library: $MPK_ORT_LIBRARY, else the loader's search. The token ids
 * are PKG/../tokens.json's (bench/ort_zero_copy_package.py). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modelpkg/mt.h"
#include "modelpkg/ort.h"

typedef struct rss {
  long vm, anon, file;
} rss;

static rss now(void) {
  rss r = {-1, -1, -1};
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  while (f && fgets(line, sizeof line, f)) {
    sscanf(line, "VmRSS: %ld", &r.vm);
    sscanf(line, "RssAnon: %ld", &r.anon);
    sscanf(line, "RssFile: %ld", &r.file);
  }
  if (f) fclose(f);
  return r;
}

static int n_steps;
static void step(const char *name) {
  rss r = now();
  printf("%s\n    {\"step\": \"%s\", \"VmRSS_kB\": %ld, \"RssAnon_kB\": %ld, \"RssFile_kB\": %ld}", n_steps++ ? "," : "", name,
         r.vm, r.anon, r.file);
  fflush(stdout);
}

static int die(const char *what, int rc, const mpk_error *err) {
  char line[4096];
  mpk_error_format(err, line, sizeof line);
  fprintf(stderr, "bench_ort_zero_copy: %s: %s (%s)\n", what, line, mpk_code_name(rc));
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[2], "views") && strcmp(argv[2], "files") && strcmp(argv[2], "files-default"))) {
    fprintf(stderr, "usage: bench_ort_zero_copy PKG views|files|files-default\n");
    return 2;
  }
  const char *pkg = argv[1], *mode = argv[2];
  int64_t ids[256];
  size_t n = 0;
  {
    char p[4096];
    snprintf(p, sizeof p, "%s/../tokens.json", pkg);
    FILE *f = fopen(p, "r");
    if (!f) return fprintf(stderr, "bench_ort_zero_copy: %s: cannot open\n", p), 1;
    int c;
    long long v;
    while ((c = fgetc(f)) != EOF && n < 256)
      if (c >= '0' && c <= '9') {
        ungetc(c, f);
        if (fscanf(f, "%lld", &v) == 1) ids[n++] = v;
      }
    fclose(f);
  }
  mpk_error err = {0};
  printf("{\"mode\": \"%s\", \"steps\": [", mode);
  step("start");
  mpk_ort *ort = NULL;
  int rc = mpk_ort_open(NULL, &ort, &err);
  if (rc) return die("mpk_ort_open", rc, &err);
  step("ort_loaded");

  mpk_mt_variant_gate *vg = NULL;
  mpk_mt_handoff *map = NULL;
  mpk_tensor_view *views = NULL;
  mpk_ort_initializer *init = NULL;
  size_t n_init = 0;
  char model[8192], inf[4096];
  if (strcmp(mode, "views") == 0) {
    rc = mpk_mt_variant_gate_open(pkg, "cpu", NULL, &vg, &err);
    if (rc) return die("mpk_mt_variant_gate_open", rc, &err);
    if (vg->map_absent || !vg->report->ready) return fprintf(stderr, "bench_ort_zero_copy: the gate refused the weights\n"), 1;
    step("gate_verified");
    char mapfile[4096];
    snprintf(mapfile, sizeof mapfile, "%s/%s", pkg, vg->weight_handoff);
    snprintf(inf, sizeof inf, "%s", mapfile);
    char *slash = strrchr(inf, '/');
    *slash = 0;
    rc = mpk_mt_handoff_load(mapfile, &map, &err);
    if (rc) return die("mpk_mt_handoff_load", rc, &err);
    views = calloc(map->n_entries, sizeof *views);
    init = calloc(map->n_entries, sizeof *init);
    for (size_t i = 0; i < map->n_entries; i++) {
      rc = mpk_mt_tensor_open(inf, &map->entries[i], MPK_MT_ROLE_WEIGHT, &views[i], &err);
      if (rc) return die("mpk_mt_tensor_open", rc, &err);
      init[i].name = map->entries[i].inference_initializer_names[MPK_MT_ROLE_WEIGHT];
      init[i].view = &views[i];
    }
    n_init = map->n_entries;
    step("views_open");
    snprintf(model, sizeof model, "%s/model.onnx", inf);
  } else {
    snprintf(model, sizeof model, "%s/variants/cpu/inference/model.onnx", pkg);
  }
  mpk_ort_session_options so = MPK_ORT_SESSION_OPTIONS_INIT;
  so.initializers = init;
  so.n_initializers = n_init;
  so.no_copies = strcmp(mode, "files-default") != 0;
  mpk_ort_session *s = NULL;
  rc = mpk_ort_session_open(ort, model, &so, &s, &err);
  if (rc) return die("mpk_ort_session_open", rc, &err);
  step("session_open");
  mpk_ort_lm_result r;
  rc = mpk_ort_lm_cross_entropy(s, ids, n, &r, &err);
  if (rc) return die("mpk_ort_lm_cross_entropy", rc, &err);
  step("run");
  mpk_ort_session_close(s);
  step("session_closed");
  printf("\n  ], \"initializers\": %zu, \"tokens\": %zu, \"cross_entropy\": %.17g, \"logits_sha256\": \"%s\"}\n", n_init, n,
         r.cross_entropy, r.logits_sha256);
  for (size_t i = 0; views && i < n_init; i++) mpk_tensor_view_close(&views[i]);
  free(views);
  free(init);
  mpk_mt_handoff_free(map);
  mpk_mt_variant_gate_free(vg);
  mpk_ort_close(ort);
  return 0;
}
