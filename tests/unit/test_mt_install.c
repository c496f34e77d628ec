/* mt install: the source layer (directory fetch from an offset, hashing, exact sizes, retries with
   injected backoff), the installed layout, the plan's refusals, events and cancellation. The flows
   against a real server are in tests/integration/test_install_http.sh. */
#define _GNU_SOURCE /* strptime, timegm */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "mt/install/install.h"
#include "fetch/source.h"
#include "testutil.h"

#define TINY "conformance/mobiletransformers/tiny_package"

static const char *tiny(void) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s", tu_shared(TINY));
  return buf;
}

static void test_installed_paths(void **state) {
  (void)state;
  mpk_mt_manifest *m = NULL;
  mpk_error err;
  assert_int_equal(mpk_mt_manifest_load(tiny(), &m, &err), 0);
  const mpk_mt_variant *v = mpk_mt_manifest_variant(m, "cpu-int4");
  assert_non_null(v);
  static const char *const cases[][2] = {
      {"variants/cpu-int4/inference/model.onnx", "inference/model.onnx"},
      {"variants/cpu-int4/train/training_config.json", "train/training_config.json"},
      {"variants/cpu-int4/embedding/rag_config.json", "embedding/rag_config.json"},
      {"shared/tokenizer/tokenizer.json", "tokenizer/tokenizer.json"},
      {"variants/cpu-int4/checksums.json", "checksums.json"},
      {"variants/cpu-fp16/checksums.json", "variants/cpu-fp16/checksums.json"}, /* another variant's */
      {"shared/config.json", "shared/config.json"},
      {"variants/cpu-int4/inferencex/a", "variants/cpu-int4/inferencex/a"}, /* a prefix, not a directory */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *out = NULL;
    assert_int_equal(mpk_mt_installed_path(v, cases[i][0], &out, &err), 0);
    assert_string_equal(out, cases[i][1]);
    mpk_free(out);
  }
  mpk_mt_manifest_free(m);
}

/* A directory source, fetched from an offset over a prefix already there: the digest is of the
   whole file, the bytes are the source's, and a wrong prefix shows in the digest. */
