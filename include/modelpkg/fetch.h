/*
 * modelpkg/fetch.h — the fetch engine: sources (a directory, HTTP), a plan downloaded into a staging
 * area while hashing, resumed and retried, committed atomically under a lock. Installers (mt install)
 * are its clients.
 */
#ifndef MODELPKG_FETCH_H
#define MODELPKG_FETCH_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif /* MODELPKG_FETCH_H */
