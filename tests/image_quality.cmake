# image resize and quality tests (issue 9, part 2)
mpk_test(test_conf_image_plan conformance/test_conf_image_plan.c)
mpk_test(test_image_resize unit/test_image_resize.c)

# Pixels against Pillow (docs/image-resize.md): a driver for the resampler on raw rasters and for
# the whole frontend on files, and the comparison over a generated image set plus tests/data/image.
add_executable(image_tool util/image_tool.c)
target_link_libraries(image_tool PRIVATE modelpkg_static)
target_include_directories(image_tool PRIVATE ${PROJECT_SOURCE_DIR}/src)
add_test(NAME test_image_quality COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/scripts/image_vs_pillow.py
  --tool $<TARGET_FILE:image_tool> --generate)
set_tests_properties(test_image_quality PROPERTIES TIMEOUT 900)
