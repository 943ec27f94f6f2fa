/* What validation reuses between calls: the trust list as parsed from the
 * store's folders (a snapshot, reloaded when a folder's inode or mtime
 * changes, when this process changed the store, or after a minute at the
 * latest, which catches files rewritten in place), and the recent Good
 * verdicts, so a client opening many channels with one certificate costs
 * one validation per snapshot and PKI_VERDICT_TTL_MS. Before, every
 * validation read and parsed every trusted, issuer and CRL file.
 * A verdict serves only validations whose time lies within
 * PKI_VERDICT_TTL_MS after its own, so a certificate or CRL that expires
 * is refused at most that late; auto-accepted certificates are never
 * cached, so each of their channels logs its warning. */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include <ua/mem.h>

#include "pki_internal.h"

enum { SNAPSHOT_MAX_AGE_MS = 60000, PKI_VERDICT_TTL_MS = 10000, VERDICTS = 64 };

static const pki_dir watched[PKI_SNAPSHOT_DIRS] = {PKI_DIR_TRUSTED_CERTS, PKI_DIR_ISSUERS_CERTS,
                                                   PKI_DIR_TRUSTED_CRL, PKI_DIR_ISSUERS_CRL};

struct pki_snapshot {
    unsigned refs; /* under the cache lock */
    STACK_OF(X509) * trusted;
    STACK_OF(X509) * issuers;
    STACK_OF(X509_CRL) * crls;
};

typedef struct verdict_entry {
    uint8_t key[crypto_hash_sha256_BYTES];
    uint64_t gen;
    int64_t until_ms;
    time_t at; /* the validation's time */
    uas_pki_verdict v;
} verdict_entry;

struct pki_cache {
    pthread_mutex_t lock;
    pki_snapshot *snap;
    struct {
        dev_t dev;
        ino_t ino;
        struct timespec mtime;
    } sig[PKI_SNAPSHOT_DIRS];
    int64_t loaded_ms;
    uint64_t gen; /* bumped at every reload and invalidation */
    bool changed; /* this process changed the store */
    verdict_entry verdicts[VERDICTS];
    unsigned next; /* round robin replacement */
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uas_status pki_cache_init(uas_pki_store *s)
{
    s->cache = uas_calloc(1, sizeof(*s->cache));
    if (!s->cache)
        return UAS_BAD_OUT_OF_MEMORY;
    pthread_mutex_init(&s->cache->lock, NULL);
    s->cache->changed = true;
    return UAS_GOOD;
}

static void snapshot_free(pki_snapshot *p)
{
    sk_X509_pop_free(p->trusted, X509_free);
    sk_X509_pop_free(p->issuers, X509_free);
    sk_X509_CRL_pop_free(p->crls, X509_CRL_free);
    uas_free(p, sizeof(*p));
}

void pki_snapshot_put(uas_pki_store *s, pki_snapshot *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&s->cache->lock);
    bool last = --p->refs == 0;
    pthread_mutex_unlock(&s->cache->lock);
    if (last)
        snapshot_free(p);
}

void pki_cache_free(uas_pki_store *s)
{
    if (!s->cache)
        return;
    if (s->cache->snap && --s->cache->snap->refs == 0)
        snapshot_free(s->cache->snap);
    pthread_mutex_destroy(&s->cache->lock);
    sodium_memzero(s->cache->verdicts, sizeof(s->cache->verdicts));
    uas_free(s->cache, sizeof(*s->cache));
    s->cache = NULL;
}

void pki_cache_invalidate(uas_pki_store *s)
{
    if (!s->cache)
        return;
    pthread_mutex_lock(&s->cache->lock);
    s->cache->changed = true;
    s->cache->gen++;
    pthread_mutex_unlock(&s->cache->lock);
}

static pki_snapshot *snapshot_load(uas_pki_store *s)
{
    pki_snapshot *p = uas_calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->refs = 1;
    p->trusted = pki_load_certs(s->dirs[PKI_DIR_TRUSTED_CERTS]);
    p->issuers = pki_load_certs(s->dirs[PKI_DIR_ISSUERS_CERTS]);
    p->crls = pki_load_crls(s->dirs[PKI_DIR_TRUSTED_CRL]);
    STACK_OF(X509_CRL) *more = pki_load_crls(s->dirs[PKI_DIR_ISSUERS_CRL]);
    while (p->crls && more && sk_X509_CRL_num(more) > 0) {
        X509_CRL *crl = sk_X509_CRL_pop(more);
        if (!sk_X509_CRL_push(p->crls, crl))
            X509_CRL_free(crl);
    }
    sk_X509_CRL_pop_free(more, X509_CRL_free);
    if (!p->trusted || !p->issuers || !p->crls) {
        snapshot_free(p);
        return NULL;
    }
    return p;
}

