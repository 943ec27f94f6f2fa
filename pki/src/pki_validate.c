/* Certificate validation, Part 4 6.1.3: the steps of uas_pki_validate (see
 * ua/pki.h for the order and the status of each). Every step runs over the
 * whole chain before the next one starts, so the result is the earliest
 * failing step, and within it the certificate closest to the leaf. */
#define _GNU_SOURCE
#include "pki_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>

#include <ua/log.h>

typedef struct vctx {
    uas_pki_store *s;
    pki_sources src;
    STACK_OF(X509_CRL) * crls; /* trusted/crl + issuers/crl */
    pki_chain chain;
    time_t now;
    uas_pki_verdict *v;
} vctx;

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static uas_status
verdict(vctx *c, uas_status st, uint32_t depth, const char *fmt, ...)
{
    c->v->status = st;
    c->v->depth = depth;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->v->reason, sizeof(c->v->reason), fmt, ap);
    va_end(ap);
    return st;
}

static void subject(X509 *x, char *buf, size_t cap)
{
    pki_x509_subject(x, buf, cap);
}

/* 1. structure (issuers: after the chain is built). */
static uas_status check_structure(vctx *c, uint32_t from)
{
    for (uint32_t i = from; i < c->chain.n; i++) {
        X509 *x = c->chain.cert[i];
        uint32_t flags = X509_get_extension_flags(x);
        const char *bad = NULL;
        if (flags & EXFLAG_INVALID)
            bad = "malformed extension";
        else if (flags & EXFLAG_CRITICAL)
            bad = "unsupported critical extension";
        else if (i == 0 && X509_get_version(x) != X509_VERSION_3)
            bad = "not an X.509 v3 certificate";
        else if (!X509_get0_pubkey(x))
            bad = "unusable public key";
        ERR_clear_error();
        if (bad) {
            char subj[200];
            subject(x, subj, sizeof(subj));
            return verdict(c, i == 0 ? UAS_BAD_CERTIFICATE_INVALID : UAS_BAD_SECURITY_CHECKS_FAILED,
                           i, "%s (%s)", bad, subj);
        }
    }
    return UAS_GOOD;
}

/* 1. (end) the leaf's key, before it or any other key verifies a
 * signature: a key outside the policy's bounds or with a huge public
 * exponent is refused without computing anything. */
static uas_status check_leaf_key(vctx *c, X509 *leaf, uint32_t min_bits, uint32_t max_bits)
{
    EVP_PKEY *pk = X509_get0_pubkey(leaf);
    int id = pk ? EVP_PKEY_get_base_id(pk) : NID_undef;
    ERR_clear_error();
    /* ECC keys (the ECC policies): the policy checks the curve, whose size
     * is fixed (uas_secpol_check_cert). */
    if (id == EVP_PKEY_EC || id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448)
        return UAS_GOOD;
    if (id != EVP_PKEY_RSA)
        return verdict(c, UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED, 0, "key type %s is not RSA",
                       OBJ_nid2sn(id));
    if (!max_bits || max_bits > PKI_MAX_KEY_BITS)
        max_bits = PKI_MAX_KEY_BITS;
    char why[128];
    const char *refused = pki_key_refusal(pk, min_bits, max_bits, why, sizeof(why));
    if (refused)
        return verdict(c, UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED, 0,
                       "%s; the security policy wants RSA of %u..%u bits", refused, min_bits,
                       max_bits);
    return UAS_GOOD;
}

/* 3. security policy: signature digests (the leaf's key: check_leaf_key). */
static uas_status check_policy(vctx *c)
{
    for (uint32_t i = 0; i < c->chain.n; i++) {
        /* A root's signature on itself proves nothing: its digest is moot. */
        if (i > 0 && i == c->chain.n - 1)
            break;
        int md = NID_undef, pknid = NID_undef, secbits = 0;
        uint32_t flags = 0;
        X509_get_signature_info(c->chain.cert[i], &md, &pknid, &secbits, &flags);
        ERR_clear_error();
        bool weak = md == NID_md5 || md == NID_md4 || md == NID_md2 ||
                    (md == NID_sha1 && !c->s->opts.allow_sha1);
        if (weak)
            return verdict(c, UAS_BAD_CERTIFICATE_POLICY_CHECK_FAILED, i,
                           "signed with %s, which the policy does not allow", OBJ_nid2sn(md));
    }
    return UAS_GOOD;
}

static bool is_trusted(vctx *c, X509 *x)
{
    for (int i = 0; i < sk_X509_num(c->src.trusted); i++)
        if (X509_cmp(sk_X509_value(c->src.trusted, i), x) == 0)
            return true;
    return false;
}

