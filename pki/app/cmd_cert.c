/* uapki certificate commands: create, list, show, validate, trust, reject,
 * remove, crl add. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <ua/mem.h>

#include "uapki.h"

static bool is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static bool looks_thumbprint(const char *s)
{
    size_t n = strlen(s);
    if (n < 8 || n > 40)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* A table cell: '|' escaped, newlines dropped. */
static void cell(const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", stdout);
        else if (*s != '\n' && *s != '\r')
            putchar(*s);
    }
}

int cmd_create(uapki *a, int argc, char **argv)
{
    (void)argv;
    int rc = only_options(a,
                          OPT_URI | OPT_NAME | OPT_ORG | OPT_DNS | OPT_IP | OPT_BITS |
                              OPT_KEY_TYPE | OPT_DAYS | OPT_FORCE,
                          "create");
    if (rc)
        return rc;
    if (argc != 0)
        return usage_error("create takes options only");
    if (!a->uri)
        return usage_error("create needs --uri URI (the ApplicationUri, e.g. "
                           "urn:myhost:mycompany:myserver)");
    char host[256];
    if (a->ndns == 0 && gethostname(host, sizeof(host)) == 0) {
        host[sizeof(host) - 1] = 0;
        a->dns[a->ndns++] = host;
    }
    const char *name = a->name ? a->name : "uastack";
    char file[72];
    size_t n = 0;
    for (const char *p = name; *p && n < 64; p++)
        file[n++] = (isalnum((unsigned char)*p) || *p == '.' || *p == '-' || *p == '_') ? *p : '_';
    file[n] = 0;
    if (file[0] == '.' || n == 0)
        snprintf(file, sizeof(file), "uastack");

    uas_pki_store *s = open_store(a, NULL);
    if (!s)
        return EXIT_FAIL;
    uas_pki_create_params p;
    memset(&p, 0, sizeof(p));
    p.application_uri = a->uri;
    p.application_name = name;
    p.organization = a->org;
    p.dns_names = a->dns;
    p.dns_count = (size_t)a->ndns;
    p.ip_addresses = a->ip;
    p.ip_count = (size_t)a->nip;
    p.key_bits = a->bits;
    p.key_type = a->key_type;
    p.validity_days = a->days;
    p.file_name = file;
    p.overwrite = a->force;
    uas_status st = uas_pki_create_own(s, &p, uas_datetime_now());
    if (st == UAS_BAD_ENTRY_EXISTS) {
        uas_pki_store_close(s);
        return fail("own/certs/%s.der exists already; --force replaces it", file);
    }
    if (st != UAS_GOOD) {
        uas_pki_store_close(s);
        return fail_status("create", st);
    }
    uas_bytestring cert;
    st = uas_pki_load_own(s, file, &cert, NULL);
    uas_pki_cert_info info;
    if (st == UAS_GOOD)
        st = uas_pki_cert_info_get(cert.data, cert.length, &info);
    uas_pki_bytes_free(&cert);
    if (st != UAS_GOOD) {
        uas_pki_store_close(s);
        return fail_status("reading back the certificate", st);
    }
    char until[32];
    format_time(info.not_after, until, sizeof(until));
    printf("created %s/%s.der\n", uas_pki_folder_path(s, UAS_PKI_OWN), file);
    printf("        %s/own/private/%s.pem (mode 0600)\n", uas_pki_store_dir(s), file);
    printf("subject:    %s\n", info.subject);
    printf("uri:        %s\n", info.application_uri);
    if (a->key_type && strncmp(a->key_type, "rsa", 3) != 0)
        printf("key:        %s\n", a->key_type);
    else
        printf("key:        RSA %u bits\n", info.key_bits);
    printf("valid to:   %s UTC\n", until);
    printf("thumbprint: %s\n", info.thumbprint);
    uas_pki_store_close(s);
    return EXIT_OK;
}

