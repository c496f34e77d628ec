# One module per directory under src/ (docs/ARCHITECTURE.md): each src/<module>/CMakeLists.txt calls
# mpk_module() with its sources and the Debian libraries it links; the library is the modules'
# objects together. A module sees include/ and src/ (for the internal headers of the modules it may
# use: the direction is written in docs/ARCHITECTURE.md).

# mpk_module(NAME SOURCES src... [LIBS imported-targets...] [PC VAR:pkg-config-module...])
function(mpk_module name)
  cmake_parse_arguments(M "" "" "SOURCES;LIBS;PC" ${ARGN})
  add_library(mpk_${name} OBJECT ${M_SOURCES})
  target_include_directories(mpk_${name} PRIVATE ${PROJECT_SOURCE_DIR}/src
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
  target_compile_definitions(mpk_${name} PRIVATE MPK_SHARED_BUILD)
  target_link_libraries(mpk_${name} PUBLIC ${MPK_BASE_LIBS} ${M_LIBS})
  set_property(GLOBAL APPEND PROPERTY MPK_MODULES mpk_${name})
  set_property(GLOBAL APPEND PROPERTY MPK_MODULE_LIBS ${M_LIBS})
  set_property(GLOBAL APPEND PROPERTY MPK_MODULE_PC ${M_PC})
endfunction()
