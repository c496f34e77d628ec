/* The <math.h> musl's src/math files are compiled against (cmake/soxr.cmake): what they use of it,
   with float_t and double_t fixed to float and double on every target (FLT_EVAL_METHOD 0, as
   -fexcess-precision=fast makes s390x), instead of the platform's header. */
#ifndef MPK_SOXR_MUSL_MATH_H
#define MPK_SOXR_MUSL_MATH_H

typedef float float_t;
typedef double double_t;

#define NAN __builtin_nanf("")
#define INFINITY __builtin_inff()
#define HUGE_VAL __builtin_huge_val()
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf(x)
#define signbit(x) __builtin_signbit(x)
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962

double fabs(double);
double sqrt(double);

#endif
