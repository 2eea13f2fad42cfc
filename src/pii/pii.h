/* PII engine: deterministic detection of personal and secret data, reversible
 * masking with stable per-request placeholders, and unmasking of the answer,
 * whole or streamed. Pure: no I/O, no clock, no logging (the values must never
 * reach a log; nothing here logs).
 *
 * Detection is two stages (docs/internals/pii.md): vectorscan databases
 * compiled with HS_FLAG_SOM_LEFTMOST find candidate spans (one pass over the
 * text; the digit patterns only over its runs of digits and separators, found
 * in C); a C refiner per type then fixes the exact span and checks what
 * a regex cannot (Luhn, mod-97 with the country's length, 11-proef, SSN area
 * rules, IPv4 octets, IPv6 syntax, boundaries, context words, randomness of a
 * key). Overlapping accepted spans are merged (the union is masked; the type is
 * the one of highest priority: secret, custom, iban, card, email, ipv6, ipv4,
 * ssn, bsn, national_id, phone), so masking never covers less than any single
 * detection.
 *
 * Placeholders are "[TYPE_N]": TYPE the type's name in upper case ("EMAIL",
 * "PHONE", "IBAN", "CARD", "BSN", "SSN", "IPV4", "IPV6", "SECRET", "NATIONAL_ID", or a custom
 * name upper-cased, '-' and '.' as '_', cut to 24 bytes), N = 1, 2, ... per type and per request. The same value
 * gets the same placeholder within one map. Only the exact bytes of a
 * placeholder the map issued are restored; a placeholder-shaped text that was
 * already in the request ("[EMAIL_1]" typed by the user) is reserved and never
 * issued, so it is left alone in the answer.
 *
 * Threads: an engine is immutable once built and may be shared by any number
 * of threads (it keeps an internal, locked pool of vectorscan scratch spaces).
 * A map and a stream belong to one request and one thread at a time. */
#ifndef SW_PII_PII_H
#define SW_PII_PII_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

enum sw_pii_type {
    SW_PII_EMAIL,
    SW_PII_PHONE,
    SW_PII_IBAN,
    SW_PII_CARD,
    SW_PII_BSN,
    SW_PII_SSN,
    SW_PII_IPV4,
    SW_PII_IPV6,
    SW_PII_SECRET,
    SW_PII_NATIONAL_ID,         /* Spanish DNI/NIE (more national ids as they come) */
    SW_PII_CUSTOM_BASE          /* custom type i is SW_PII_CUSTOM_BASE + i */
};
#define SW_PII_MAX_TYPES 32
#define SW_PII_MAX_CUSTOM (SW_PII_MAX_TYPES - SW_PII_CUSTOM_BASE)      /* 22 */
#define SW_PII_MAX_NAME 64              /* custom name: 1-64 of A-Z a-z 0-9 _ . - (the config's rule) */
#define SW_PII_MAX_TAG 24               /* placeholder tag: the name upper-cased, cut to 24 */

/* Bounds. A text longer than SW_PII_MAX_TEXT, or one with more than
 * SW_PII_MAX_CANDIDATES candidate matches, is an error (SW_ETOOBIG): the
 * caller must treat the request as sensitive / not maskable (fail closed). */
#define SW_PII_MAX_TEXT ((size_t)64 << 20)
#define SW_PII_MAX_CANDIDATES 262144
/* A map holds at most this many distinct values and value bytes; past that,
 * masking fails with SW_ETOOBIG (fail closed). */
#define SW_PII_MAP_MAX_ENTRIES 4096
#define SW_PII_MAP_MAX_BYTES ((size_t)1 << 20)
/* Longest placeholder: "[" + 24-byte tag + "_" + 4 digits + "]". */
#define SW_PII_MAX_PLACEHOLDER 31

/* A custom entity type from config. validator: NULL, "none", "luhn" (the
 * digits of the match), "mod97" (the letters and digits of the match, ISO
 * 13616 rearrangement: an IBAN-like check) or "elfproef" (the digits of the
 * match: 9 digits, Dutch 11-check). regex: vectorscan syntax (PCRE without
 * back-references or look-around); the longest match from the leftmost start
 * is taken. */
