# libsoxr, compiled into the library from Debian's source package, the same way for every target
# (native, scripts/cross.sh's aarch64 and s390x, emscripten): the audio component's resampler
# gives the same bytes on all of them (docs/audio.md, "The same bytes everywhere").
#
# - One engine: cr64s, soxr's double-precision SIMD engine (pffft and the AVX FIR loops), on every
#   target against src/media/soxr/include/immintrin.h (the AVX intrinsics it uses, in GNU C vector
#   extensions; scripts/patches/libsoxr-portable-avx.patch opens soxr's x86-only gates). No other
#   engine is built; on x86-64 it is built twice (baseline and AVX, the same bytes: below), and soxr
#   never reads the environment (SOXR_USE_SIMD, its tuning variables).
# - One libm: musl's (Debian's musl source, src/math) under private names
#   (src/media/soxr/mpk_soxr_math.h), for the filter design and the FFT twiddles.
# - The same arithmetic: no contraction into fused multiply-adds (GCC fuses by default on AArch64),
#   no fast-math, float_t = float (s390x: -fexcess-precision=fast, set for the whole project).
# - No OpenMP (audio.c runs its own segments on the pool), no libsamplerate interface.
#
# The sources are fetched by scripts/deps_source.sh (apt-get source, our patches applied), which
# scripts/setup.sh runs; configure does not download anything. Their symbols are hidden: nothing of
# soxr or musl is exported by libmodelpkg.

set(MPK_SOURCE_DEPS_DIR "${PROJECT_SOURCE_DIR}/.deps/src" CACHE PATH
  "where scripts/deps_source.sh put Debian's libsoxr and musl sources")
file(GLOB _soxr_dirs LIST_DIRECTORIES true "${MPK_SOURCE_DEPS_DIR}/libsoxr-0.1.3")
file(GLOB _musl_dirs LIST_DIRECTORIES true "${MPK_SOURCE_DEPS_DIR}/musl-1.2.*")
set(_hint "run scripts/deps_source.sh (scripts/setup.sh does; it needs dpkg-dev and a deb-src line), or build without the audio component (-DMPK_WITH_AUDIO=OFF)")
if(NOT _soxr_dirs OR NOT EXISTS "${_soxr_dirs}/.mpk-patched")
  message(FATAL_ERROR "audio: Debian's libsoxr 0.1.3 source, patched, not found in ${MPK_SOURCE_DEPS_DIR}: ${_hint}")
endif()
if(NOT _musl_dirs)
  message(FATAL_ERROR "audio: Debian's musl 1.2 source not found in ${MPK_SOURCE_DEPS_DIR}: ${_hint}")
endif()
# Every patch of ours applied (the marker lists them): a source fetched before a patch was added
# is refused rather than built differently from the other builds.
file(GLOB _patches RELATIVE "${PROJECT_SOURCE_DIR}/scripts/patches" "${PROJECT_SOURCE_DIR}/scripts/patches/libsoxr-*.patch")
list(SORT _patches)
file(STRINGS "${_soxr_dirs}/.mpk-patched" _applied)
list(SORT _applied)
if(NOT _applied STREQUAL _patches)
  message(FATAL_ERROR "audio: ${_soxr_dirs} has patches [${_applied}], scripts/patches has [${_patches}]: run scripts/deps_source.sh")
endif()
set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_soxr_dirs}/.mpk-patched")
list(GET _musl_dirs 0 MPK_MUSL_DIR)
set(MPK_SOXR_DIR "${_soxr_dirs}")
message(STATUS "audio: libsoxr from ${MPK_SOXR_DIR}, libm from ${MPK_MUSL_DIR}")