static void test_dir_fetch_resume(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char pkg[4096], dst[4096];
  snprintf(pkg, sizeof pkg, "%s/pkg", dir);
  snprintf(dst, sizeof dst, "%s/out.bin", dir);
  tu_sh("mkdir -p '%s' && head -c 3000000 /dev/urandom > '%s/f.bin'", pkg, pkg);
  char src_file[4200];
  snprintf(src_file, sizeof src_file, "%s/f.bin", pkg);
  size_t len;
  uint8_t *want = tu_read_file(src_file, &len);
  char want_hex[65];
  uint8_t d[32];
  mpk_sha256(want, len, d);
  mpk_hex(d, 32, want_hex);

  mpk_src *s = NULL;
  mpk_error err;
  assert_int_equal(mpk_src_open(pkg, NULL, &s, &err), 0);
  assert_false(mpk_src_is_http(s));
  for (int wrong = 0; wrong < 2; wrong++) {
    int fd = open(dst, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    /* 1 MiB + 7 of the file already there (or of other bytes), plus a tail beyond the offset */
    uint8_t *prefix = malloc(1048583 + 100);
    memcpy(prefix, want, 1048583 + 100);
    if (wrong) prefix[5] ^= 1;
    assert_int_equal(mpk_write_all(fd, prefix, 1048583 + 100), 0);
    free(prefix);
    mpk_src_fetch f = {.algo = MPK_DIGEST_SHA256, .rel = "f.bin", .size = len, .fd = fd, .offset = 1048583};
    assert_int_equal(mpk_src_fetch_file(s, &f, &err), 0);
    assert_int_equal(f.resumed_from, 1048583);
    close(fd);
    size_t got_len;
    uint8_t *got = tu_read_file(dst, &got_len);
    assert_int_equal(got_len, len);
    if (wrong) {
      assert_string_not_equal(f.hex, want_hex);
    } else {
      assert_string_equal(f.hex, want_hex);
      assert_memory_equal(got, want, len);
    }
    free(got);
  }
  /* a declared size other than the file's: refused either way */
  int fd = open(dst, O_RDWR | O_CREAT | O_TRUNC, 0644);
  mpk_src_fetch f = {.algo = MPK_DIGEST_SHA256, .rel = "f.bin", .size = len - 1, .fd = fd};
  assert_int_equal(mpk_src_fetch_file(s, &f, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "larger than declared"));
  f = (mpk_src_fetch){.algo = MPK_DIGEST_SHA256, .rel = "f.bin", .size = len + 1, .fd = fd};
  assert_int_equal(mpk_src_fetch_file(s, &f, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "shorter than declared"));
  f = (mpk_src_fetch){.algo = MPK_DIGEST_SHA256, .rel = "nothere.bin", .size = 1, .fd = fd};
  assert_int_equal(mpk_src_fetch_file(s, &f, &err), MPK_ENOTFOUND);
  close(fd);
  /* a small document over its bound */
  uint8_t *data;
  assert_int_equal(mpk_src_read_small(s, "f.bin", 1000, &data, &len, &err), MPK_ELIMIT);
  mpk_src_free(s);
  free(want);
  tu_sh("rm -rf '%s'", dir);
}

/* Connection refused is retried with exponential backoff, capped, a bounded number of times. */
typedef struct sleeps {
  unsigned ms[16];
  size_t n;
} sleeps;
static void record_sleep(void *ctx, unsigned ms) {
  sleeps *s = ctx;
  if (s->n < 16) s->ms[s->n++] = ms;
}

static void test_http_retry_backoff(void **state) {
  (void)state;
  /* a port nobody listens on: bind one, take its number, close it */
  int sock = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(bind(sock, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t al = sizeof a;
  getsockname(sock, (struct sockaddr *)&a, &al);
  close(sock);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/pkg/", ntohs(a.sin_port));
  sleeps sl = {0};
  mpk_src_retry r = {.attempts = 5, .base_ms = 10, .max_ms = 35, .sleep_ms = record_sleep, .sleep_ctx = &sl};
  mpk_src *s = NULL;
  mpk_error err;
  assert_int_equal(mpk_src_open(url, &r, &s, &err), 0);
  assert_true(mpk_src_is_http(s));
  char *u = mpk_src_url(s, "a b/c%d.bin");
  assert_int_not_equal(0, strlen(u));
  char expect[128];
  snprintf(expect, sizeof expect, "http://127.0.0.1:%d/pkg/a%%20b/c%%25d.bin", ntohs(a.sin_port));
  assert_string_equal(u, expect);
  free(u);
  const char *dir = tu_tmpdir();
  char dst[4096];
  snprintf(dst, sizeof dst, "%s/x", dir);
  int fd = open(dst, O_RDWR | O_CREAT | O_TRUNC, 0644);
  mpk_src_fetch f = {.algo = MPK_DIGEST_SHA256, .rel = "x.bin", .size = 10, .fd = fd};
  assert_int_equal(mpk_src_fetch_file(s, &f, &err), MPK_EIO);
  assert_int_equal(f.retries, 4);
  assert_int_equal(sl.n, 4);
  assert_int_equal(sl.ms[0], 10);
  assert_int_equal(sl.ms[1], 20);
  assert_int_equal(sl.ms[2], 35);
  assert_int_equal(sl.ms[3], 35);
  close(fd);
  mpk_src_free(s);
  tu_sh("rm -rf '%s'", dir);
}

/* Redirect hops: only to http(s), never from https to http, whatever the case or the form. */
static void test_redirect_hops(void **state) {
  (void)state;
  static const struct {
    const char *from, *location;
    bool allowed, to_https;
  } cases[] = {
      {"https", "http://example.org/x", false, true},   /* https -> http: refused */
      {"https", "HTTP://example.org/x", false, true},
      {"https", " http:x", false, true},
      {"https", "https://cdn.example.org/x", true, true},
      {"https", "/relative/path", true, true},          /* relative: keeps https */
      {"https", "//other.example.org/x", true, true},   /* network-path: keeps https */
      {"https", "x/y:z", true, true},                   /* a colon after a slash: relative */
      {"http", "https://example.org/x", true, true},    /* upgrading is fine */
      {"http", "http://example.org/x", true, false},
      {"http", "relative", true, false},
      {"http", "file:///etc/passwd", false, false},
      {"https", "FILE:///etc/passwd", false, true},
      {"http", "ftp://127.0.0.1/x", false, false},
      {"http", "gopher://h/", false, false},
      {"http", "javascript:alert(1)", false, false},
      {"http", "data:text/plain,hi", false, false},
      {"http", "httpx://h/", false, false},
      {"http", "", true, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char why[300];
    bool to_https = !cases[i].to_https;
    bool ok = mpk_src_redirect_allowed(cases[i].from, cases[i].location, &to_https, why, sizeof why);
    if (ok != cases[i].allowed) fail_msg("%s -> '%s': allowed %d, expected %d", cases[i].from, cases[i].location, ok, cases[i].allowed);
    if (ok) assert_int_equal(to_https, cases[i].to_https);
    else assert_true(strstr(why, "refused") != NULL);
  }
  char why[300];
  bool to_https;
  assert_false(mpk_src_redirect_allowed("https", "http://h/", &to_https, why, sizeof why));
  assert_non_null(strstr(why, "a redirect from https to plain http (http://h/) is refused"));
}

/* The headers ranged transfers use (docs/fetch.md, "Ranged transfers"): Content-Range's end and
   total, Accept-Ranges: none, Retry-After as seconds or an HTTP-date (capped); and a ranged file's
   staging record, whose "prefix" bounds what a resume keeps. */
static void test_ranged_headers(void **state) {
  (void)state;
  mpk_src_headers h;
  mpk_src_headers_init(&h);
  static const char *const lines[] = {"HTTP/1.1 206 Partial Content\r\n", "Content-Range: bytes 0-1048575/67108864\r\n",
                                      "Accept-Ranges: none\r\n", "Retry-After: 7\r\n", "\r\n"};
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) assert_true(mpk_src_header_line(&h, lines[i], strlen(lines[i])));
  assert_int_equal(h.content_range_start, 0);
  assert_int_equal(h.content_range_end, 1048575);
  assert_int_equal(h.content_range_total, 67108864);
  assert_true(h.accept_ranges_none);
  assert_int_equal(h.retry_after_ms, 7000);
  static const char *const unknown[] = {"Content-Range: bytes 0-9/*\r\n", "Content-Range: bytes 9-0/10\r\n"};
  for (size_t i = 0; i < 2; i++) {
    assert_true(mpk_src_header_line(&h, unknown[i], strlen(unknown[i])));
    assert_int_equal(h.content_range_total, -1);
  }
  const char *big = "Retry-After: 86400\r\n", *junk = "Retry-After: soon\r\n", *past = "Retry-After: Thu, 01 Jan 1970 00:00:10 GMT\r\n";
  assert_true(mpk_src_header_line(&h, big, strlen(big)));
  assert_int_equal(h.retry_after_ms, (long long)MPK_SRC_MAX_RETRY_AFTER_SECS * 1000);
  assert_true(mpk_src_header_line(&h, junk, strlen(junk)));
  assert_int_equal(h.retry_after_ms, -1);
  assert_true(mpk_src_header_line(&h, past, strlen(past)));
  assert_int_equal(h.retry_after_ms, 0);
  char date[100], line[160];
  time_t soon = time(NULL) + 30;
  struct tm tm;
  gmtime_r(&soon, &tm);
  strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  snprintf(line, sizeof line, "Retry-After: %s\r\n", date);
  assert_true(mpk_src_header_line(&h, line, strlen(line)));
  assert_in_range(h.retry_after_ms, 28000, 30000);
  /* a new response forgets them */
  assert_true(mpk_src_header_line(&h, "HTTP/1.1 200 OK\r\n", 17));
  assert_false(h.accept_ranges_none);
  assert_int_equal(h.retry_after_ms, -1);
  /* the record's prefix: min(prefix, staged size); without it the staged size, as before */
  static const char sha[] = "0000000000000000000000000000000000000000000000000000000000000000";
  char rec[400], val[256];
  snprintf(rec, sizeof rec, "{\"path\":\"a\",\"size\":100,\"sha256\":\"%s\",\"validator\":\"v\",\"source\":\"s\",\"prefix\":40}", sha);
  assert_int_equal(mpk_mt_install_parse_part(rec, strlen(rec), sha, 100, "s", 70, val), 40);
  assert_string_equal(val, "v");
  assert_int_equal(mpk_mt_install_parse_part(rec, strlen(rec), sha, 100, "s", 30, val), 30);
  snprintf(rec, sizeof rec, "{\"path\":\"a\",\"size\":100,\"sha256\":\"%s\",\"validator\":\"v\",\"source\":\"s\"}", sha);
  assert_int_equal(mpk_mt_install_parse_part(rec, strlen(rec), sha, 100, "s", 70, val), 70);
}

/* Header lines: the fields the installer uses, and the limits on one response. */
static void test_header_limits(void **state) {
  (void)state;
  mpk_src_headers h;
  mpk_src_headers_init(&h);
  static const char *const lines[] = {"HTTP/1.1 206 Partial Content\r\n", "ETag: \"abc\"\r\n",
                                      "Content-Range: bytes 100-199/200\r\n", "Content-Length: 100\r\n",
                                      "Location:  /x \r\n", "\r\n"};
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) assert_true(mpk_src_header_line(&h, lines[i], strlen(lines[i])));
  assert_int_equal(h.status, 206);
  assert_true(h.complete);
  assert_string_equal(h.etag, "\"abc\"");
  assert_int_equal(h.content_range_start, 100);
  assert_int_equal(h.content_length, 100);
  assert_string_equal(h.location, "/x");
  /* signs, blanks and overlong numbers are not numbers */
  static const char *const bad[] = {"Content-Length: -5\r\n", "Content-Length: 1 2\r\n",
                                    "Content-Length: 9999999999999999999999\r\n", "Content-Length: +5\r\n"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_true(mpk_src_header_line(&h, bad[i], strlen(bad[i])));
    assert_int_equal(h.content_length, -1);
  }
  const char *cr = "Content-Range: bytes -5-9/10\r\n";
  assert_true(mpk_src_header_line(&h, cr, strlen(cr)));
  assert_int_equal(h.content_range_start, -1);
  /* a new response starts afresh */
  assert_true(mpk_src_header_line(&h, "HTTP/1.1 200 OK\r\n", 17));
  assert_int_equal(h.status, 200);
  assert_int_equal(h.content_length, -1);
  assert_string_equal(h.etag, "");
  /* 100 header lines pass, the 101st is refused */
  mpk_src_headers_init(&h);
  assert_true(mpk_src_header_line(&h, "HTTP/1.1 200 OK\r\n", 17));
  for (int i = 0; i < MPK_SRC_MAX_HEADER_LINES; i++) assert_true(mpk_src_header_line(&h, "X-A: b\r\n", 8));
  assert_false(mpk_src_header_line(&h, "X-A: b\r\n", 8));
  assert_non_null(strstr(h.why, "more than 100 header lines"));
  /* 64 KiB of headers pass, one byte more is refused */
  mpk_src_headers_init(&h);
  char *big = malloc(MPK_SRC_MAX_HEADER_BYTES + 1);
  memset(big, 'a', MPK_SRC_MAX_HEADER_BYTES + 1);
  memcpy(big, "X-Big: ", 7);
  assert_true(mpk_src_header_line(&h, big, MPK_SRC_MAX_HEADER_BYTES));
  assert_false(mpk_src_header_line(&h, "\r\n", 2));
  assert_non_null(strstr(h.why, "exceed 65536 bytes"));
  free(big);
  /* responses in one transfer */
  mpk_src_headers_init(&h);
  for (int i = 0; i < MPK_SRC_MAX_RESPONSES; i++) assert_true(mpk_src_header_line(&h, "HTTP/1.1 302 Found\r\n", 20));
  assert_false(mpk_src_header_line(&h, "HTTP/1.1 302 Found\r\n", 20));
  /* a Location that does not fit is refused, not cut */
  mpk_src_headers_init(&h);
  char loc[3000];
  memset(loc, 'l', sizeof loc);
  memcpy(loc, "Location: ", 10);
  assert_false(mpk_src_header_line(&h, loc, sizeof loc));
  assert_non_null(strstr(h.why, "Location"));
}

/* A program that sets struct_size gets its fields read; a size that is no layout is refused; one
   that covers only struct_size leaves every field at its default (no repo id: refused); 0 means the
   0.1 layout (docs/API.md, "Options structs"). */
static void test_options_struct_size(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char cache[4096];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  mpk_mt_install_options o = MPK_MT_INSTALL_OPTIONS_INIT;
  assert_int_equal(o.struct_size, sizeof o);
  o.repo_id = "org/s";
  o.cache_dir = cache;
  o.variant = "cpu-int4";
  o.timeout_secs = 5;
  mpk_error err;
  assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), 0);
  o.struct_size = 4;
  assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), MPK_EINVAL);
  assert_non_null(strstr(err.message, "struct_size"));
  o.struct_size = sizeof(size_t);
  assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), MPK_EINVAL);
  assert_non_null(strstr(err.message, "repo id"));
  o.struct_size = 0;
  assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), 0);
  tu_sh("rm -rf '%s'", dir);
}

