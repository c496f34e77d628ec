/*
 * modelpkg — on-device ML model packages, checked fail-closed.
 *
 * The whole public API of libmodelpkg, sectioned:
 *   core  — version, errors, canonical JSON and identities, dtypes, digests, tensor views (DLPack),
 *           document versions, atomic writes
 *   mlc   — the MLC model artifact manifest (mlc-model-manifest.json, _metadata.artifact), weights,
 *           device fit, the producer
 *   mt    — the MobileTransformers package format (manifest, validation, builder, handoff map,
 *           tensors and the load gate, safetensors, selection and download plans, the installer,
 *           the LoRA merge)
 *   audio — WAV / PCM to the mono float32 an audio_decode adapter expects
 *   image — JPEG / PNG / WebP to the NHWC pixel tensor an image_decode adapter expects
 *
 * Conventions (errors and return values, ownership, NULL arguments, options structs, threads) are
 * stated once, at the top of modelpkg/core.h, and at more length in docs/API.md.
 */
#ifndef MODELPKG_H
#define MODELPKG_H

/* One module per header, in the order of dependency (each includes core.h). */
#include "modelpkg/core.h"
#include "modelpkg/fetch.h"
#include "modelpkg/mlc.h"
#include "modelpkg/ort.h"
#include "modelpkg/mt.h"
#include "modelpkg/media.h"

#endif /* MODELPKG_H */