static int list_folder(uas_pki_store *s, uas_pki_folder f)
{
    uas_pki_cert_info *items;
    size_t count;
    uas_status st = uas_pki_list(s, f, &items, &count);
    if (st != UAS_GOOD)
        return fail_status("list", st);
    printf("## %s (%zu)\n\n", uas_pki_folder_name(f), count);
    if (count == 0) {
        printf("(none)\n\n");
        return EXIT_OK;
    }
    uas_datetime now = uas_datetime_now();
    printf("| subject | issuer | valid from | valid to | thumbprint |\n");
    printf("|---|---|---|---|---|\n");
    for (size_t i = 0; i < count; i++) {
        char from[32], to[32];
        format_time(items[i].not_before, from, sizeof(from));
        format_time(items[i].not_after, to, sizeof(to));
        fputs("| ", stdout);
        cell(items[i].subject);
        fputs(" | ", stdout);
        cell(items[i].self_signed ? "(self-signed)" : items[i].issuer);
        printf(" | %s%s | %s%s | %s |\n", from, items[i].not_before > now ? " (not yet)" : "", to,
               items[i].not_after < now ? " (expired)" : "", items[i].thumbprint);
    }
    printf("\n");
    uas_pki_list_free(items, count);
    return EXIT_OK;
}

int cmd_list(uapki *a, int argc, char **argv)
{
    int rc = only_options(a, 0, "list");
    if (rc)
        return rc;
    if (argc > 1)
        return usage_error("list takes at most one folder");
    uas_pki_folder folders[4] = {UAS_PKI_OWN, UAS_PKI_TRUSTED, UAS_PKI_ISSUERS, UAS_PKI_REJECTED};
    int nf = 4;
    if (argc == 1) {
        nf = 0;
        for (int f = 0; f < 4; f++)
            if (strcmp(argv[0], uas_pki_folder_name((uas_pki_folder)f)) == 0)
                folders[nf++] = (uas_pki_folder)f;
        if (nf == 0)
            return usage_error("unknown folder '%s' (own, trusted, issuers, rejected)", argv[0]);
    }
    uas_pki_store *s = open_store(a, NULL);
    if (!s)
        return EXIT_FAIL;
    for (int i = 0; i < nf && rc == 0; i++)
        rc = list_folder(s, folders[i]);
    uas_pki_store_close(s);
    return rc;
}

static void print_names(X509 *x)
{
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens); i++) {
        GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        const char *kind = g->type == GEN_URI     ? "uri"
                           : g->type == GEN_DNS   ? "dns"
                           : g->type == GEN_IPADD ? "ip"
                                                  : NULL;
        if (!kind)
            continue;
        if (g->type == GEN_IPADD) {
            char *txt = i2s_ASN1_OCTET_STRING(NULL, g->d.iPAddress);
            const unsigned char *d = ASN1_STRING_get0_data(g->d.iPAddress);
            int len = ASN1_STRING_length(g->d.iPAddress);
            if (len == 4)
                printf("%-12s%u.%u.%u.%u\n", "ip:", d[0], d[1], d[2], d[3]);
            else
                printf("%-12s%s\n", "ip:", txt ? txt : "?");
            OPENSSL_free(txt);
        } else {
            const ASN1_STRING *s =
                g->type == GEN_URI ? g->d.uniformResourceIdentifier : g->d.dNSName;
            printf("%-12s", g->type == GEN_URI ? "uri:" : "dns:");
            const unsigned char *d = ASN1_STRING_get0_data(s);
            for (int k = 0; k < ASN1_STRING_length(s); k++) /* no terminal escapes */
                putchar(d[k] >= 0x20 && d[k] < 0x7f ? d[k] : '?');
            putchar('\n');
        }
    }
    GENERAL_NAMES_free(gens);
}