/* mpk_mt_install_recover on a cache whose staging paths are links: refused, nothing followed. */
static void test_recover_refuses_links(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char cache[4096];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  mpk_mt_install_options o = {.repo_id = "org/r", .cache_dir = cache, .variant = "cpu-int4"};
  mpk_error err;
  assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), 0);
  /* a decoy holding what recovery would remove (old/, a commit marker naming its tree) */
  tu_sh("mkdir -p '%s/decoy/old' && echo '{\"installId\":\"x\"}' > '%s/decoy/commit.json' && echo x > '%s/decoy/old/f'", dir,
        dir, dir);
  static const char *const links[] = {".staging", ".staging/org__r", ".staging/org__r/old", ".staging/org__r/new",
                                      "org__r"};
  for (size_t i = 0; i < sizeof links / sizeof *links; i++) {
    tu_sh("rm -rf '%s/%s' && mkdir -p \"$(dirname '%s/%s')\" && ln -s '%s/decoy' '%s/%s'", cache, links[i], cache,
          links[i], dir, cache, links[i]);
    /* a commit marker, so that recovery has work to do where it can reach one */
    tu_sh("test -L '%s/.staging/org__r' || test -L '%s/.staging' || echo '{\"installId\":\"x\"}' > '%s/.staging/org__r/commit.json'",
          cache, cache, cache);
    int recovered = -1;
    int rc = mpk_mt_install_recover(cache, "org/r", &recovered, &err);
    if (rc != MPK_EMALFORMED) fail_msg("link at %s: recover returned %d", links[i], rc);
    assert_non_null(strstr(err.message, "is a symbolic link: refused, nothing was followed"));
    assert_non_null(strstr(err.file, links[i]));
    tu_sh("test -f '%s/decoy/old/f' && test -f '%s/decoy/commit.json' && test -L '%s/%s'", dir, dir, cache, links[i]);
    /* back to a working cache for the next case */
    tu_sh("rm -rf '%s'", cache);
    assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), 0);
  }
  tu_sh("rm -rf '%s'", dir);
}

