# mt/numeric: the numerical gates (docs/mt-numeric.md). ONNX Runtime is found through
# $MPK_ORT_LIBRARY, set here to npm onnxruntime-node's library when .deps holds it; without it the
# tests that need it skip, naming it.
mpk_test(test_mt_numeric unit unit/test_mt_numeric.c)
