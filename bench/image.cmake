# Image frontend vs Pillow and djpeg (run_image.sh): the frontend in-process, a libjpeg-at-M/8
# experiment, the resampler alone.
add_executable(bench_image bench_image.c)
target_link_libraries(bench_image PRIVATE modelpkg_static PkgConfig::LIBJPEG)
target_include_directories(bench_image PRIVATE ${PROJECT_SOURCE_DIR}/src)