/* ---------------------------------------------------------------- the installer */

typedef struct events {
  int kinds[4096];
  size_t n;
  uint64_t last_done, total;
  int cancel_at; /* cancel at this event kind (-1: never) */
} events;

static int on_event(void *ctx, const mpk_mt_install_event *ev) {
  events *e = ctx;
  if (e->n < 4096) e->kinds[e->n++] = (int)ev->kind;
  e->last_done = ev->done;
  e->total = ev->total;
  return (int)ev->kind == e->cancel_at;
}

/* The reference runtime's record, against what Gson's toJson writes for InstallRecord (computed by
   hand from Gson's JsonWriter: HTML-safe escapes, U+2028/9, control characters, lowercase hex) and
   Kotlin's sorted() (UTF-16 order: U+1F600 before U+FF21, unlike UTF-8 byte order). */
static void test_reference_record(void **state) {
  (void)state;
  const char *feat[] = {"train", "\xef\xbc\xa1", "inference", "\xf0\x9f\x98\x80", "\t\n", "\xc3\x9cn", "a\x01\x1f\x7f"};
  char *text;
  size_t len;
  mpk_error err;
  assert_int_equal(mpk_mt_reference_record("org/A<b>&c='d'\"\\/", "v\xe2\x80\xa8x\xe2\x80\xa9\b\f\r", feat, 7,
                                           1700000000123LL, &text, &len, &err),
                   0);
  static const char want[] =
      "{\"repoId\":\"org/A\\u003cb\\u003e\\u0026c\\u003d\\u0027d\\u0027\\\"\\\\/\","
      "\"variantId\":\"v\\u2028x\\u2029\\b\\f\\r\","
      "\"features\":[\"\\t\\n\",\"a\\u0001\\u001f\x7f\",\"inference\",\"train\",\"\xc3\x9cn\",\"\xf0\x9f\x98\x80\",\"\xef\xbc\xa1\"],"
      "\"installedAtEpochMs\":1700000000123}";
  assert_int_equal(len, sizeof want - 1);
  assert_string_equal(text, want);
  /* the reader's field meanings survive a JSON round trip */
  json_t *doc = json_loadb(text, len, 0, NULL);
  assert_non_null(doc);
  assert_string_equal(json_string_value(json_object_get(doc, "repoId")), "org/A<b>&c='d'\"\\/");
  assert_string_equal(json_string_value(json_object_get(doc, "variantId")), "v\xe2\x80\xa8x\xe2\x80\xa9\b\f\r");
  assert_int_equal(json_array_size(json_object_get(doc, "features")), 7);
  assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "features"), 1)), "a\x01\x1f\x7f");
  assert_int_equal(json_integer_value(json_object_get(doc, "installedAtEpochMs")), 1700000000123LL);
  json_decref(doc);
  mpk_free(text);
  /* no features: an empty list, as Gson writes emptyList() */
  assert_int_equal(mpk_mt_reference_record("o/n", "v", NULL, 0, 0, &text, &len, &err), 0);
  assert_string_equal(text, "{\"repoId\":\"o/n\",\"variantId\":\"v\",\"features\":[],\"installedAtEpochMs\":0}");
  mpk_free(text);
}

