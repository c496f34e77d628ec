/* core/cpu.c, the one cpuid: its answer agrees with GCC's own detection (libgcc's, which the
   library no longer links) for every feature a kernel is chosen by (F16C and SHA, which GCC 12
   does not name, are checked by test_mt_merge_kernel and test_core_hash), and is the same when
   asked again. */
#include "testutil.h"
#include "core/cpu.h"

static void test_agrees_with_gcc(void **state) {
  (void)state;
  unsigned f = mpk_cpu_features();
  assert_int_equal(mpk_cpu_features(), f); /* asked once, remembered */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  __builtin_cpu_init();
  static const struct {
    unsigned bit;
    const char *name;
  } want[] = {
      {MPK_CPU_SSE2, "sse2"}, {MPK_CPU_SSSE3, "ssse3"}, {MPK_CPU_SSE41, "sse4.1"},
      {MPK_CPU_AVX2, "avx2"}, {MPK_CPU_FMA, "fma"},     {MPK_CPU_AVX512, "avx512f+bw+vl"},
  };
  int gcc[] = {
      __builtin_cpu_supports("sse2"), __builtin_cpu_supports("ssse3"), __builtin_cpu_supports("sse4.1"),
      __builtin_cpu_supports("avx2"), __builtin_cpu_supports("fma"),
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"),
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    print_message("%-14s gcc %d modelpkg %d\n", want[i].name, gcc[i] != 0, (f & want[i].bit) != 0);
    assert_int_equal(gcc[i] != 0, (f & want[i].bit) != 0);
  }
  assert_true(f & MPK_CPU_SSE2); /* x86-64's baseline */
  assert_false(f & MPK_CPU_ARM_SHA2);
#elif defined(__aarch64__)
  assert_int_equal(f & ~(unsigned)MPK_CPU_ARM_SHA2, 0);
#else
  assert_int_equal(f, 0);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_agrees_with_gcc)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
