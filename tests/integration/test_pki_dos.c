#define _GNU_SOURCE
/* What an OPN can make the server's PKI do, over real sockets (audit #18
 * findings 2, 3 and 14): a sender "chain" of CA certificates with huge RSA
 * exponents is refused without verifying them; untrusted OPNs neither
 * rewrite the rejected folder per OPN nor push out the entries already
 * there; and a channel whose certificate left the trust list dies at its
 * next token renewal. After each, a second, normal client is served
 * (env_check_alive, and env_stop once more). */
#include <criterion/criterion.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>

#include <ua/pki.h>

#include "helper_env.h"
#include "server_internal.h"

#define B256 "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256"

enum { ENCRYPT = UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT };

typedef struct penv {
    env e;
    char dir[64];
    char pki[128];
    char client_pki[128];
    uint32_t max_lifetime_ms; /* 0: the default */
} penv;

static void configure(uas_server_config *cfg, void *ud)
{
    penv *p = ud;
    cfg->security = "None, Basic256Sha256:SignAndEncrypt";
    cfg->pki_dir = p->pki;
    cfg->auto_accept = false;
    cfg->pki_max_rejected = 120; /* room for the planted files and 20 more */
    cfg->pki_rejected_max_cert_size = 128 * 1024;
    cfg->log_level = UAS_LOG_INFO;
    if (p->max_lifetime_ms) {
        cfg->min_token_lifetime_ms = 1000;
        cfg->max_token_lifetime_ms = p->max_lifetime_ms;
    }
}

static void penv_dirs(penv *p)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->dir, sizeof(p->dir), "/tmp/uas-pkidos-XXXXXX");
    cr_assert(mkdtemp(p->dir));
    snprintf(p->pki, sizeof(p->pki), "%s/server-pki", p->dir);
    snprintf(p->client_pki, sizeof(p->client_pki), "%s/client-pki", p->dir);
    uas_pki_store *s = NULL; /* the layout, so that files can be planted */
    cr_assert_eq(uas_pki_store_open(p->pki, NULL, &s), UAS_GOOD);
    uas_pki_store_close(s);
}

static void penv_start(penv *p)
{
    env_log_capture();
    env_options o = {.configure = configure, .configure_ud = p};
    env_start(&p->e, &o);
}

static void penv_stop(penv *p)
{
    env_stop(&p->e);
    cr_expect(env_rmtree(p->dir));
    env_log_release();
}

/* The test loop's clock (libev's ev_now) stands still while the test
 * thread sleeps or makes keys; a client started then would time out at
 * once. A short run of the loop brings it up to date. */
static void check_alive(penv *p)
{
    bool never = false;
    (void)env_run_until(&p->e, &never, 10);
    env_check_alive(&p->e);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- certificates ---- */

static void add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    cr_assert_not_null(ext);
    cr_assert_eq(X509_add_ext(x, ext, -1), 1);
    X509_EXTENSION_free(ext);
}

/* A certificate for pub named cn, issued by issuer (NULL: itself), signed
 * with signer. ca: a CA certificate; else an application instance one.
 * pad: bytes of a comment extension, to make it big. */
static X509 *make_cert(const char *cn, EVP_PKEY *pub, X509 *issuer, EVP_PKEY *signer, bool ca,
                       size_t pad)
{
    X509 *x = X509_new();
    X509_set_version(x, X509_VERSION_3);
    ASN1_INTEGER_set(X509_get_serialNumber(x), rand() & 0x7fffffff);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400 * 30);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    X509_set_pubkey(x, pub);
    X509 *iss = issuer ? issuer : x;
    add_ext(x, iss, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
    /* A self-signed application certificate signs itself (Part 6 6.2.2). */
    add_ext(x, iss, NID_key_usage,
            ca        ? "critical,keyCertSign,cRLSign"
            : !issuer ? "critical,digitalSignature,nonRepudiation,keyEncipherment,"
                        "dataEncipherment,keyCertSign"
                      : "critical,digitalSignature,nonRepudiation,keyEncipherment,"
                        "dataEncipherment");
    add_ext(x, iss, NID_subject_key_identifier, "hash");
    if (!ca) {
        add_ext(x, iss, NID_ext_key_usage, "serverAuth,clientAuth");
        add_ext(x, iss, NID_subject_alt_name, "URI:urn:uastack:test:pkidos,DNS:localhost");
    }
    if (pad) {
        ASN1_IA5STRING *s = ASN1_IA5STRING_new();
        char *bytes = malloc(pad);
        memset(bytes, 'x', pad);
        ASN1_STRING_set(s, bytes, (int)pad);
        cr_assert_eq(X509_add1_ext_i2d(x, NID_netscape_comment, s, 0, 0), 1);
        ASN1_IA5STRING_free(s);
        free(bytes);
    }
    cr_assert(X509_sign(x, signer, EVP_sha256()) > 0);
    return x;
}