static void test_install_events_and_record(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char cache[4096];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  events ev = {.cancel_at = -1};
  const char *feat[] = {"train", "rag"};
  mpk_mt_install_options o = {.repo_id = "café/model", .cache_dir = cache, .variant = "cpu-int4",
                              .features = feat, .n_features = 2, .jobs = 2, .on_event = on_event, .ctx = &ev};
  mpk_mt_install_result r;
  mpk_error err;
  assert_int_equal(mpk_mt_install(tiny(), &o, &r, &err), 0);
  char expect[4200];
  snprintf(expect, sizeof expect, "%s/caf___model", cache);
  assert_string_equal(r.repo_dir, expect);
  assert_int_equal(r.replaced, 0);
  assert_int_equal(ev.kinds[0], MPK_MT_INSTALL_PLANNED);
  assert_int_equal(ev.kinds[ev.n - 1], MPK_MT_INSTALL_COMMITTED);
  assert_int_equal(ev.last_done, ev.total);
  assert_int_equal(ev.total, r.total_bytes);
  /* core + checksums + train + rag: no inference (not asked for) */
  char p[4400];
  snprintf(p, sizeof p, "%s/embedding/rag_config.json", r.repo_dir);
  assert_true(mpk_file_exists(p));
  snprintf(p, sizeof p, "%s/inference/model.onnx", r.repo_dir);
  assert_false(mpk_file_exists(p));
  snprintf(p, sizeof p, "%s/" MPK_MT_INSTALL_RECORD, r.repo_dir);
  json_t *rec = tu_load_json(p);
  assert_string_equal(json_string_value(json_object_get(rec, "repoId")), "café/model");
  assert_string_equal(json_string_value(json_object_get(rec, "variant")), "cpu-int4");
  assert_int_equal(json_array_size(json_object_get(rec, "features")), 2);
  /* beside it, the reference runtime's record: Gson's compact bytes, features sorted, the same
     instant as installedAt (to the second) */
  snprintf(p, sizeof p, "%s/" MPK_MT_REFERENCE_INSTALL_RECORD, r.repo_dir);
  size_t ref_len;
  char *ref = (char *)tu_read_file(p, &ref_len);
  static const char head[] = "{\"repoId\":\"café/model\",\"variantId\":\"cpu-int4\",\"features\":[\"rag\",\"train\"],"
                             "\"installedAtEpochMs\":";
  assert_true(ref_len > sizeof head && memcmp(ref, head, sizeof head - 1) == 0);
  char *end;
  long long ms = strtoll(ref + sizeof head - 1, &end, 10);
  assert_true(end == ref + ref_len - 1 && *end == '}');
  struct tm tm = {0};
  const char *when = json_string_value(json_object_get(rec, "installedAt"));
  assert_non_null(strptime(when, "%Y-%m-%dT%H:%M:%SZ", &tm));
  assert_int_equal(ms / 1000, (long long)timegm(&tm));
  free(ref);
  json_decref(rec);
  mpk_mt_install_result_free(&r);

  /* a reinstall replaces it; a cancelled one leaves it as it was */
  ev = (events){.cancel_at = -1};
  o.variant = "cpu-fp16";
  o.features = NULL;
  o.n_features = 0;
  assert_int_equal(mpk_mt_install(tiny(), &o, &r, &err), 0);
  assert_int_equal(r.replaced, 1);
  mpk_mt_install_result_free(&r);
  snprintf(p, sizeof p, "%s/inference/model.onnx", expect);
  size_t before_len;
  uint8_t *before = tu_read_file(p, &before_len);
  ev = (events){.cancel_at = MPK_MT_INSTALL_FILE_DONE};
  o.variant = "cpu-int4";
  assert_int_equal(mpk_mt_install(tiny(), &o, &r, &err), MPK_ECANCELLED);
  size_t after_len;
  uint8_t *after = tu_read_file(p, &after_len);
  assert_int_equal(before_len, after_len);
  assert_memory_equal(before, after, before_len);
  free(before);
  free(after);
  snprintf(p, sizeof p, "%s/" MPK_MT_INSTALL_RECORD, expect);
  rec = tu_load_json(p);
  assert_string_equal(json_string_value(json_object_get(rec, "variant")), "cpu-fp16");
  json_decref(rec);

  /* another repo id that sanitizes to the same directory is refused */
  o.repo_id = "caf\xc3\xa9__model";
  o.on_event = NULL;
  assert_int_equal(mpk_mt_install(tiny(), &o, &r, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "not caf"));
  tu_sh("rm -rf '%s'", dir);
}

