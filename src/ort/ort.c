/* Loading ONNX Runtime at run time (docs/ort.md, "Loading"): the library, its OrtGetApiBase, the
   C API of version MPK_ORT_API_VERSION, one environment. The API is declared in ort_api.h. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dl.h"
#include "ort/ort_internal.h"

/* The ONNX Runtime release that introduced C API version MPK_ORT_API_VERSION: API N arrived in
   release 1.N (onnxruntime_c_api.h's "\since Version 1.12" marks API 12's additions). */
#define MPK_ORT_MIN_MAJOR 1
#define MPK_ORT_MIN_MINOR MPK_ORT_API_VERSION

#define INSTALL_HINT                                                                                    \
  "install it (npm onnxruntime-node ships libonnxruntime.so.1; scripts/deps_node.sh) and set " \
  MPK_ORT_LIBRARY_ENV " or --ort-library"

int mpk_ort_status_text(const mpk_ort *o, OrtStatus *st, char *msg, size_t cap) {
  if (!st) return 0;
  const char *m = ORT(o->api, GetErrorMessage)(st);
  snprintf(msg, cap, "%s", m ? m : "(no message)");
  ORT(o->api, ReleaseStatus)(st);
  return 1;
}

int mpk_ort_status(const mpk_ort *o, OrtStatus *st, mpk_error *err, int code, const char *file, const char *fmt, ...) {
  if (!st) return 0;
  char prefix[512], msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  mpk_ort_status_text(o, st, msg, sizeof msg);
  return mpk_fail(err, code, file, NULL, "%s: ONNX Runtime: %s", prefix, msg);
}

/* "1.30.0" >= major.minor */
static int version_at_least(const char *v, int major, int minor) {
  int a = 0, b = 0;
  if (!v || sscanf(v, "%d.%d", &a, &b) != 2) return 0;
  return a > major || (a == major && b >= minor);
}

int mpk_ort_open(const mpk_ort_options *given, mpk_ort **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "mpk_ort_open: out is NULL");
  *out = NULL;
  mpk_ort_options opts;
  int rc = MPK_OPTIONS_READ(mpk_ort_options, &opts, given, err);
  if (rc) return rc;

  /* One path, from the first source that names one: the option, the environment, the loader's
     search for the soname. Never a path from a package (docs/SECURITY.md). */
  const char *path = opts.library, *source = "the library option";
  if (!path || !*path) {
    const char *env = getenv(MPK_ORT_LIBRARY_ENV);
    if (env && *env) {
      path = env;
      source = "$" MPK_ORT_LIBRARY_ENV;
    } else {
      path = MPK_ORT_DEFAULT_LIBRARY;
      source = "the loader's search path";
    }
  }
  /* Through the one run-time loader (core/dl.h), with its flags: RTLD_NODELETE, so dlclose()
     releases the handle, never unmaps ONNX Runtime (its thread pools and static state do not
     support unloading; a later mpk_ort_open finds it already loaded). */
  const char *e = NULL;
  void *dl = mpk_dl_open_path(path, &e);
  if (!dl)
    return mpk_fail(err, MPK_EUNSUPPORTED, path, NULL, "ONNX Runtime not available: tried %s (from %s): %s; " INSTALL_HINT,
                    path, source, e ? e : "dlopen failed");
  dlerror();
  void *sym = dlsym(dl, "OrtGetApiBase");
  if (!sym) {
    dlclose(dl);
    return mpk_fail(err, MPK_EUNSUPPORTED, path, NULL,
                    "ONNX Runtime not available: %s (from %s) has no OrtGetApiBase: not an ONNX Runtime library; " INSTALL_HINT,
                    path, source);
  }
  mpk_OrtGetApiBase_fn get_base;
  memcpy(&get_base, &sym, sizeof get_base); /* object pointer to function pointer, as POSIX dlsym allows */
  const OrtApiBase *base = get_base();
  const char *version = base && base->GetVersionString ? base->GetVersionString() : NULL;
  if (!base || !base->GetApi || !version) {
    dlclose(dl);
    return mpk_fail(err, MPK_EUNSUPPORTED, path, NULL, "ONNX Runtime not available: %s: OrtGetApiBase() gave no API", path);
  }
  if (!version_at_least(version, MPK_ORT_MIN_MAJOR, MPK_ORT_MIN_MINOR)) {
    int rcv = mpk_fail(err, MPK_EVERSION, path, NULL,
                       "ONNX Runtime %s at %s is too old: modelpkg needs C API version %d (ONNX Runtime %d.%d or later)",
                       version, path, MPK_ORT_API_VERSION, MPK_ORT_MIN_MAJOR, MPK_ORT_MIN_MINOR);
    dlclose(dl);
    return rcv;
  }
  const OrtApi *api = base->GetApi(MPK_ORT_API_VERSION);
  if (!api) {
    int rcv = mpk_fail(err, MPK_EVERSION, path, NULL,
                       "ONNX Runtime %s at %s does not provide C API version %d (ONNX Runtime %d.%d or later)", version,
                       path, MPK_ORT_API_VERSION, MPK_ORT_MIN_MAJOR, MPK_ORT_MIN_MINOR);
    dlclose(dl);
    return rcv;
  }
  mpk_ort *o = calloc(1, sizeof *o);
  if (!o) {
    dlclose(dl);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  o->dl = dl;
  o->api = api;
  o->threads = opts.threads;
  o->version = strdup(version);
  Dl_info info;
  memset(&info, 0, sizeof info);
  o->library = strdup(dladdr(sym, &info) && info.dli_fname ? info.dli_fname : path);
  if (!o->version || !o->library) {
    mpk_ort_close(o);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  rc = mpk_ort_status(o, ORT(api, CreateEnv)(MPK_ORT_LOGGING_LEVEL_WARNING, "modelpkg", &o->env), err, MPK_EIO, path,
                      "ONNX Runtime %s: creating the environment", version);
  if (rc) {
    mpk_ort_close(o);
    return rc;
  }
  *out = o;
  return 0;
}

const char *mpk_ort_version(const mpk_ort *ort) { return ort ? ort->version : NULL; }

const char *mpk_ort_library(const mpk_ort *ort) { return ort ? ort->library : NULL; }

void mpk_ort_close(mpk_ort *ort) {
  if (!ort) return;
  if (ort->env) ORT(ort->api, ReleaseEnv)(ort->env);
  if (ort->dl) dlclose(ort->dl);
  free(ort->version);
  free(ort->library);
  free(ort);
}