/* An RSA public key: a fresh modulus of bits with a random odd public
 * exponent of as many bits (no private key exists, none is needed). */
static EVP_PKEY *huge_exponent_key(int bits)
{
    EVP_PKEY *real = EVP_RSA_gen((unsigned)bits);
    BIGNUM *n = NULL, *e = BN_new();
    cr_assert_eq(EVP_PKEY_get_bn_param(real, OSSL_PKEY_PARAM_RSA_N, &n), 1);
    cr_assert_eq(BN_rand(e, bits, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ODD), 1);
    OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
    OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_N, n);
    OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_E, e);
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(b);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    EVP_PKEY *pk = NULL;
    cr_assert_eq(EVP_PKEY_fromdata_init(ctx), 1);
    cr_assert_eq(EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params), 1);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(b);
    BN_free(n);
    BN_free(e);
    EVP_PKEY_free(real);
    return pk;
}

static size_t der_append(uint8_t **buf, size_t len, X509 *x)
{
    int n = i2d_X509(x, NULL);
    cr_assert_gt(n, 0);
    *buf = realloc(*buf, len + (size_t)n);
    unsigned char *p = *buf + len;
    i2d_X509(x, &p);
    return len + (size_t)n;
}

static void write_der(const char *dir, const char *name, X509 *x)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    cr_assert_gt(i2d_X509_fp(f, x), 0);
    fclose(f);
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert(d, "%s", dir);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* ---- a raw OPN: refused by the PKI before any decryption ---- */

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* HEL/ACK, then an OPN whose SenderCertificate is sender (the rest is
 * never decrypted: the certificate is judged first); returns the socket. */
static int raw_opn(penv *p, const uint8_t *sender, size_t sender_len)
{
    int fd = raw_connect(&p->e);
    uint8_t hel[256];
    raw_send(fd, hel, raw_build_hel(&p->e, hel, sizeof(hel)));
    uint8_t ack[256];
    cr_assert_gt(raw_read_chunk(fd, ack, sizeof(ack)), 0);
    cr_assert_eq(memcmp(ack, "ACKF", 4), 0);
    size_t uri_len = strlen(B256);
    size_t n = 12 + 4 + uri_len + 4 + sender_len + 4 + 20 + 512;
    uint8_t *m = calloc(1, n);
    memcpy(m, "OPNF", 4);
    put_u32(m + 4, (uint32_t)n);
    put_u32(m + 8, 0);
    size_t o = 12;
    put_u32(m + o, (uint32_t)uri_len);
    memcpy(m + o + 4, B256, uri_len);
    o += 4 + uri_len;
    put_u32(m + o, (uint32_t)sender_len);
    memcpy(m + o + 4, sender, sender_len);
    o += 4 + sender_len;
    put_u32(m + o, 20); /* receiver thumbprint: never looked at */
    raw_send(fd, m, n);
    free(m);
    return fd;
}

Test(pki_dos, huge_exponent_issuers_are_refused_without_verifying)
{
    penv p;
    penv_dirs(&p);
    /* A 3072-bit leaf "issued by" ten CAs of its issuer's name whose keys
     * have 3072-bit public exponents: before, each cost the server a full
     * exponentiation (about 200 ms of loop time per OPN). */
    EVP_PKEY *ca_key = EVP_RSA_gen(3072), *leaf_key = EVP_RSA_gen(3072);
    X509 *ca = make_cert("Evil CA", ca_key, NULL, ca_key, true, 0);
    X509 *leaf = make_cert("Evil client", leaf_key, ca, ca_key, false, 0);
    uint8_t *chain = NULL;
    size_t len = der_append(&chain, 0, leaf);
    for (int i = 0; i < 9; i++) {
        EVP_PKEY *huge = huge_exponent_key(3072);
        X509 *fake = X509_dup(ca); /* same name and key identifier */
        X509_set_pubkey(fake, huge);
        cr_assert(X509_sign(fake, leaf_key, EVP_sha256()) > 0);
        len = der_append(&chain, len, fake);
        X509_free(fake);
        EVP_PKEY_free(huge);
    }
    penv_start(&p);
    double best = 1e9;
    for (int i = 0; i < 5; i++) {
        double t0 = now_ms();
        int fd = raw_opn(&p, chain, len);
        raw_expect_err(fd, UAS_BAD_CERTIFICATE_CHAIN_INCOMPLETE);
        double dt = now_ms() - t0;
        best = dt < best ? dt : best;
        close(fd);
        check_alive(&p);
    }
    fprintf(stderr, "[measure] OPN with 9 huge-exponent CAs, refused after %.1f ms (best of 5)\n",
            best);
    cr_assert(env_log_has("RSA public exponent of more than 32 bits"));
    free(chain);
    X509_free(leaf);
    X509_free(ca);
    EVP_PKEY_free(leaf_key);
    EVP_PKEY_free(ca_key);
    penv_stop(&p);
}

