# s390x Linux (big-endian): gcc-s390x-linux-gnu, :s390x packages, qemu-s390x-static.
# scripts/cross.sh s390x uses it; docs/cross.md.
set(CMAKE_SYSTEM_PROCESSOR s390x)
set(MPK_CROSS_TRIPLET s390x-linux-gnu)
include(${CMAKE_CURRENT_LIST_DIR}/cross-multiarch.cmake)
