/* What the CPU offers, asked once per process (core/cpu.c). The one place the library runs cpuid:
   each cpuid traps to the hypervisor in a VM (about 6 us measured here), and GCC's
   __builtin_cpu_supports links libgcc's constructor, which asks a dozen leaves at every process
   start, whether or not a kernel is ever chosen. Internal, not installed. */
#ifndef MPK_CORE_CPU_H
#define MPK_CORE_CPU_H

enum {
  MPK_CPU_SSE2 = 1u << 0,
  MPK_CPU_SSSE3 = 1u << 1,
  MPK_CPU_SSE41 = 1u << 2,
  MPK_CPU_AVX2 = 1u << 3, /* with the OS saving the AVX state (XCR0) */
  MPK_CPU_FMA = 1u << 4,
  MPK_CPU_F16C = 1u << 5,
  MPK_CPU_AVX512 = 1u << 6, /* F, BW and VL, with the OS saving the AVX-512 state */
  MPK_CPU_SHA = 1u << 7,    /* x86 SHA extensions (SHA-NI) */
  MPK_CPU_ARM_SHA2 = 1u << 8,
};

/* The MPK_CPU_* bits this CPU (and OS) supports; 0 on other architectures. Thread-safe. */
unsigned mpk_cpu_features(void);

#endif
