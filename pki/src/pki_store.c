/* The certificate store: the Part 12 folder layout, listing and look-up. */
#define _GNU_SOURCE
#include "pki_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <openssl/x509.h>

#include <ua/log.h>
#include <ua/mem.h>

static const char *const dir_rel[PKI_DIR_COUNT] = {
    [PKI_DIR_OWN_CERTS] = "own/certs",         [PKI_DIR_TRUSTED_CERTS] = "trusted/certs",
    [PKI_DIR_ISSUERS_CERTS] = "issuers/certs", [PKI_DIR_REJECTED_CERTS] = "rejected/certs",
    [PKI_DIR_OWN_PRIVATE] = "own/private",     [PKI_DIR_TRUSTED_CRL] = "trusted/crl",
    [PKI_DIR_ISSUERS_CRL] = "issuers/crl",
};

void uas_pki_options_default(uas_pki_options *o)
{
    memset(o, 0, sizeof(*o));
    o->revocation = UAS_PKI_REVOCATION_STRICT;
    o->max_rejected = 100;
    o->max_chain = 10;
    o->max_signature_checks = 0; /* max_chain + 2 */
    o->max_ca_key_bits = 4096;
    o->rejected_max_cert_size = 16384;
    o->rejected_writes_per_minute = 10;
}

/* Zero means the default; out-of-range values are clamped. */
static void options_normalize(uas_pki_options *o)
{
    uas_pki_options d;
    uas_pki_options_default(&d);
    if (o->max_rejected == 0)
        o->max_rejected = d.max_rejected;
    if (o->max_chain < 1)
        o->max_chain = d.max_chain;
    if (o->max_chain > PKI_CHAIN_LIMIT)
        o->max_chain = PKI_CHAIN_LIMIT;
    if (o->max_signature_checks == 0)
        o->max_signature_checks = o->max_chain + 2;
    if (o->max_ca_key_bits == 0)
        o->max_ca_key_bits = d.max_ca_key_bits;
    if (o->max_ca_key_bits > PKI_MAX_KEY_BITS)
        o->max_ca_key_bits = PKI_MAX_KEY_BITS;
    if (o->rejected_max_cert_size == 0)
        o->rejected_max_cert_size = d.rejected_max_cert_size;
    if (o->rejected_max_cert_size > PKI_MAX_CERT_FILE)
        o->rejected_max_cert_size = PKI_MAX_CERT_FILE;
    if (o->rejected_writes_per_minute == 0)
        o->rejected_writes_per_minute = d.rejected_writes_per_minute;
}

uas_status uas_pki_store_open(const char *dir, const uas_pki_options *opts, uas_pki_store **out)
{
    if (!dir || !*dir || !out)
        return UAS_BAD_INVALID_ARGUMENT;
    *out = NULL;
    uas_pki_store *s = uas_calloc(1, sizeof(*s));
    if (!s)
        return UAS_BAD_OUT_OF_MEMORY;
    uas_pki_options_default(&s->opts);
    if (opts)
        s->opts = *opts;
    options_normalize(&s->opts);
    uas_status st = pki_cache_init(s);
    if (st == UAS_GOOD)
        st = pki_rejected_init(s);
    if (st != UAS_GOOD)
        goto fail;
    s->root = pki_strdup_printf("%s", dir);
    if (!s->root) {
        st = UAS_BAD_OUT_OF_MEMORY;
        goto fail;
    }
    size_t n = strlen(s->root);
    while (n > 1 && s->root[n - 1] == '/')
        s->root[--n] = 0;
    for (int i = 0; i < PKI_DIR_COUNT; i++) {
        s->dirs[i] = pki_strdup_printf("%s/%s", s->root, dir_rel[i]);
        if (!s->dirs[i]) {
            st = UAS_BAD_OUT_OF_MEMORY;
            goto fail;
        }
        if (strlen(s->dirs[i]) + 300 > PKI_PATH_MAX) {
            st = UAS_BAD_INVALID_ARGUMENT;
            goto fail;
        }
        st = pki_mkdirs(s->dirs[i], i == PKI_DIR_OWN_PRIVATE ? 0700 : 0755);
        if (st != UAS_GOOD)
            goto fail;
    }
    struct stat sb;
    if (stat(s->dirs[PKI_DIR_OWN_PRIVATE], &sb) == 0 && (sb.st_mode & 077) != 0)
        uas_log(UAS_LOG_WARN, PKI_LOG, "%s is accessible to group or others (mode %03o)",
                s->dirs[PKI_DIR_OWN_PRIVATE], (unsigned)(sb.st_mode & 0777));
    if (s->opts.auto_accept)
        uas_log(UAS_LOG_WARN, PKI_LOG,
                "AUTO-ACCEPT IS ON for %s: untrusted certificates will be accepted. "
                "Lab use only, never in production.",
                s->root);
    *out = s;
    return UAS_GOOD;
fail:
    uas_pki_store_close(s);
    return st;
}

