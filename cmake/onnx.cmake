# mt: the ONNX inference graph (issue 11): a C reader generated at build time by protoc-c from
# Debian's onnx.proto (libonnx-dev), never a copy in this repository; libprotobuf-c unpacks it.
pkg_check_modules(PROTOBUFC REQUIRED IMPORTED_TARGET libprotobuf-c>=1.3)
find_program(MPK_PROTOC_C protoc-c REQUIRED)
find_file(MPK_ONNX_PROTO onnx.proto PATHS /usr/include/onnx NO_DEFAULT_PATH REQUIRED
  DOC "onnx.proto from Debian's libonnx-dev")
get_filename_component(MPK_ONNX_PROTO_DIR "${MPK_ONNX_PROTO}" DIRECTORY)

set(MPK_ONNX_GEN_DIR "${CMAKE_BINARY_DIR}/gen/onnx")
add_custom_command(
  OUTPUT "${MPK_ONNX_GEN_DIR}/onnx.pb-c.c" "${MPK_ONNX_GEN_DIR}/onnx.pb-c.h"
  COMMAND ${CMAKE_COMMAND} -E make_directory "${MPK_ONNX_GEN_DIR}"
  COMMAND ${MPK_PROTOC_C} "--c_out=${MPK_ONNX_GEN_DIR}" "-I${MPK_ONNX_PROTO_DIR}" "${MPK_ONNX_PROTO}"
  DEPENDS "${MPK_ONNX_PROTO}"
  COMMENT "protoc-c: C for ${MPK_ONNX_PROTO}"
  VERBATIM)

set(MPK_ONNX_SOURCES
  src/mt/onnx.c
  src/mt/onnx_wire.c
  src/mt/graph_check.c
  src/mt/graph_precision.c
  src/mt/graph_report.c
  src/mt/handoff_build.c)
# Generated code is not ours to make warning-clean.
set_source_files_properties("${MPK_ONNX_GEN_DIR}/onnx.pb-c.c" PROPERTIES GENERATED TRUE COMPILE_OPTIONS "-w"
  INCLUDE_DIRECTORIES "${MPK_ONNX_GEN_DIR}")
# Only the two files that touch the generated types see its header.
set_source_files_properties(src/mt/onnx.c src/mt/onnx_wire.c PROPERTIES
  INCLUDE_DIRECTORIES "${MPK_ONNX_GEN_DIR}"
  OBJECT_DEPENDS "${MPK_ONNX_GEN_DIR}/onnx.pb-c.h")

list(APPEND MPK_SOURCES ${MPK_ONNX_SOURCES} "${MPK_ONNX_GEN_DIR}/onnx.pb-c.c")
list(APPEND MPK_CLI_SOURCES src/cli/cmd_mt_graph.c)
list(APPEND MPK_EXTRA_LIBS PkgConfig::PROTOBUFC)
list(APPEND MPK_EXTRA_PC PROTOBUFC:libprotobuf-c)
