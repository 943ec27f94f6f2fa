/* The rejected folder as validation feeds it. Before, every untrusted OPN
 * read and parsed every file of rejected/certs, wrote and fsynced one, and
 * pruned the oldest, on the event loop: 100 planted 60 KB certificates
 * made each untrusted OPN cost 90 ms of loop time, and a peer could push
 * anyone's entry out of the folder.
 *
 * Now a validating thread only queues the certificate (a copy of its DER,
 * no file access): at most REJ_QUEUE waiting, each certificate once (the
 * index in memory and the queue are looked at first), at most
 * rejected_writes_per_minute new files per minute for all peers together
 * (token bucket), none over rejected_max_cert_size. One writer thread per
 * store, started at the first certificate, does the file work: it keeps an
 * index of the folder (file name -> thumbprint), reads the folder again
 * only when its inode or mtime changed and then parses only the files it
 * does not know, and writes a certificate only when it is not there yet
 * and the folder holds fewer than max_rejected files. A full folder
 * refuses new entries instead of evicting old ones, so no peer can push
 * out another's entry (an administrator empties it with `uapki remove`).
 * Every drop is counted (uas_pki_reject_stats_get) and logged at most once
 * a minute per kind. */
#define _GNU_SOURCE
#include "pki_internal.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <ua/log.h>
#include <ua/mem.h>

enum { REJ_QUEUE = 16, REJ_LOG_EVERY_MS = 60000 };

typedef struct rej_item {
    uint8_t *der;
    size_t len;
    char tp[UAS_PKI_THUMBPRINT_HEX];
} rej_item;

typedef struct rej_entry {
    char name[256]; /* file name in the folder */
    char tp[UAS_PKI_THUMBPRINT_HEX];
} rej_entry;

enum { LOG_QUEUE_FULL, LOG_RATE, LOG_TOO_LARGE, LOG_FOLDER_FULL, LOG_KINDS };

struct pki_rejected {
    pthread_mutex_t lock;
    pthread_cond_t work; /* queue not empty, or stop */
    pthread_cond_t idle; /* queue empty and the writer idle */
    pthread_t thread;
    bool started, stop, busy, failed;
    rej_item queue[REJ_QUEUE];
    unsigned head, count;
    /* The index: written by the writer thread under the lock. */
    rej_entry *entries;
    size_t n, cap;
    bool scanned;
    int64_t scanned_ms; /* a change within the mtime's clock tick is seen a minute later */
    dev_t dev;
    ino_t ino;
    struct timespec mtime;
    /* Token bucket of new files, in thousandths of a write. */
    int64_t tokens_milli;
    int64_t refill_ms;
    int64_t last_log_ms[LOG_KINDS];
    uint64_t dropped_since_log[LOG_KINDS];
    uas_pki_reject_stats stats;
};

uas_status pki_rejected_init(uas_pki_store *s)
{
    pki_rejected *r = uas_calloc(1, sizeof(*r));
    if (!r)
        return UAS_BAD_OUT_OF_MEMORY;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->work, NULL);
    pthread_cond_init(&r->idle, NULL);
    r->tokens_milli = (int64_t)s->opts.rejected_writes_per_minute * 1000;
    r->refill_ms = uas_monotonic_ms();
    for (int i = 0; i < LOG_KINDS; i++)
        r->last_log_ms[i] = INT64_MIN / 2;
    s->rejected = r;
    return UAS_GOOD;
}

void pki_rejected_free(uas_pki_store *s)
{
    pki_rejected *r = s->rejected;
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->stop = true;
    pthread_cond_broadcast(&r->work);
    bool started = r->started;
    pthread_mutex_unlock(&r->lock);
    if (started)
        pthread_join(r->thread, NULL); /* drains the queue first */
    for (unsigned i = 0; i < r->count; i++) {
        rej_item *it = &r->queue[(r->head + i) % REJ_QUEUE];
        uas_free(it->der, it->len);
    }
    uas_free(r->entries, r->cap * sizeof(*r->entries));
    pthread_cond_destroy(&r->idle);
    pthread_cond_destroy(&r->work);
    pthread_mutex_destroy(&r->lock);
    uas_free(r, sizeof(*r));
    s->rejected = NULL;
}

