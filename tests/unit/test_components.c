/* The components (docs/components.md): mpk_components() and mpk_has_component() agree with each
   other and with the build; a function of a component that is off is a stub (cmake/stubs.cmake)
   returning MPK_EUNSUPPORTED with "<function>: this modelpkg was built without the <component>
   component (-DMPK_WITH_<X>=ON)", a lookup NULL, and it leaves its out-parameter alone; a function
   of a component that is built answers for itself (never that message). */
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "modelpkg.h"

static const char *const all[] = {"core", "mlc", "mt", "fetch", "audio", "image", "onnx"};

static void test_list_and_predicate_agree(void **state) {
  (void)state;
  const char *list = mpk_components();
  assert_non_null(list);
  assert_int_equal(strncmp(list, "core", 4), 0);
  char padded[128];
  snprintf(padded, sizeof padded, " %s ", list);
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    char word[32];
    snprintf(word, sizeof word, " %s ", all[i]);
    assert_int_equal(mpk_has_component(all[i]), strstr(padded, word) != NULL);
  }
  assert_int_equal(mpk_has_component("core"), 1);
  assert_int_equal(mpk_has_component("nothing"), 0);
  assert_int_equal(mpk_has_component(NULL), 0);
  /* onnx is mt's graph reader: never without mt */
  if (mpk_has_component("onnx")) assert_int_equal(mpk_has_component("mt"), 1);
}

/* One function of `comp`: off, the stub's answer exactly; on, anything but the stub's message. */
static void expect(const char *comp, const char *fn, int rc, const mpk_error *err) {
  char want[256];
  char opt[16];
  size_t i = 0;
  for (; comp[i] && i < sizeof opt - 1; i++) opt[i] = (char)(comp[i] - 'a' + 'A');
  opt[i] = 0;
  snprintf(want, sizeof want, "%s: this modelpkg was built without the %s component (-DMPK_WITH_%s=ON)", fn, comp,
           opt);
  if (!mpk_has_component(comp)) {
    assert_int_equal(rc, MPK_EUNSUPPORTED);
    assert_int_equal(err->code, MPK_EUNSUPPORTED);
    assert_string_equal(err->message, want);
  } else {
    assert_null(strstr(err->message, "this modelpkg was built without"));
  }
}

static void test_stub_or_real(void **state) {
  (void)state;
  static const char junk[] = "{not json";
  mpk_error err;
  void *out = (void *)&err; /* a stub leaves it as it was; a real function sets it (NULL on failure) */

  mpk_error_clear(&err);
  int rc = mpk_mlc_package_parse(junk, sizeof junk - 1, "x.json", 0, (mpk_mlc_package **)&out, &err);
  expect("mlc", "mpk_mlc_package_parse", rc, &err);
  if (!mpk_has_component("mlc")) assert_ptr_equal(out, &err);

  mpk_error_clear(&err);
  out = NULL;
  rc = mpk_mt_manifest_parse(junk, sizeof junk - 1, "m.json", (mpk_mt_manifest **)&out, &err);
  expect("mt", "mpk_mt_manifest_parse", rc, &err);
  if (!mpk_has_component("mt")) assert_null(mpk_mt_manifest_variant(NULL, "v"));

  mpk_error_clear(&err);
  out = NULL;
  rc = mpk_fetch_source_open("/nonexistent-mpk-source", NULL, (mpk_fetch_source **)&out, &err);
  expect("fetch", "mpk_fetch_source_open", rc, &err);
  mpk_fetch_source_free(out);

  mpk_error_clear(&err);
  mpk_wav_info info;
  rc = mpk_wav_parse(junk, sizeof junk - 1, "a.wav", &info, &err);
  expect("audio", "mpk_wav_parse", rc, &err);

  mpk_error_clear(&err);
  out = NULL;
  rc = mpk_image_from_bytes(junk, sizeof junk - 1, "a.jpg", NULL, NULL, (mpk_image **)&out, &err);
  expect("image", "mpk_image_from_bytes", rc, &err);
  mpk_image_free(out);
  if (!mpk_has_component("image")) assert_null(mpk_image_format_name(MPK_IMAGE_FORMAT_JPEG));

  mpk_error_clear(&err);
  out = NULL;
  rc = mpk_mt_graph_parse(junk, sizeof junk - 1, "model.onnx", NULL, (mpk_mt_graph **)&out, &err);
  /* with mt off, the graph's stub names mt: the first of the components its section needs */
  expect(mpk_has_component("mt") ? "onnx" : "mt", "mpk_mt_graph_parse", rc, &err);
  mpk_mt_graph_free(out);

  /* err may be NULL in a stub as anywhere */
  if (!mpk_has_component("fetch"))
    assert_int_equal(mpk_fetch_source_open("x", NULL, (mpk_fetch_source **)&out, NULL), MPK_EUNSUPPORTED);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_list_and_predicate_agree),
      cmocka_unit_test(test_stub_or_real),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
