/* Forced (-include) into every libsoxr and musl source file modelpkg compiles (cmake/soxr.cmake).
   libsoxr's filter design and FFT twiddles call libm, and libms differ in the last bits (glibc
   with its FMA variants natively, musl in WebAssembly, another on each platform), which changes
   some output samples' last bits. So every build gets one implementation, musl's (Debian's musl
   source, src/math), compiled with the same flags and renamed here: libsoxr's calls and musl's
   own definitions both become mpk_soxr_*, hidden in libmodelpkg, never the platform's libm.
   sqrt stays the platform's: IEEE 754 requires it correctly rounded, so it is the same everywhere.
   The compiler knows nothing of the renamed functions, so it cannot fold or fuse them either. */
#ifndef MPK_SOXR_MATH_H
#define MPK_SOXR_MATH_H

#include <math.h> /* first, under their own names: later includes are no-ops */
#include <stdint.h>
#include <stdlib.h>

/* soxr reads tuning variables (SOXR_LARGE_DFT_SIZE, SOXR_COEFS_SIZE, ...) from the environment,
   which would change the bytes from one process to the next: it sees none. mpk_soxr_getenv
   (media/audio.c) answers only a test's choice of x86-64's baseline engine copy. */
char *mpk_soxr_getenv(const char *name);
#define getenv(name) mpk_soxr_getenv(name)

/* musl's log and pow take a fused multiply-add path where the target has one (AArch64, s390x):
   that would give those targets other bits. The plain path everywhere. */
#undef __FP_FAST_FMA
#undef __FP_FAST_FMAF

#define asin mpk_soxr_asin
#define atan mpk_soxr_atan
#define atan2 mpk_soxr_atan2
#define cos mpk_soxr_cos
#define exp mpk_soxr_exp
#define floor mpk_soxr_floor
#define log mpk_soxr_log
#define log10 mpk_soxr_log10
#define pow mpk_soxr_pow
#define scalbn mpk_soxr_scalbn
#define sin mpk_soxr_sin
/* musl's internal functions and tables */
#define __cos mpk_soxr___cos
#define __sin mpk_soxr___sin
#define __rem_pio2 mpk_soxr___rem_pio2
#define __rem_pio2_large mpk_soxr___rem_pio2_large
#define __math_divzero mpk_soxr___math_divzero
#define __math_invalid mpk_soxr___math_invalid
#define __math_oflow mpk_soxr___math_oflow
#define __math_uflow mpk_soxr___math_uflow
#define __math_xflow mpk_soxr___math_xflow
#define __exp_data mpk_soxr___exp_data
#define __log_data mpk_soxr___log_data
#define __pow_log_data mpk_soxr___pow_log_data

double asin(double);
double atan(double);
double atan2(double, double);
double cos(double);
double exp(double);
double floor(double);
double log(double);
double log10(double);
double pow(double, double);
double scalbn(double, int);
double sin(double);

#ifndef hidden /* musl's own sources mark their internal functions so */
#define hidden __attribute__((__visibility__("hidden")))
#endif

#endif
