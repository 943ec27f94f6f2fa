/* Password checks against the users file, with failed-login throttling.
 *
 * Timing: crypto_pwhash_str_verify costs the same whatever the password,
 * and an unknown user is verified against a dummy hash made at open with the
 * same parameters, so the time taken says neither whether the password was
 * close nor whether the name exists. A throttled key is refused without
 * hashing: that reveals only what the peer already knows (it failed).
 *
 * The argon2id work (64 MiB, ~0.1 s) runs outside the lock, so logins of
 * other clients proceed in parallel. */
#define _GNU_SOURCE
#include "pki_internal.h"
#include "user_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <ua/log.h>
#include <ua/mem.h>
#include <ua/net.h>

#define KEY_MAX 64

typedef struct throttle_entry {
    char key[KEY_MAX];
    bool used;
    uint32_t failures;     /* in the current window */
    uint32_t strikes;      /* blocks so far: the back-off doubles with each */
    int64_t window_start;  /* ms */
    int64_t blocked_until; /* ms */
    int64_t last_seen;     /* ms */
} throttle_entry;

struct uas_user_store {
    pthread_mutex_t lock;
    char *file;
    user_db db;
    struct stat seen; /* of the file when db was read */
    bool seen_valid;
    char dummy[crypto_pwhash_STRBYTES];
    uas_user_throttle t;
    throttle_entry *table;
    /* The server-wide failure budget: failures of every key in the
     * current window, and whether (and until when) it is spent. */
    uint32_t global_failures;
    int64_t global_window_start;  /* ms */
    int64_t global_blocked_until; /* ms */
    int64_t (*clock)(void *ud);
    void *clock_ud;
};

void uas_user_throttle_default(uas_user_throttle *t)
{
    t->max_failures = 5;
    t->window_ms = 60000;
    t->backoff_ms = 60000;
    t->max_backoff_ms = 900000;
    t->table_size = 1024;
    t->global_max_failures = 100;
}

