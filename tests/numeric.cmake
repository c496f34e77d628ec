# mt/numeric: the numerical gates (docs/mt-numeric.md). ONNX Runtime is found through
# $MPK_ORT_LIBRARY, set here to npm onnxruntime-node's library when .deps holds it; without it the
# tests that need it skip, naming it.
mpk_test(test_mt_numeric unit unit/test_mt_numeric.c)
# The parity gate end to end: make_decoder.py's graphs, mt parity, onnxruntime-node as the reference,
# mt build --parity (MPK_ORT_TEST_LIBRARY: tests/ort.cmake).
mpk_script_test(test_mt_parity e2e ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_mt_parity.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR})
set_tests_properties(test_mt_parity PROPERTIES ENVIRONMENT "MPK_ORT_LIBRARY=${MPK_ORT_TEST_LIBRARY}" TIMEOUT 600)
