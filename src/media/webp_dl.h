/* libwebp, opened on first use under MPK_DLOPEN_DEPS (core/dl_table.h, docs/startup.md): the
   functions media/image_probe.c (which holds the table) and media/image_decode.c call, redirected
   to their slots; mpk_webp_load() before the first. decode.h's WebPGetFeatures() and
   WebPInitDecoderConfig() are static inline functions calling the library's *Internal functions
   with the header's ABI version: their bodies, compiled before any redirection, would call the
   library directly, so these two names are redirected too (the inline functions go unused). */
#ifndef MPK_MEDIA_WEBP_DL_H
#define MPK_MEDIA_WEBP_DL_H

#include <webp/decode.h>

#include "core/dl_table.h"

#define MPK_WEBP_FUNCS(X) X(WebPGetFeaturesInternal) X(WebPInitDecoderConfigInternal) X(WebPDecode) X(WebPFreeDecBuffer)

MPK_DL_TABLE(webp, MPK_WEBP_FUNCS)

#if MPK_DLOPEN_DEPS
#define WebPGetFeaturesInternal (mpk_webp_fn.f.WebPGetFeaturesInternal)
#define WebPInitDecoderConfigInternal (mpk_webp_fn.f.WebPInitDecoderConfigInternal)
#define WebPDecode (mpk_webp_fn.f.WebPDecode)
#define WebPFreeDecBuffer (mpk_webp_fn.f.WebPFreeDecBuffer)
#define WebPGetFeatures(data, size, features) WebPGetFeaturesInternal(data, size, features, WEBP_DECODER_ABI_VERSION)
#define WebPInitDecoderConfig(config) WebPInitDecoderConfigInternal(config, WEBP_DECODER_ABI_VERSION)
#endif

#endif