static void print_usages(X509 *x)
{
    uint32_t flags = X509_get_extension_flags(x);
    static const struct {
        uint32_t bit;
        const char *name;
    } ku[] = {{KU_DIGITAL_SIGNATURE, "digitalSignature"},
              {KU_NON_REPUDIATION, "nonRepudiation"},
              {KU_KEY_ENCIPHERMENT, "keyEncipherment"},
              {KU_DATA_ENCIPHERMENT, "dataEncipherment"},
              {KU_KEY_AGREEMENT, "keyAgreement"},
              {KU_KEY_CERT_SIGN, "keyCertSign"},
              {KU_CRL_SIGN, "cRLSign"}};
    printf("%-12s", "key usage:");
    if (!(flags & EXFLAG_KUSAGE)) {
        printf("(none)");
    } else {
        uint32_t k = X509_get_key_usage(x);
        const char *sep = "";
        for (size_t i = 0; i < sizeof(ku) / sizeof(ku[0]); i++) {
            if (k & ku[i].bit) {
                printf("%s%s", sep, ku[i].name);
                sep = ", ";
            }
        }
    }
    printf("\n%-12s", "ext. usage:");
    if (!(flags & EXFLAG_XKUSAGE)) {
        printf("(none)");
    } else {
        uint32_t k = X509_get_extended_key_usage(x);
        const char *sep = "";
        if (k & XKU_SSL_SERVER) {
            printf("serverAuth");
            sep = ", ";
        }
        if (k & XKU_SSL_CLIENT) {
            printf("%sclientAuth", sep);
            sep = ", ";
        }
        if (k & XKU_ANYEKU)
            printf("%sany", sep);
    }
    printf("\n%-12s%s\n", "CA:", flags & EXFLAG_CA ? "yes" : "no");
    ERR_clear_error();
}

/* The key's kind as the certificate types are named (uapki create
 * --key-type): RSA, or the ECC curve. */
static const char *key_kind(EVP_PKEY *pk)
{
    if (!pk)
        return "no";
    if (EVP_PKEY_is_a(pk, "RSA"))
        return "RSA";
    if (EVP_PKEY_is_a(pk, "ED25519"))
        return "curve25519 (Ed25519)";
    if (EVP_PKEY_is_a(pk, "ED448"))
        return "curve448 (Ed448)";
    char group[64];
    size_t n = 0;
    static char buf[80];
    if (EVP_PKEY_is_a(pk, "EC") &&
        EVP_PKEY_get_utf8_string_param(pk, "group", group, sizeof(group), &n) == 1) {
        snprintf(buf, sizeof(buf), "EC %s", group);
        return buf;
    }
    return "non-RSA";
}

int cmd_show(uapki *a, int argc, char **argv)
{
    int rc = only_options(a, 0, "show");
    if (rc)
        return rc;
    if (argc != 1)
        return usage_error("show needs FILE or THUMBPRINT");
    uas_bytestring der = {0, NULL};
    char path[4096];
    snprintf(path, sizeof(path), "%s", argv[0]);
    uas_status st;
    if (is_file(argv[0]) || !looks_thumbprint(argv[0])) {
        st = uas_pki_read_cert_file(argv[0], &der);
        if (st != UAS_GOOD)
            return fail_status(argv[0], st);
    } else {
        uas_pki_store *s = open_store(a, NULL);
        if (!s)
            return EXIT_FAIL;
        st = UAS_BAD_NOT_FOUND;
        for (int f = 0; f <= UAS_PKI_REJECTED && st == UAS_BAD_NOT_FOUND; f++)
            st = uas_pki_find(s, (uas_pki_folder)f, argv[0], &der, path, sizeof(path));
        uas_pki_store_close(s);
        if (st != UAS_GOOD)
            return fail_status(argv[0], st);
    }
    uas_pki_cert_info info;
    st = uas_pki_cert_info_get(der.data, der.length, &info);
    const unsigned char *p = der.data;
    X509 *x = st == UAS_GOOD ? d2i_X509(NULL, &p, (long)der.length) : NULL;
    uas_pki_bytes_free(&der);
    if (!x)
        return fail_status(argv[0], UAS_BAD_CERTIFICATE_INVALID);
    char from[32], to[32];
    format_time(info.not_before, from, sizeof(from));
    format_time(info.not_after, to, sizeof(to));
    uas_datetime now = uas_datetime_now();
    printf("%-12s%s\n", "file:", path);
    printf("%-12s%s\n", "subject:", info.subject);
    printf("%-12s%s%s\n", "issuer:", info.issuer, info.self_signed ? " (self-signed)" : "");
    printf("%-12s%s\n", "serial:", info.serial);
    printf("%-12s%s UTC to %s UTC%s\n", "valid:", from, to,
           info.not_after < now    ? " (expired)"
           : info.not_before > now ? " (not yet valid)"
                                   : "");
    printf("%-12s%s\n", "thumbprint:", info.thumbprint);
    printf("%-12s%s %u bits\n", "key:", key_kind(X509_get0_pubkey(x)), info.key_bits);
    print_names(x);
    print_usages(x);
    X509_free(x);
    return EXIT_OK;
}

