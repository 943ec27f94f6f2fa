/* The uapki binary: create, list, show, validate/reject/trust, remove, crl
 * add and user add/list/remove, with their exit codes (0 ok, 1 failed,
 * 2 usage). */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <ua/log.h>

#include "helper_pki.h"

static char *dir;
static char store_dir[4096];
static char out[65536];

static void setup(void)
{
    uas_log_set_level(UAS_LOG_ERROR);
    dir = th_tmpdir();
    snprintf(store_dir, sizeof(store_dir), "%s/pki", dir);
}

static void teardown(void)
{
    th_rmrf(dir);
}

TestSuite(cli, .init = setup, .fini = teardown);

/* Runs "uapki --store <store> <args>" through sh (stdin from input when
 * not NULL); stdout and stderr into out; returns the exit code. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int
run(const char *input, const char *fmt, ...)
{
    char args[4096], cmd[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    if (input)
        snprintf(cmd, sizeof(cmd), "printf '%%s\\n' '%s' | %s --store %s %s 2>&1", input, UAPKI_BIN,
                 store_dir, args);
    else
        snprintf(cmd, sizeof(cmd), "%s --store %s %s </dev/null 2>&1", UAPKI_BIN, store_dir, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = 0;
    int status = pclose(p);
    cr_assert(WIFEXITED(status), "%s did not exit", cmd);
    return WEXITSTATUS(status);
}

#define has(s) cr_assert(strstr(out, s) != NULL, "missing '%s' in:\n%s", s, out)

Test(cli, create_then_list_and_show)
{
    cr_assert_eq(run(NULL, "create --uri urn:test:cli --name 'CLI Server' --dns cli.example "
                           "--ip 10.1.2.3 --days 30"),
                 0, "%s", out);
    has("created ");
    has("own/certs/CLI_Server.der");
    has("uri:        urn:test:cli");
    struct stat sb;
    char key[4200];
    snprintf(key, sizeof(key), "%s/own/private/CLI_Server.pem", store_dir);
    cr_assert_eq(stat(key, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0600);

    cr_assert_eq(run(NULL, "create --uri urn:test:cli --name 'CLI Server'"), 1);
    has("exists already");
    cr_assert_eq(run(NULL, "create --uri urn:test:cli --name 'CLI Server' --dns cli.example "
                           "--ip 10.1.2.3 --force"),
                 0, "%s", out);

    cr_assert_eq(run(NULL, "list own"), 0);
    has("## own (1)");
    has("| subject | issuer | valid from | valid to | thumbprint |");
    has("CN=CLI Server");
    has("(self-signed)");
    cr_assert_eq(run(NULL, "list"), 0);
    has("## trusted (0)");
    has("## rejected (0)");

    char cert[4200];
    snprintf(cert, sizeof(cert), "%s/own/certs/CLI_Server.der", store_dir);
    cr_assert_eq(run(NULL, "show %s", cert), 0);
    has("uri:        urn:test:cli");
    has("dns:        cli.example");
    has("ip:         10.1.2.3");
    has("keyEncipherment");
    has("serverAuth, clientAuth");
}

Test(cli, usage_errors_exit_2)
{
    cr_assert_eq(run(NULL, "%s", ""), 2);
    cr_assert_eq(run(NULL, "frobnicate"), 2);
    has("unknown command");
    cr_assert_eq(run(NULL, "create"), 2);
    has("--uri");
    cr_assert_eq(run(NULL, "create --uri urn:x --bits lots"), 2);
    cr_assert_eq(run(NULL, "list --uri urn:x"), 2);
    cr_assert_eq(run(NULL, "list nowhere"), 2);
    cr_assert_eq(run(NULL, "remove xyz"), 2);
    cr_assert_eq(run(NULL, "--bogus list"), 2);
    cr_assert_eq(run(NULL, "--help"), 0);
    has("usage: uapki");
}

Test(cli, untrusted_peer_is_rejected_then_trusted_by_thumbprint)
{
    tcert peer = th_cert(&(tcert_opts){.cn = "Peer App", .uri = "urn:peer"});
    th_write_pem(dir, "peer.pem", peer.x);
    char tp[UAS_PKI_THUMBPRINT_HEX];
    snprintf(tp, sizeof(tp), "%s", th_thumbprint(peer.x));

    cr_assert_eq(run(NULL, "validate %s/peer.pem --uri urn:peer", dir), 1);
    has("BadCertificateUntrusted");
    cr_assert_eq(run(NULL, "list rejected"), 0);
    has("## rejected (1)");
    has(tp);

    /* A prefix trusts nothing (a planted certificate may share it): it is
     * refused with the candidates, their subject and URI, listed. */
    cr_assert_eq(run(NULL, "trust 0000000000"), 2);
    has("full thumbprint");
    has("no certificate of rejected/certs has this prefix");
    cr_assert_eq(run(NULL, "trust %.12s", tp), 2, "%s", out);
    has("full thumbprint (40 hex digits)");
    has(tp);
    has("CN=Peer App");
    has("URI urn:peer");
    cr_assert_eq(run(NULL, "list rejected"), 0);
    has("## rejected (1)");
    char zeros[UAS_PKI_THUMBPRINT_HEX];
    memset(zeros, '0', 40);
    zeros[40] = 0;
    cr_assert_eq(run(NULL, "trust %s", zeros), 1);
    has("no certificate");
    cr_assert_eq(run(NULL, "trust %s", tp), 0, "%s", out);
    has("trusted: CN=Peer App");
    has("URI urn:peer");
    cr_assert_eq(run(NULL, "list rejected"), 0);
    has("## rejected (0)");
    cr_assert_eq(run(NULL, "validate %s/peer.pem --uri urn:peer --usage server", dir), 0, "%s",
                 out);
    has("Good");
    cr_assert_eq(run(NULL, "validate %s/peer.pem --uri urn:other", dir), 1);
    has("BadCertificateUriInvalid");
    cr_assert_eq(run(NULL, "show %.10s", tp), 0);
    has("CN=Peer App");

    cr_assert_eq(run(NULL, "remove %s", tp), 0);
    has("removed 1 file");
    cr_assert_eq(run(NULL, "remove %s", tp), 1);
    cr_assert_eq(run(NULL, "validate %s/peer.pem", dir), 1);
    has("BadCertificateUntrusted");
    th_free(&peer);
}

