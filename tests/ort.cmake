# ---- ort: ONNX Runtime loaded at run time (docs/ort.md). The library is npm onnxruntime-node's
# (scripts/deps_node.sh installs it into .deps/); without it the tests print a SKIP naming it, exit 77.
set(MPK_ORT_TEST_LIBRARY "${PROJECT_SOURCE_DIR}/.deps/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"
    CACHE FILEPATH "libonnxruntime.so.1 the ort tests load ($MPK_ORT_LIBRARY)")
mpk_test(test_ort unit unit/test_ort.c)
set_tests_properties(test_ort PROPERTIES ENVIRONMENT "MPK_ORT_LIBRARY=${MPK_ORT_TEST_LIBRARY}" TIMEOUT 120)