void uas_pki_store_close(uas_pki_store *s)
{
    if (!s)
        return;
    pki_rejected_free(s); /* its writer thread uses the folders */
    pki_cache_free(s);
    pki_str_free(s->root);
    for (int i = 0; i < PKI_DIR_COUNT; i++)
        pki_str_free(s->dirs[i]);
    uas_free(s, sizeof(*s));
}

const char *uas_pki_store_dir(const uas_pki_store *s)
{
    return s->root;
}

const char *uas_pki_folder_path(const uas_pki_store *s, uas_pki_folder f)
{
    if ((unsigned)f > UAS_PKI_REJECTED)
        return NULL;
    return s->dirs[f]; /* the folder enum matches the first pki_dir values */
}

const char *uas_pki_folder_name(uas_pki_folder f)
{
    static const char *const names[] = {"own", "trusted", "issuers", "rejected"};
    return (unsigned)f <= UAS_PKI_REJECTED ? names[f] : "?";
}

void uas_pki_store_reload(uas_pki_store *s)
{
    if (s)
        pki_cache_invalidate(s);
}

void uas_pki_bytes_free(uas_bytestring *b)
{
    if (!b || !b->data || b->data == UAS_EMPTY_ARRAY) {
        if (b) {
            b->data = NULL;
            b->length = 0;
        }
        return;
    }
    uas_wipe(b->data, b->length);
    uas_free(b->data, b->length);
    b->data = NULL;
    b->length = 0;
}

uas_status uas_pki_read_cert_file(const char *path, uas_bytestring *der)
{
    if (!path || !der)
        return UAS_BAD_INVALID_ARGUMENT;
    der->data = NULL;
    der->length = 0;
    pki_buf b;
    uas_status st = pki_read_file(path, PKI_MAX_CERT_FILE, &b);
    if (st != UAS_GOOD)
        return st;
    X509 *x = pki_x509_parse_any(b.data, b.len);
    pki_buf_free(&b, false);
    if (!x)
        return UAS_BAD_CERTIFICATE_INVALID;
    pki_buf d;
    st = pki_x509_der(x, &d);
    X509_free(x);
    if (st != UAS_GOOD)
        return st;
    der->data = uas_malloc(d.len);
    if (!der->data) {
        pki_buf_free(&d, false);
        return UAS_BAD_OUT_OF_MEMORY;
    }
    memcpy(der->data, d.data, d.len);
    der->length = d.len;
    pki_buf_free(&d, false);
    return UAS_GOOD;
}

/* ---- listing ---- */

typedef struct list_ctx {
    uas_pki_cert_info *items;
    size_t count, cap;
    uas_status st;
} list_ctx;

static bool list_one(void *ud, const char *path, const char *name)
{
    list_ctx *c = ud;
    pki_buf b;
    if (pki_read_file(path, PKI_MAX_CERT_FILE, &b) != UAS_GOOD)
        return true;
    X509 *x = pki_x509_parse_any(b.data, b.len);
    pki_buf_free(&b, false);
    if (!x) {
        uas_log(UAS_LOG_WARN, PKI_LOG, "%s is not a certificate, ignored", path);
        return true;
    }
    if (c->count == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 16;
        uas_pki_cert_info *n = uas_realloc(c->items, c->cap * sizeof(*n), ncap * sizeof(*n));
        if (!n) {
            X509_free(x);
            c->st = UAS_BAD_OUT_OF_MEMORY;
            return false;
        }
        c->items = n;
        c->cap = ncap;
    }
    uas_pki_cert_info *info = &c->items[c->count++];
    pki_x509_info(x, info);
    snprintf(info->file, sizeof(info->file), "%s", name);
    X509_free(x);
    return true;
}

