/* Fuzz target: a chat-completion request (mpk_mlc_request_check) against five models — text-only
   LLM and embedding, a legacy VLM, a manifest model with audio, one with audio and image. A refusal
   is a known code with a message and a pointer into the request (or none for the whole text). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const mpk_mlc_request_model models[] = {
      {"m", "LLM", {0, 0, 0}},     {"m", "embedding", {0, 0, 0}}, {"m", "VLM", {0, 0, 0}},
      {"m", "LLM", {1, 1, 0}},     {NULL, NULL, {1, 1, 1}},
  };
  for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
    mpk_error err;
    int rc = mpk_mlc_request_check(data, size, "fuzz", &models[i], &err);
    if (rc > 0 || rc != err.code) __builtin_trap();
    if (rc && (rc != MPK_EMALFORMED && rc != MPK_EUNSUPPORTED && rc != MPK_ELIMIT && rc != MPK_ENOMEM)) __builtin_trap();
    if (rc && (!err.message[0] || (err.pointer[0] && strncmp(err.pointer, "/messages", 9) != 0))) __builtin_trap();
  }
  return 0;
}
