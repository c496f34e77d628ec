/* The pixel blocks of image_resize.json (WebLLM 0.2.86): rgba_to_rgb — a 2x2 RGBA image drawn at
   2x2 (stretch) gives exactly expected_rgb: the alpha channel dropped, the colour channels as
   stored, even under alpha 0 — here as a PNG through the whole mpk_image_from_bytes path, and as
   a lossless WebP; uint32_widening — mpk_image_tensor_bytes(…, 4, …) gives expected_bytes_hex. */
#include <stdlib.h>
#include <string.h>

#include <spng.h>

#include "core/core.h"
#include "image_fixture.h"
#include "testutil.h"

static json_t *root;

static uint8_t *u8_array(const json_t *a, size_t *n) {
  assert_true(json_is_array(a));
  *n = json_array_size(a);
  uint8_t *out = malloc(*n + 1);
  assert_non_null(out);
  for (size_t i = 0; i < *n; i++) {
    json_int_t v = json_integer_value(json_array_get(a, i));
    assert_true(v >= 0 && v <= 255);
    out[i] = (uint8_t)v;
  }
  return out;
}

static void *png_rgba(const uint8_t *rgba, uint32_t w, uint32_t h, size_t *len) {
  tu_png_opts o = {.ct = SPNG_COLOR_TYPE_TRUECOLOR_ALPHA, .bd = 8};
  return tu_png_encode(w, h, &o, rgba, (size_t)w * h * 4, len);
}

/* Lossless and exact: the colour under alpha 0 kept, as the PNG does. */
static void *webp_rgba(const uint8_t *rgba, uint32_t w, uint32_t h, size_t *len) {
  return tu_webp_encode(w, h, rgba, false, len);
}

static void test_rgba_to_rgb(void **state) {
  (void)state;
  json_t *blk = json_object_get(root, "rgba_to_rgb");
  size_t n_rgba, n_rgb;
  uint8_t *rgba = u8_array(json_object_get(blk, "rgba"), &n_rgba);
  uint8_t *want = u8_array(json_object_get(blk, "expected_rgb"), &n_rgb);
  json_int_t w = json_integer_value(json_object_get(blk, "width")), h = json_integer_value(json_object_get(blk, "height"));
  assert_int_equal(n_rgba, (size_t)(w * h * 4));
  assert_int_equal(n_rgb, (size_t)(w * h * 3));
  for (int fmt = 0; fmt < 2; fmt++) {
    size_t len = 0;
    void *file = fmt == 0 ? png_rgba(rgba, (uint32_t)w, (uint32_t)h, &len) : webp_rgba(rgba, (uint32_t)w, (uint32_t)h, &len);
    mpk_image_target t = {MPK_IMAGE_RESIZE_STRETCH, h, w};
    mpk_image *img = NULL;
    mpk_error err;
    if (mpk_image_from_bytes(file, len, fmt ? "rgba.webp" : "rgba.png", &t, NULL, &img, &err))
      fail_msg("%s", tu_err(&err));
    assert_int_equal(img->format, fmt == 0 ? MPK_IMAGE_FORMAT_PNG : MPK_IMAGE_FORMAT_WEBP);
    assert_true(img->has_alpha);
    assert_int_equal(img->width, w);
    assert_int_equal(img->height, h);
    assert_memory_equal(img->pixels, want, n_rgb);
    /* center_crop at the same size is the same plan, the same pixels */
    mpk_image *img2 = NULL;
    t.mode = MPK_IMAGE_RESIZE_CENTER_CROP;
    assert_int_equal(mpk_image_from_bytes(file, len, NULL, &t, NULL, &img2, &err), 0);
    assert_memory_equal(img2->pixels, want, n_rgb);
    mpk_image_free(img2);
    mpk_image_free(img);
    free(file);
  }
  free(rgba);
  free(want);
}

static void test_uint32_widening(void **state) {
  (void)state;
  json_t *blk = json_object_get(root, "uint32_widening");
  size_t n;
  uint8_t *rgb = u8_array(json_object_get(blk, "rgb"), &n);
  const char *hex = json_string_value(json_object_get(blk, "expected_bytes_hex"));
  assert_non_null(hex);
  assert_int_equal(strlen(hex), n * 8);
  /* The block's 12 values are a 2x2 RGB image (the shape is [1, H, W, 3]). */
  mpk_image img = {.pixels = rgb, .width = 2, .height = 2};
  uint8_t *out = malloc(n * 4);
  mpk_error err;
  assert_int_equal(mpk_image_tensor_bytes(&img, 4, out, n * 4, &err), 0);
  char *got = malloc(n * 8 + 1);
  mpk_hex(out, n * 4, got);
  assert_string_equal(got, hex);
  /* uint8: the values themselves */
  assert_int_equal(mpk_image_tensor_bytes(&img, 1, out, n, &err), 0);
  assert_memory_equal(out, rgb, n);
  free(got);
  free(out);
  free(rgb);
}

int main(void) {
  root = tu_load_json(tu_shared("conformance/mlc-webllm/image_resize.json"));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rgba_to_rgb),
      cmocka_unit_test(test_uint32_widening),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  json_decref(root);
  return rc;
}
