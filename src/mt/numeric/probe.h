/* PROBE.json's limits and its in-memory reader (probe.c; docs/mt-numeric.md, "The probe"). The
   reader of a file, mpk_mtn_probe_load, and the probe struct are in numeric.h. */
#ifndef MPK_MT_NUMERIC_PROBE_H
#define MPK_MT_NUMERIC_PROBE_H

#include <jansson.h>
#include <stdbool.h>

#include "mt/numeric/numeric.h"

/* The limits of a probe: a probe is a few thousand tokens run twice, not a data set. */
#define MPK_MTN_PROBE_MAX_BYTES (16u << 20)   /* the file */
#define MPK_MTN_PROBE_MAX_SEQUENCES 1024
#define MPK_MTN_PROBE_MAX_LENGTH 8192         /* ids in one sequence (at least 2) */
#define MPK_MTN_PROBE_MAX_TOKENS 65536        /* ids in all */
#define MPK_MTN_PROBE_MAX_ID INT64_C(2147483647)

/* The format: {"sequences": [[id, ...], ...]}, exactly that key; 1..MAX_SEQUENCES sequences of
   2..MAX_LENGTH integers in [0, MAX_ID] (whether an id is below the graph's vocabulary is the run's
   check), at most MAX_TOKENS in all. Errors name the file and the JSON pointer: MPK_EMALFORMED for
   the shape, MPK_ELIMIT for a limit. mpk_mtn_probe_load opens the file by mpk_map_file's rules (a
   regular file of at most MAX_BYTES: a FIFO is refused, never waited on) and parses it with this.
   `file` names the bytes in errors (the unit tests' and a fuzzer's entry point). */
int mpk_mtn_probe_parse(const void *data, size_t len, const char *file, mpk_mtn_probe **out, mpk_error *err);

/* The one rule for a token id in a JSON document (PROBE.json here, TOKENS.json in parity.c): an
   integer from 0 to MPK_MTN_PROBE_MAX_ID (3.0 is the integer 3: JSON has one number type). */
bool mpk_mtn_token_id(const json_t *value, int64_t *id);

#endif