/* Under the lock: counts a drop and says whether to log it now. */
static bool drop(pki_rejected *r, int kind, uint64_t *counter, uint64_t *since)
{
    (*counter)++;
    r->dropped_since_log[kind]++;
    int64_t now = uas_monotonic_ms();
    if (now - r->last_log_ms[kind] < REJ_LOG_EVERY_MS)
        return false;
    r->last_log_ms[kind] = now;
    *since = r->dropped_since_log[kind];
    r->dropped_since_log[kind] = 0;
    return true;
}

static bool known_locked(const pki_rejected *r, const char *tp)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->entries[i].tp, tp))
            return true;
    for (unsigned i = 0; i < r->count; i++)
        if (!strcmp(r->queue[(r->head + i) % REJ_QUEUE].tp, tp))
            return true;
    return false;
}

/* ---- the writer thread ---- */

static bool entry_add(rej_entry **v, size_t *n, size_t *cap, const char *name, const char *tp)
{
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 32;
        rej_entry *e = uas_realloc(*v, *cap * sizeof(**v), ncap * sizeof(**v));
        if (!e)
            return false;
        *v = e;
        *cap = ncap;
    }
    snprintf((*v)[*n].name, sizeof((*v)[*n].name), "%s", name);
    snprintf((*v)[*n].tp, sizeof((*v)[*n].tp), "%s", tp);
    (*n)++;
    return true;
}

/* The thumbprint of a file the index does not know: parsed once. Files
 * over the size cap are not read; they still count as entries (their
 * thumbprint stays unknown), so planting big files cannot grow the work. */
static void file_thumbprint(uas_pki_store *s, const char *path, const struct stat *sb,
                            char tp[UAS_PKI_THUMBPRINT_HEX])
{
    tp[0] = 0;
    if ((uint64_t)sb->st_size > s->opts.rejected_max_cert_size)
        return;
    pki_buf b;
    if (pki_read_file(path, s->opts.rejected_max_cert_size, &b) != UAS_GOOD)
        return;
    X509 *x = pki_x509_parse_any(b.data, b.len);
    pki_buf_free(&b, false);
    if (x) {
        pki_x509_thumbprint(x, tp);
        X509_free(x);
    }
}

/* Reads the folder again when it changed since the last look: known
 * names keep their entry, new ones are parsed, vanished ones dropped. */
static void refresh_index(uas_pki_store *s, pki_rejected *r)
{
    const char *dir = s->dirs[PKI_DIR_REJECTED_CERTS];
    struct stat sb;
    if (stat(dir, &sb) != 0)
        memset(&sb, 0, sizeof(sb));
    int64_t now = uas_monotonic_ms();
    if (r->scanned && now - r->scanned_ms < REJ_LOG_EVERY_MS && sb.st_dev == r->dev &&
        sb.st_ino == r->ino && sb.st_mtim.tv_sec == r->mtime.tv_sec &&
        sb.st_mtim.tv_nsec == r->mtime.tv_nsec)
        return;
    rej_entry *v = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir(dir);
    bool ok = d != NULL;
    struct dirent *de;
    while (ok && (de = readdir(d)) != NULL && n < PKI_MAX_FOLDER_FILES) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len >= sizeof(v->name) ||
            (len > 10 && memcmp(de->d_name + len - 10, ".tmp", 4) == 0))
            continue;
        char path[PKI_PATH_MAX];
        struct stat fsb;
        if (!pki_path(path, sizeof(path), dir, de->d_name) || stat(path, &fsb) != 0 ||
            !S_ISREG(fsb.st_mode))
            continue;
        char tp[UAS_PKI_THUMBPRINT_HEX] = "";
        bool have = false;
        for (size_t i = 0; i < r->n && !have; i++) {
            if (!strcmp(r->entries[i].name, de->d_name)) {
                memcpy(tp, r->entries[i].tp, sizeof(tp));
                have = true;
            }
        }
        if (!have)
            file_thumbprint(s, path, &fsb, tp);
        ok = entry_add(&v, &n, &cap, de->d_name, tp);
    }
    if (d)
        closedir(d);
    if (!ok) {
        uas_free(v, cap * sizeof(*v));
        return; /* the old index stays; the next write looks again */
    }
    pthread_mutex_lock(&r->lock);
    rej_entry *old = r->entries;
    size_t old_cap = r->cap;
    r->entries = v;
    r->n = n;
    r->cap = cap;
    r->scanned = true;
    r->scanned_ms = now;
    r->dev = sb.st_dev;
    r->ino = sb.st_ino;
    r->mtime = sb.st_mtim;
    r->stats.folder_scans++;
    pthread_mutex_unlock(&r->lock);
    uas_free(old, old_cap * sizeof(*old));
}

