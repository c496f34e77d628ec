/* The resize plan: every case of image_resize.json (WebLLM 0.2.86 planImageResize run in Node):
   the same width, height, left and top. Plus the JS rounding corners the vectors do not reach. */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

static mpk_image_resize_mode mode_of(const char *m) {
  if (strcmp(m, "stretch") == 0) return MPK_IMAGE_RESIZE_STRETCH;
  if (strcmp(m, "center_crop") == 0) return MPK_IMAGE_RESIZE_CENTER_CROP;
  fail_msg("unknown mode %s in image_resize.json", m);
  return MPK_IMAGE_RESIZE_STRETCH;
}

static void test_plan_cases(void **state) {
  (void)state;
  json_t *root, *cases = tu_webllm_cases("image_resize.json", &root);
  size_t i, ran = 0;
  json_t *c;
  json_array_foreach(cases, i, c) {
    json_t *rs = json_object_get(c, "resize"), *ex = json_object_get(c, "expected");
    int64_t sw = json_integer_value(json_object_get(c, "source_width"));
    int64_t sh = json_integer_value(json_object_get(c, "source_height"));
    mpk_image_target t = {mode_of(json_string_value(json_object_get(rs, "mode"))),
                          json_integer_value(json_object_get(rs, "height")),
                          json_integer_value(json_object_get(rs, "width"))};
    assert_non_null(ex);
    mpk_image_plan p;
    mpk_error err;
    mpk_error_clear(&err);
    if (mpk_image_plan_resize(sw, sh, &t, &p, &err) != 0) fail_msg("case %zu: %s", i, tu_err(&err));
    mpk_image_plan want = {json_integer_value(json_object_get(ex, "width")),
                           json_integer_value(json_object_get(ex, "height")),
                           json_integer_value(json_object_get(ex, "left")),
                           json_integer_value(json_object_get(ex, "top"))};
    if (memcmp(&p, &want, sizeof p) != 0)
      fail_msg("case %zu (%lldx%lld -> %s %lldx%lld): got %lldx%lld at (%lld, %lld), WebLLM %lldx%lld at (%lld, %lld)",
               i, (long long)sw, (long long)sh, json_string_value(json_object_get(rs, "mode")), (long long)t.width,
               (long long)t.height, (long long)p.width, (long long)p.height, (long long)p.left, (long long)p.top,
               (long long)want.width, (long long)want.height, (long long)want.left, (long long)want.top);
    ran++;
  }
  printf("  %zu plans equal WebLLM's\n", ran);
  assert_int_equal(ran, json_array_size(cases));
  assert_true(ran >= 12);
  json_decref(root);
}

/* Math.round is half toward +Infinity: 3 x 2 to 5 x 5 scales by 2.5, so 3 * 2.5 = 7.5 -> 8 (the
   vector case); 5 x 2 to 5 x 5 gives 12.5 -> 13 where C's rint would give 12. floor offsets: (13 -
   5) / 2 = 4; an odd excess floors, (8 - 5) / 2 = 1.5 -> 1. */
static void test_plan_rounding(void **state) {
  (void)state;
  mpk_image_plan p;
  mpk_image_target t = {MPK_IMAGE_RESIZE_CENTER_CROP, 5, 5};
  assert_int_equal(mpk_image_plan_resize(5, 2, &t, &p, NULL), 0);
  assert_int_equal(p.width, 13);
  assert_int_equal(p.height, 5);
  assert_int_equal(p.left, 4);
  assert_int_equal(p.top, 0);
  /* 0.5 exactly on the other axis: 1 x 3 to 2 x 1: scale max(1/3, 2) = 2 -> 2 x 6, top floor(5/2) = 2. */
  t = (mpk_image_target){MPK_IMAGE_RESIZE_CENTER_CROP, 1, 2};
  assert_int_equal(mpk_image_plan_resize(1, 3, &t, &p, NULL), 0);
  assert_int_equal(p.width, 2);
  assert_int_equal(p.height, 6);
  assert_int_equal(p.left, 0);
  assert_int_equal(p.top, 2);
}

static void test_plan_refusals(void **state) {
  (void)state;
  mpk_image_plan p;
  mpk_error err;
  mpk_image_target t = {MPK_IMAGE_RESIZE_CENTER_CROP, 336, 336};
  assert_int_equal(mpk_image_plan_resize(0, 10, &t, &p, &err), MPK_EINVAL);
  assert_non_null(strstr(err.message, "source width"));
  assert_int_equal(mpk_image_plan_resize(10, -1, &t, &p, &err), MPK_EINVAL);
  assert_non_null(strstr(err.message, "source height"));
  t.width = 0;
  assert_int_equal(mpk_image_plan_resize(10, 10, &t, &p, &err), MPK_EINVAL);
  assert_non_null(strstr(err.message, "resize.width"));
  t = (mpk_image_target){(mpk_image_resize_mode)7, 336, 336};
  assert_int_equal(mpk_image_plan_resize(10, 10, &t, &p, &err), MPK_EINVAL);
  assert_non_null(strstr(err.message, "mode"));
  /* A 1-pixel-wide source cropped to a 2^40 square: the other side would pass 2^53. */
  t = (mpk_image_target){MPK_IMAGE_RESIZE_CENTER_CROP, INT64_C(1) << 40, INT64_C(1) << 40};
  assert_int_equal(mpk_image_plan_resize(1, 1 << 20, &t, &p, &err), MPK_ELIMIT);
  assert_int_equal(mpk_image_plan_resize(1, 10, &t, NULL, &err), MPK_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plan_cases),
      cmocka_unit_test(test_plan_rounding),
      cmocka_unit_test(test_plan_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
