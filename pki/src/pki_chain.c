/* Chain building. We build the chain ourselves rather than through
 * X509_verify_cert because Part 4 wants a distinct status per step and per
 * position (leaf or issuer), trust from any certificate of the chain, and a
 * chain that ends at a self-signed root found in trusted/ or issuers/. The
 * primitives stay OpenSSL's: name comparison, key identifier matching
 * (X509_check_akid), signature verification (X509_verify).
 *
 * Cost: the certificates a peer sends take part, so what it can make us
 * compute is bounded before anything is verified: candidate keys pass
 * pki_key_refusal, RSA candidates must match the signature's length, and
 * the verifications of one building are capped (pki_chain_limits).
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

#include <ua/log.h>

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

/* One signature check out of the budget. */
static bool verify_with(X509 *cur, EVP_PKEY *pk, pki_chain_limits *lim)
{
    lim->checks++;
    bool ok = pk && X509_verify(cur, pk) == 1;
    ERR_clear_error();
    return ok;
}

/* Could cand's key have made cur's signature at all? An RSA signature is
 * exactly as long as the signer's modulus, so a candidate of another
 * length is refused without computing anything. */
static bool plausible_signer(X509 *cur, EVP_PKEY *pk)
{
    int id = EVP_PKEY_get_base_id(pk);
    if (id != EVP_PKEY_RSA && id != EVP_PKEY_RSA_PSS)
        return true;
    const ASN1_BIT_STRING *sig = NULL;
    X509_get0_signature(&sig, NULL, cur);
    return sig && ASN1_STRING_length(sig) == EVP_PKEY_get_size(pk);
}

/* A self-issued certificate (names and key identifiers match) whose own key
 * verifies its signature. Its key passed pki_key_refusal before it entered
 * the chain. */
static bool self_signed(X509 *x, pki_chain_limits *lim, bool *over)
{
    if (X509_self_signed(x, 0) != 1) {
        ERR_clear_error();
        return false;
    }
    EVP_PKEY *pk = X509_get0_pubkey(x);
    if (!pk || !plausible_signer(x, pk))
        return false;
    if (lim->checks >= lim->max_checks) {
        *over = true;
        return false;
    }
    return verify_with(x, pk, lim);
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

static uas_status over_budget(pki_chain_limits *lim, X509 *cur, char *reason, size_t cap)
{
    char what[96];
    snprintf(what, sizeof(what), "more than %u signature checks needed", lim->max_checks);
    fail(reason, cap, what, cur);
    uas_log(UAS_LOG_WARN, PKI_LOG,
            "chain building stopped after %u signature checks (pki max_signature_checks): %s",
            lim->checks, reason);
    return UAS_BAD_CERTIFICATE_CHAIN_INCOMPLETE;
}

uas_status pki_chain_build(pki_chain *c, X509 *leaf, const pki_sources *src, pki_chain_limits *lim,
                           time_t now, uint32_t *depth, char *reason, size_t cap)
{
    uint32_t max = lim->max;
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
        *depth = c->n - 1;
        bool over = false;
        if (self_signed(cur, lim, &over))
            return UAS_GOOD; /* reached a root */
        if (over)
            return over_budget(lim, cur, reason, cap);
        bool bad_sig = false, loop = false, bad_key = false;
        char key_reason[128] = "";
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
         * trusted one. A candidate that cannot beat the best so far is not
         * verified at all, and the lists are searched in the order of
         * preference, so a trusted, valid issuer costs one check. */
        X509 *best = NULL;
        int best_score = -1;
        for (int l = 0; l < 3 && best_score < 3; l++) {
            for (int i = 0; lists[l] && i < sk_X509_num(lists[l]) && best_score < 3; i++) {
                X509 *cand = sk_X509_value(lists[l], i);
                if (!names_issuer(cand, cur))
                    continue;
                if (in_chain(c, cand)) {
                    loop = true;
                    continue;
                }
                int score = (time_ok(cand, now) ? 2 : 0) + (l == 0 ? 1 : 0);
                ERR_clear_error();
                if (score <= best_score)
                    continue;
                EVP_PKEY *pk = X509_get0_pubkey(cand);
                char why[128];
                const char *refused =
                    pki_key_refusal(pk, 0, lim->max_ca_key_bits, why, sizeof(why));
                ERR_clear_error();
                if (refused) {
                    bad_key = true;
                    snprintf(key_reason, sizeof(key_reason), "%s", refused);
                    continue;
                }
                if (!plausible_signer(cur, pk)) {
                    bad_sig = true;
                    continue;
                }
                if (lim->checks >= lim->max_checks)
                    return over_budget(lim, cur, reason, cap);
                if (!verify_with(cur, pk, lim)) {
                    bad_sig = true;
                    continue;
                }
                best = cand;
                best_score = score;
            }
        }
        if (!best) {
            if (bad_sig) {
                fail(reason, cap, "signature does not verify", cur);
                return c->n == 1 ? UAS_BAD_CERTIFICATE_INVALID : UAS_BAD_SECURITY_CHECKS_FAILED;
            }
            if (bad_key) {
                char what[192];
                snprintf(what, sizeof(what), "issuer key refused: %s", key_reason);
                fail(reason, cap, what, cur);
                return UAS_BAD_CERTIFICATE_CHAIN_INCOMPLETE;
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