/* 4. trust list. */
static uas_status check_trust(vctx *c, const uint8_t *leaf_der, size_t leaf_len)
{
    for (uint32_t i = 0; i < c->chain.n; i++)
        if (is_trusted(c, c->chain.cert[i]))
            return UAS_GOOD;
    char subj[200];
    subject(c->chain.cert[0], subj, sizeof(subj));
    if (c->s->opts.auto_accept) {
        uas_log(UAS_LOG_WARN, PKI_LOG,
                "AUTO-ACCEPT (lab only, never in production): accepting the UNTRUSTED "
                "certificate %s [%s]",
                subj, c->v->thumbprint);
        c->v->auto_accepted = true;
        return UAS_GOOD;
    }
    /* Queued for the store's writer thread (which logs what it writes):
     * this thread may be an event loop and must not touch the disk. */
    (void)uas_pki_reject_async(c->s, leaf_der, leaf_len);
    return verdict(c, UAS_BAD_CERTIFICATE_UNTRUSTED, 0,
                   "neither the certificate nor a CA of its chain is trusted (%s)", subj);
}

/* 5. validity periods. */
static uas_status check_times(vctx *c)
{
    for (uint32_t i = 0; i < c->chain.n; i++) {
        X509 *x = c->chain.cert[i];
        int nb = X509_cmp_time(X509_get0_notBefore(x), &c->now);
        int na = X509_cmp_time(X509_get0_notAfter(x), &c->now);
        ERR_clear_error();
        const char *bad = nb == 0 || na == 0 ? "unreadable validity period"
                          : nb > 0           ? "not valid yet"
                          : na < 0           ? "expired"
                                             : NULL;
        if (bad) {
            char subj[200];
            subject(x, subj, sizeof(subj));
            return verdict(c,
                           i == 0 ? UAS_BAD_CERTIFICATE_TIME_INVALID
                                  : UAS_BAD_CERTIFICATE_ISSUER_TIME_INVALID,
                           i, "%s (%s)", bad, subj);
        }
    }
    return UAS_GOOD;
}

/* 6. application URI. */
static uas_status check_uri(vctx *c, const char *expected)
{
    if (!expected || pki_x509_has_uri(c->chain.cert[0], expected))
        return UAS_GOOD;
    char found[256];
    pki_x509_first_uri(c->chain.cert[0], found, sizeof(found));
    return verdict(c, UAS_BAD_CERTIFICATE_URI_INVALID, 0,
                   "subjectAltName URI '%s' is not the ApplicationUri '%s'", found, expected);
}

static uas_status check_name_constraints(vctx *c, uint32_t ca)
{
    NAME_CONSTRAINTS *nc = X509_get_ext_d2i(c->chain.cert[ca], NID_name_constraints, NULL, NULL);
    uas_status st = UAS_GOOD;
    for (uint32_t j = 0; nc && j < ca && st == UAS_GOOD; j++) {
        if (NAME_CONSTRAINTS_check(c->chain.cert[j], nc) != X509_V_OK)
            st = verdict(c,
                         j == 0 ? UAS_BAD_CERTIFICATE_USE_NOT_ALLOWED
                                : UAS_BAD_CERTIFICATE_ISSUER_USE_NOT_ALLOWED,
                         j, "names outside the name constraints of its CA");
    }
    NAME_CONSTRAINTS_free(nc);
    ERR_clear_error();
    return st;
}

