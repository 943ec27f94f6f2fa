/* Criterion's report hooks in the stand-in (criterion/criterion.h): the
 * stand-in has no report phases, so a hook is compiled and never run. */
#ifndef UAS_CRITERION_SHIM_HOOKS_H
#define UAS_CRITERION_SHIM_HOOKS_H

struct criterion_test_set;
struct criterion_global_stats;
#define ReportHook(kind) __attribute__((unused)) static void uas_shim_hook_##kind

#endif
