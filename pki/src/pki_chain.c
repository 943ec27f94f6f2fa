/* Chain building. We build the chain ourselves rather than through
 * X509_verify_cert because Part 4 wants a distinct status per step and per
 * position (leaf or issuer), trust from any certificate of the chain, and a
 * chain that ends at a self-signed root found in trusted/ or issuers/. The
 * primitives stay OpenSSL's: name comparison, key identifier matching
 * (X509_check_akid), signature verification (X509_verify).
 *
 * Termination: each step adds a certificate that is not in the chain yet,
 * and the chain is capped at max certificates, so cross-signed CAs (A signs
 * B, B signs A) end in a "loop" Bad_CertificateChainIncomplete. */
#define _GNU_SOURCE
#include "pki_internal.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

static bool names_issuer(X509 *cand, X509 *cur)
{
    if (X509_NAME_cmp(X509_get_subject_name(cand), X509_get_issuer_name(cur)) != 0)
        return false;
    AUTHORITY_KEYID *akid = X509_get_ext_d2i(cur, NID_authority_key_identifier, NULL, NULL);
    bool ok = !akid || X509_check_akid(cand, akid) == X509_V_OK;
    AUTHORITY_KEYID_free(akid);
    ERR_clear_error();
    return ok;
}

static bool in_chain(const pki_chain *c, X509 *x)
{
    for (uint32_t i = 0; i < c->n; i++)
        if (X509_cmp(c->cert[i], x) == 0)
            return true;
    return false;
}

static bool signed_by(X509 *cur, X509 *cand)
{
    EVP_PKEY *pk = X509_get0_pubkey(cand);
    bool ok = pk && X509_verify(cur, pk) == 1;
    ERR_clear_error();
    return ok;
}

static bool time_ok(X509 *x, time_t now)
{
    return X509_cmp_time(X509_get0_notBefore(x), &now) < 0 &&
           X509_cmp_time(X509_get0_notAfter(x), &now) > 0;
}

static void fail(char *reason, size_t cap, const char *what, X509 *x)
{
    char subj[200];
    pki_x509_subject(x, subj, sizeof(subj));
    snprintf(reason, cap, "%s (%s)", what, subj);
}

uas_status pki_chain_build(pki_chain *c, X509 *leaf, const pki_sources *src, uint32_t max,
                           time_t now, uint32_t *depth, char *reason, size_t cap)
{
    if (max > PKI_CHAIN_LIMIT)
        max = PKI_CHAIN_LIMIT;
    if (max < 1)
        max = 1;
    c->n = 0;
    X509_up_ref(leaf);
    c->cert[c->n++] = leaf;
    STACK_OF(X509) *const lists[3] = {src->trusted, src->issuers, src->sent};
    for (;;) {
        X509 *cur = c->cert[c->n - 1];
        if (pki_x509_self_signed(cur))
            return UAS_GOOD; /* reached a root */
        *depth = c->n - 1;
        bool bad_sig = false, loop = false;
        /* A self-issued certificate whose own key does not verify it: a
         * tampered self-signed certificate, unless another CA of that name
         * signed it (key rollover), which the search below finds. */
        if (X509_NAME_cmp(X509_get_subject_name(cur), X509_get_issuer_name(cur)) == 0)
            bad_sig = true;
        if (c->n >= max) {
            fail(reason, cap, "chain longer than the limit", cur);
            return UAS_BAD_CERTIFICATE_CHAIN_INCOMPLETE;
        }
        /* Among the candidates that verify, prefer one valid now, then a
         * trusted one. */
        X509 *best = NULL;
        int best_score = -1;
        for (int l = 0; l < 3; l++) {
            for (int i = 0; lists[l] && i < sk_X509_num(lists[l]); i++) {
                X509 *cand = sk_X509_value(lists[l], i);
                if (!names_issuer(cand, cur))
                    continue;
                if (in_chain(c, cand)) {
                    loop = true;
                    continue;
                }
                if (!signed_by(cur, cand)) {
                    bad_sig = true;
                    continue;
                }
                int score = (time_ok(cand, now) ? 2 : 0) + (l == 0 ? 1 : 0);
                if (score > best_score) {
                    best = cand;
                    best_score = score;
                }
            }
        }
        if (!best) {
            if (bad_sig) {
                fail(reason, cap, "signature does not verify", cur);
                return c->n == 1 ? UAS_BAD_CERTIFICATE_INVALID : UAS_BAD_SECURITY_CHECKS_FAILED;
            }
            fail(reason, cap, loop ? "issuer loop, no self-signed root" : "issuer not found", cur);
            return UAS_BAD_CERTIFICATE_CHAIN_INCOMPLETE;
        }
        X509_up_ref(best);
        c->cert[c->n++] = best;
    }
}

void pki_chain_free(pki_chain *c)
{
    for (uint32_t i = 0; i < c->n; i++)
        X509_free(c->cert[i]);
    c->n = 0;
}
