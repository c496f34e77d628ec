/* The fetch engine's public API as a command, for tests/integration/test_fetch_ranged.sh:
     mpk_fetch_get SOURCE CACHE NAME [--connections N] [--range-bytes B] [--jobs N] [--cacert FILE]
                   [--attempts N] [--retry-delay-ms MS] [--timeout S] PATH:SIZE:MD5...
   downloads the files (each verified by size and MD5) into CACHE/.staging/NAME and commits them to
   CACHE/NAME with a record "record.json". Prints one line "ok files=F total=T reused=R retries=N
   restarts=N vmhwm_kb=K" (the process's peak RSS, /proc/self/status VmHWM) and exits 0, or
   "error: CODE MESSAGE" and exits 1. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modelpkg/fetch.h"

static long vmhwm_kb(void) {
  FILE *fp = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (fp && fgets(line, sizeof line, fp))
    if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
  if (fp) fclose(fp);
  return kb;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: mpk_fetch_get SOURCE CACHE NAME [options] PATH:SIZE:MD5...\n");
    return 2;
  }
  mpk_fetch_source_options so = MPK_FETCH_SOURCE_OPTIONS_INIT;
  mpk_fetch_options fo = MPK_FETCH_OPTIONS_INIT;
  fo.plan_name = "the test plan";
  mpk_fetch_file files[64];
  char *specs[64];
  size_t n = 0;
  for (int i = 4; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : "0";
    if (strcmp(a, "--connections") == 0) fo.connections = (unsigned)atoi(v), i++;
    else if (strcmp(a, "--range-bytes") == 0) fo.range_bytes = strtoull(v, NULL, 10), i++;
    else if (strcmp(a, "--jobs") == 0) fo.jobs = (unsigned)atoi(v), i++;
    else if (strcmp(a, "--cacert") == 0) so.ca_file = v, i++;
    else if (strcmp(a, "--attempts") == 0) so.attempts = (unsigned)atoi(v), i++;
    else if (strcmp(a, "--retry-delay-ms") == 0) so.retry_delay_ms = (unsigned)atoi(v), i++;
    else if (strcmp(a, "--timeout") == 0) so.timeout_secs = atol(v), i++;
    else if (n < 64) {
      char *s = specs[n] = strdup(a);
      char *c1 = strchr(s, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
      if (!c2) {
        fprintf(stderr, "bad file spec %s\n", a);
        return 2;
      }
      *c1 = *c2 = '\0';
      files[n] = (mpk_fetch_file){.path = s, .size = strtoull(c1 + 1, NULL, 10), .algo = MPK_DIGEST_MD5, .digest = c2 + 1};
      n++;
    }
  }
  mpk_error err;
  mpk_error_clear(&err);
  mpk_fetch_source *src = NULL;
  mpk_fetch_stage *st = NULL;
  mpk_fetch_stage_options sto = MPK_FETCH_STAGE_OPTIONS_INIT;
  sto.record_name = "record.json";
  mpk_fetch_result res;
  memset(&res, 0, sizeof res);
  int rc = mpk_fetch_source_open(argv[1], &so, &src, &err);
  if (!rc) rc = mpk_fetch_stage_open(argv[2], argv[3], &sto, &st, &err);
  if (!rc) rc = mpk_fetch_download(st, src, files, n, &fo, &res, &err);
  if (!rc) {
    char id[33], rec[128];
    mpk_fetch_new_id(id);
    int len = snprintf(rec, sizeof rec, "{\"installId\": \"%s\"}\n", id);
    mpk_fetch_doc doc = {"record.json", rec, (size_t)len};
    rc = mpk_fetch_commit(st, id, &doc, 1, NULL, &err);
  }
  mpk_fetch_stage_close(st);
  mpk_fetch_source_free(src);
  for (size_t i = 0; i < n; i++) free(specs[i]);
  if (rc) {
    printf("error: %d %s%s%s\n", rc, err.file[0] ? err.file : "", err.file[0] ? ": " : "", err.message);
    return 1;
  }
  printf("ok files=%zu total=%" PRIu64 " reused=%" PRIu64 " retries=%u restarts=%u vmhwm_kb=%ld\n", res.files,
         res.total_bytes, res.reused_bytes, res.retries, res.restarts, vmhwm_kb());
  return 0;
}