/* Under the lock: true when the folders still look as when loaded. With
 * update, records their look and sets *racy when one changed so recently
 * that a change in the same clock tick would leave its mtime as it is
 * (file times come from a coarse clock): such a snapshot is used once and
 * then loaded again. */
static bool folders_unchanged(uas_pki_store *s, bool update, bool *racy)
{
    pki_cache *c = s->cache;
    bool same = true;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    for (int i = 0; i < PKI_SNAPSHOT_DIRS; i++) {
        struct stat sb;
        if (stat(s->dirs[watched[i]], &sb) != 0)
            memset(&sb, 0, sizeof(sb));
        if (sb.st_dev != c->sig[i].dev || sb.st_ino != c->sig[i].ino ||
            sb.st_mtim.tv_sec != c->sig[i].mtime.tv_sec ||
            sb.st_mtim.tv_nsec != c->sig[i].mtime.tv_nsec)
            same = false;
        if (update) {
            if (sb.st_mtim.tv_sec + 2 >= now.tv_sec)
                *racy = true;
            c->sig[i].dev = sb.st_dev;
            c->sig[i].ino = sb.st_ino;
            c->sig[i].mtime = sb.st_mtim;
        }
    }
    return same;
}

pki_snapshot *pki_snapshot_get(uas_pki_store *s, uint64_t *gen)
{
    pki_cache *c = s->cache;
    int64_t now = mono_ms();
    pthread_mutex_lock(&c->lock);
    bool racy = false;
    if (!c->snap || c->changed || now - c->loaded_ms > SNAPSHOT_MAX_AGE_MS ||
        !folders_unchanged(s, false, NULL)) {
        /* The signature is taken before reading, so a change while
         * reading is seen at the next call. Loading under the lock keeps
         * concurrent validations from each reading the folders. */
        folders_unchanged(s, true, &racy);
        pki_snapshot *p = snapshot_load(s);
        if (!p) {
            pthread_mutex_unlock(&c->lock);
            return NULL;
        }
        if (c->snap && --c->snap->refs == 0)
            snapshot_free(c->snap);
        c->snap = p;
        c->loaded_ms = now;
        c->changed = racy;
        c->gen++;
    }
    c->snap->refs++;
    *gen = c->gen;
    pki_snapshot *p = c->snap;
    pthread_mutex_unlock(&c->lock);
    return p;
}

void pki_snapshot_sources(const pki_snapshot *p, STACK_OF(X509) * *trusted,
                          STACK_OF(X509) * *issuers, STACK_OF(X509_CRL) * *crls)
{
    *trusted = p->trusted;
    *issuers = p->issuers;
    *crls = p->crls;
}

void pki_verdict_key(const uint8_t *der, size_t len, const char *uri, uint32_t usage,
                     uint32_t min_bits, uint32_t max_bits, uint8_t key[PKI_VERDICT_KEY])
{
    crypto_hash_sha256_state h;
    crypto_hash_sha256_init(&h);
    uint32_t params[4] = {usage, min_bits, max_bits, uri ? (uint32_t)strlen(uri) + 1 : 0};
    crypto_hash_sha256_update(&h, (const uint8_t *)params, sizeof(params));
    if (uri)
        crypto_hash_sha256_update(&h, (const uint8_t *)uri, strlen(uri));
    crypto_hash_sha256_update(&h, der, len);
    crypto_hash_sha256_final(&h, key);
}

bool pki_verdict_lookup(uas_pki_store *s, const uint8_t key[PKI_VERDICT_KEY], uint64_t gen,
                        time_t at, uas_pki_verdict *out)
{
    pki_cache *c = s->cache;
    int64_t now = mono_ms();
    bool hit = false;
    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < VERDICTS && !hit; i++) {
        verdict_entry *e = &c->verdicts[i];
        if (e->gen == gen && gen == c->gen && e->until_ms > now && at >= e->at &&
            at < e->at + PKI_VERDICT_TTL_MS / 1000 && !memcmp(e->key, key, PKI_VERDICT_KEY)) {
            *out = e->v;
            hit = true;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return hit;
}

void pki_verdict_store(uas_pki_store *s, const uint8_t key[PKI_VERDICT_KEY], uint64_t gen,
                       time_t at, const uas_pki_verdict *v)
{
    pki_cache *c = s->cache;
    pthread_mutex_lock(&c->lock);
    if (gen == c->gen && !v->auto_accepted) {
        verdict_entry *e = &c->verdicts[c->next++ % VERDICTS];
        memcpy(e->key, key, PKI_VERDICT_KEY);
        e->gen = gen;
        e->until_ms = mono_ms() + PKI_VERDICT_TTL_MS;
        e->at = at;
        e->v = *v;
    }
    pthread_mutex_unlock(&c->lock);
}
