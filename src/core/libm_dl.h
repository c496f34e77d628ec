/* exp and log from libm (glibc), opened on first use under MPK_LIBM_DL (core/dl_table.h,
   docs/startup.md): only the language-model cross-entropy (ort/lm.c) and the parity gate's report
   (mt/numeric/parity.c) take a logarithm, and libm is otherwise not linked (core/mathx.h), so
   that no other command maps it at start-up. Call mpk_libm_load(err) before the first mpk_exp or
   mpk_log. Elsewhere (MPK_LIBM_DL 0: no dlopen, or a C library whose libm is libc itself) they are
   the linked functions. */
#ifndef MPK_CORE_LIBM_DL_H
#define MPK_CORE_LIBM_DL_H

#include <math.h>

#include "core/dl_table.h"

#if MPK_LIBM_DL
#define MPK_LIBM_FUNCS(X) X(exp) X(log)
MPK_DL_TABLE(libm, MPK_LIBM_FUNCS)
#define mpk_exp (mpk_libm_fn.f.exp)
#define mpk_log (mpk_libm_fn.f.log)
#else
#define mpk_exp exp
#define mpk_log log
static inline int mpk_libm_load(mpk_error *err) {
  (void)err;
  return 0;
}
#endif

#endif