struct sw_pii_custom {
    const char *name;
    const char *regex;
    const char *validator;
};

struct sw_pii_engine;

/* Builds an engine with the built-in types plus n_custom custom types
 * (borrowed; copied). SW_OK and *out; or SW_EINVAL with a message in err
 * (bad name, duplicate name, bad regex, unknown validator, too many),
 * SW_ENOMEM. */
int sw_pii_engine_new(const struct sw_pii_custom *custom, size_t n_custom,
                      struct sw_pii_engine **out, char *err, size_t errlen);
void sw_pii_engine_free(struct sw_pii_engine *e);

/* National phone numbers (written with a trunk 0, or Spanish 9-digit groups)
 * are detected when libphonenumber says they are valid for one of these
 * regions (ISO 3166 alpha-2 codes, upper case). A new engine has
 * SW_PII_DEFAULT_PHONE_REGIONS. Set before the engine is shared. SW_OK, or
 * SW_EINVAL with a message (a code libphonenumber does not know, more than
 * SW_PII_MAX_PHONE_REGIONS); an empty list turns national detection off
 * (numbers in +CC or 00CC notation and US formats are still detected). */
#define SW_PII_MAX_PHONE_REGIONS 32
#define SW_PII_DEFAULT_PHONE_REGIONS "NL", "DE", "FR", "BE", "ES", "IT", "GB", "US"
int sw_pii_engine_set_phone_regions(struct sw_pii_engine *e, const char *const *codes, size_t n,
                                    char *err, size_t errlen);
/* Whether code is a region sw_pii_engine_set_phone_regions accepts. */
int sw_pii_phone_region_known(const char *code);
/* Known-safe text: an engine like base whose detected spans that are one of
 * `values` (exact; an e-mail address in any case) or an e-mail address at
 * one of `domains` (or a subdomain) are reported with type SW_PII_ALLOWED
 * and counted in sw_pii_counts.allowed, never as entities: they are not
 * masked and do not make a request sensitive. A span must be the value
 * whole: the value inside a longer entity, or written another way (other
 * characters, escapes), is an entity. The new engine shares base's
 * compiled patterns and scratch pool: base must outlive it, and it must be
 * freed (sw_pii_engine_free) before base. Lists borrowed (copied): at most
 * SW_PII_MAX_ALLOW each, values of 1-SW_PII_MAX_ALLOW_LEN bytes, domains host
 * names. SW_OK and *out; SW_EINVAL with a message in err; SW_ENOMEM. */
#define SW_PII_ALLOWED (-2)
#define SW_PII_MAX_ALLOW 256
#define SW_PII_MAX_ALLOW_LEN 256
/* Whether d is a domain sw_pii_engine_allowing takes: a host name with a
 * dot (labels of letters, digits and '-', any case). */
bool sw_pii_allow_domain_ok(const char *d);
int sw_pii_engine_allowing(const struct sw_pii_engine *base, const char *const *values,
                           size_t n_values, const char *const *domains, size_t n_domains,
                           struct sw_pii_engine **out, char *err, size_t errlen);

/* Number of types of the engine: SW_PII_CUSTOM_BASE + n_custom. */
int sw_pii_type_count(const struct sw_pii_engine *e);
/* "email", "phone", "iban", "card", "bsn", "ssn", "ipv4", "ipv6", "secret",
 * "national_id", or the custom name; "unknown" for an out-of-range type. Never NULL. */
const char *sw_pii_type_name(const struct sw_pii_engine *e, int type);

struct sw_pii_counts {
    uint32_t n[SW_PII_MAX_TYPES];       /* entities found per type (each occurrence) */
    uint32_t total;
    uint32_t binary;            /* content parts that cannot be scanned (not in total) */
    uint32_t allowed;           /* known-safe matches (sw_pii_engine_allowing; not in total) */
};

/* ---- Plain text (used by the JSON walkers, tests, fuzzers, bench) ---- */

struct sw_pii_map;

struct sw_pii_span {
    size_t start;               /* byte offset in the text */
    size_t len;                 /* bytes */
    int type;                   /* enum sw_pii_type or SW_PII_CUSTOM_BASE + i */
};

