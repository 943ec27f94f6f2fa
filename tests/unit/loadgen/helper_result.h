/* Checks of a result block as uas_result_print writes it. */
#ifndef UAS_TEST_HELPER_RESULT_H
#define UAS_TEST_HELPER_RESULT_H

#include <stddef.h>

#include <ua/loadgen.h>

/* Prints r's block with this machine's run record and asserts that each
 * of the n strings of must appears in it. */
void expect_block_has(const uas_result *r, const char *const *must, size_t n);

#endif
