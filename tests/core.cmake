# ---- core: JSON, canonical identities, transactions, the worker pool, atomic writes, opening files,
# the output contract
mpk_test(test_core_json unit unit/test_core_json.c)
mpk_test(test_core_canonical unit unit/test_core_canonical.c)
mpk_test(test_core_txn unit unit/test_core_txn.c)
mpk_script_test(test_core_txn_sigkill unit $<TARGET_FILE:test_core_txn> --sigkill)
mpk_test(test_core_pool unit unit/test_core_pool.c)
mpk_test(test_core_cpu unit unit/test_core_cpu.c)
mpk_test(test_core_dl unit unit/test_core_dl.c)
# core/mathx.h: floor, nextafterf and fmaf computed without libm, bit for bit its answers.
mpk_test(test_core_mathx unit unit/test_core_mathx.c)
# The hasher, built-in SHA-256 and MD5 (docs/hashing.md): NIST and RFC 1321 vectors, every length
# and split against OpenSSL (linked here as the reference where installed), 1 GiB (slow), and the
# choice with MPK_HASH_IMPL.
mpk_test(test_core_hash unit unit/test_core_hash.c)
if(TARGET OpenSSL::Crypto)
  target_link_libraries(test_core_hash PRIVATE OpenSSL::Crypto)
  target_compile_definitions(test_core_hash PRIVATE MPK_TEST_OPENSSL=1)
endif()
if(MPK_HASH STREQUAL "openssl")
  target_compile_definitions(test_core_hash PRIVATE MPK_TEST_HASH_OPENSSL=1)
  set(_mpk_hash_env_openssl openssl)
else()
  set(_mpk_hash_env_openssl builtin-best) # asked for, not built: the default stands
endif()
if(MPK_HASH STREQUAL "openssl" AND MPK_DLOPEN_DEPS)
  # libcrypto missing at run time: a copy of hash.c given a soname that does not exist.
  mpk_test(test_core_hash_fallback unit unit/test_core_hash_fallback.c ${PROJECT_SOURCE_DIR}/src/core/hash.c)
  target_compile_definitions(test_core_hash_fallback PRIVATE MPK_HASH_OPENSSL=1
    MPK_SONAME_CRYPTO="libmpk-no-crypto.so.9")
  target_include_directories(test_core_hash_fallback PRIVATE ${OPENSSL_INCLUDE_DIR})
  set_tests_properties(test_core_hash_fallback PROPERTIES ENVIRONMENT MPK_HASH_IMPL=)
endif()
mpk_script_test(test_core_hash_gib "unit;slow" $<TARGET_FILE:test_core_hash> --gib)
foreach(pair "builtin-c:builtin-c" "builtin:builtin-best" "openssl:${_mpk_hash_env_openssl}"
    "sha3:${_mpk_hash_env_openssl}")
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 env)
  list(GET pair 1 want)
  mpk_script_test(test_core_hash_env_${env} unit $<TARGET_FILE:test_core_hash> --impl-is ${want})
  set_tests_properties(test_core_hash_env_${env} PROPERTIES ENVIRONMENT MPK_HASH_IMPL=${env})
endforeach()
mpk_test(test_core_atomic unit unit/test_core_atomic.c)
mpk_test(test_core_open unit unit/test_core_open.c)
mpk_test(test_core_dtype unit unit/test_core_dtype.c REQUIRES mt onnx) # also the rows seen through mt's API
mpk_test(test_core_document unit unit/test_core_document.c REQUIRES mlc mt) # loads MLC and MT documents
mpk_test(test_core_findings unit unit/test_core_findings.c)
mpk_test(test_core_output unit unit/test_core_output.c)
# ---- the public API's conventions (docs/API.md): options structs, headers, exported symbols
mpk_test(test_api_options unit unit/test_api_options.c REQUIRES mt) # proven on mt's options structs
# The compiler as the build calls it: a cross build's target root (CMAKE_SYSROOT, s390x) comes along.
set(MPK_TEST_CC_FLAGS)
if(CMAKE_SYSROOT)
  list(APPEND MPK_TEST_CC_FLAGS --sysroot=${CMAKE_SYSROOT})
endif()
mpk_script_test(test_public_headers unit ${MPK_IT}/test_public_headers.sh ${PROJECT_SOURCE_DIR} ${CMAKE_C_COMPILER}
  ${MPK_TEST_CC_FLAGS})
mpk_script_test(test_exported_symbols unit ${MPK_IT}/test_exported_symbols.sh $<TARGET_FILE:modelpkg>
  ${PROJECT_SOURCE_DIR})
mpk_script_test(test_api_null unit python3 ${MPK_IT}/test_api_null.py ${PROJECT_SOURCE_DIR} ${CMAKE_C_COMPILER}
  $<TARGET_FILE:modelpkg> ${MPK_TEST_CC_FLAGS})
# WHATWG URLs (core/url.c): fixed cases; the differential test against Node's URL and WebLLM's
# cleanModelUrl on random cases is test_url_diff (tests/mlc.cmake, docs/mlc-urls.md).
mpk_test(test_core_url unit unit/test_core_url.c REQUIRES mlc)