static int info_cmp(const void *a, const void *b)
{
    const uas_pki_cert_info *x = a, *y = b;
    int r = strcasecmp(x->subject, y->subject);
    return r ? r : strcmp(x->file, y->file);
}

uas_status uas_pki_list(uas_pki_store *s, uas_pki_folder f, uas_pki_cert_info **items,
                        size_t *count)
{
    if (!s || !items || !count || (unsigned)f > UAS_PKI_REJECTED)
        return UAS_BAD_INVALID_ARGUMENT;
    *items = NULL;
    *count = 0;
    list_ctx c = {NULL, 0, 0, UAS_GOOD};
    uas_status st = pki_for_each_file(s->dirs[f], list_one, &c);
    if (st == UAS_GOOD)
        st = c.st;
    if (st != UAS_GOOD) {
        uas_free(c.items, c.cap * sizeof(*c.items));
        return st;
    }
    if (c.count == 0) {
        uas_free(c.items, c.cap * sizeof(*c.items));
        return UAS_GOOD;
    }
    qsort(c.items, c.count, sizeof(*c.items), info_cmp);
    /* Shrink to count so that uas_pki_list_free knows the size. */
    uas_pki_cert_info *exact =
        uas_realloc(c.items, c.cap * sizeof(*c.items), c.count * sizeof(*c.items));
    if (!exact) {
        uas_free(c.items, c.cap * sizeof(*c.items));
        return UAS_BAD_OUT_OF_MEMORY;
    }
    *items = exact;
    *count = c.count;
    return UAS_GOOD;
}

void uas_pki_list_free(uas_pki_cert_info *items, size_t count)
{
    if (items)
        uas_free(items, count * sizeof(*items));
}

/* ---- look-up by thumbprint ---- */

typedef struct find_ctx {
    char want[UAS_PKI_THUMBPRINT_HEX];
    size_t want_len;
    unsigned matches;
    X509 *found;
    char path[PKI_PATH_MAX];
} find_ctx;

static bool find_one(void *ud, const char *path, const char *name)
{
    (void)name;
    find_ctx *c = ud;
    pki_buf b;
    if (pki_read_file(path, PKI_MAX_CERT_FILE, &b) != UAS_GOOD)
        return true;
    X509 *x = pki_x509_parse_any(b.data, b.len);
    pki_buf_free(&b, false);
    if (!x)
        return true;
    char tp[UAS_PKI_THUMBPRINT_HEX];
    pki_x509_thumbprint(x, tp);
    if (strncmp(tp, c->want, c->want_len) != 0) {
        X509_free(x);
        return true;
    }
    /* The same certificate in two files counts once. */
    if (c->found && X509_cmp(c->found, x) == 0) {
        X509_free(x);
        return true;
    }
    c->matches++;
    if (!c->found) {
        c->found = x;
        snprintf(c->path, sizeof(c->path), "%s", path);
    } else {
        X509_free(x);
    }
    return true;
}

uas_status uas_pki_find(uas_pki_store *s, uas_pki_folder f, const char *thumbprint,
                        uas_bytestring *der, char *path, size_t path_cap)
{
    if (der) {
        der->data = NULL;
        der->length = 0;
    }
    if (!s || (unsigned)f > UAS_PKI_REJECTED)
        return UAS_BAD_INVALID_ARGUMENT;
    find_ctx c;
    memset(&c, 0, sizeof(c));
    if (!pki_thumbprint_arg(thumbprint, c.want))
        return UAS_BAD_INVALID_ARGUMENT;
    c.want_len = strlen(c.want);
    pki_for_each_file(s->dirs[f], find_one, &c);
    if (!c.found)
        return UAS_BAD_NOT_FOUND;
    uas_status st = UAS_GOOD;
    if (c.matches > 1) {
        st = UAS_BAD_INVALID_ARGUMENT;
        goto out;
    }
    if (path && path_cap)
        snprintf(path, path_cap, "%s", c.path);
    if (der) {
        pki_buf d;
        st = pki_x509_der(c.found, &d);
        if (st != UAS_GOOD)
            goto out;
        der->data = uas_malloc(d.len);
        if (der->data) {
            memcpy(der->data, d.data, d.len);
            der->length = d.len;
        } else {
            st = UAS_BAD_OUT_OF_MEMORY;
        }
        pki_buf_free(&d, false);
    }
out:
    X509_free(c.found);
    return st;
}