static void test_install_refusals(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char cache[4096];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  mpk_mt_install_options o = {.repo_id = "org/x", .cache_dir = cache, .variant = "nope"};
  mpk_error err;
  assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), MPK_ENOTFOUND);
  o.variant = "cpu-fp16";
  const char *feat[] = {"rag"}; /* cpu-fp16 does not declare it */
  o.features = feat;
  o.n_features = 1;
  assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, "rag"));
  o.n_features = 0;
  o.repo_id = ".staging";
  assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), MPK_EINVAL);
  o.repo_id = "..";
  assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), MPK_EINVAL);
  /* nothing was created by a refusal before the plan */
  assert_false(mpk_is_dir(cache));
  tu_sh("rm -rf '%s'", dir);
}

/* ---------------------------------------------------------------- crashing the commit */

/* The variant of the complete install at `repo_dir` ("" when it is not one): its record names a
   variant, and every file of that variant's plan (default features) is there with its digest. */
static void complete_install(const char *repo_dir, char variant[64]) {
  variant[0] = '\0';
  char p[4400];
  snprintf(p, sizeof p, "%s/" MPK_MT_INSTALL_RECORD, repo_dir);
  if (!mpk_file_exists(p)) return;
  json_t *rec = tu_load_json(p);
  const char *v = json_string_value(json_object_get(rec, "variant"));
  mpk_mt_manifest *m = NULL;
  mpk_error err;
  assert_int_equal(mpk_mt_manifest_load(tiny(), &m, &err), 0);
  mpk_mt_download_plan *plan = NULL;
  assert_int_equal(mpk_mt_plan_download(m, v, NULL, &plan, &err), 0);
  bool ok = true;
  for (size_t i = 0; i < plan->n_files && ok; i++) {
    char *inst = NULL;
    assert_int_equal(mpk_mt_installed_path(mpk_mt_manifest_variant(m, v), plan->files[i].path, &inst, &err), 0);
    snprintf(p, sizeof p, "%s/%s", repo_dir, inst);
    mpk_free(inst);
    int fd = open(p, O_RDONLY);
    char hex[65] = "";
    ok = fd >= 0 && mpk_sha256_fd(fd, hex) == 0 && strcmp(hex, plan->files[i].sha256) == 0;
    if (fd >= 0) close(fd);
  }
  /* the reference runtime's record came with the tree, naming the same variant */
  snprintf(p, sizeof p, "%s/" MPK_MT_REFERENCE_INSTALL_RECORD, repo_dir);
  if (ok && mpk_file_exists(p)) {
    json_t *ref = tu_load_json(p);
    ok = ref && strcmp(json_string_value(json_object_get(ref, "variantId")), v) == 0;
    json_decref(ref);
  } else {
    ok = false;
  }
  snprintf(p, sizeof p, "%s/" MPK_MT_MANIFEST_FILENAME, repo_dir);
  if (ok && mpk_file_exists(p)) snprintf(variant, 64, "%s", v);
  mpk_mt_download_plan_free(plan);
  mpk_mt_manifest_free(m);
  json_decref(rec);
}