/* Called for each entity in order of start; spans never overlap. A non-zero
 * return stops the scan and is returned by sw_pii_scan_text. */
typedef int (*sw_pii_on_span)(void *ud, const struct sw_pii_span *span);

/* Scans text[0..len) (borrowed; need not be NUL-terminated). SW_OK,
 * SW_ETOOBIG (bounds above), SW_ENOMEM, or the callback's return.
 * Detection runs on a normalised view of the text (src/pii/view.h): Unicode
 * compatibility forms folded to ASCII (full-width digits, letters, '@'),
 * Unicode spaces as ' ', format characters (zero-width, soft hyphen, BOM)
 * removed, digits of every script as ASCII digits, dashes next to a digit
 * as '-', "%40" and "&#64;" as '@', tabs and one line break inside a
 * number as a separator. Spans are byte ranges of the text as given: a value with a
 * zero-width character inside is one span, that character included. Pure
 * ASCII text is scanned as it is. */
int sw_pii_scan_text(const struct sw_pii_engine *e, const char *text, size_t len,
                     sw_pii_on_span on_span, void *ud);
/* The same for JSON text (tool-call arguments): inside strings the escapes
 * (\n \t \" \\ \/ \uXXXX, surrogate pairs) are decoded before detection; a
 * span covers whole escapes, in the bytes of the JSON text. */
int sw_pii_scan_json_text(const struct sw_pii_engine *e, const char *text, size_t len,
                          sw_pii_on_span on_span, void *ud);

/* Appends text with every entity replaced by its placeholder to out (out's
 * own max applies), adding entries to m and occurrences to counts (may be
 * NULL). On error out and m may hold a partial result: discard the text. */
int sw_pii_mask_text(const struct sw_pii_engine *e, struct sw_pii_map *m,
                     const char *text, size_t len, struct sw_buf *out,
                     struct sw_pii_counts *counts);

/* The same for JSON text (tool-call arguments): a value inside a JSON string
 * is stored with its escapes decoded (so it is the same value, and gets the
 * same placeholder, as in a content string); a value outside any string (a
 * bare number) is replaced by the placeholder as a JSON string ("[PHONE_1]"
 * with quotes). */
int sw_pii_mask_json_text(const struct sw_pii_engine *e, struct sw_pii_map *m,
                          const char *text, size_t len, struct sw_buf *out,
                          struct sw_pii_counts *counts);

/* Appends text with every placeholder issued by m replaced by its value. With
 * json_escape the value is escaped as the inside of a JSON string (for
 * placeholders inside tool-call arguments, which are JSON text). */
int sw_pii_unmask_text(const struct sw_pii_map *m, const char *text, size_t len,
                       int json_escape, struct sw_buf *out);

/* ---- Requests and responses (OpenAI chat-completions shape) ---- */

/* Scans every string value of a chat-completions request body (borrowed,
 * never modified), at any depth, and every object key, except the structural
 * fields of an allow-list by JSON path (model, roles, ids, tool and function
 * names, enum values: mask.c skip_paths, docs/privacy.md). Unknown fields are
 * scanned. Tool-call arguments (messages[].tool_calls[].function.arguments,
 * messages[].function_call.arguments) are scanned as JSON text. Binary
 * payloads of content parts (image_url.url when a data: URL,
 * input_audio.data, file.file_data) cannot be scanned: they are counted in
 * counts->binary, not read. counts is zeroed first. SW_OK or an error (too
 * large, nested deeper than 256: then treat the request as sensitive). */
int sw_pii_scan_request(const struct sw_pii_engine *e, const json_t *body,
                        struct sw_pii_counts *counts);

/* A per-request map value <-> placeholder. Bounded (above). Never logged. */
struct sw_pii_map;
struct sw_pii_map *sw_pii_map_new(void);                /* NULL on ENOMEM */
void sw_pii_map_free(struct sw_pii_map *m);             /* wipes the values first */
size_t sw_pii_map_size(const struct sw_pii_map *m);     /* entries issued */

