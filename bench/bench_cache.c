/* bench_cache — time loading and checking an MLC tensor cache (ndarray-cache.json /
 * tensor-cache.json).
 *
 *   bench_cache [--iters N] [--repeat R] [--only STEP] PATH
 *
 * Each of R repeats times N iterations of one step and keeps the time per iteration; the
 * median over the repeats is reported (microseconds) for:
 *
 *   jansson     json_loadb() alone, with the flags modelpkg's strict reader used when it parsed
 *               with jansson (until 2026-11): the old floor, for comparison (not a peer)
 *   scan        mpk_json_scan() with a callback that does nothing: the strict reader (yajl's lexer
 *               plus every rule of core/json_scan.c) without building anything
 *   json        mpk_json_parse(): the same, building the jansson tree every other document gets
 *   parse       mpk_mlc_tensor_cache_parse() of the bytes already in memory (parse + every check)
 *   load        mpk_mlc_tensor_cache_load(PATH): open + read + parse + check
 *   load_all    load + mpk_mlc_params_from_tensor_cache() + mpk_mlc_params_resources()
 *
 * one line each:  RESULT step=load_all iters=200 runs=7 median_us=1234.5 min_us=1200.1
 * plus a line describing the cache (records, shards, resources) as a sanity check.
 * A benchmark, not a test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "modelpkg.h"
/* Internal: the strict reader itself (the static library exports it). */
#include "core/json_scan.h"
#include "bench_util.h"

static void die(const char *what, int rc, const mpk_error *err) {
  char line[2048];
  mpk_error_format(err, line, sizeof line);
  fprintf(stderr, "bench_cache: %s: %s (%s)\n", what, line, mpk_code_name(rc));
  exit(1);
}

enum step { STEP_JANSSON, STEP_SCAN, STEP_JSON, STEP_PARSE, STEP_LOAD, STEP_LOAD_ALL };
static const char *const step_names[] = {"jansson", "scan", "json", "parse", "load", "load_all"};

static const char *g_path;
static char *g_data;
static size_t g_len;

static int ignore_event(void *ctx, const mpk_json_event *e) {
  (void)ctx;
  (void)e;
  return 0;
}

static void run_once(enum step s) {
  if (s == STEP_JANSSON) {
    json_error_t jerr;
    json_t *v = json_loadb(g_data, g_len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!v) {
      fprintf(stderr, "bench_cache: jansson: %s\n", jerr.text);
      exit(1);
    }
    json_decref(v);
    return;
  }
  mpk_error err;
  mpk_error_clear(&err);
  if (s == STEP_SCAN || s == STEP_JSON) {
    json_t *v = NULL;
    int rc = s == STEP_SCAN ? mpk_json_scan(g_data, g_len, NULL, g_path, ignore_event, NULL, &err)
                            : mpk_json_parse(g_data, g_len, NULL, g_path, &v, &err);
    if (rc) die(step_names[s], rc, &err);
    json_decref(v);
    return;
  }
  mpk_mlc_tensor_cache *tc = NULL;
  int rc = s == STEP_PARSE ? mpk_mlc_tensor_cache_parse(g_data, g_len, g_path, &tc, &err)
                           : mpk_mlc_tensor_cache_load(g_path, &tc, &err);
  if (rc) die(step_names[s], rc, &err);
  if (s == STEP_LOAD_ALL) {
    mpk_mlc_params *params = NULL;
    mpk_mlc_resources res;
    if ((rc = mpk_mlc_params_from_tensor_cache(tc, &params, &err))) die("params", rc, &err);
    if ((rc = mpk_mlc_params_resources(params, NULL, 0, &res, &err))) die("resources", rc, &err);
    mpk_mlc_params_free(params);
  }
  mpk_mlc_tensor_cache_free(tc);
}

int main(int argc, char **argv) {
  int iters = 200, repeat = 7, i = 1, only = -1;
  for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
    if (strcmp(argv[i], "--iters") == 0) iters = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--repeat") == 0) repeat = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--only") == 0) { /* one step, e.g. under perf */
      for (int s = STEP_JANSSON; s <= STEP_LOAD_ALL; s++)
        if (strcmp(argv[i + 1], step_names[s]) == 0) only = s;
      if (only < 0) break;
    } else break;
  }
  if (i != argc - 1 || iters < 1 || repeat < 1) {
    fprintf(stderr, "usage: bench_cache [--iters N] [--repeat R] [--only jansson|scan|json|parse|load|load_all] PATH\n");
    return 2;
  }
  g_path = argv[i];

  FILE *f = fopen(g_path, "rb");
  if (!f) { perror(g_path); return 1; }
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  g_data = malloc((size_t)sz + 1);
  if (!g_data || fread(g_data, 1, (size_t)sz, f) != (size_t)sz) { perror(g_path); return 1; }
  fclose(f);
  g_len = (size_t)sz;

  /* What the cache holds, once, so a reader can see the work is real. */
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mlc_tensor_cache *tc = NULL;
  mpk_mlc_params *params = NULL;
  mpk_mlc_resources res;
  int rc = mpk_mlc_tensor_cache_load(g_path, &tc, &err);
  if (rc) die("load", rc, &err);
  if ((rc = mpk_mlc_params_from_tensor_cache(tc, &params, &err))) die("params", rc, &err);
  if ((rc = mpk_mlc_params_resources(params, NULL, 0, &res, &err))) die("resources", rc, &err);
  printf("CACHE bytes=%zu shards=%zu records=%zu params=%zu max_param_bytes=%lld total_param_bytes=%lld\n",
         g_len, tc->n_shards, tc->n_records, params->n,
         (long long)res.max_storage_buffer_binding_size, (long long)res.estimated_device_memory_bytes);
  mpk_mlc_params_free(params);
  mpk_mlc_tensor_cache_free(tc);

  double *per = calloc((size_t)repeat, sizeof *per);
  if (!per) return 1;
  for (int s = STEP_JANSSON; s <= STEP_LOAD_ALL; s++) {
    if (only >= 0 && s != only) continue;
    for (int k = 0; k < iters / 10 + 1; k++) run_once((enum step)s); /* warm up */
    for (int r = 0; r < repeat; r++) {
      double t0 = now_s();
      for (int k = 0; k < iters; k++) run_once((enum step)s);
      per[r] = (now_s() - t0) / iters;
    }
    qsort(per, (size_t)repeat, sizeof *per, cmp_double);
    double med = repeat % 2 ? per[repeat / 2] : (per[repeat / 2 - 1] + per[repeat / 2]) / 2;
    printf("RESULT step=%s iters=%d runs=%d median_us=%.1f min_us=%.1f\n", step_names[s], iters,
           repeat, med * 1e6, per[0] * 1e6);
  }
  free(per);
  free(g_data);
  return 0;
}
