# MPK_DLOPEN_DEPS (docs/startup.md): the components' optional dependencies are opened with dlopen()
# on first use (core/dl.h) instead of being linked, so that a process pays only for what it uses:
# `modelpkg --version` or a load gate maps none of them. OFF (static and WebAssembly builds, or a
# platform without dlopen): they are linked normally and the code calls them directly.
#
# Each dependency's soname is the one of the library this build would have linked (found like
# pkg-config's -l flag, in the toolchain's search path, so cross builds get the target's), read
# from its dynamic section at configure time: never a guess written here.

include(CheckSymbolExists)
include(CheckIncludeFile)
set(_mpk_dl_default OFF)
if(NOT EMSCRIPTEN) # WebAssembly has no dlopen of system libraries
  set(CMAKE_REQUIRED_LIBRARIES ${CMAKE_DL_LIBS})
  check_symbol_exists(dlopen dlfcn.h MPK_HAVE_DLOPEN)
  unset(CMAKE_REQUIRED_LIBRARIES)
  if(MPK_HAVE_DLOPEN)
    set(_mpk_dl_default ON)
  endif()
endif()
option(MPK_DLOPEN_DEPS "open optional dependencies (libcurl, image codecs, zlib, protobuf-c) on first use" ${_mpk_dl_default})

# The dependencies opened this way: pkg-config variable prefix (the imported target's name),
# library name (what -l would take), the header tag used in the code (MPK_SONAME_<TAG>).
set(MPK_DL_DEPS
  CURL:curl:CURL
  LIBJPEG:jpeg:JPEG
  SPNG:spng:SPNG
  LIBWEBP:webp:WEBP
  LIBEXIF:exif:EXIF
  ZLIB:z:ZLIB
  PROTOBUFC:protobuf-c:PROTOBUFC)

# The imported targets the shared library does not link when MPK_DLOPEN_DEPS is ON.
set(MPK_DL_TARGETS)

if(MPK_DLOPEN_DEPS)
  if(NOT CMAKE_READELF)
    find_program(CMAKE_READELF NAMES ${CMAKE_LIBRARY_ARCHITECTURE}-readelf readelf)
  endif()
  if(NOT CMAKE_READELF)
    message(FATAL_ERROR "MPK_DLOPEN_DEPS: readelf not found (binutils): it reads the dependencies' sonames")
  endif()
  set(_defs MPK_DLOPEN_DEPS=1)
  foreach(entry ${MPK_DL_DEPS})
    string(REPLACE ":" ";" parts "${entry}")
    list(GET parts 0 var)
    list(GET parts 1 lib)
    list(GET parts 2 tag)
    list(APPEND MPK_DL_TARGETS PkgConfig::${var})
    # The shared object -l${lib} resolves to (the development symlink), as the linker would find it.
    find_library(MPK_DL_LIB_${tag} NAMES ${CMAKE_SHARED_LIBRARY_PREFIX}${lib}${CMAKE_SHARED_LIBRARY_SUFFIX} NAMES_PER_DIR)
    if(NOT MPK_DL_LIB_${tag})
      # Not installed: the module that needs it fails at its own pkg_check_modules with the package's
      # name; the code gets no soname and its loader reports the library as not built in.
      continue()
    endif()
    execute_process(COMMAND ${CMAKE_READELF} -d "${MPK_DL_LIB_${tag}}" OUTPUT_VARIABLE dyn RESULT_VARIABLE rc
      ERROR_QUIET)
    if(NOT rc EQUAL 0 OR NOT dyn MATCHES "Library soname: \\[([^]]+)\\]")
      message(FATAL_ERROR "MPK_DLOPEN_DEPS: no SONAME in ${MPK_DL_LIB_${tag}} (readelf -d)")
    endif()
    set(MPK_SONAME_${tag} "${CMAKE_MATCH_1}")
    list(APPEND _defs "MPK_SONAME_${tag}=\"${CMAKE_MATCH_1}\"")
    string(APPEND _summary " ${CMAKE_MATCH_1}")
  endforeach()
  add_compile_definitions(${_defs})
  message(STATUS "MPK_DLOPEN_DEPS: opened on first use:${_summary}")
else()
  add_compile_definitions(MPK_DLOPEN_DEPS=0)
endif()

# libm (docs/startup.md, "libm"): loading it is about a quarter of a millisecond of every process's
# start-up, and the modules need little of it: floor, fmaf and nextafterf are exact inline code
# (src/core/mathx.h), sqrt is an instruction (-fno-math-errno, below), and exp/log, which only the
# cross-entropy of the parity gate takes, are opened with the other dependencies on first use
# (src/core/libm_dl.h; its soname is glibc's own LIBM_SO). `m` stays on the link lines, after
# --as-needed: an optimised build calls nothing in it and gets no NEEDED entry; an unoptimised one
# (Debug, the sanitizers) calls floor, ceil and sqrt as functions and keeps it. No dlopen, or a C
# library without <gnu/lib-names.h> (whose libm is libc itself): exp and log are linked too.
set(MPK_LIBM m)
if(MPK_DLOPEN_DEPS)
  check_include_file(gnu/lib-names.h MPK_HAVE_GNU_LIB_NAMES)
  if(MPK_HAVE_GNU_LIB_NAMES)
    add_compile_definitions(MPK_LIBM_DL=1)
  else()
    add_compile_definitions(MPK_LIBM_DL=0)
  endif()
else()
  add_compile_definitions(MPK_LIBM_DL=0)
endif()

# mpk_dl_link_filter(OUT libs...): the libraries without those opened at run time (the shared
# library's link line).
function(mpk_dl_link_filter out)
  set(libs ${ARGN})
  if(MPK_DL_TARGETS)
    list(REMOVE_ITEM libs ${MPK_DL_TARGETS})
  endif()
  set(${out} ${libs} PARENT_SCOPE)
endfunction()