/* 7. usage of the leaf and of each CA. */
static uas_status check_usage(vctx *c, uas_pki_usage usage)
{
    X509 *leaf = c->chain.cert[0];
    uint32_t flags = X509_get_extension_flags(leaf);
    uint32_t ku = X509_get_key_usage(leaf);
    /* An ECC key only signs: keyEncipherment does not apply to it. */
    EVP_PKEY *pk = X509_get0_pubkey(leaf);
    int id = pk ? EVP_PKEY_get_base_id(pk) : NID_undef;
    bool ecc = id == EVP_PKEY_EC || id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448;
    const uint32_t need = KU_DIGITAL_SIGNATURE | (ecc ? 0 : KU_KEY_ENCIPHERMENT);
    if (!(flags & EXFLAG_KUSAGE) || (ku & need) != need)
        return verdict(c, UAS_BAD_CERTIFICATE_USE_NOT_ALLOWED, 0,
                       ecc ? "keyUsage lacks digitalSignature"
                           : "keyUsage lacks digitalSignature or keyEncipherment");
    if (flags & EXFLAG_XKUSAGE) {
        uint32_t xku = X509_get_extended_key_usage(leaf);
        uint32_t want = usage == UAS_PKI_USAGE_SERVER ? XKU_SSL_SERVER : XKU_SSL_CLIENT;
        if (!(xku & (want | XKU_ANYEKU)))
            return verdict(c, UAS_BAD_CERTIFICATE_USE_NOT_ALLOWED, 0, "extendedKeyUsage lacks %s",
                           usage == UAS_PKI_USAGE_SERVER ? "serverAuth" : "clientAuth");
    }
    for (uint32_t i = 1; i < c->chain.n; i++) {
        X509 *ca = c->chain.cert[i];
        int kind = X509_check_ca(ca); /* 1: CA:TRUE (and keyCertSign if keyUsage) */
        bool root = i == c->chain.n - 1;
        char subj[200];
        subject(ca, subj, sizeof(subj));
        if (!(kind == 1 || (kind == 3 && root)))
            return verdict(c, UAS_BAD_CERTIFICATE_ISSUER_USE_NOT_ALLOWED, i,
                           "issuer is not a CA or may not sign certificates (%s)", subj);
        long pathlen = X509_get_pathlen(ca);
        if (pathlen >= 0 && (long)i - 1 > pathlen)
            return verdict(c, UAS_BAD_CERTIFICATE_ISSUER_USE_NOT_ALLOWED, i,
                           "path length constraint %ld exceeded (%s)", pathlen, subj);
        uas_status st = check_name_constraints(c, i);
        if (st != UAS_GOOD)
            return st;
    }
    ERR_clear_error();
    return UAS_GOOD;
}

static bool crl_of(X509_CRL *crl, X509 *ca)
{
    if (X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_subject_name(ca)) != 0)
        return false;
    if (!(X509_get_key_usage(ca) & KU_CRL_SIGN))
        return false;
    EVP_PKEY *pk = X509_get0_pubkey(ca);
    bool ok = pk && X509_CRL_verify(crl, pk) == 1;
    ERR_clear_error();
    return ok;
}

/* 8. and 9. revocation lists, then revocation, for each certificate that
 * a CA of the chain issued. */
static uas_status check_revocation(vctx *c)
{
    uint32_t last = c->chain.n - 1; /* the self-signed root has no issuer to ask */
    bool lenient = c->s->opts.revocation == UAS_PKI_REVOCATION_LENIENT;
    for (int step = 8; step <= 9; step++) {
        for (uint32_t i = 0; i < last; i++) {
            X509 *x = c->chain.cert[i], *ca = c->chain.cert[i + 1];
            bool have = false, revoked = false;
            for (int k = 0; k < sk_X509_CRL_num(c->crls); k++) {
                X509_CRL *crl = sk_X509_CRL_value(c->crls, k);
                if (!crl_of(crl, ca))
                    continue;
                have = true;
                const ASN1_TIME *next = X509_CRL_get0_nextUpdate(crl);
                if (step == 8 && next && X509_cmp_time(next, &c->now) < 0) {
                    char subj[200];
                    subject(ca, subj, sizeof(subj));
                    uas_log(UAS_LOG_WARN, PKI_LOG,
                            "the CRL of %s is past its nextUpdate; still used, renew it", subj);
                }
                X509_REVOKED *entry = NULL;
                if (X509_CRL_get0_by_cert(crl, &entry, x) == 1)
                    revoked = true;
                ERR_clear_error();
            }
            char subj[200];
            subject(step == 8 ? ca : x, subj, sizeof(subj));
            if (step == 8 && !have) {
                if (lenient) {
                    uas_log(UAS_LOG_DEBUG, PKI_LOG, "no CRL of %s (lenient revocation)", subj);
                    continue;
                }
                return verdict(c,
                               i == 0 ? UAS_BAD_CERTIFICATE_REVOCATION_UNKNOWN
                                      : UAS_BAD_CERTIFICATE_ISSUER_REVOCATION_UNKNOWN,
                               i, "no CRL of the CA %s in trusted/crl or issuers/crl", subj);
            }
            if (step == 9 && revoked)
                return verdict(
                    c, i == 0 ? UAS_BAD_CERTIFICATE_REVOKED : UAS_BAD_CERTIFICATE_ISSUER_REVOKED, i,
                    "revoked by its CA (%s)", subj);
        }
    }
    return UAS_GOOD;
}

