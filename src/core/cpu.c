/* CPU features from cpuid (x86) or the kernel's HWCAP (AArch64), asked once. */
#include "core/cpu.h"

#include <stdatomic.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long xcr0(void) {
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (unsigned long long)hi << 32 | lo;
}

static unsigned ask(void) {
  unsigned a, b, c, d, f = 0;
  unsigned max = __get_cpuid_max(0, 0);
  if (max < 1) return 0;
  __cpuid(1, a, b, c, d);
  if (d & bit_SSE2) f |= MPK_CPU_SSE2;
  if (c & bit_SSSE3) f |= MPK_CPU_SSSE3;
  if (c & bit_SSE4_1) f |= MPK_CPU_SSE41;
  /* AVX registers are usable only when the OS saves them: OSXSAVE, then XCR0's SSE and AVX bits
     (and the opmask and upper ZMM bits for AVX-512). */
  unsigned long long x = (c & bit_OSXSAVE) && (c & bit_AVX) ? xcr0() : 0;
  int avx = (x & 6) == 6, avx512 = avx && (x & 0xe0) == 0xe0;
  if (avx && (c & bit_FMA)) f |= MPK_CPU_FMA;
  if (avx && (c & bit_F16C)) f |= MPK_CPU_F16C;
  if (max >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    if (avx && (b & bit_AVX2)) f |= MPK_CPU_AVX2;
    if (avx512 && (b & bit_AVX512F) && (b & bit_AVX512BW) && (b & bit_AVX512VL)) f |= MPK_CPU_AVX512;
    if (b & bit_SHA) f |= MPK_CPU_SHA;
  }
  return f;
}
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_SHA2
#define HWCAP_SHA2 (1 << 6)
#endif
static unsigned ask(void) { return (getauxval(AT_HWCAP) & HWCAP_SHA2) ? MPK_CPU_ARM_SHA2 : 0; }
#elif defined(__aarch64__) && defined(__APPLE__)
static unsigned ask(void) { return MPK_CPU_ARM_SHA2; } /* every Apple arm64 CPU has them */
#else
static unsigned ask(void) { return 0; }
#endif

unsigned mpk_cpu_features(void) {
  /* Bit 31 marks "known"; racing first callers store the same answer. */
  static atomic_uint known;
  unsigned v = atomic_load_explicit(&known, memory_order_relaxed);
  if (!v) {
    v = ask() | 1u << 31;
    atomic_store_explicit(&known, v, memory_order_relaxed);
  }
  return v & ~(1u << 31);
}
