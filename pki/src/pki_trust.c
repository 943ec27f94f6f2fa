/* Trust list management: adding certificates to trusted/issuers/rejected,
 * the bounded rejected folder, promoting and removing by thumbprint. */
#define _GNU_SOURCE
#include "pki_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ua/log.h>
#include <ua/mem.h>

/* Files of a folder holding certificates whose thumbprint starts with
 * want (all of them when want is ""). */
typedef struct match_file {
    char path[PKI_PATH_MAX];
    char thumbprint[UAS_PKI_THUMBPRINT_HEX];
} match_file;

typedef struct match_ctx {
    const char *want;
    size_t want_len;
    match_file *files;
    size_t count, cap;
    bool oom;
} match_ctx;

static bool match_one(void *ud, const char *path, const char *name)
{
    (void)name;
    match_ctx *c = ud;
    pki_buf b;
    if (pki_read_file(path, PKI_MAX_CERT_FILE, &b) != UAS_GOOD)
        return true;
    X509 *x = pki_x509_parse_any(b.data, b.len);
    pki_buf_free(&b, false);
    char tp[UAS_PKI_THUMBPRINT_HEX];
    if (x) {
        pki_x509_thumbprint(x, tp);
        X509_free(x);
    } else {
        tp[0] = 0; /* not a certificate: only matched by the empty prefix */
    }
    if (c->want_len > 0 && strncmp(tp, c->want, c->want_len) != 0)
        return true;
    if (c->count == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 16;
        match_file *n = uas_realloc(c->files, c->cap * sizeof(*n), ncap * sizeof(*n));
        if (!n) {
            c->oom = true;
            return false;
        }
        c->files = n;
        c->cap = ncap;
    }
    match_file *m = &c->files[c->count++];
    snprintf(m->path, sizeof(m->path), "%s", path);
    memcpy(m->thumbprint, tp, sizeof(tp));
    return true;
}

static uas_status match_files(const char *dir, const char *want, match_ctx *c)
{
    memset(c, 0, sizeof(*c));
    c->want = want;
    c->want_len = strlen(want);
    pki_for_each_file(dir, match_one, c);
    return c->oom ? UAS_BAD_OUT_OF_MEMORY : UAS_GOOD;
}

static void match_free(match_ctx *c)
{
    uas_free(c->files, c->cap * sizeof(*c->files));
    c->files = NULL;
    c->count = c->cap = 0;
}

/* Whether rejected/certs may take one more file: it holds fewer than
 * max_rejected. A full folder refuses new entries and evicts nothing, so
 * that untrusted peers cannot push out another peer's entry (which an
 * administrator might be about to trust). */
static uas_status rejected_has_room(uas_pki_store *s)
{
    match_ctx c;
    uas_status st = match_files(s->dirs[PKI_DIR_REJECTED_CERTS], "", &c);
    size_t n = c.count;
    match_free(&c);
    if (st != UAS_GOOD)
        return st;
    if (n >= s->opts.max_rejected) {
        uas_log(UAS_LOG_WARN, PKI_LOG,
                "rejected/certs is full (%u files): certificate not recorded; nothing is evicted",
                s->opts.max_rejected);
        return UAS_BAD_RESOURCE_UNAVAILABLE;
    }
    return UAS_GOOD;
}

static void remove_from(const char *dir, const char *thumbprint)
{
    match_ctx c;
    if (match_files(dir, thumbprint, &c) == UAS_GOOD) {
        for (size_t i = 0; i < c.count; i++)
            unlink(c.files[i].path);
    }
    match_free(&c);
}