/* Masks in place the same fields sw_pii_scan_request scans (tool-call
 * arguments stay valid JSON); counts (may be NULL) is zeroed first. Binary
 * payloads are left as they are and counted: whether such a request may go
 * masked is the caller's decision. An object key holding an entity cannot be
 * masked: SW_EINVAL. SW_OK; or SW_ETOOBIG / SW_ENOMEM / SW_EINVAL, and then
 * the body is partly masked and must not be sent where masking was needed. */
int sw_pii_mask_request(const struct sw_pii_engine *e, struct sw_pii_map *m,
                        json_t *body, struct sw_pii_counts *counts);

/* ---- Requests of every API surface ----
 * The surface says which API's request body a tree is: the OpenAI chat
 * completions body, Anthropic's Messages body, the OpenAI embeddings body,
 * the OpenAI Responses body, Google's generateContent body.
 * Each has its own table of structural fields (skipped, each checked to its
 * grammar), JSON-text fields and binary fields (mask.c, docs/privacy.md). */
enum sw_pii_surface {
    SW_PII_SURFACE_CHAT,
    SW_PII_SURFACE_MESSAGES,
    SW_PII_SURFACE_EMBEDDINGS,
    SW_PII_SURFACE_RESPONSES,
    SW_PII_SURFACE_CONVERSE,    /* AWS Bedrock's Converse body (what a bedrock backend gets) */
    SW_PII_SURFACE_GEMINI,
};

/* Longest JSON path written to bad ("messages[2].tool_calls[0].id"); a longer
 * path is cut (still NUL-terminated). */
#define SW_PII_MAX_BAD_PATH 256

/* Scans the body (borrowed, never modified) of surface s as
 * sw_pii_scan_request does for chat: every string value and object key at any
 * depth except the surface's structural fields, which are checked against
 * their grammar instead (an enum set, an id alphabet and length, the function
 * name pattern, a bounded model name). JSON numbers are scanned as their text
 * (an integer beyond 64 bits, which jansson keeps only as a rounded real, is
 * an SW_EINVAL: it cannot be scanned as the client wrote it). Adjacent text
 * parts of one message (OpenAI content arrays of text parts, Anthropic text
 * blocks of one content or of system) are scanned as one text. Binary
 * payloads, in every shape of the surface and any string that is a base64
 * data: URL, are counted in counts->binary, not read. counts is zeroed first.
 * SW_OK; SW_EINVAL when a structural field fails its grammar (bad, when not
 * NULL, gets its JSON path; "" for a body that is not an object) or a number
 * cannot be scanned (bad gets its path); SW_ETOOBIG / SW_ENOMEM (treat the
 * request as sensitive). */
int sw_pii_scan_body(const struct sw_pii_engine *e, enum sw_pii_surface s, const json_t *body,
                     struct sw_pii_counts *counts, char *bad, size_t bad_len);

/* sw_pii_scan_body for a body the gateway built from the client's (a
 * translation into another API): a structural field outside its grammar is
 * scanned as text rather than refused (the client's own body was checked). */
int sw_pii_scan_built(const struct sw_pii_engine *e, enum sw_pii_surface s, const json_t *body,
                      struct sw_pii_counts *counts);

/* sw_pii_scan_body of body, then, when it is SW_OK, sw_pii_scan_built of
 * built (its translation, made from it: *built_rc gets that walk's result,
 * SW_OK when it did not run), with the counts the two calls give; a text of
 * built that is the same string as a text of body (the translation kept the
 * json_t: the same bytes, neither tree changed between the walks) takes the
 * spans the first walk found in it instead of being read again. Returns the
 * first walk's result. */
int sw_pii_scan_pair(const struct sw_pii_engine *e, enum sw_pii_surface s, const json_t *body,
                     struct sw_pii_counts *counts, char *bad, size_t bad_len,
                     enum sw_pii_surface built_s, const json_t *built,
                     struct sw_pii_counts *built_counts, int *built_rc);

/* Masks in place what sw_pii_scan_body scans; a number holding an entity
 * becomes its placeholder as a JSON string; a span across adjacent text parts
 * masks every part it touches. Errors as sw_pii_scan_body and
 * sw_pii_mask_request (a key holding an entity is SW_EINVAL); on any error the
 * body is partly masked and must not be sent where masking was needed. */
