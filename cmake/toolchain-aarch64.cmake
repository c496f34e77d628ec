# AArch64 Linux (Debian arm64): gcc-aarch64-linux-gnu, :arm64 packages, qemu-aarch64-static.
# scripts/cross.sh aarch64 uses it; docs/cross.md.
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(MPK_CROSS_TRIPLET aarch64-linux-gnu)
include(${CMAKE_CURRENT_LIST_DIR}/cross-multiarch.cmake)
