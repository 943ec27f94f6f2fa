/* The INI configuration (config.c) and what the server makes of its
 * security keys: anonymous access per endpoint (anonymous_endpoints), on
 * top of the global allow_anonymous. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "server_internal.h"

#define POLICY "http://opcfoundation.org/UA/SecurityPolicy#"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/uas-cfg-XXXXXX");
    cr_assert(mkdtemp(dir));
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_dir(void)
{
    cr_expect_eq(nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

TestSuite(config, .init = make_dir, .fini = remove_dir);

/* Loads text as an INI file on top of the defaults. */
static uas_status load(const char *text, uas_server_config *cfg, uas_config_file **keep, char *err,
                       size_t errlen)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/server.ini", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
    uas_server_config_default(cfg);
    *keep = NULL;
    return uas_server_config_load_file(path, cfg, keep, err, errlen);
}

Test(config, anonymous_endpoints_key_is_read_and_printed)
{
    uas_server_config cfg;
    uas_config_file *keep;
    char err[256] = "";
    uas_status st = load("[security]\n"
                         "security = None, Basic256Sha256:Sign\n"
                         "allow_anonymous = true\n"
                         "anonymous_endpoints = Basic256Sha256:Sign\n",
                         &cfg, &keep, err, sizeof(err));
    cr_assert_eq(st, UAS_GOOD, "%s", err);
    cr_expect_str_eq(cfg.anonymous_endpoints, "Basic256Sha256:Sign");
    cr_expect(cfg.allow_anonymous);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    uas_server_config_print(out, &cfg);
    fclose(out);
    cr_expect(strstr(text, "anonymous_endpoints = Basic256Sha256:Sign\n"), "%s", text);
    free(text);
    uas_server_config_file_free(keep);
}

static void name_key(void *ud, const char *section, const char *key)
{
    (void)ud;
    cr_log_error("[%s] %s does not load back as printed", section, key);
}

/* What --print-config prints is the whole configuration: loaded back, it
 * gives the same values, for every key of the table (the defaults and a
 * file that changes keys of each type). */
Test(config, printed_configuration_loads_back_to_the_same)
{
    static const char *files[] = {
        "",
        "[server]\nport = 4999\nlog_level = debug\napplication_uri = urn:x\n"
        "[transport]\nmemory_budget = 123456789\n"
        "[security]\nsecurity = None, Basic256Sha256:Sign\nallow_anonymous = false\n"
        "anonymous_endpoints =\n"
        "[roles]\nx509 = CN=a: Operator\nx509 = CN=b: Engineer\n"
        "[limits]\nmax_depth = 77\n",
    };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        uas_server_config a, b;
        uas_config_file *ka, *kb;
        char err[256] = "";
        cr_assert_eq(load(files[i], &a, &ka, err, sizeof(err)), UAS_GOOD, "%s", err);
        char *text = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&text, &len);
        uas_server_config_print(out, &a);
        fclose(out);
        cr_assert_eq(load(text, &b, &kb, err, sizeof(err)), UAS_GOOD, "%s\n%s", err, text);
        cr_expect_eq(uas_config_diff(&a, &b, name_key, NULL), 0, "%s", text);
        cr_expect(strstr(text, "memory_budget = "), "%s", text);
        free(text);
        uas_server_config_file_free(ka);
        uas_server_config_file_free(kb);
    }
}

Test(config, defaults_leave_anonymous_to_every_endpoint)
{
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cr_expect(cfg.allow_anonymous);
    cr_expect_null(cfg.anonymous_endpoints);
}

Test(config, empty_anonymous_endpoints_is_kept_as_no_endpoint)
{
    uas_server_config cfg;
    uas_config_file *keep;
    char err[256] = "";
    cr_assert_eq(load("[security]\nanonymous_endpoints =\n", &cfg, &keep, err, sizeof(err)),
                 UAS_GOOD, "%s", err);
    cr_assert_not_null(cfg.anonymous_endpoints);
    cr_expect_str_eq(cfg.anonymous_endpoints, "");
    uas_server_config_file_free(keep);
}

static uas_server *server_with(const char *security, bool allow, const char *anonymous,
                               uas_status *st)
{
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.threads = 1;
    cfg.log_level = UAS_LOG_ERROR;
    cfg.security = security;
    cfg.pki_dir = dir;
    cfg.allow_anonymous = allow;
    cfg.anonymous_endpoints = anonymous;
    *st = UAS_GOOD;
    return uas_server_new(&cfg, st);
}

/* The anonymous UserTokenPolicies GetEndpoints would show, one letter
 * per endpoint in offer order: 'a' with one, '-' without. */
static void anonymous_map(uas_server *s, char *out, size_t cap)
{
    uint8_t mem[16384];
    uas_arena a;
    uas_arena_init(&a, mem, sizeof(mem), 0);
    size_t n = 0;
    uas_endpoint_description *e = NULL;
    cr_assert_eq(uas_server_endpoints(s, &a, &n, &e), UAS_GOOD);
    cr_assert_lt(n, cap);
    for (size_t i = 0; i < n; i++) {
        out[i] = '-';
        for (size_t k = 0; k < e[i].user_identity_tokens_count; k++)
            if (e[i].user_identity_tokens[k].token_type == UAS_USER_TOKEN_TYPE_ANONYMOUS)
                out[i] = 'a';
    }
    out[n] = 0;
    uas_arena_free(&a);
}

