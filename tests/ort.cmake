# ---- ort: ONNX Runtime loaded at run time (docs/ort.md). The library is npm onnxruntime-node's
# (scripts/deps_node.sh installs it into .deps/); without it the tests print a SKIP naming it, exit 77.
# The npm package ships linux/x64 and linux/arm64 builds (an aarch64 cross build runs the arm64 one
# under qemu); for any other target (s390x) there is none, and the tests skip naming it.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(MPK_ORT_NPM_ARCH arm64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(MPK_ORT_NPM_ARCH x64)
else()
  set(MPK_ORT_NPM_ARCH "none-for-${CMAKE_SYSTEM_PROCESSOR}")
endif()
set(MPK_ORT_TEST_LIBRARY "${PROJECT_SOURCE_DIR}/.deps/node_modules/onnxruntime-node/bin/napi-v6/linux/${MPK_ORT_NPM_ARCH}/libonnxruntime.so.1"
    CACHE FILEPATH "libonnxruntime.so.1 the ort tests load ($MPK_ORT_LIBRARY)")
# A fake library exporting OrtGetApiBase with an old version and no API: the MPK_EVERSION refusals.
add_library(fake_ort MODULE unit/fake_ort.c)
set_target_properties(fake_ort PROPERTIES PREFIX "" OUTPUT_NAME "fake_ort")
mpk_test(test_ort unit unit/test_ort.c)
add_dependencies(test_ort fake_ort)
target_compile_definitions(test_ort PRIVATE MPK_FAKE_ORT="$<TARGET_FILE:fake_ort>"
  MPK_LIB_ARCH="${CMAKE_LIBRARY_ARCHITECTURE}")
# ONNX Runtime's own leak (tests/ort_lsan.supp) is suppressed in the sanitizer build; ours are not.
set(MPK_ORT_LSAN "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/ort_lsan.supp")
set_tests_properties(test_ort PROPERTIES ENVIRONMENT "MPK_ORT_LIBRARY=${MPK_ORT_TEST_LIBRARY};${MPK_ORT_LSAN}" TIMEOUT 120)

# Zero-copy, asserted (docs/ort.md "Zero-copy, measured"): 256 MiB of handoff tensors through the
# gate, tensor views and a session; RssAnon grows < 64 MiB and the logits equal a files session's.
# The probe is the benchmark's program (public API only), built here so that tests need no bench.
add_executable(ort_zero_copy_probe ${PROJECT_SOURCE_DIR}/bench/bench_ort_zero_copy.c)
target_link_libraries(ort_zero_copy_probe PRIVATE modelpkg_static)
mpk_script_test(test_ort_zero_copy e2e ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_ort_zero_copy.sh ${MPK_CLI}
  $<TARGET_FILE:ort_zero_copy_probe> ${PROJECT_SOURCE_DIR})
set_tests_properties(test_ort_zero_copy PROPERTIES TIMEOUT 600
  ENVIRONMENT "MPK_ORT_LIBRARY=${MPK_ORT_TEST_LIBRARY};${MPK_ORT_LSAN};MPK_SANITIZE_BUILD=$<$<BOOL:${MPK_SANITIZE}>:1>")