uas_status uas_pki_add(uas_pki_store *s, uas_pki_folder f, const uint8_t *der, size_t len)
{
    if (!s || !der || (f != UAS_PKI_TRUSTED && f != UAS_PKI_ISSUERS && f != UAS_PKI_REJECTED))
        return UAS_BAD_INVALID_ARGUMENT;
    if (f == UAS_PKI_REJECTED && len > s->opts.rejected_max_cert_size)
        return UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    X509 *x = pki_x509_parse_any(der, len);
    if (!x)
        return UAS_BAD_CERTIFICATE_INVALID;
    char tp[UAS_PKI_THUMBPRINT_HEX], file[256], path[PKI_PATH_MAX];
    pki_x509_thumbprint(x, tp);
    pki_x509_file_name(x, ".der", file, sizeof(file));
    pki_buf d = {NULL, 0, 0};
    uas_status st = pki_x509_der(x, &d);
    X509_free(x);
    if (st != UAS_GOOD)
        return st;
    if (!pki_path(path, sizeof(path), s->dirs[f], file)) {
        st = UAS_BAD_INVALID_ARGUMENT;
        goto out;
    }
    match_ctx c;
    st = match_files(s->dirs[f], tp, &c);
    bool present = c.count > 0;
    match_free(&c);
    if (st != UAS_GOOD)
        goto out;
    if (!present && f == UAS_PKI_REJECTED)
        st = rejected_has_room(s);
    if (!present && st == UAS_GOOD) {
        st = pki_write_file(path, d.data, d.len, 0644, false);
        if (st != UAS_GOOD)
            goto out;
        uas_log(UAS_LOG_INFO, PKI_LOG, "added %s", path);
    }
    if (st == UAS_GOOD && f != UAS_PKI_REJECTED)
        remove_from(s->dirs[PKI_DIR_REJECTED_CERTS], tp);
out:
    pki_buf_free(&d, false);
    if (f != UAS_PKI_REJECTED)
        pki_cache_invalidate(s);
    return st;
}

uas_status uas_pki_reject(uas_pki_store *s, const uint8_t *der, size_t len)
{
    return uas_pki_add(s, UAS_PKI_REJECTED, der, len);
}

uas_status uas_pki_trust_rejected(uas_pki_store *s, const char *thumbprint)
{
    /* A prefix is refused: a peer can make a certificate whose thumbprint
     * shares the first 8 hex digits of another one's (2^32 tries). */
    if (!thumbprint || strlen(thumbprint) != UAS_PKI_THUMBPRINT_HEX - 1) {
        uas_log(UAS_LOG_ERROR, PKI_LOG,
                "trusting needs the full thumbprint of 40 hex digits, not a prefix");
        return UAS_BAD_INVALID_ARGUMENT;
    }
    uas_bytestring der;
    uas_status st = uas_pki_find(s, UAS_PKI_REJECTED, thumbprint, &der, NULL, 0);
    if (st != UAS_GOOD)
        return st;
    st = uas_pki_add(s, UAS_PKI_TRUSTED, der.data, der.length);
    uas_pki_bytes_free(&der);
    return st;
}

uas_status uas_pki_remove(uas_pki_store *s, const char *thumbprint, size_t *removed)
{
    if (removed)
        *removed = 0;
    char want[UAS_PKI_THUMBPRINT_HEX];
    if (!s || !pki_thumbprint_arg(thumbprint, want))
        return UAS_BAD_INVALID_ARGUMENT;
    static const pki_dir dirs[] = {PKI_DIR_TRUSTED_CERTS, PKI_DIR_ISSUERS_CERTS,
                                   PKI_DIR_REJECTED_CERTS};
    match_ctx c[3];
    uas_status st = UAS_GOOD;
    size_t total = 0;
    const char *first = NULL;
    bool ambiguous = false;
    for (int i = 0; i < 3; i++) {
        uas_status r = match_files(s->dirs[dirs[i]], want, &c[i]);
        if (r != UAS_GOOD)
            st = r;
        for (size_t k = 0; k < c[i].count; k++) {
            if (!first)
                first = c[i].files[k].thumbprint;
            else if (strcmp(first, c[i].files[k].thumbprint) != 0)
                ambiguous = true;
        }
    }
    if (st == UAS_GOOD && ambiguous) {
        uas_log(UAS_LOG_ERROR, PKI_LOG, "thumbprint prefix %s matches several certificates", want);
        st = UAS_BAD_INVALID_ARGUMENT;
    }
    for (int i = 0; i < 3 && st == UAS_GOOD; i++) {
        for (size_t k = 0; k < c[i].count; k++) {
            if (unlink(c[i].files[k].path) == 0) {
                uas_log(UAS_LOG_INFO, PKI_LOG, "removed %s", c[i].files[k].path);
                total++;
            }
        }
    }
    for (int i = 0; i < 3; i++)
        match_free(&c[i]);
    if (st == UAS_GOOD && total == 0)
        st = UAS_BAD_NOT_FOUND;
    if (removed)
        *removed = total;
    pki_cache_invalidate(s);
    return st;
}
