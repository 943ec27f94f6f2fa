/* Adding CRLs: a CRL is only stored when a CA of the store signed it, and it
 * replaces the older CRLs of that CA in its folder. */
#define _GNU_SOURCE
#include "pki_internal.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>

#include <ua/log.h>
#include <ua/mem.h>

/* Did ca sign crl, and may it sign CRLs? */
static bool crl_signed_by(X509_CRL *crl, X509 *ca)
{
    if (X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_subject_name(ca)) != 0)
        return false;
    EVP_PKEY *pk = X509_get0_pubkey(ca);
    bool ok = pk && X509_CRL_verify(crl, pk) == 1;
    ERR_clear_error();
    return ok;
}

static X509 *find_crl_issuer(uas_pki_store *s, X509_CRL *crl, bool *name_seen)
{
    static const pki_dir dirs[] = {PKI_DIR_TRUSTED_CERTS, PKI_DIR_ISSUERS_CERTS};
    X509 *found = NULL;
    *name_seen = false;
    for (int d = 0; d < 2 && !found; d++) {
        STACK_OF(X509) *certs = pki_load_certs(s->dirs[dirs[d]]);
        for (int i = 0; certs && i < sk_X509_num(certs) && !found; i++) {
            X509 *ca = sk_X509_value(certs, i);
            if (X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_subject_name(ca)) != 0)
                continue;
            *name_seen = true;
            uint32_t ku = X509_get_key_usage(ca);
            if (crl_signed_by(crl, ca) && (ku & KU_CRL_SIGN) != 0 && X509_up_ref(ca) == 1)
                found = ca;
        }
        sk_X509_pop_free(certs, X509_free);
    }
    return found;
}

typedef struct old_crls {
    X509_CRL *crl;
    X509 *ca;
    char paths[16][PKI_PATH_MAX];
    int count;
    bool newer_exists;
} old_crls;

static bool old_one(void *ud, const char *path, const char *name)
{
    (void)name;
    old_crls *o = ud;
    pki_buf b;
    if (pki_read_file(path, PKI_MAX_CRL_FILE, &b) != UAS_GOOD)
        return true;
    X509_CRL *c = pki_crl_parse_any(b.data, b.len);
    pki_buf_free(&b, false);
    if (!c)
        return true;
    if (crl_signed_by(c, o->ca)) {
        int cmp = ASN1_TIME_compare(X509_CRL_get0_lastUpdate(c), X509_CRL_get0_lastUpdate(o->crl));
        if (cmp > 0)
            o->newer_exists = true;
        else if (o->count < 16)
            snprintf(o->paths[o->count++], PKI_PATH_MAX, "%s", path);
    }
    X509_CRL_free(c);
    return true;
}

uas_status uas_pki_add_crl(uas_pki_store *s, const uint8_t *data, size_t len, bool issuers)
{
    if (!s || !data)
        return UAS_BAD_INVALID_ARGUMENT;
    X509_CRL *crl = pki_crl_parse_any(data, len);
    if (!crl)
        return UAS_BAD_DECODING_ERROR;
    uas_status st = UAS_GOOD;
    old_crls *old = NULL;
    unsigned char *der = NULL;
    bool name_seen;
    X509 *ca = find_crl_issuer(s, crl, &name_seen);
    if (!ca) {
        char issuer[256];
        pki_name_oneline(X509_CRL_get_issuer(crl), issuer, sizeof(issuer));
        if (name_seen) {
            uas_log(UAS_LOG_ERROR, PKI_LOG,
                    "the CRL of %s does not verify with that CA (or it may not sign CRLs)", issuer);
            st = UAS_BAD_CERTIFICATE_INVALID;
        } else {
            uas_log(UAS_LOG_ERROR, PKI_LOG,
                    "the issuer of the CRL (%s) is in neither trusted/certs nor issuers/certs",
                    issuer);
            st = UAS_BAD_NOT_FOUND;
        }
        goto out;
    }
    const char *dir = s->dirs[issuers ? PKI_DIR_ISSUERS_CRL : PKI_DIR_TRUSTED_CRL];
    old = uas_calloc(1, sizeof(*old));
    if (!old) {
        st = UAS_BAD_OUT_OF_MEMORY;
        goto out;
    }
    old->crl = crl;
    old->ca = ca;
    pki_for_each_file(dir, old_one, old);
    if (old->newer_exists) {
        uas_log(UAS_LOG_ERROR, PKI_LOG, "%s already has a newer CRL of this CA", dir);
        st = UAS_BAD_INVALID_STATE;
        goto out;
    }
    int n = i2d_X509_CRL(crl, &der);
    if (n <= 0) {
        st = UAS_BAD_DECODING_ERROR;
        goto out;
    }
    char digest[UAS_PKI_THUMBPRINT_HEX], cn[128], safe[80], path[PKI_PATH_MAX];
    uas_pki_thumbprint(der, (size_t)n, digest);
    cn[0] = 0;
    X509_NAME_get_text_by_NID(X509_get_subject_name(ca), NID_commonName, cn, sizeof(cn));
    pki_sanitize_name(cn, safe, sizeof(safe));
    if (snprintf(path, sizeof(path), "%s/%s [%s].crl", dir, safe, digest) >= (int)sizeof(path)) {
        st = UAS_BAD_INVALID_ARGUMENT;
        goto out;
    }
    st = pki_write_file(path, der, (size_t)n, 0644, false);
    if (st != UAS_GOOD)
        goto out;
    for (int i = 0; i < old->count; i++)
        if (strcmp(old->paths[i], path) != 0 && unlink(old->paths[i]) == 0)
            uas_log(UAS_LOG_INFO, PKI_LOG, "replaced %s", old->paths[i]);
    uas_log(UAS_LOG_INFO, PKI_LOG, "added CRL %s", path);
out:
    OPENSSL_free(der);
    if (old)
        uas_free(old, sizeof(*old));
    X509_free(ca);
    X509_CRL_free(crl);
    ERR_clear_error();
    pki_cache_invalidate(s);
    return st;
}
