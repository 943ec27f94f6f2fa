#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "helper_result.h"

void expect_block_has(const uas_result *r, const char *const *must, size_t n)
{
    uas_run_record rec;
    uas_run_record_fill(&rec);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    uas_result_print(f, r, &rec);
    fclose(f);
    for (size_t i = 0; i < n; i++)
        cr_assert(strstr(buf, must[i]), "missing '%s' in:\n%s", must[i], buf);
    free(buf);
}
