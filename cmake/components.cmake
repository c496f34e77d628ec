# The components (docs/components.md): CMake options MPK_WITH_<X> so that a runtime links only what it
# uses, and MPK_MINIMAL (core + mt's load gate and merge: nothing but libc, libm and pthread).
# Each component's value reaches the code as the compile definition MPK_WITH_<X>=0|1 (build_info.c
# reports it; the few places that call across a component boundary test it), and each public
# function of a component that is off is a generated stub (cmake/stubs.cmake) returning
# MPK_EUNSUPPORTED, so the ABI is the same in every configuration.

set(MPK_COMPONENTS mlc mt fetch audio image onnx)
option(MPK_WITH_MLC "the MLC model artifact manifest (src/mlc, src/objfile; zlib)" ON)
option(MPK_WITH_MT "the MobileTransformers format (src/mt, src/ort)" ON)
option(MPK_WITH_FETCH "package sources and downloads over http(s) (src/fetch; libcurl)" ON)
option(MPK_WITH_AUDIO "the audio frontend (src/media's audio; libsoxr)" ON)
option(MPK_WITH_IMAGE "the image frontend (src/media's image; libjpeg, libspng, libwebp, libexif)" ON)
option(MPK_WITH_ONNX "the ONNX graph reader (src/mt/graph; protobuf-c)" ON)
option(MPK_MINIMAL "core + mt only (no fetch, onnx, mlc, audio, image), built-in hashes" OFF)

# The effective values are normal variables: MPK_MINIMAL and the dependencies between components
# override what the cache says without rewriting it.
if(MPK_MINIMAL)
  foreach(c mlc fetch audio image onnx)
    string(TOUPPER ${c} C)
    set(MPK_WITH_${C} OFF)
  endforeach()
  set(MPK_WITH_MT ON)
  set(MPK_HASH builtin) # read by the hash part's selection (MPK_HASH=openssl|builtin)
endif()
if(NOT MPK_WITH_MT AND MPK_WITH_ONNX)
  message(STATUS "components: onnx is mt's graph reader: off with mt")
  set(MPK_WITH_ONNX OFF)
endif()

set(MPK_COMPONENTS_ON core)
set(MPK_COMPONENTS_OFF)
foreach(c ${MPK_COMPONENTS})
  string(TOUPPER ${c} C)
  if(MPK_WITH_${C})
    list(APPEND MPK_COMPONENTS_ON ${c})
    add_compile_definitions(MPK_WITH_${C}=1)
  else()
    list(APPEND MPK_COMPONENTS_OFF ${c})
    add_compile_definitions(MPK_WITH_${C}=0)
  endif()
endforeach()
string(REPLACE ";" " " _on "${MPK_COMPONENTS_ON}")
string(REPLACE ";" " " _off "${MPK_COMPONENTS_OFF}")
message(STATUS "components: built: ${_on}; off: ${_off}")

# jansson and yajl go into the library from Debian's static archives (PIC on Debian), their symbols
# hidden: the library then needs neither .so at run time (two fewer libraries at every start-up,
# and the minimal build's only NEEDED entries are libc/libm). MPK_STATIC_JSON=OFF links the .so.
option(MPK_STATIC_JSON "link jansson and yajl from their static archives, symbols hidden" ON)
set(MPK_JSON_LIBS PkgConfig::JANSSON PkgConfig::YAJL)
if(MPK_STATIC_JSON)
  find_library(MPK_JANSSON_A NAMES libjansson.a)
  find_library(MPK_YAJL_A NAMES libyajl_s.a)
  if(MPK_JANSSON_A AND MPK_YAJL_A)
    # Include directories from pkg-config, the archives instead of -ljansson -lyajl.
    add_library(mpk_json_static INTERFACE)
    target_include_directories(mpk_json_static INTERFACE ${JANSSON_INCLUDE_DIRS} ${YAJL_INCLUDE_DIRS})
    target_link_libraries(mpk_json_static INTERFACE ${MPK_JANSSON_A} ${MPK_YAJL_A})
    # Installed, the static library's users link the shared ones (pkg-config, the config file).
    set(MPK_JSON_LIBS $<BUILD_INTERFACE:mpk_json_static> $<INSTALL_INTERFACE:PkgConfig::JANSSON>
      $<INSTALL_INTERFACE:PkgConfig::YAJL>)
    set(MPK_JSON_EXCLUDE "-Wl,--exclude-libs,libjansson.a:libyajl_s.a")
  else()
    message(STATUS "components: libjansson.a or libyajl_s.a not found: jansson and yajl linked shared")
  endif()
endif()

# The public functions of the components that are off, as stubs generated from the public headers
# (their `/* component: ... */` markers, docs/API.md). test_exported_symbols fails when one is missing.
function(mpk_component_stubs)
  if(NOT MPK_COMPONENTS_OFF)
    return()
  endif()
  file(GLOB headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/modelpkg/*.h)
  set(out ${CMAKE_BINARY_DIR}/gen/stubs/component_stubs.c)
  string(REPLACE ";" "," on "${MPK_COMPONENTS_ON}")
  string(REPLACE ";" "," hs "${headers}")
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} "-DOUT=${out}" "-DON=${on}" "-DHEADERS=${hs}"
      -P ${PROJECT_SOURCE_DIR}/cmake/stubs.cmake
    DEPENDS ${headers} ${PROJECT_SOURCE_DIR}/cmake/stubs.cmake
    COMMENT "stubs for the components that are off: ${_off}"
    VERBATIM)
  mpk_module(stubs SOURCES ${out})
endfunction()
