/* A URL's query string ("a=1&n=5", without the '?'), read without
 * allocating: the value of one parameter into a caller's bounded buffer. */
#ifndef SW_COMMON_QUERY_H
#define SW_COMMON_QUERY_H

#include <stddef.h>

/* The value of the first parameter of q named `name` (ASCII letters
 * compared without case), percent-decoded with '+' as a space (a '%' not
 * followed by two hex digits stays as it is), into out[size] with a NUL.
 * A part without '=' is no parameter. SW_OK; SW_ENOTFOUND when there is no
 * such parameter (q may be NULL); SW_ETOOBIG when the decoded value needs
 * more than size - 1 bytes (out is then ""). Borrows q and name. */
int sw_query_param(const char *q, const char *name, char *out, size_t size);

#endif