static void test_commit_crash(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char cache[4096], target[4200], staging[4300];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(target, sizeof target, "%s/org__m", cache);
  snprintf(staging, sizeof staging, "%s/.staging/org__m", cache);
  mpk_mt_install_options o = {.repo_id = "org/m", .cache_dir = cache, .jobs = 2};
  mpk_error err;
  /* reader: a reader (the load gate's shared flock on inference/) holds the old tree throughout:
     it is retired, never deleted under the reader, and a gc removes it once the reader lets go. */
  for (int pass = 0; pass < 4; pass++) {
    int no_exchange = pass & 1, reader = pass >> 1;
    int last = 0, k;
    for (k = 1; !last; k++) {
      tu_sh("rm -rf '%s'", cache);
      o.variant = "cpu-fp16";
      assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), 0);
      int rfd = -1;
      if (reader) {
        char inf[4300];
        snprintf(inf, sizeof inf, "%s/inference", target);
        rfd = open(inf, O_RDONLY | O_DIRECTORY);
        assert_true(rfd >= 0);
        assert_int_equal(flock(rfd, LOCK_SH | LOCK_NB), 0);
      }
      o.variant = "cpu-int4";
      pid_t pid = fork();
      assert_true(pid >= 0);
      if (pid == 0) {
        mpk_mt_install_test t = {.stop_after = k, .no_exchange = no_exchange};
        int rc = mpk_mt_install_ex(tiny(), &o, &t, NULL, &err);
        _exit(rc == MPK_MT_INSTALL_STOPPED ? 0 : rc == 0 ? 2 : 1);
      }
      int st;
      assert_int_equal(waitpid(pid, &st, 0), pid);
      assert_true(WIFEXITED(st));
      assert_int_not_equal(WEXITSTATUS(st), 1);
      last = WEXITSTATUS(st) == 2; /* ran to the end: k is past the last step */
      char v[64];
      complete_install(target, v);
      /* After the crash: the old install or the new one — or, with two renames, stopped between
         them, nothing at the target while the old tree waits aside, until recovery. */
      bool between = no_exchange && k == 6 && !mpk_is_dir(target);
      if (!between && strcmp(v, "cpu-fp16") != 0 && strcmp(v, "cpu-int4") != 0)
        fail_msg("stopped after step %d (no_exchange %d): the target is not a complete install", k, no_exchange);
      if (k <= 5 && !last) assert_string_equal(v, "cpu-fp16"); /* the swap had not happened */
      int recovered = 0;
      assert_int_equal(mpk_mt_install_recover(cache, "org/m", &recovered, &err), 0);
      complete_install(target, v);
      /* the marker (step 5) decides: before it the old install stays, from it the new one */
      assert_string_equal(v, k >= 5 || last ? "cpu-int4" : "cpu-fp16");
      if (k >= 5 && !last) assert_int_equal(recovered, 1);
      char old_dir[4400];
      snprintf(old_dir, sizeof old_dir, "%s/old", staging);
      assert_false(mpk_is_dir(old_dir));
      /* and the next install completes from there */
      assert_int_equal(mpk_mt_install(tiny(), &o, NULL, &err), 0);
      complete_install(target, v);
      assert_string_equal(v, "cpu-int4");
      if (reader) {
        /* the reader's tree was never deleted: its files are still there, retired (one tree) */
        assert_int_equal(faccessat(rfd, "model.onnx", R_OK, 0), 0);
        tu_sh("test \"$(ls -A '%s' | tr '\\n' ' ')\" = 'lock retired ' && test $(ls -A '%s/retired' | wc -l) = 1",
              staging, staging);
        close(rfd);
        mpk_fetch_gc_result *g = NULL;
        assert_int_equal(mpk_mt_cache_gc(cache, NULL, &g, &err), 0);
        mpk_fetch_gc_result_free(g);
        assert_false(mpk_is_dir(staging)); /* the retired tree and the orphaned lock: gone */
      } else {
        tu_sh("test \"$(ls -A '%s')\" = lock", staging);
      }
      assert_true(k < 20);
    }
    /* every step was crashed at: 9 with the exchange, 10 with two renames, then one complete run */
    assert_int_equal(k - 1, no_exchange ? 11 : 10);
    (void)reader;
  }
  tu_sh("rm -rf '%s'", dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_installed_paths),
      cmocka_unit_test(test_dir_fetch_resume),
      cmocka_unit_test(test_http_retry_backoff),
      cmocka_unit_test(test_redirect_hops),
      cmocka_unit_test(test_header_limits),
      cmocka_unit_test(test_ranged_headers),
      cmocka_unit_test(test_options_struct_size),
      cmocka_unit_test(test_recover_refuses_links),
      cmocka_unit_test(test_reference_record),
      cmocka_unit_test(test_install_events_and_record),
      cmocka_unit_test(test_install_refusals),
      cmocka_unit_test(test_commit_crash),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