int cmd_validate(uapki *a, int argc, char **argv)
{
    int rc = only_options(a, OPT_URI | OPT_USAGE | OPT_MIN_BITS | OPT_MAX_BITS | OPT_LENIENT,
                          "validate");
    if (rc)
        return rc;
    if (argc != 1)
        return usage_error("validate needs FILE");
    uas_bytestring der;
    uas_status st = uas_pki_read_cert_file(argv[0], &der);
    if (st != UAS_GOOD)
        return fail_status(argv[0], st);
    uas_pki_options o;
    uas_pki_options_default(&o);
    if (a->lenient)
        o.revocation = UAS_PKI_REVOCATION_LENIENT;
    uas_pki_store *s = open_store(a, &o);
    if (!s) {
        uas_pki_bytes_free(&der);
        return EXIT_FAIL;
    }
    uas_pki_usage usage =
        a->usage && strcmp(a->usage, "server") == 0 ? UAS_PKI_USAGE_SERVER : UAS_PKI_USAGE_CLIENT;
    uas_pki_verdict v;
    st = uas_pki_validate(s, der.data, der.length, a->uri, usage, a->min_bits, a->max_bits,
                          uas_datetime_now(), &v);
    uas_pki_bytes_free(&der);
    uas_pki_store_close(s);
    if (st == UAS_GOOD) {
        printf("Good: %s (chain of %u)\n", v.reason, v.chain_length);
        return EXIT_OK;
    }
    printf("%s: %s (depth %u)\n", uas_status_name(st), v.reason, v.depth);
    return EXIT_FAIL;
}

static int add_file(uapki *a, const char *file, uas_pki_folder f, const char *what)
{
    uas_bytestring der;
    uas_status st = uas_pki_read_cert_file(file, &der);
    if (st != UAS_GOOD)
        return fail_status(file, st);
    uas_pki_cert_info info;
    uas_pki_cert_info_get(der.data, der.length, &info);
    uas_pki_store *s = open_store(a, NULL);
    if (!s) {
        uas_pki_bytes_free(&der);
        return EXIT_FAIL;
    }
    st = uas_pki_add(s, f, der.data, der.length);
    uas_pki_bytes_free(&der);
    uas_pki_store_close(s);
    if (st != UAS_GOOD)
        return fail_status(what, st);
    printf("%s: %s [%s] -> %s\n", what, info.subject, info.thumbprint, uas_pki_folder_name(f));
    return EXIT_OK;
}

/* A prefix names no certificate for trusting: a peer can make one whose
 * thumbprint shares the first digits of another's and have it land in
 * rejected/certs. The candidates are listed so that the operator can pick
 * the full thumbprint after checking subject and ApplicationUri. */
static int refuse_prefix(uapki *a, const char *prefix)
{
    fprintf(stderr, "uapki: trust needs the full thumbprint (40 hex digits), not the prefix %s\n",
            prefix);
    uas_pki_store *s = open_store(a, NULL);
    if (!s)
        return EXIT_USAGE;
    uas_pki_cert_info *items = NULL;
    size_t n = 0, shown = 0;
    if (uas_pki_list(s, UAS_PKI_REJECTED, &items, &n) == UAS_GOOD) {
        for (size_t i = 0; i < n; i++) {
            if (strncasecmp(items[i].thumbprint, prefix, strlen(prefix)) != 0)
                continue;
            if (shown++ == 0)
                fprintf(stderr, "certificates of rejected/certs with this prefix:\n");
            fprintf(stderr, "  %s  %s  URI %s\n", items[i].thumbprint, items[i].subject,
                    items[i].application_uri[0] ? items[i].application_uri : "(none)");
        }
    }
    if (shown == 0)
        fprintf(stderr, "no certificate of rejected/certs has this prefix\n");
    uas_pki_list_free(items, n);
    uas_pki_store_close(s);
    return EXIT_USAGE;
}

