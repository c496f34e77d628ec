# ---- ort: ONNX Runtime loaded at run time (docs/ort.md). The library is npm onnxruntime-node's
# (scripts/deps_node.sh installs it into .deps/); without it the tests print a SKIP naming it, exit 77.
set(MPK_ORT_TEST_LIBRARY "${PROJECT_SOURCE_DIR}/.deps/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"
    CACHE FILEPATH "libonnxruntime.so.1 the ort tests load ($MPK_ORT_LIBRARY)")
mpk_test(test_ort unit unit/test_ort.c)
set_tests_properties(test_ort PROPERTIES ENVIRONMENT "MPK_ORT_LIBRARY=${MPK_ORT_TEST_LIBRARY}" TIMEOUT 120)

# Zero-copy, asserted (docs/ort.md "Zero-copy, measured"): 256 MiB of handoff tensors through the
# gate, tensor views and a session; RssAnon grows < 64 MiB and the logits equal a files session's.
# The probe is the benchmark's program (public API only), built here so that tests need no bench.
add_executable(ort_zero_copy_probe ${PROJECT_SOURCE_DIR}/bench/bench_ort_zero_copy.c)
target_link_libraries(ort_zero_copy_probe PRIVATE modelpkg_static)
mpk_script_test(test_ort_zero_copy e2e ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_ort_zero_copy.sh ${MPK_CLI}
  $<TARGET_FILE:ort_zero_copy_probe> ${PROJECT_SOURCE_DIR})
set_tests_properties(test_ort_zero_copy PROPERTIES TIMEOUT 600
  ENVIRONMENT "MPK_ORT_LIBRARY=${MPK_ORT_TEST_LIBRARY};MPK_SANITIZE_BUILD=$<$<BOOL:${MPK_SANITIZE}>:1>")
