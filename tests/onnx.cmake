# ---- mt: the ONNX inference graph (issue 11). The graphs are generated at test time by
# scripts/gen_onnx_graphs.py with Debian's python3-onnx (/usr/bin/python3) into the build tree.
set(MPK_ONNX_GRAPHS "${CMAKE_CURRENT_BINARY_DIR}/onnx-graphs")
add_test(NAME gen_onnx_graphs
  COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/scripts/gen_onnx_graphs.py ${MPK_ONNX_GRAPHS})
set_tests_properties(gen_onnx_graphs PROPERTIES FIXTURES_SETUP onnx_graphs)

mpk_test(test_mt_onnx unit/test_mt_onnx.c)
mpk_test(test_mt_graph_check unit/test_mt_graph_check.c)
foreach(t test_mt_onnx test_mt_graph_check)
  target_compile_definitions(${t} PRIVATE MPK_ONNX_GRAPHS="${MPK_ONNX_GRAPHS}")
  set_tests_properties(${t} PROPERTIES FIXTURES_REQUIRED onnx_graphs)
endforeach()

add_test(NAME test_cli_mt_graph COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_cli_mt_graph.sh
  $<TARGET_FILE:modelpkg_cli> ${PROJECT_SOURCE_DIR} ${MPK_ONNX_GRAPHS})
set_tests_properties(test_cli_mt_graph PROPERTIES FIXTURES_REQUIRED onnx_graphs)