int cmd_trust(uapki *a, int argc, char **argv)
{
    int rc = only_options(a, OPT_ISSUER, "trust");
    if (rc)
        return rc;
    if (argc != 1)
        return usage_error("trust needs FILE or THUMBPRINT");
    uas_pki_folder f = a->issuer ? UAS_PKI_ISSUERS : UAS_PKI_TRUSTED;
    if (is_file(argv[0]))
        return add_file(a, argv[0], f, a->issuer ? "issuer" : "trusted");
    if (!looks_thumbprint(argv[0]))
        return fail("%s is neither a file nor a thumbprint", argv[0]);
    if (strlen(argv[0]) != UAS_PKI_THUMBPRINT_HEX - 1)
        return refuse_prefix(a, argv[0]);
    uas_pki_store *s = open_store(a, NULL);
    if (!s)
        return EXIT_FAIL;
    uas_bytestring der;
    uas_status st = uas_pki_find(s, UAS_PKI_REJECTED, argv[0], &der, NULL, 0);
    if (st == UAS_GOOD) {
        st = uas_pki_add(s, f, der.data, der.length);
        uas_pki_cert_info info;
        if (st == UAS_GOOD && uas_pki_cert_info_get(der.data, der.length, &info) == UAS_GOOD)
            printf("%s: %s, URI %s [%s] -> %s\n", a->issuer ? "issuer" : "trusted", info.subject,
                   info.application_uri[0] ? info.application_uri : "(none)", info.thumbprint,
                   uas_pki_folder_name(f));
        uas_pki_bytes_free(&der);
    }
    uas_pki_store_close(s);
    if (st == UAS_BAD_NOT_FOUND)
        return fail("no certificate %s in rejected/certs (see uapki list rejected)", argv[0]);
    return st == UAS_GOOD ? EXIT_OK : fail_status("trust", st);
}

int cmd_reject(uapki *a, int argc, char **argv)
{
    int rc = only_options(a, 0, "reject");
    if (rc)
        return rc;
    if (argc != 1)
        return usage_error("reject needs FILE");
    return add_file(a, argv[0], UAS_PKI_REJECTED, "rejected");
}

int cmd_remove(uapki *a, int argc, char **argv)
{
    int rc = only_options(a, 0, "remove");
    if (rc)
        return rc;
    if (argc != 1 || !looks_thumbprint(argv[0]))
        return usage_error("remove needs THUMBPRINT (8 to 40 hex digits)");
    uas_pki_store *s = open_store(a, NULL);
    if (!s)
        return EXIT_FAIL;
    size_t removed = 0;
    uas_status st = uas_pki_remove(s, argv[0], &removed);
    uas_pki_store_close(s);
    if (st == UAS_BAD_NOT_FOUND)
        return fail("no certificate %s in trusted, issuers or rejected", argv[0]);
    if (st == UAS_BAD_INVALID_ARGUMENT)
        return fail("%s matches several certificates: give more digits", argv[0]);
    if (st != UAS_GOOD)
        return fail_status("remove", st);
    printf("removed %zu file%s\n", removed, removed == 1 ? "" : "s");
    return EXIT_OK;
}

static uint8_t *read_all(const char *path, size_t max, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = malloc(max);
    size_t n = buf ? fread(buf, 1, max, f) : 0;
    bool too_big = n == max;
    fclose(f);
    if (!buf || too_big || n == 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

int cmd_crl(uapki *a, int argc, char **argv)
{
    int rc = only_options(a, OPT_ISSUER, "crl");
    if (rc)
        return rc;
    if (argc != 2 || strcmp(argv[0], "add") != 0)
        return usage_error("usage: uapki crl add FILE [--issuer]");
    size_t len = 0;
    uint8_t *data = read_all(argv[1], 8u * 1024u * 1024u, &len);
    if (!data)
        return fail("cannot read %s (missing, empty or over 8 MiB)", argv[1]);
    uas_pki_store *s = open_store(a, NULL);
    if (!s) {
        free(data);
        return EXIT_FAIL;
    }
    uas_status st = uas_pki_add_crl(s, data, len, a->issuer);
    free(data);
    uas_pki_store_close(s);
    if (st == UAS_BAD_DECODING_ERROR)
        return fail("%s is not a CRL (DER or PEM)", argv[1]);
    if (st != UAS_GOOD)
        return fail_status("crl add", st);
    printf("added CRL %s -> %s/crl\n", argv[1], a->issuer ? "issuers" : "trusted");
    return EXIT_OK;
}