Test(pki_dos, untrusted_opns_keep_the_rejected_folder_and_its_entries)
{
    penv p;
    penv_dirs(&p);
    char rejected[256];
    snprintf(rejected, sizeof(rejected), "%s/rejected/certs", p.pki);
    /* 100 planted certificates of 60 KB each. */
    EVP_PKEY *key = EVP_RSA_gen(2048);
    for (int i = 0; i < 100; i++) {
        char cn[32], name[32];
        snprintf(cn, sizeof(cn), "Planted %d", i);
        snprintf(name, sizeof(name), "planted%d.der", i);
        X509 *x = make_cert(cn, key, NULL, key, false, 60000);
        write_der(rejected, name, x);
        X509_free(x);
    }
    penv_start(&p);
    enum { PEERS = 30 };
    double total = 0;
    for (int i = 0; i < PEERS; i++) {
        char cn[32];
        snprintf(cn, sizeof(cn), "Stranger %d", i);
        X509 *x = make_cert(cn, key, NULL, key, false, 0);
        uint8_t *der = NULL;
        size_t len = der_append(&der, 0, x);
        double t0 = now_ms();
        int fd = raw_opn(&p, der, len);
        raw_expect_err(fd, UAS_BAD_CERTIFICATE_UNTRUSTED);
        total += now_ms() - t0;
        close(fd);
        free(der);
        X509_free(x);
    }
    fprintf(stderr, "[measure] untrusted OPN with 100 planted 60 KB files: mean %.2f ms\n",
            total / PEERS);
    check_alive(&p);
    uas_pki_reject_flush(p.e.server->pki);
    int planted = 0, total_files = count_files(rejected);
    for (int i = 0; i < 100; i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/planted%d.der", rejected, i);
        planted += access(path, F_OK) == 0;
    }
    cr_assert_eq(planted, 100, "untrusted OPNs pushed out %d entries", 100 - planted);
    /* 10 new files a minute (the default), each peer's at most once. */
    cr_assert_eq(total_files - planted, 10, "%d new files", total_files - planted);
    uas_pki_reject_stats st;
    uas_pki_reject_stats_get(p.e.server->pki, &st);
    cr_assert_geq(st.rate_limited, PEERS - 10);
    cr_assert_leq(st.folder_scans, 3);
    EVP_PKEY_free(key);
    penv_stop(&p);
}

Test(pki_dos, renewal_with_a_certificate_no_longer_trusted_closes_the_channel)
{
    penv p;
    penv_dirs(&p);
    p.max_lifetime_ms = 4000; /* the client renews after 3 s */
    uas_bytestring cert, key;
    env_make_cert(p.client_pki, "client", "urn:uastack:test:pkidos", &cert, &key);
    uas_pki_store *store = NULL;
    cr_assert_eq(uas_pki_store_open(p.pki, NULL, &store), UAS_GOOD);
    cr_assert_eq(uas_pki_add(store, UAS_PKI_TRUSTED, cert.data, cert.length), UAS_GOOD);
    penv_start(&p);
    uas_bytestring server_cert;
    cr_assert_eq(uas_client_select_endpoint(p.e.loop, p.e.url, B256, ENCRYPT, ENV_WAIT_MS,
                                            &server_cert, NULL),
                 UAS_GOOD);
    /* A trusted client renews as often as it likes. */
    env_schan c;
    env_schan_open(&p.e, &c, B256, ENCRYPT, &cert, &key, &server_cert);
    struct timespec pause = {3, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    uas_channel_tick(c.ch, (int64_t)now_ms());
    (void)env_schan_pump(&c, 1000);
    cr_assert_eq(uas_channel_get_state(c.ch), UAS_CHANNEL_OPEN, "renewal of a trusted client");
    /* Removed from the trust list: the next renewal ends the channel. */
    char tp[UAS_PKI_THUMBPRINT_HEX];
    uas_pki_thumbprint(cert.data, cert.length, tp);
    cr_assert_eq(uas_pki_remove(store, tp, NULL), UAS_GOOD);
    nanosleep(&pause, NULL);
    uas_channel_tick(c.ch, (int64_t)now_ms());
    for (int i = 0; i < 10 && uas_channel_get_state(c.ch) == UAS_CHANNEL_OPEN; i++)
        (void)env_schan_pump(&c, 500);
    cr_assert_neq(uas_channel_get_state(c.ch), UAS_CHANNEL_OPEN,
                  "the channel outlived its certificate's trust");
    cr_assert_eq(c.closed, UAS_BAD_CERTIFICATE_UNTRUSTED, "%s", uas_status_name(c.closed));
    cr_assert(env_log_has("BadCertificateUntrusted"));
    env_schan_close(&c);
    check_alive(&p);
    uas_pki_store_close(store);
    uas_clear(&server_cert, UAS_TYPE(BYTE_STRING));
    uas_pki_bytes_free(&cert);
    uas_pki_bytes_free(&key);
    penv_stop(&p);
}
