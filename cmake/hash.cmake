# Hashing (docs/hashing.md): who computes SHA-256 and MD5. MPK_HASH=openssl keeps OpenSSL's libcrypto
# (the default when OpenSSL 3 is found), opened on the first hash through core/dl.c
# (core/crypto_dl.h) unless MPK_DLOPEN_DEPS is OFF (then linked); the built-in code is always compiled and is the fallback when
# libcrypto cannot be loaded. MPK_HASH=builtin finds and links nothing of OpenSSL.
# Sets MPK_HASH_DEFS, MPK_HASH_LIBS, MPK_HASH_INCLUDES (applied by src/core/CMakeLists.txt) and
# MPK_PC_CRYPTO, MPK_CONFIG_CRYPTO (the installed pkg-config file and CMake config).
if(NOT DEFINED CACHE{MPK_HASH})
  set(_mpk_hash_default builtin)
  if(NOT MPK_MINIMAL)
    find_package(OpenSSL 3 QUIET COMPONENTS Crypto)
    if(OpenSSL_FOUND)
      set(_mpk_hash_default openssl)
    endif()
  endif()
  set(MPK_HASH ${_mpk_hash_default} CACHE STRING
    "SHA-256 and MD5: openssl (libcrypto, the default when found) or builtin (portable C, SHA-NI, ARMv8)")
endif()
set_property(CACHE MPK_HASH PROPERTY STRINGS openssl builtin)

set(MPK_HASH_LIBS "")
set(MPK_HASH_INCLUDES "")
set(MPK_PC_CRYPTO "")
set(MPK_CONFIG_CRYPTO "")
if(MPK_HASH STREQUAL "openssl")
  find_package(OpenSSL 3 REQUIRED COMPONENTS Crypto)
  if(MPK_DLOPEN_DEPS) # (cmake/dlopen_deps.cmake, included before this file)
    # The soname the build found (libcrypto.so -> libcrypto.so.3), what dlopen() is given.
    file(REAL_PATH "${OPENSSL_CRYPTO_LIBRARY}" _mpk_crypto_real)
    get_filename_component(_mpk_crypto_soname "${_mpk_crypto_real}" NAME)
    if(NOT _mpk_crypto_soname MATCHES "^libcrypto\\.so\\.[0-9]+$")
      string(REGEX MATCH "^[0-9]+" _mpk_crypto_major "${OPENSSL_VERSION}")
      set(_mpk_crypto_soname "libcrypto.so.${_mpk_crypto_major}")
    endif()
    set(MPK_HASH_DEFS MPK_HASH_OPENSSL=1 MPK_SONAME_CRYPTO="${_mpk_crypto_soname}")
    set(MPK_HASH_INCLUDES ${OPENSSL_INCLUDE_DIR})
    message(STATUS "Hashing: OpenSSL, ${_mpk_crypto_soname} opened on first use; built-in fallback")
  else()
    set(MPK_HASH_DEFS MPK_HASH_OPENSSL=1)
    set(MPK_HASH_LIBS OpenSSL::Crypto)
    set(MPK_PC_CRYPTO ", libcrypto >= 3")
    set(MPK_CONFIG_CRYPTO "find_dependency(OpenSSL 3 COMPONENTS Crypto)")
    message(STATUS "Hashing: OpenSSL, linked; built-in fallback")
  endif()
elseif(MPK_HASH STREQUAL "builtin")
  set(MPK_HASH_DEFS MPK_HASH_OPENSSL=0)
  message(STATUS "Hashing: built-in (portable C; SHA-NI / ARMv8 SHA-2 chosen at run time)")
else()
  message(FATAL_ERROR "MPK_HASH is '${MPK_HASH}': it must be openssl or builtin")
endif()