int sw_pii_mask_body(const struct sw_pii_engine *e, struct sw_pii_map *m, enum sw_pii_surface s,
                     json_t *body, struct sw_pii_counts *counts, char *bad, size_t bad_len);

/* Unmasks a non-streamed chat.completion in place: choices[].message.content
 * (string, or parts' "text"), choices[].message.refusal, and
 * choices[].message.tool_calls[].function.arguments (JSON text: restored
 * values are JSON-escaped so the arguments stay valid JSON). SW_OK, or
 * SW_ENOMEM / SW_ETOOBIG. */
int sw_pii_unmask_response(const struct sw_pii_map *m, json_t *response);

/* ---- Streaming unmask ----
 * One per stream; borrows m (m must outlive it). Feed each parsed
 * chat.completion.chunk in order: delta.content, delta.refusal and
 * delta.tool_calls[i].function.arguments are rewritten in place, holding back
 * only a tail that could be the start of a placeholder, per field (content,
 * refusal, and each tool call index of each choice separately). When a
 * choice's chunk carries a non-null finish_reason, what that choice still
 * holds is flushed into that same chunk's delta. The concatenated output of
 * each field equals sw_pii_unmask_text of the concatenated input, for any
 * split. */
struct sw_pii_stream;
struct sw_pii_stream *sw_pii_stream_new(const struct sw_pii_map *m);
/* SW_OK; SW_EINVAL (more than 8 choices or 128 tool calls per choice) or
 * SW_ENOMEM: end the stream with an error. */
int sw_pii_stream_chunk(struct sw_pii_stream *s, json_t *chunk);
/* A final chunk (new reference, caller owns) with what is still held: the
 * id/object/model/created/system_fingerprint of the last chunk seen, one
 * choice per choice still holding text, delta {content, tool_calls}, and
 * finish_reason null. NULL when nothing is held (the usual case, since
 * finish_reason flushes) or on ENOMEM. Send it before the usage chunk or
 * [DONE] if you can; after it, the stream holds nothing. */
json_t *sw_pii_stream_finish(struct sw_pii_stream *s);
void sw_pii_stream_free(struct sw_pii_stream *s);

/* ---- Anthropic Messages answers, in their own shape ----
 * For an answer passed to the client in the API it came in (a masked request
 * to an Anthropic backend from an Anthropic client), so that every block
 * the backend sent (thinking included) reaches the client.
 *
 * Unmasks a non-streamed message in place: content[] text blocks' "text",
 * thinking blocks' "thinking", and every string value of tool_use /
 * server_tool_use "input" (signatures and redacted_thinking data are left as
 * they are). SW_OK, or SW_ENOMEM / SW_ETOOBIG / SW_EINVAL (input nested
 * deeper than 256). */
int sw_pii_unmask_message(const struct sw_pii_map *m, json_t *message);

/* One per stream; borrows m. Feed each parsed event in order: message_start's
 * content and content_block_start's block are unmasked whole; a
 * content_block_delta's text_delta.text, thinking_delta.thinking and
 * input_json_delta.partial_json (JSON text: restored values are escaped) are
 * rewritten in place, holding back per block index only a tail that could be
 * the start of a placeholder. At a content_block_stop whose block still holds
 * text, *before gets a content_block_delta event (new reference, caller
 * owns) with that text, to be sent before the stop; otherwise *before is
 * NULL. The concatenated text of each block equals sw_pii_unmask_text of its
 * concatenated deltas, for any split. SW_OK; SW_EINVAL (an event that is not
 * an object, more than 64 blocks open at once, two kinds of delta in one
 * block) or SW_ENOMEM / SW_ETOOBIG: end the stream with an error. */
struct sw_pii_nstream;
struct sw_pii_nstream *sw_pii_nstream_new(const struct sw_pii_map *m);
int sw_pii_nstream_event(struct sw_pii_nstream *s, json_t *ev, json_t **before);
void sw_pii_nstream_free(struct sw_pii_nstream *s);

#endif
