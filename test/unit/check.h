/*
 * The assertion of the CPU unit tests: counts passes and failures and
 * prints each failure with its place; main prints "N passed, N failed".
 */
#ifndef GPUCOLL_TEST_CHECK_H
#define GPUCOLL_TEST_CHECK_H

#include <stdio.h>

static int npass, nfail;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (cond) {                                                        \
            ++npass;                                                       \
        } else {                                                           \
            ++nfail;                                                       \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                    \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
        }                                                                  \
    } while (0)

#endif /* GPUCOLL_TEST_CHECK_H */
