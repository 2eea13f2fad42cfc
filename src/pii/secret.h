/* Secret rules beyond the pattern table of detect.c: provider tokens known
 * by their prefix, AWS secret access keys next to their key id, Basic
 * credentials, webhook URLs, and assignments of password-, secret-, token-
 * and key-named names (`.env`, YAML, JSON, code). One vectorscan database of
 * literal triggers; each trigger's extent and validation in C, bounded, with
 * memos so that a text of repeated triggers costs linear time. See
 * docs/privacy.md (the rules) and docs/internals/pii.md. */
#ifndef SW_PII_SECRET_H
#define SW_PII_SECRET_H

#include <hs/hs.h>
#include <stddef.h>

/* Compiles the trigger database into *db (the caller frees it with
 * hs_free_database). SW_OK or SW_EINVAL / SW_ENOMEM. */
int sw_pii_secret_db(hs_database_t **db);

/* Calls add(ud, start, end) for each secret found in t[0, len) (spans may
 * come in any order and overlap: the caller merges them). scratch must have
 * been allocated for db. SW_OK, add's non-zero return, or SW_ENOMEM. */
int sw_pii_secret_scan(const hs_database_t *db, hs_scratch_t *scratch, const unsigned char *t,
                       size_t len, int (*add)(void *ud, size_t s, size_t e), void *ud);

#endif