Test(cli, trust_file_reject_file_and_crl_add)
{
    tcert ca = th_cert(&(tcert_opts){.cn = "Site CA", .ca = true});
    tcert leaf = th_cert(&(tcert_opts){.cn = "Device", .issuer = &ca});
    th_write_der(dir, "ca.der", ca.x);
    th_write_der(dir, "leaf.der", leaf.x);
    const tcert *revoked[] = {&leaf};
    X509_CRL *crl = th_crl(&ca, revoked, 1, 0, 0);
    th_write_crl(dir, "ca.crl", crl);

    cr_assert_eq(run(NULL, "crl add %s/ca.crl", dir), 1, "issuer not in the store yet");
    has("neither trusted/certs nor issuers/certs");
    cr_assert_eq(run(NULL, "trust %s/ca.der", dir), 0, "%s", out);
    cr_assert_eq(run(NULL, "validate %s/leaf.der", dir), 1);
    has("BadCertificateRevocationUnknown");
    cr_assert_eq(run(NULL, "validate %s/leaf.der --lenient", dir), 0, "%s", out);
    cr_assert_eq(run(NULL, "crl add %s/ca.crl", dir), 0, "%s", out);
    cr_assert_eq(run(NULL, "validate %s/leaf.der", dir), 1);
    has("BadCertificateRevoked");
    cr_assert_eq(run(NULL, "crl add %s/leaf.der", dir), 1);
    has("not a CRL");

    cr_assert_eq(run(NULL, "reject %s/leaf.der", dir), 0);
    cr_assert_eq(run(NULL, "list rejected"), 0);
    has("CN=Device");
    cr_assert_eq(run(NULL, "trust %s/nonexistent.der", dir), 1);
    X509_CRL_free(crl);
    th_free(&leaf);
    th_free(&ca);
}

Test(cli, user_add_list_remove)
{
    cr_assert_eq(run("pa ss:word", "user add alice --password-stdin --roles operator"), 0, "%s",
                 out);
    has("added alice");
    /* stdin that is not a terminal is read without the flag */
    cr_assert_eq(run("other", "user add bob"), 0, "%s", out);
    cr_assert_eq(run("changed", "user add bob"), 0, "%s", out);
    has("updated bob");
    cr_assert_eq(run(NULL, "user list"), 0);
    has("| name | roles |");
    has("| alice | operator |");
    has("| bob |  |");
    cr_assert(strstr(out, "pa ss:word") == NULL);

    char users[4200];
    snprintf(users, sizeof(users), "%s/users", store_dir);
    struct stat sb;
    cr_assert_eq(stat(users, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0600);
    uas_user_store *s;
    cr_assert_eq(uas_user_store_open(users, NULL, &s), UAS_GOOD);
    cr_assert_eq(uas_user_check(s, "t", "alice", "pa ss:word", 10), UAS_GOOD);
    cr_assert_eq(uas_user_check(s, "t", "bob", "changed", 7), UAS_GOOD);
    uas_user_store_close(s);

    cr_assert_eq(run(NULL, "user add carol"), 1, "empty stdin");
    has("no password");
    cr_assert_eq(run("x", "user add 'bad:name'"), 1);
    cr_assert_eq(run(NULL, "user remove bob"), 0);
    cr_assert_eq(run(NULL, "user remove bob"), 1);
    has("no user bob");
    cr_assert_eq(run(NULL, "user list"), 0);
    has("(1)");
    cr_assert_eq(run(NULL, "user frob"), 2);

    /* --users points elsewhere */
    cr_assert_eq(run("pw", "--users %s/other-users user add dave", dir), 0, "%s", out);
    cr_assert_eq(run(NULL, "--users %s/other-users user list", dir), 0);
    has("| dave |");
}
