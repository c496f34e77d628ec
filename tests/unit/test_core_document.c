/* core/document.c: every document loader takes a file or a directory holding the document under
   its default name (docs/API.md, "Conventions"), finds it beneath that directory (a link
   out is refused), and names the file in every error. One case per loader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "core/core.h"

#define EX MPK_SOURCE_DIR "/examples"

typedef int (*load_fn)(const char *path, mpk_error *err); /* loads, frees, returns the code */

static int load_mlc_package(const char *path, mpk_error *err) {
  mpk_mlc_package *p;
  int rc = mpk_mlc_package_load(path, &p, err);
  if (!rc) mpk_mlc_package_free(p);
  return rc;
}
static int load_tensor_cache(const char *path, mpk_error *err) {
  mpk_mlc_tensor_cache *t;
  int rc = mpk_mlc_tensor_cache_load(path, &t, err);
  if (!rc) mpk_mlc_tensor_cache_free(t);
  return rc;
}
static int load_mt_manifest(const char *path, mpk_error *err) {
  mpk_mt_manifest *m;
  int rc = mpk_mt_manifest_load(path, &m, err);
  if (!rc) mpk_mt_manifest_free(m);
  return rc;
}
static int load_handoff(const char *path, mpk_error *err) {
  mpk_mt_handoff *m;
  int rc = mpk_mt_handoff_load(path, &m, err);
  if (!rc) mpk_mt_handoff_free(m);
  return rc;
}

static const struct {
  const char *what, *dir, *name;
  load_fn load;
} loaders[] = {
    {"MLC sidecar", EX "/llava-image", "mlc-model-manifest.json", load_mlc_package},
    {"MLC tensor cache", EX "/llava-image", "tensor-cache.json", load_tensor_cache},
    {"MT manifest", EX "/mt-tiny", "mobiletransformers_manifest.json", load_mt_manifest},
    {"MT handoff map", EX "/mt-tiny/variants/cpu-fp16/inference", "weight_handoff_map.json", load_handoff},
};

static void test_file_and_directory(void **state) {
  (void)state;
  char tmp[512], path[1024];
  snprintf(tmp, sizeof tmp, "%s/doc", tu_tmpdir());
  for (size_t i = 0; i < sizeof loaders / sizeof loaders[0]; i++) {
    mpk_error err;
    const char *w = loaders[i].what;
    /* The file itself, and its directory: both load. */
    snprintf(path, sizeof path, "%s/%s", loaders[i].dir, loaders[i].name);
    if (loaders[i].load(path, &err)) fail_msg("%s as a file: %s", w, tu_err(&err));
    if (loaders[i].load(loaders[i].dir, &err)) fail_msg("%s as a directory: %s", w, tu_err(&err));
    /* A directory without it: not found, naming DIR/name. */
    tu_sh("rm -rf '%s' && mkdir -p '%s'", tmp, tmp);
    assert_int_equal(loaders[i].load(tmp, &err), MPK_ENOTFOUND);
    snprintf(path, sizeof path, "%s/%s", tmp, loaders[i].name);
    if (!strstr(err.file, loaders[i].name)) fail_msg("%s: error names %s, not the document", w, err.file);
    /* The name inside the directory is a link out of it: refused, never read. */
    tu_sh("ln -s '%s/%s' '%s'", loaders[i].dir, loaders[i].name, path);
    int rc = loaders[i].load(tmp, &err);
    if (rc == 0) fail_msg("%s: a document linked out of its directory was loaded", w);
    if (!strstr(tu_err(&err), loaders[i].name)) fail_msg("%s: %s does not name the document", w, tu_err(&err));
    /* Named as a file, the user's link is theirs to follow. */
    if (loaders[i].load(path, &err)) fail_msg("%s via a named link: %s", w, tu_err(&err));
    /* Invalid JSON: the error names the file. */
    tu_sh("rm -f '%s' && printf '{' > '%s'", path, path);
    assert_int_not_equal(loaders[i].load(tmp, &err), 0);
    if (!strstr(err.file, loaders[i].name)) fail_msg("%s: parse error names %s", w, err.file);
    assert_int_not_equal(loaders[i].load(NULL, &err), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_file_and_directory)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
