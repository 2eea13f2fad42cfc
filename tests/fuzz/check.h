/* The fuzz targets' assertion: a failed check names itself, then aborts
 * (libFuzzer saves the input as a crash artifact). */
#ifndef SW_FUZZ_CHECK_H
#define SW_FUZZ_CHECK_H

#include <stdio.h>

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);       \
            __builtin_trap();                                                               \
        }                                                                                   \
    } while (0)

#endif