/* Parses the leaf and the certificates that may follow it. */
static X509 *parse_input(vctx *c, const uint8_t *der, size_t len, size_t *leaf_len)
{
    const uint8_t *p = der, *end = der + len;
    X509 *leaf = pki_x509_parse_der(&p, end);
    if (!leaf)
        return NULL;
    *leaf_len = (size_t)(p - der);
    while (p < end) {
        X509 *x = pki_x509_parse_der(&p, end);
        if (!x || !c->src.sent || sk_X509_num(c->src.sent) >= (int)c->s->opts.max_chain ||
            !sk_X509_push(c->src.sent, x)) {
            X509_free(x);
            X509_free(leaf);
            return NULL;
        }
    }
    return leaf;
}

uas_status uas_pki_validate(uas_pki_store *s, const uint8_t *der, size_t len,
                            const char *expected_uri, uas_pki_usage usage, uint32_t min_key_bits,
                            uint32_t max_key_bits, uas_datetime now, uas_pki_verdict *verdict_out)
{
    uas_pki_verdict local;
    uas_pki_verdict *v = verdict_out ? verdict_out : &local;
    memset(v, 0, sizeof(*v));
    if (!s || !der) {
        v->status = UAS_BAD_INVALID_ARGUMENT;
        return v->status;
    }
    vctx c;
    memset(&c, 0, sizeof(c));
    c.s = s;
    c.v = v;
    c.now = pki_time_from_datetime(now);
    c.src.sent = sk_X509_new_null();
    if (!c.src.sent) {
        v->status = UAS_BAD_OUT_OF_MEMORY;
        return v->status;
    }
    uas_status st;
    /* A Good verdict of the same certificate, parameters and trust list,
     * a moment ago, stands without parsing anything. */
    uint64_t gen = 0;
    pki_snapshot *snap = pki_snapshot_get(s, &gen);
    if (!snap) {
        st = verdict(&c, UAS_BAD_OUT_OF_MEMORY, 0, "out of memory");
        goto out;
    }
    uint8_t key[PKI_VERDICT_KEY];
    pki_verdict_key(der, len, expected_uri, usage, min_key_bits, max_key_bits, key);
    if (pki_verdict_lookup(s, key, gen, c.now, v))
        goto out;
    size_t leaf_len = 0;
    X509 *leaf = len > 0 ? parse_input(&c, der, len, &leaf_len) : NULL;
    if (!leaf) {
        st = verdict(&c, UAS_BAD_CERTIFICATE_INVALID, 0, "not a DER certificate (chain)");
        goto out;
    }
    uas_pki_thumbprint(der, leaf_len, v->thumbprint);
    /* 1. structure of the certificate itself */
    c.chain.cert[0] = leaf;
    c.chain.n = 1;
    st = check_structure(&c, 0);
    if (st == UAS_GOOD)
        st = check_leaf_key(&c, leaf, min_key_bits, max_key_bits);
    c.chain.n = 0;
    if (st != UAS_GOOD) {
        X509_free(leaf);
        goto out;
    }
    pki_snapshot_sources(snap, &c.src.trusted, &c.src.issuers, &c.crls);
    /* 2. chain and signatures, then the structure of the issuers */
    uint32_t depth = 0;
    pki_chain_limits lim = {s->opts.max_chain, s->opts.max_ca_key_bits,
                            s->opts.max_signature_checks, 0};
    st = pki_chain_build(&c.chain, leaf, &c.src, &lim, c.now, &depth, v->reason, sizeof(v->reason));
    X509_free(leaf); /* the chain holds its own reference */
    v->chain_length = c.chain.n;
    v->signature_checks = lim.checks;
    if (st != UAS_GOOD) {
        v->status = st;
        v->depth = depth;
        goto out;
    }
    if ((st = check_structure(&c, 1)) != UAS_GOOD || (st = check_policy(&c)) != UAS_GOOD ||
        (st = check_trust(&c, der, leaf_len)) != UAS_GOOD || (st = check_times(&c)) != UAS_GOOD ||
        (st = check_uri(&c, expected_uri)) != UAS_GOOD ||
        (st = check_usage(&c, usage)) != UAS_GOOD || (st = check_revocation(&c)) != UAS_GOOD)
        goto out;
    v->status = UAS_GOOD;
    snprintf(v->reason, sizeof(v->reason), "%s", v->auto_accepted ? "auto-accepted" : "trusted");
    pki_verdict_store(s, key, gen, c.now, v);
out:
    if (v->status != UAS_GOOD)
        uas_log(UAS_LOG_INFO, PKI_LOG, "certificate [%s] refused: %s: %s",
                v->thumbprint[0] ? v->thumbprint : "-", uas_status_name(v->status), v->reason);
    pki_chain_free(&c.chain);
    pki_snapshot_put(s, snap); /* holds trusted, issuers and crls */
    sk_X509_pop_free(c.src.sent, X509_free);
    ERR_clear_error();
    return v->status;
}
