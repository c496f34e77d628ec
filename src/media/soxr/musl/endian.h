/* What musl's libm.h asks of <endian.h>: the byte order, from the compiler. */
#ifndef MPK_SOXR_ENDIAN_H
#define MPK_SOXR_ENDIAN_H
#define __LITTLE_ENDIAN 1234
#define __BIG_ENDIAN 4321
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define __BYTE_ORDER __BIG_ENDIAN
#else
#define __BYTE_ORDER __LITTLE_ENDIAN
#endif
#endif
