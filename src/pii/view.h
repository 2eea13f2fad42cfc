/* The text detection runs on: the input with JSON string escapes decoded
 * (for JSON text, where the quotes around strings become line breaks so no
 * value runs from one string into the next) and Unicode folded (NFKC compatibility forms such as
 * full-width digits and letters to ASCII, Unicode spaces to ' ', format
 * characters such as zero-width spaces and soft hyphens removed, decimal
 * digits of every script to ASCII digits, dashes and minus signs next to a
 * digit to '-'), '@' written %40 or as an HTML reference as '@', and blanks
 * with tabs or one line break inside a number as one ' ' (or nothing after a
 * separator), with, per byte of the view, the byte range of the input it
 * came from (docs/internals/pii.md). A span of the
 * view maps back to [os[first], oe[last]) of the input: every byte of the
 * value, including removed characters inside it and whole escapes. */
#ifndef SW_PII_VIEW_H
#define SW_PII_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sw_pii_view {
    char *t;                    /* view text (not NUL-terminated) */
    size_t len, cap;
    uint32_t *os, *oe;          /* per view byte: input range of its character */
    size_t joined;              /* tabs or line breaks read inside a number */
};

/* What detection on text needs: nothing (SW_PII_VIEW_NONE: pure ASCII
 * without an encoded '@' or a tab or line break inside a number, and in
 * JSON no backslash or quote), nothing but spans widened to whole
 * characters (SW_PII_VIEW_UTF8: valid UTF-8 whose every character the view
 * keeps as it is, so the view would be the text byte for byte), or the view
 * (SW_PII_VIEW_BUILD). */
enum { SW_PII_VIEW_NONE, SW_PII_VIEW_UTF8, SW_PII_VIEW_BUILD };
int sw_pii_view_kind(const char *text, size_t len, int json);
/* Whether the view keeps code point c (c >= 0x80: its UTF-8 bytes as they
 * are) when it stands alone: a dash is kept unless a digit is next to it. */
bool sw_pii_view_keeps(int32_t c);
/* Whether a key (its text k, n bytes) names a phone number: "phone",
 * "tel", "mobile", ... anywhere in it, any case. */
bool sw_pii_phone_key(const char *k, size_t n);
/* Builds the view of text[0..len) (len < 2^32). SW_OK or SW_ENOMEM. */
int sw_pii_view_build(struct sw_pii_view *v, const char *text, size_t len, int json);
/* The same; with join false, no tab or line break is read inside a number
 * (each stays a boundary, as it is in the input). */
int sw_pii_view_build2(struct sw_pii_view *v, const char *text, size_t len, int json, bool join);
void sw_pii_view_free(struct sw_pii_view *v);

#endif
