/* The one run-time loader of optional dependencies (dl.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "core/dl.h"

/* One lock for every dependency: loading happens a handful of times per process. */
static pthread_mutex_t dl_lock = PTHREAD_MUTEX_INITIALIZER;

void *mpk_dl_open_path(const char *path, const char **why) {
  dlerror();
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h && why) {
    const char *e = dlerror();
    *why = e ? e : "dlopen failed";
  }
  return h;
}

static void load_locked(mpk_dl *d) {
  const char *why = NULL;
  void *h = mpk_dl_open_path(d->soname, &why);
  if (!h) {
    snprintf(d->why, sizeof d->why, "%s", why);
    atomic_store(&d->state, -1);
    return;
  }
  for (size_t i = 0; d->symbols[i]; i++) {
    dlerror();
    void *sym = dlsym(h, d->symbols[i]);
    if (!sym) {
      const char *e = dlerror();
      snprintf(d->why, sizeof d->why, "symbol %s not found (%s)", d->symbols[i], e ? e : "NULL");
      /* The handle stays open (RTLD_NODELETE would keep it mapped anyway); nothing is half-filled
         for a caller, since state -1 means no slot may be used. */
      atomic_store(&d->state, -1);
      return;
    }
    d->slots[i] = sym;
  }
  atomic_store(&d->state, 1);
}

int mpk_dl_load(mpk_dl *d, mpk_error *err) {
  if (!d) return MPK_EINVAL;
  int s = atomic_load(&d->state);
  if (s == 0) {
    pthread_mutex_lock(&dl_lock);
    if (atomic_load(&d->state) == 0) load_locked(d);
    pthread_mutex_unlock(&dl_lock);
    s = atomic_load(&d->state);
  }
  if (s == 1) return 0;
  return mpk_fail(err, MPK_EUNSUPPORTED, NULL, NULL, "%s is not available (%s): %s", d->what, d->soname, d->why);
}

#if MPK_LIBM_DL /* exp and log (core/libm_dl.h), under the C library's own name for libm */
#include <gnu/lib-names.h>

#include "core/libm_dl.h"
MPK_DL_DEFINE(libm, "libm", LIBM_SO, MPK_LIBM_FUNCS)
#endif