/* Writes one queued certificate unless the folder has it or is full. */
static void record(uas_pki_store *s, pki_rejected *r, rej_item *it)
{
    refresh_index(s, r);
    pthread_mutex_lock(&r->lock);
    bool have = false;
    for (size_t i = 0; i < r->n && !have; i++)
        have = !strcmp(r->entries[i].tp, it->tp);
    bool full = !have && r->n >= s->opts.max_rejected;
    uint64_t since = 0;
    bool log_full = full && drop(r, LOG_FOLDER_FULL, &r->stats.folder_full, &since);
    if (have)
        r->stats.known++;
    pthread_mutex_unlock(&r->lock);
    if (log_full)
        uas_log(UAS_LOG_WARN, PKI_LOG,
                "rejected/certs is full (%u files): %llu untrusted certificate(s) not recorded, "
                "e.g. [%s]; nothing is evicted: review them with `uapki list rejected` and "
                "delete with `uapki remove`",
                s->opts.max_rejected, (unsigned long long)since, it->tp);
    if (have || full)
        return;
    X509 *x = pki_x509_parse_any(it->der, it->len);
    if (!x)
        return;
    char file[256], path[PKI_PATH_MAX], subj[200], uri[256];
    pki_x509_file_name(x, ".der", file, sizeof(file));
    pki_x509_subject(x, subj, sizeof(subj));
    pki_x509_first_uri(x, uri, sizeof(uri));
    X509_free(x);
    if (!pki_path(path, sizeof(path), s->dirs[PKI_DIR_REJECTED_CERTS], file) ||
        pki_write_file(path, it->der, it->len, 0644, false) != UAS_GOOD)
        return;
    /* Our own change goes into the index directly, and the folder's new
     * look is taken as known (a change by someone else within the same
     * clock tick is seen at the periodic look). */
    struct stat sb;
    bool looked = stat(s->dirs[PKI_DIR_REJECTED_CERTS], &sb) == 0;
    pthread_mutex_lock(&r->lock);
    if (looked) {
        r->dev = sb.st_dev;
        r->ino = sb.st_ino;
        r->mtime = sb.st_mtim;
    }
    bool listed = false;
    for (size_t i = 0; i < r->n && !listed; i++)
        listed = !strcmp(r->entries[i].name, file);
    if (!listed)
        (void)entry_add(&r->entries, &r->n, &r->cap, file, it->tp);
    r->stats.written++;
    pthread_mutex_unlock(&r->lock);
    uas_log(UAS_LOG_INFO, PKI_LOG,
            "untrusted certificate %s (%s) [%s] recorded in rejected/certs; "
            "`uapki trust %s` trusts it",
            subj, uri[0] ? uri : "no URI", it->tp, it->tp);
}

static void *writer(void *arg)
{
    uas_pki_store *s = arg;
    pki_rejected *r = s->rejected;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (r->count == 0 && !r->stop)
            pthread_cond_wait(&r->work, &r->lock);
        if (r->count == 0)
            break; /* stop, and drained */
        rej_item it = r->queue[r->head];
        r->busy = true;
        pthread_mutex_unlock(&r->lock);
        record(s, r, &it);
        pthread_mutex_lock(&r->lock);
        /* Dequeued only now, so that the item counts as known meanwhile. */
        r->head = (r->head + 1) % REJ_QUEUE;
        r->count--;
        r->busy = false;
        uas_free(it.der, it.len);
        if (r->count == 0)
            pthread_cond_broadcast(&r->idle);
    }
    r->busy = false;
    pthread_cond_broadcast(&r->idle);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* ---- the validating side ---- */

