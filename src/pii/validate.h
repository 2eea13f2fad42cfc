/* Checksum and syntax validators of the PII engine, in C (no regex can do
 * them). Each takes a slice and says yes or no; none allocates. */
#ifndef SW_PII_VALIDATE_H
#define SW_PII_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>

/* Luhn over the digits of s (other bytes skipped); false with < 2 digits. */
bool sw_pii_luhn(const char *s, size_t len);
/* ISO 7064 mod 97-10 over the letters and digits of s after moving the first
 * four to the end (IBAN rule); letters count as 10..35, case-insensitive.
 * false with fewer than 5 alphanumerics or any other byte than space/'-'. */
bool sw_pii_mod97(const char *s, size_t len);
/* Dutch 11-proef (BSN variant: weights 9..2, last digit weight -1) over the
 * digits of s: exactly 9 digits, not all zero. */
bool sw_pii_elfproef(const char *s, size_t len);
/* IBAN length of a two-letter country code (upper case), 0 if unknown. */
int sw_pii_iban_len(char c0, char c1);
/* US SSN rules over "AAA-GG-SSSS" or 9 digits: area not 000, 666 or 900-999,
 * group not 00, serial not 0000, and not the two famous published numbers. */
bool sw_pii_ssn_ok(const char *s, size_t len);
/* Dotted quad, each octet 0..255 without leading zeros. */
bool sw_pii_ipv4_ok(const char *s, size_t len);
/* RFC 4291 text form (full, compressed, with a trailing dotted quad). */
bool sw_pii_ipv6_ok(const char *s, size_t len);

#endif