Test(config, none_only_server_follows_the_anonymous_keys)
{
    uas_status st;
    char map[8];
    uas_server *s = server_with("None", true, NULL, &st);
    cr_assert_not_null(s, "%s", uas_status_name(st));
    anonymous_map(s, map, sizeof(map));
    cr_expect_str_eq(map, "a");
    uas_server_delete(s);

    s = server_with("None", true, "", &st);
    cr_assert_not_null(s, "%s", uas_status_name(st));
    anonymous_map(s, map, sizeof(map));
    cr_expect_str_eq(map, "-");
    cr_expect_not(uas_server_anonymous_allowed(s, uas_security_policy(POLICY "None", false),
                                               UAS_MESSAGE_SECURITY_MODE_NONE));
    uas_server_delete(s);

    /* The global switch still refuses everywhere, whatever the list. */
    s = server_with("None", false, "None", &st);
    cr_assert_not_null(s, "%s", uas_status_name(st));
    anonymous_map(s, map, sizeof(map));
    cr_expect_str_eq(map, "-");
    uas_server_delete(s);
}

Test(config, an_endpoint_that_is_not_offered_stops_the_server)
{
    uas_status st;
    /* Not in the security list (no PKI is needed to find out). */
    cr_expect_null(server_with("None", true, "None, Basic256Sha256", &st));
    cr_expect_eq(st, UAS_BAD_CONFIGURATION_ERROR, "%s", uas_status_name(st));
    /* Not a policy at all. */
    cr_expect_null(server_with("None", true, "Basic512", &st));
    cr_expect_eq(st, UAS_BAD_CONFIGURATION_ERROR, "%s", uas_status_name(st));
}

Test(config, anonymous_per_endpoint_with_secured_endpoints, .timeout = 60)
{
    uas_status st;
    const char *security = "None, Basic256Sha256:Sign, Basic256Sha256:SignAndEncrypt";
    /* A short policy name means its SignAndEncrypt endpoint, as in the
     * security list; a URI works too. */
    uas_server *s = server_with(security, true, POLICY "Basic256Sha256", &st);
    cr_assert_not_null(s, "%s", uas_status_name(st));
    char map[8];
    anonymous_map(s, map, sizeof(map));
    cr_expect_str_eq(map, "--a");
    const uas_secpol *b = uas_security_policy(POLICY "Basic256Sha256", false);
    const uas_secpol *none = uas_security_policy(POLICY "None", false);
    cr_expect(uas_server_anonymous_allowed(s, b, UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT));
    cr_expect_not(uas_server_anonymous_allowed(s, b, UAS_MESSAGE_SECURITY_MODE_SIGN));
    cr_expect_not(uas_server_anonymous_allowed(s, none, UAS_MESSAGE_SECURITY_MODE_NONE));
    uas_server_delete(s);

    /* The reverse: only the None and Sign endpoints. */
    s = server_with(security, true, "None,Basic256Sha256:Sign", &st);
    cr_assert_not_null(s, "%s", uas_status_name(st));
    anonymous_map(s, map, sizeof(map));
    cr_expect_str_eq(map, "aa-");
    uas_server_delete(s);

    /* A mode the list does not offer. */
    cr_expect_null(server_with("None, Basic256Sha256:Sign", true, "Basic256Sha256", &st));
    cr_expect_eq(st, UAS_BAD_CONFIGURATION_ERROR, "%s", uas_status_name(st));
}

Test(config, subscription_limits_are_read_with_their_defaults)
{
    uas_server_config cfg;
    uas_config_file *keep;
    char err[256] = "";
    uas_status st = load("[subscriptions]\n"
                         "max_subscriptions = 300\n"
                         "max_monitored_items_per_session = 400\n"
                         "max_orphaned_per_user = 5\n"
                         "max_orphan_lifetime_ms = 60000\n",
                         &cfg, &keep, err, sizeof(err));
    cr_assert_eq(st, UAS_GOOD, "%s", err);
    cr_expect_eq(cfg.max_subscriptions, 300);
    cr_expect_eq(cfg.max_monitored_items_per_session, 400);
    cr_expect_eq(cfg.max_orphaned_per_user, 5);
    cr_expect_eq(cfg.max_orphan_lifetime_ms, 60000);
    /* Not in the file: the defaults of docs/Configuration.md. */
    cr_expect_eq(cfg.max_subscriptions_per_session, 50);
    cr_expect_eq(cfg.max_monitored_items, 200000);
    cr_expect_eq(cfg.max_orphaned_subscriptions, 1000);
    cr_expect_eq(cfg.max_subscription_lifetime_ms, 3600000);
    uas_server_config_file_free(keep);
    st = load("[subscriptions]\nmax_publishing_interval_ms = 86400001\n", &cfg, &keep, err,
              sizeof(err));
    cr_expect_eq(st, UAS_BAD_CONFIGURATION_ERROR);
    cr_expect(strstr(err, "max_publishing_interval_ms"), "%s", err);
}

Test(config, worker_pool_keys_and_their_bounds)
{
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cr_expect_eq(cfg.worker_threads, 0, "0: one worker per core");
    cr_expect_eq(cfg.worker_queue, 256);
    uas_config_file *keep;
    char err[256] = "";
    cr_assert_eq(
        load("[server]\nworker_threads = 3\nworker_queue = 7\n", &cfg, &keep, err, sizeof(err)),
        UAS_GOOD, "%s", err);
    cr_expect_eq(cfg.worker_threads, 3);
    cr_expect_eq(cfg.worker_queue, 7);
    uas_server_config_file_free(keep);
    cr_expect_neq(load("[server]\nworker_queue = 0\n", &cfg, &keep, err, sizeof(err)), UAS_GOOD,
                  "a queue of no job refuses every handshake");
}
