#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* program_invocation_short_name: the test's name in its SKIP line */
#endif
#include "testutil.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *tu_shared(const char *rel) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", MPK_SHARED_DIR, rel);
  return buf;
}

uint8_t *tu_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *p = malloc((size_t)n + 1);
  assert_non_null(p);
  if (fread(p, 1, (size_t)n, f) != (size_t)n) fail_msg("cannot read %s", path);
  fclose(f);
  p[n] = 0;
  *len = (size_t)n;
  return p;
}

void tu_replace_in_file(const char *path, const char *from, const char *to) {
  size_t len;
  char *text = (char *)tu_read_file(path, &len);
  char *hit = strstr(text, from);
  if (!hit) fail_msg("%s has no \"%s\"", path, from);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fwrite(text, 1, (size_t)(hit - text), f);
  fputs(to, f);
  fputs(hit + strlen(from), f);
  fclose(f);
  free(text);
}

json_t *tu_load_json(const char *path) {
  json_error_t e;
  json_t *v = json_load_file(path, JSON_ALLOW_NUL, &e);
  if (!v) fail_msg("cannot load %s: %s", path, e.text);
  return v;
}

json_t *tu_webllm_cases(const char *file, json_t **root) {
  char rel[512];
  snprintf(rel, sizeof rel, "conformance/mlc-webllm/%s", file);
  *root = tu_load_json(tu_shared(rel));
  json_t *cases = json_object_get(*root, "cases");
  assert_true(json_is_array(cases));
  assert_true(json_array_size(cases) > 0);
  return cases;
}

char *tu_dumps(const json_t *v) {
  char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
  assert_non_null(s);
  return s;
}

static int b64val(int c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

uint8_t *tu_b64decode(const char *s, size_t *len) {
  size_t n = strlen(s);
  uint8_t *out = malloc(n / 4 * 3 + 4);
  assert_non_null(out);
  size_t o = 0;
  unsigned acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = b64val((unsigned char)s[i]);
    if (v < 0) continue; /* padding */
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (uint8_t)(acc >> bits);
    }
  }
  *len = o;
  return out;
}

void tu_webllm_location(const mpk_error *err, char *out, size_t size) {
  size_t o = (size_t)snprintf(out, size, "%s", err->file);
  const char *p = err->pointer;
  while (*p == '/' && o < size) {
    p++;
    char seg[512];
    size_t s = 0;
    while (*p && *p != '/' && s + 1 < sizeof seg) {
      if (p[0] == '~' && p[1] == '1') { seg[s++] = '/'; p += 2; }
      else if (p[0] == '~' && p[1] == '0') { seg[s++] = '~'; p += 2; }
      else seg[s++] = *p++;
    }
    seg[s] = '\0';
    bool numeric = s > 0 && strspn(seg, "0123456789") == s;
    if (s == 0 && *p == '\0') o += (size_t)snprintf(out + o, size - o, " key");
    else if (numeric) o += (size_t)snprintf(out + o, size - o, "[%s]", seg);
    else o += (size_t)snprintf(out + o, size - o, ".%s", seg);
  }
}

void tu_expect_sha256(const char *what, const void *p, size_t n, const char *want) {
  char got[MPK_SHA256_ID_SIZE];
  assert_int_equal(mpk_sha256_id(p, n, got), 0);
  if (strcmp(got, want) != 0) fail_msg("%s: %s, not %s as on x86-64", what, got, want);
}

const char *tu_err(const mpk_error *err) {
  static char buf[2048];
  mpk_error_format(err, buf, sizeof buf);
  return buf;
}

const char *tu_tmpdir(void) {
  static char buf[256];
  snprintf(buf, sizeof buf, "/tmp/mpk-test-XXXXXX");
  if (!mkdtemp(buf)) fail_msg("mkdtemp failed");
  return buf;
}

void tu_sh(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  if (system(cmd) != 0) fail_msg("command failed: %s", cmd);
}

/* ---- tools a test needs */

bool mpk_test_have_tool(const char *tool) {
  if (strchr(tool, '/')) return access(tool, X_OK) == 0;
  const char *given = getenv("MPK_TEST_TOOL_PATH");
  const char *path = getenv("PATH");
  char search[8192];
  if (given)
    snprintf(search, sizeof search, "%s", given);
  else
    snprintf(search, sizeof search, "%s:/usr/local/sbin:/usr/sbin:/sbin", path ? path : "/usr/bin:/bin");
  for (char *save = NULL, *dir = strtok_r(search, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    char file[4096];
    snprintf(file, sizeof file, "%s/%s", dir, tool);
    if (access(file, X_OK) == 0) return true;
  }
  return false;
}

void mpk_test_skip(const char *what) {
  printf("SKIP: %s: %s not found (scripts/setup.sh --test installs it)\n", program_invocation_short_name, what);
  fflush(stdout);
  exit(77);
}

void mpk_test_need_tool(const char *tool) {
  if (!mpk_test_have_tool(tool)) mpk_test_skip(tool);
}

const char *mpk_test_emulator(void) {
  const char *e = getenv("MPK_TEST_EMULATOR");
  return e && *e ? e : NULL;
}

int mpk_test_execv(const char *prog, char *const argv[]) {
  const char *emu = mpk_test_emulator();
  if (!emu) return execv(prog, argv);
  char words[4096];
  if (strlen(emu) >= sizeof words) {
    errno = E2BIG;
    return -1;
  }
  strcpy(words, emu);
  char *args[256];
  size_t n = 0;
  char *save = NULL;
  for (char *w = strtok_r(words, " ", &save); w && n < 200; w = strtok_r(NULL, " ", &save)) args[n++] = w;
  args[n++] = (char *)prog;
  for (size_t i = 1; argv[0] && argv[i] && n < 255; i++) args[n++] = argv[i];
  args[n] = NULL;
  return execv(args[0], args);
}

bool mpk_test_have_python_module(const char *module) {
  for (const char *c = module; *c; c++)
    if (!(*c == '_' || *c == '.' || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
      return false;
  if (!mpk_test_have_tool("/usr/bin/python3")) return false;
  char cmd[512];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c 'import %s' >/dev/null 2>&1", module);
  return system(cmd) == 0;
}

void mpk_test_need_python_module(const char *module) {
  if (!mpk_test_have_python_module(module)) {
    char what[300];
    snprintf(what, sizeof what, "/usr/bin/python3 module %s", module);
    mpk_test_skip(what);
  }
}
