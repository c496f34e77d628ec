/* core/url.c: WHATWG URL resolution for http(s), fixed cases (each value from Node 20's
   new URL(ref, base).href), the refusals and their codes, the input cap, linear time on hostile input.
   The random differential test against Node itself is test_url_diff. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/url.h"
#include "testutil.h"

static void test_resolve_cases(void **state) {
  (void)state;
  static const char *cases[][3] = {
      /* ref, base (NULL: absolute), href */
      {"HTTP://EXAMPLE.com:80/a/./b/../c", NULL, "http://example.com/a/c"},
      {" \x01https://h:443\\x\\%2e%2E\\y\t\n ", NULL, "https://h/y"},
      {"http://0x7f.1/", NULL, "http://127.0.0.1/"},
      {"http://017700000001/", NULL, "http://127.0.0.1/"},
      {"http://4294967295/", NULL, "http://255.255.255.255/"},
      {"http://1.2.3.4./", NULL, "http://1.2.3.4/"},
      {"http://[0:0:0:0:0:0:0:1]:8080/", NULL, "http://[::1]:8080/"},
      {"http://[1:0:0:2:0:0:3:4]/", NULL, "http://[1::2:0:0:3:4]/"}, /* the first longest run */
      {"http://[::ffff:1.2.3.4]/", NULL, "http://[::ffff:102:304]/"},
      {"http://u:p:q@a@b/", NULL, "http://u:p%3Aq%40a@b/"},
      {"http://%41.com/", NULL, "http://a.com/"},
      {"http://a/^{}`|?x^`{}'#^`{}", NULL, "http://a/^%7B%7D%60|?x^`{}%27#^%60{}"},
      {"http://a/\xc3\xbc?\xc3\xbc#\xc3\xbc", NULL, "http://a/%C3%BC?%C3%BC#%C3%BC"},
      {"c", "http://a/b/d?q#f", "http://a/b/c"},
      {"", "http://a/b/d?q#f", "http://a/b/d?q"},
      {"?x", "http://a/b/d?q#f", "http://a/b/d?x"},
      {"#g", "http://a/b/d?q#f", "http://a/b/d?q#g"},
      {"#g", "http://a/b/d?#f", "http://a/b/d#g"}, /* Node drops an empty base query */
      {".", "http://a/b/d", "http://a/b/"},
      {"..", "http://a/b/d", "http://a/"},
      {"../../../x", "http://a/b/d", "http://a/x"},
      {"/abs", "https://u@a:81/b", "https://u@a:81/abs"},
      {"//h2/p", "https://a/b", "https://h2/p"},
      {"\\\\h2\\p", "https://a/b", "https://h2/p"},
      {"http:rel", "http://a/b/c", "http://a/b/rel"},
      {"https:h3", "http://a/b/c", "https://h3/"},
      {"tensor-cache.json", "https://huggingface.co/o/m/resolve/main/",
       "https://huggingface.co/o/m/resolve/main/tensor-cache.json"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *href = NULL;
    mpk_error err;
    mpk_error_clear(&err);
    if (mpk_url_resolve(cases[i][0], cases[i][1], &href, &err)) fail_msg("%s: %s", cases[i][0], tu_err(&err));
    if (strcmp(href, cases[i][2]) != 0) fail_msg("%s: got %s, want %s", cases[i][0], href, cases[i][2]);
    /* the href re-parses to itself */
    char *again = NULL;
    assert_int_equal(mpk_url_resolve(href, NULL, &again, &err), 0);
    assert_string_equal(again, href);
    free(again);
    free(href);
  }
}

