/* An Anthropic client's body as an Anthropic backend takes it: what the
 * Messages API refuses but clients send (system messages inside `messages`,
 * thinking after a turn a translated backend answered) edited into the
 * form it accepts. The front applies it to the client's body before the
 * scan, so what is scanned is what goes. Pure: no I/O, no clock. */
#ifndef SW_DIALECT_ANTH_NATIVE_H
#define SW_DIALECT_ANTH_NATIVE_H

#include <jansson.h>
#include <stdbool.h>

/* An Anthropic body (decoded, edited in place) as an Anthropic backend takes
 * it: system messages inside `messages` become blocks of the top-level
 * `system`, in order, after what it held (a string becomes one text block).
 * Leading ones always (that is their meaning); later ones stay in place
 * when `beta` (the client's anthropic-beta header, passed on to the backend;
 * NULL: none) names mid-conversation-system-*, the API's feature for them.
 * Returns SW_OK or SW_ENOMEM. */
int sw_anth_native_system(json_t *native, const char *beta);

/* An Anthropic body (edited in place) with thinking on whose last assistant
 * message calls tools without starting with a thinking block (that turn was
 * answered by a backend that gives none: a translated or masked one), as an
 * Anthropic backend takes it: thinking off for the request, and the
 * context_management edits that clear thinking, which need it on, left
 * out. Returns true when it changed the body. */
bool sw_anth_native_thinking(json_t *native);

/* Both edits above, in that order: what the front does to an Anthropic
 * client's body; system_msgs false: its messages hold none of role system
 * (sw_chat_request.native_system), and they are not walked for one.
 * Returns SW_OK or SW_ENOMEM. */
int sw_anth_native_prepare(json_t *native, const char *beta, bool system_msgs);

#endif