static void refill(uas_pki_store *s, pki_rejected *r)
{
    int64_t now = uas_monotonic_ms();
    int64_t per_min = s->opts.rejected_writes_per_minute;
    int64_t add = (now - r->refill_ms) * per_min * 1000 / 60000;
    if (add <= 0)
        return;
    r->refill_ms = now;
    r->tokens_milli += add;
    if (r->tokens_milli > per_min * 1000)
        r->tokens_milli = per_min * 1000;
}

uas_status uas_pki_reject_async(uas_pki_store *s, const uint8_t *der, size_t len)
{
    if (!s || !der || len == 0)
        return UAS_BAD_INVALID_ARGUMENT;
    pki_rejected *r = s->rejected;
    char tp[UAS_PKI_THUMBPRINT_HEX];
    uas_pki_thumbprint(der, len, tp);
    uas_status st = UAS_GOOD;
    int kind = -1;
    uint64_t since = 0;
    bool log = false;
    pthread_mutex_lock(&r->lock);
    bool known = known_locked(r, tp);
    if (known) {
        r->stats.known++;
    } else if (len > s->opts.rejected_max_cert_size) {
        kind = LOG_TOO_LARGE;
        log = drop(r, kind, &r->stats.too_large, &since);
        st = UAS_BAD_ENCODING_LIMITS_EXCEEDED;
    } else if (r->count == REJ_QUEUE || r->failed) {
        kind = LOG_QUEUE_FULL;
        log = drop(r, kind, &r->stats.queue_full, &since);
        st = UAS_BAD_RESOURCE_UNAVAILABLE;
    } else {
        refill(s, r);
        if (r->tokens_milli < 1000) {
            kind = LOG_RATE;
            log = drop(r, kind, &r->stats.rate_limited, &since);
            st = UAS_BAD_RESOURCE_UNAVAILABLE;
        }
    }
    if (st == UAS_GOOD && kind < 0 && !known) {
        uint8_t *copy = uas_malloc(len);
        if (!copy) {
            st = UAS_BAD_OUT_OF_MEMORY;
        } else if (!r->started && (r->failed = pthread_create(&r->thread, NULL, writer, s) != 0)) {
            uas_free(copy, len);
            kind = LOG_QUEUE_FULL;
            log = drop(r, kind, &r->stats.queue_full, &since);
            st = UAS_BAD_RESOURCE_UNAVAILABLE;
        } else {
            r->started = true;
            memcpy(copy, der, len);
            rej_item *it = &r->queue[(r->head + r->count) % REJ_QUEUE];
            it->der = copy;
            it->len = len;
            memcpy(it->tp, tp, sizeof(tp));
            r->count++;
            r->tokens_milli -= 1000;
            pthread_cond_signal(&r->work);
        }
    }
    pthread_mutex_unlock(&r->lock);
    if (log) {
        static const char *const why[LOG_KINDS] = {
            [LOG_QUEUE_FULL] = "the writer queue is full",
            [LOG_RATE] = "over rejected_writes_per_minute",
            [LOG_TOO_LARGE] = "larger than rejected_max_cert_size",
        };
        uas_log(UAS_LOG_WARN, PKI_LOG,
                "untrusted certificate [%s] not recorded in rejected/certs: %s "
                "(%llu such drop(s) in the last minute)",
                tp, why[kind], (unsigned long long)since);
    }
    return st;
}

void uas_pki_reject_flush(uas_pki_store *s)
{
    if (!s || !s->rejected)
        return;
    pki_rejected *r = s->rejected;
    pthread_mutex_lock(&r->lock);
    while (r->started && (r->count > 0 || r->busy))
        pthread_cond_wait(&r->idle, &r->lock);
    pthread_mutex_unlock(&r->lock);
}

void uas_pki_reject_stats_get(uas_pki_store *s, uas_pki_reject_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!s || !s->rejected)
        return;
    pthread_mutex_lock(&s->rejected->lock);
    *out = s->rejected->stats;
    pthread_mutex_unlock(&s->rejected->lock);
}