static void test_refusals(void **state) {
  (void)state;
  static const struct { const char *ref, *base; int code; const char *says; } cases[] = {
      {"http://a:65536/", NULL, MPK_EINVAL, "port"},
      {"http://a:8x/", NULL, MPK_EINVAL, "port"},
      {"http://a:\xc3\xbc\x01/", NULL, MPK_EINVAL, "port \"\\xc3\\xbc\\x01\" is not a number"},
      {"http://1.2.3.256/", NULL, MPK_EINVAL, "IPv4"},
      {"http://1.2.3.4.5/", NULL, MPK_EINVAL, "IPv4"},
      {"http://0x100000000/", NULL, MPK_EINVAL, "IPv4"},
      {"http://a.09/", NULL, MPK_EINVAL, "IPv4"},
      {"http://[1::2::3]/", NULL, MPK_EINVAL, "IPv6"},
      {"http://[::1/", NULL, MPK_EINVAL, "IPv6"},
      {"http://a b/", NULL, MPK_EINVAL, "forbidden"},
      {"http://a%2fb/", NULL, MPK_EINVAL, "forbidden"},
      {"http://u@/", NULL, MPK_EINVAL, "host"},
      {"http:///", NULL, MPK_EINVAL, "host"},
      {"rel", NULL, MPK_EINVAL, "no base"},
      {"http://b\xc3\xbc" "cher.de/", NULL, MPK_EUNSUPPORTED, "IDNA"},
      {"http://xn--bcher-kva.de/", NULL, MPK_EUNSUPPORTED, "IDNA"},
      {"ftp://a/", NULL, MPK_EUNSUPPORTED, "ftp"},
      {"x", "file:///a", MPK_EUNSUPPORTED, "file"},
      {"http://a/\xff", NULL, MPK_EINVAL, "UTF-8"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *href = (char *)1;
    mpk_error err;
    mpk_error_clear(&err);
    int rc = mpk_url_resolve(cases[i].ref, cases[i].base, &href, &err);
    if (rc != cases[i].code) fail_msg("%s: got %d, want %d (%s)", cases[i].ref, rc, cases[i].code, err.message);
    assert_null(href);
    if (!strstr(err.message, cases[i].says)) fail_msg("%s: message lacks \"%s\": %s", cases[i].ref, cases[i].says, err.message);
    if (!strstr(err.message, "URL \"")) fail_msg("%s: message does not name the URL: %s", cases[i].ref, err.message);
    for (const char *m = err.message; *m; m++) /* printable ASCII: safe in a terminal and in JSON */
      if ((unsigned char)*m < 0x20 || (unsigned char)*m > 0x7e) fail_msg("%s: message byte 0x%02x", cases[i].ref, *m);
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* At the cap, hostile shapes (dot segments, '@'s, "/resolve/" repeated) take milliseconds; past it, MPK_ELIMIT. */
static void test_bounds(void **state) {
  (void)state;
  size_t n = MPK_URL_MAX_INPUT;
  char *s = malloc(n + 2);
  const char *fills[] = {"../", "a/", "@", "%2e%2e/", "/resolve/", "resolve/\n"};
  for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++) {
    memcpy(s, "http://h/", 9);
    size_t L = strlen(fills[f]), i = 9;
    while (i + L <= n) { memcpy(s + i, fills[f], L); i += L; }
    s[i] = 0;
    double t0 = now();
    char *href = NULL;
    mpk_error err;
    mpk_url_resolve(s, NULL, &href, &err);
    free(href);
    mpk_url_resolve(s + 9, "http://h/a/b", &href, &err);
    free(href);
    mpk_mlc_clean_model_url(s, &href, &err);
    mpk_free(href);
    double dt = now() - t0;
    if (dt > 0.5) fail_msg("fill \"%s\": %.3f s", fills[f], dt);
  }
  memset(s, 'a', n + 1);
  memcpy(s, "http://h/", 9);
  s[n + 1] = 0;
  char *href = (char *)1;
  mpk_error err;
  assert_int_equal(mpk_url_resolve(s, NULL, &href, &err), MPK_ELIMIT);
  assert_null(href);
  free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_resolve_cases), cmocka_unit_test(test_refusals),
                                     cmocka_unit_test(test_bounds)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