set(_shim "${PROJECT_SOURCE_DIR}/src/media/soxr")
# x86-64 (native, not WebAssembly): the engine is compiled twice, for the x86-64 baseline (SSE2) and
# with -mavx, and soxr's own CPU check picks the AVX copy where the CPU has AVX (a quarter less time).
# Both compile the same lane-wise operations (immintrin.h; AVX has no fused multiply-add), so both
# give the same bytes (test_audio runs both). soxr takes the baseline copy for its scalar engine,
# "cr64" (WITH_CR64 on, the callback table renamed to _soxr_rate64_cb): no patch to soxr.c.
set(MPK_SOXR_AVX OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND NOT EMSCRIPTEN
   AND CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  set(MPK_SOXR_AVX ON)
endif()
include(TestBigEndian)
test_big_endian(_big)
# soxr's configuration header, from its own template: cr64s alone (and on x86-64 its baseline copy
# as "cr64", above).
set(WITH_CR64 ${MPK_SOXR_AVX})
foreach(v AVCODEC_FOUND AVUTIL_FOUND WITH_CR32 WITH_CR32S WITH_VR32 HAVE_LRINT HAVE_FENV_H
          WITH_HI_PREC_CLOCK WITH_FLOAT_STD_PREC_CLOCK WITH_DEV_TRACE)
  set(${v} 0)
endforeach()
foreach(v WITH_PFFFT HAVE_STDBOOL_H HAVE_STDINT_H WITH_CR64S)
  set(${v} 1)
endforeach()
set(HAVE_BIGENDIAN ${_big})
configure_file("${MPK_SOXR_DIR}/soxr-config.h.in" "${CMAKE_BINARY_DIR}/gen/soxr/soxr-config.h")

# What the builds of soxr/musl share: their own C dialect, no warnings of ours on foreign code,
# exact arithmetic, every name forced through the renaming header.
# -fno-math-errno after -fno-fast-math (which sets -fmath-errno; SHELL: keeps CMake from dropping it as
# a duplicate of the global one): sqrt, exact everywhere, is then the
# instruction, not a call into libm, which the library does not link (docs/startup.md, "libm").
set(_flags -w -Wno-psabi -ffp-contract=off -fno-fast-math "SHELL:-fno-math-errno" "SHELL:-include ${_shim}/mpk_soxr_math.h")

# soxr_lib: the library around the engine; soxr_engine: cr64s (its FIR loops, pffft, the aligned
# buffers); soxr_engine_avx: the same with -mavx, x86-64 only.
set(_soxr_src soxr.c data-io.c dbesi0.c filter.c fft4g64.c cr.c)
set(_engine_src cr64s.c pffft64s.c util64s.c)
list(TRANSFORM _soxr_src PREPEND "${MPK_SOXR_DIR}/src/")
list(TRANSFORM _engine_src PREPEND "${MPK_SOXR_DIR}/src/")
set(_soxr_targets mpk_soxr_lib mpk_soxr_engine)
add_library(mpk_soxr_lib OBJECT ${_soxr_src})
add_library(mpk_soxr_engine OBJECT ${_engine_src})
if(MPK_SOXR_AVX)
  add_library(mpk_soxr_engine_avx OBJECT ${_engine_src})
  list(APPEND _soxr_targets mpk_soxr_engine_avx)
  target_compile_options(mpk_soxr_engine_avx PRIVATE -mavx)
  # The baseline copy's seven global names, so that both copies link: its callback table becomes
  # the "cr64" engine soxr.c falls back to without AVX.
  target_compile_definitions(mpk_soxr_engine PRIVATE _soxr_rate64s_cb=_soxr_rate64_cb
    _soxr_rdft64s_cb=_soxr_rdft64s_base_cb
    _soxr_ordered_convolve_simd64=_soxr_ordered_convolve_simd64_base
    _soxr_ordered_partial_convolve_simd64=_soxr_ordered_partial_convolve_simd64_base
    _soxr_simd64_aligned_malloc=_soxr_simd64_aligned_malloc_base
    _soxr_simd64_aligned_calloc=_soxr_simd64_aligned_calloc_base
    _soxr_simd64_aligned_free=_soxr_simd64_aligned_free_base)
endif()
foreach(t ${_soxr_targets})
  set_target_properties(${t} PROPERTIES C_STANDARD 99 C_EXTENSIONS ON)
  target_compile_definitions(${t} PRIVATE SOXR_LIB SOXR_PORTABLE_AVX)
  target_compile_options(${t} PRIVATE ${_flags})
  target_include_directories(${t} BEFORE PRIVATE "${_shim}/include" "${CMAKE_BINARY_DIR}/gen/soxr"
    "${MPK_SOXR_DIR}/src")
endforeach()

# musl's functions soxr calls, and what they call.
set(_musl_src asin atan atan2 cos sin __sin __cos __rem_pio2 __rem_pio2_large exp exp_data log log_data
  log10 pow pow_data floor scalbn __math_oflow __math_uflow __math_xflow __math_invalid __math_divzero)
list(TRANSFORM _musl_src PREPEND "${MPK_MUSL_DIR}/src/math/")
list(TRANSFORM _musl_src APPEND ".c")
add_library(mpk_soxr_libm OBJECT ${_musl_src})
set_target_properties(mpk_soxr_libm PROPERTIES C_STANDARD 99 C_EXTENSIONS ON)
target_compile_options(mpk_soxr_libm PRIVATE ${_flags})
# Our <math.h>, <endian.h> and fp_arch.h before the platform's; libm.h from musl's internals.
target_include_directories(mpk_soxr_libm BEFORE PRIVATE "${_shim}/musl" "${MPK_MUSL_DIR}/src/internal")

# Into both libraries with the modules' objects (CMakeLists.txt).
set_property(GLOBAL APPEND PROPERTY MPK_MODULES ${_soxr_targets} mpk_soxr_libm)
set(MPK_SOXR_INCLUDE_DIR "${MPK_SOXR_DIR}/src")
if(EMSCRIPTEN)
  # The module is built for size (MinSizeRel); the resampler is its hot loop, and its 128-bit halves
  # map onto WebAssembly SIMD's f64x2 (lane-wise IEEE operations: the same bytes).
  target_compile_options(mpk_soxr_engine PRIVATE -O2 -msimd128)
endif()