static int64_t default_clock(void *ud)
{
    (void)ud;
    return uas_monotonic_ms();
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void warn_mode(const char *file, const struct stat *sb)
{
    if (sb->st_mode & 077)
        uas_log(UAS_LOG_WARN, USER_LOG,
                "%s is readable by group or others (mode %03o); chmod 600 it", file,
                (unsigned)(sb->st_mode & 0777));
}

/* Called with the lock held: reads the file again when it changed. A file
 * that disappears empties the store (nobody can log in); a file that cannot
 * be read keeps the previous users. */
static void refresh(uas_user_store *s)
{
    struct stat sb;
    if (stat(s->file, &sb) != 0) {
        if (s->seen_valid || s->db.count > 0)
            uas_log(UAS_LOG_WARN, USER_LOG, "%s is gone: no user can log in", s->file);
        user_db_free(&s->db);
        s->seen_valid = false;
        return;
    }
    if (s->seen_valid && same_file(&sb, &s->seen))
        return;
    user_db db;
    if (user_db_load(s->file, &db, false) != UAS_GOOD) {
        uas_log(UAS_LOG_WARN, USER_LOG, "cannot read %s; keeping the previous users", s->file);
        return;
    }
    warn_mode(s->file, &sb);
    user_db_free(&s->db);
    s->db = db;
    s->seen = sb;
    s->seen_valid = true;
}

static uas_status open_store(const char *file, const uas_user_throttle *throttle, bool missing_ok,
                             uas_user_store **out)
{
    if (!file || !out)
        return UAS_BAD_INVALID_ARGUMENT;
    *out = NULL;
    if (sodium_init() < 0)
        return UAS_BAD_INTERNAL_ERROR;
    uas_user_store *s = uas_calloc(1, sizeof(*s));
    if (!s)
        return UAS_BAD_OUT_OF_MEMORY;
    uas_user_throttle_default(&s->t);
    if (throttle) {
        s->t = *throttle;
        if (s->t.max_failures == 0)
            s->t.max_failures = 5;
        if (s->t.table_size == 0)
            s->t.table_size = 1024;
        if (s->t.global_max_failures == 0)
            s->t.global_max_failures = 100;
        if (s->t.max_backoff_ms < s->t.backoff_ms)
            s->t.max_backoff_ms = s->t.backoff_ms;
    }
    s->clock = default_clock;
    uas_status st = UAS_GOOD;
    s->file = pki_strdup_printf("%s", file);
    s->table = uas_calloc(s->t.table_size, sizeof(*s->table));
    if (!s->file || !s->table || pthread_mutex_init(&s->lock, NULL) != 0) {
        pki_str_free(s->file);
        uas_free(s->table, s->t.table_size * sizeof(*s->table));
        uas_free(s, sizeof(*s));
        return UAS_BAD_OUT_OF_MEMORY;
    }
    struct stat sb;
    bool present = stat(file, &sb) == 0;
    st = present ? user_db_load(file, &s->db, false) : missing_ok ? UAS_GOOD : UAS_BAD_NOT_FOUND;
    if (st == UAS_GOOD && present) {
        s->seen = sb;
        s->seen_valid = true;
        warn_mode(file, &sb);
    }
    if (st == UAS_GOOD) {
        /* The dummy hash: same parameters as uas_user_add, random password. */
        uint8_t pw[32];
        randombytes_buf(pw, sizeof(pw));
        if (crypto_pwhash_str(s->dummy, (const char *)pw, sizeof(pw),
                              crypto_pwhash_OPSLIMIT_INTERACTIVE,
                              crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0)
            st = UAS_BAD_OUT_OF_MEMORY;
        sodium_memzero(pw, sizeof(pw));
    }
    if (st != UAS_GOOD) {
        uas_user_store_close(s);
        return st;
    }
    *out = s;
    return UAS_GOOD;
}

uas_status uas_user_store_open(const char *file, const uas_user_throttle *throttle,
                               uas_user_store **out)
{
    return open_store(file, throttle, false, out);
}

uas_status uas_user_store_watch(const char *file, const uas_user_throttle *throttle,
                                uas_user_store **out)
{
    return open_store(file, throttle, true, out);
}

bool uas_user_store_present(uas_user_store *s)
{
    pthread_mutex_lock(&s->lock);
    refresh(s);
    bool present = s->seen_valid;
    pthread_mutex_unlock(&s->lock);
    return present;
}

void uas_user_store_reload(uas_user_store *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    /* Forgetting what was seen makes refresh read the file whatever its
     * look; a file that cannot be read still keeps the previous users. */
    s->seen_valid = false;
    refresh(s);
    pthread_mutex_unlock(&s->lock);
}

void uas_user_store_close(uas_user_store *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->lock);
    user_db_free(&s->db);
    pki_str_free(s->file);
    uas_free(s->table, s->t.table_size * sizeof(*s->table));
    sodium_memzero(s, sizeof(*s));
    uas_free(s, sizeof(*s));
}

void uas_user_store_set_clock(uas_user_store *s, int64_t (*now_ms)(void *ud), void *ud)
{
    pthread_mutex_lock(&s->lock);
    s->clock = now_ms ? now_ms : default_clock;
    s->clock_ud = now_ms ? ud : NULL;
    pthread_mutex_unlock(&s->lock);
}

static throttle_entry *find_key(uas_user_store *s, const char *key)
{
    for (uint32_t i = 0; i < s->t.table_size; i++)
        if (s->table[i].used && strcmp(s->table[i].key, key) == 0)
            return &s->table[i];
    return NULL;
}

/* The throttling key of a client key: an address stands for its group as
 * the connection caps count it (an IPv6 address for its /64, since one
 * subscriber gets a whole /64 and single addresses would give it endless
 * keys); anything else (a certificate thumbprint) stands for itself. */
static void throttle_key(const char *in, char *out, size_t cap)
{
    char addr[64];
    snprintf(addr, sizeof(addr), "%s", in);
    char *scope = strchr(addr, '%');
    if (scope)
        *scope = 0;
    if (!uas_address_group_str(addr, out, cap))
        snprintf(out, cap, "%s", in);
}

/* A free slot, else the least recently seen key that is neither blocked
 * nor counting failures of its current window, else the least recently
 * seen unblocked one; never a blocked key, so that cycling through
 * addresses cannot flush the keys that are being refused. NULL when every
 * key is blocked: the failure then counts only server-wide. */
static throttle_entry *new_key(uas_user_store *s, const char *key, int64_t now)
{
    throttle_entry *victim = NULL;
    int victim_rank = 3; /* 0 free, 1 idle, 2 counting; blocked never */
    for (uint32_t i = 0; i < s->t.table_size && victim_rank > 0; i++) {
        throttle_entry *e = &s->table[i];
        int rank;
        if (!e->used)
            rank = 0;
        else if (e->blocked_until > now)
            continue;
        else
            rank = now - e->window_start >= (int64_t)s->t.window_ms ? 1 : 2;
        if (rank < victim_rank || (rank == victim_rank && e->last_seen < victim->last_seen)) {
            victim = e;
            victim_rank = rank;
        }
    }
    if (!victim)
        return NULL;
    memset(victim, 0, sizeof(*victim));
    victim->used = true;
    snprintf(victim->key, sizeof(victim->key), "%s", key);
    victim->window_start = now;
    return victim;
}

/* Called with the lock held. */
static void record_global_failure(uas_user_store *s, int64_t now)
{
    if (now - s->global_window_start >= (int64_t)s->t.window_ms) {
        s->global_window_start = now;
        s->global_failures = 0;
    }
    if (++s->global_failures < s->t.global_max_failures || s->global_blocked_until > now)
        return;
    s->global_failures = 0;
    s->global_window_start = now;
    s->global_blocked_until = now + (int64_t)s->t.backoff_ms;
    /* One line per trip: the budget is spent at most once per back-off. */
    uas_log(UAS_LOG_WARN, USER_LOG,
            "%u failed logins server-wide within %u s: refusing every login for %u s",
            s->t.global_max_failures, s->t.window_ms / 1000, s->t.backoff_ms / 1000);
}

static void record_failure(uas_user_store *s, const char *key, int64_t now)
{
    record_global_failure(s, now);
    throttle_entry *e = find_key(s, key);
    if (!e)
        e = new_key(s, key, now);
    if (!e)
        return;
    if (now - e->window_start >= (int64_t)s->t.window_ms) {
        e->window_start = now;
        e->failures = 0;
    }
    e->last_seen = now;
    if (++e->failures < s->t.max_failures)
        return;
    uint32_t shift = e->strikes < 16 ? e->strikes : 16;
    uint64_t backoff = (uint64_t)s->t.backoff_ms << shift;
    if (backoff > s->t.max_backoff_ms)
        backoff = s->t.max_backoff_ms;
    e->strikes++;
    e->failures = 0;
    e->window_start = now;
    e->blocked_until = now + (int64_t)backoff;
    uas_log(UAS_LOG_WARN, USER_LOG, "%u failed logins from '%s': refusing its logins for %llu s",
            s->t.max_failures, key, (unsigned long long)(backoff / 1000));
}

/* Called with the lock held: Good, or why key may not try now. */
static uas_status throttled(uas_user_store *s, const char *key, int64_t now)
{
    if (s->global_blocked_until > now)
        return UAS_BAD_TOO_MANY_OPERATIONS;
    throttle_entry *e = find_key(s, key);
    if (e && e->blocked_until > now) {
        e->last_seen = now;
        return UAS_BAD_USER_ACCESS_DENIED;
    }
    return UAS_GOOD;
}

uas_status uas_user_throttle_check(uas_user_store *s, const char *client_key)
{
    if (!s)
        return UAS_BAD_USER_ACCESS_DENIED;
    char key[KEY_MAX];
    throttle_key(client_key ? client_key : "", key, sizeof(key));
    pthread_mutex_lock(&s->lock);
    uas_status st = throttled(s, key, s->clock(s->clock_ud));
    pthread_mutex_unlock(&s->lock);
    return st;
}

void uas_user_throttle_fail(uas_user_store *s, const char *client_key)
{
    if (!s)
        return;
    char key[KEY_MAX];
    throttle_key(client_key ? client_key : "", key, sizeof(key));
    pthread_mutex_lock(&s->lock);
    record_failure(s, key, s->clock(s->clock_ud));
    pthread_mutex_unlock(&s->lock);
}

uas_status uas_user_check(uas_user_store *s, const char *client_key, const char *name,
                          const char *password, size_t password_len)
{
    if (!s || !name || (!password && password_len > 0))
        return UAS_BAD_USER_ACCESS_DENIED;
    char key[KEY_MAX];
    throttle_key(client_key ? client_key : "", key, sizeof(key));
    char hash[crypto_pwhash_STRBYTES];
    pthread_mutex_lock(&s->lock);
    int64_t now = s->clock(s->clock_ud);
    if (throttled(s, key, now) != UAS_GOOD) {
        pthread_mutex_unlock(&s->lock);
        uas_log(UAS_LOG_DEBUG, USER_LOG, "login from throttled '%s' refused", key);
        return UAS_BAD_USER_ACCESS_DENIED;
    }
    refresh(s);
    long i = user_name_ok(name) ? user_db_find(&s->db, name) : -1;
    memcpy(hash, i >= 0 ? s->db.lines[i].hash : s->dummy, sizeof(hash));
    pthread_mutex_unlock(&s->lock);

    /* Same work for every outcome: one argon2id verification. */
    size_t len = password_len <= USER_MAX_PASSWORD ? password_len : USER_MAX_PASSWORD;
    bool ok =
        crypto_pwhash_str_verify(hash, password ? password : "", (unsigned long long)len) == 0;
    ok = ok && i >= 0 && password_len <= USER_MAX_PASSWORD;
    sodium_memzero(hash, sizeof(hash));

    pthread_mutex_lock(&s->lock);
    now = s->clock(s->clock_ud);
    if (ok) {
        throttle_entry *e = find_key(s, key);
        if (e)
            memset(e, 0, sizeof(*e));
    } else {
        record_failure(s, key, now);
    }
    pthread_mutex_unlock(&s->lock);
    /* The name is not logged: people type passwords into it. */
    if (!ok)
        uas_log(UAS_LOG_INFO, USER_LOG, "login refused from '%s'", key);
    return ok ? UAS_GOOD : UAS_BAD_USER_ACCESS_DENIED;
}

uas_status uas_user_roles(uas_user_store *s, const char *name, char *buf, size_t cap)
{
    if (!s || !name || !buf || cap == 0)
        return UAS_BAD_INVALID_ARGUMENT;
    pthread_mutex_lock(&s->lock);
    refresh(s);
    long i = user_db_find(&s->db, name);
    if (i >= 0)
        snprintf(buf, cap, "%s", s->db.lines[i].roles);
    pthread_mutex_unlock(&s->lock);
    return i >= 0 ? UAS_GOOD : UAS_BAD_NOT_FOUND;
}
