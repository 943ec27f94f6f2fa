/* The session table: sessions by authentication token, shared by all loops.
 * Only session creation, activation lookups, closing and the timeout scan
 * take its mutex; a request finds its session through its connection's
 * cache (dispatch.c), so the steady state never touches this lock.
 * Sessions are reference-counted: the table holds one reference, each
 * connection that caches the session another.
 *
 * Created sessions cost a slot of max_sessions until activated, so a
 * client could fill the table with sessions it never means to use. Two
 * bounds stop that: an activation deadline (session_activation_timeout_ms,
 * whatever timeout the client asked for) and quotas of unactivated
 * sessions per channel and per client address. The quotas are counted in
 * the table, under its lock, so they hold server-wide across loops. */
#include <stdio.h>
#include <string.h>

#include "lockdef.h"
#include "aspace.h"
#include "quota_map.h"
#include "svc_subscription.h"
#include "server_internal.h"
#ifdef UAS_ENABLE_ENCRYPTION
#include "secpol_ecc_secret.h"
#endif

/* Unactivated sessions by key (quota_map.h): a channel id, or a keyed
 * hash of the client's address group (an IPv4 address or an IPv6 /64). */
struct uas_session_table {
    pthread_mutex_t lock;
    uas_session **slots; /* open addressing, linear probing */
    size_t cap;          /* power of two, at least twice max */
    uint32_t count;
    uint32_t max;
    quota_map by_channel, by_address;
    uint8_t address_key[UAS_ADDRESS_KEY_BYTES];
};

/* Under the table lock: the session's quotas go back. */
static void quota_release(uas_session_table *t, uas_session *se)
{
    if (!atomic_load_explicit(&se->quota_held, memory_order_relaxed))
        return;
    atomic_store_explicit(&se->quota_held, false, memory_order_relaxed);
    quota_sub(&t->by_channel, se->quota_channel);
    quota_sub(&t->by_address, se->quota_address);
}

uas_session_table *uas_sessions_new(uint32_t max_sessions)
{
    uas_session_table *t = uas_calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->max = max_sessions ? max_sessions : 1;
    t->cap = 16;
    while (t->cap < (size_t)t->max * 2)
        t->cap *= 2;
    t->slots = uas_calloc(t->cap, sizeof(*t->slots));
    pthread_mutex_init(&t->lock, NULL);
    if (!t->slots || !quota_init(&t->by_channel, t->cap) || !quota_init(&t->by_address, t->cap)) {
        uas_sessions_delete(t);
        return NULL;
    }
    uas_random_bytes(t->address_key, sizeof(t->address_key));
    return t;
}

static size_t token_hash(const uas_nodeid *tok)
{
    if (tok->kind != UAS_NODEID_GUID)
        return 0;
    /* The GUID is random: its first word is as good as any hash. */
    return tok->id.guid.data1 ^ ((size_t)tok->id.guid.data2 << 16);
}

bool uas_session_token_eq(const uas_nodeid *a, const uas_nodeid *b)
{
    return a->kind == UAS_NODEID_GUID && b->kind == UAS_NODEID_GUID && a->ns == b->ns &&
           memcmp(&a->id.guid, &b->id.guid, sizeof(uas_guid)) == 0;
}

void uas_session_ref(uas_session *se)
{
    atomic_fetch_add_explicit(&se->refs, 1, memory_order_relaxed);
}

void uas_session_unref(uas_server *s, uas_session *se)
{
    if (atomic_fetch_sub_explicit(&se->refs, 1, memory_order_acq_rel) != 1)
        return;
    uas_view_session_release(se);
    uas_subs_session_release(s, se);
    if (se->name.data && se->name.data != UAS_EMPTY_ARRAY)
        uas_free(se->name.data, se->name.length);
    if (se->client_cert.data)
        uas_free(se->client_cert.data, se->client_cert.length);
#ifdef UAS_ENABLE_ENCRYPTION
    uas_ecc_rkey_free(se->user_eph);
#endif
    pthread_mutex_destroy(&se->lock);
    uas_free(se, sizeof(*se));
}

void uas_sessions_delete(uas_session_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; t->slots && i < t->cap; i++)
        if (t->slots[i])
            uas_session_unref(NULL, t->slots[i]);
    if (t->slots)
        uas_free(t->slots, t->cap * sizeof(*t->slots));
    quota_free(&t->by_channel);
    quota_free(&t->by_address);
    pthread_mutex_destroy(&t->lock);
    uas_free(t, sizeof(*t));
}

static void table_insert(uas_session_table *t, uas_session *se)
{
    size_t mask = t->cap - 1;
    size_t i = token_hash(&se->auth_token) & mask;
    while (t->slots[i])
        i = (i + 1) & mask;
    t->slots[i] = se;
    t->count++;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void table_remove_at(uas_session_table *t, size_t i)
{
    size_t mask = t->cap - 1;
    t->slots[i] = NULL;
    t->count--;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!t->slots[j])
            return;
        size_t home = token_hash(&t->slots[j]->auth_token) & mask;
        /* Move j back to i if its home is not in the cyclic range (i, j]. */
        bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            t->slots[i] = t->slots[j];
            t->slots[j] = NULL;
            i = j;
        }
    }
}

static size_t table_find(uas_session_table *t, const uas_nodeid *tok)
{
    size_t mask = t->cap - 1;
    size_t i = token_hash(tok) & mask;
    while (t->slots[i]) {
        if (uas_session_token_eq(&t->slots[i]->auth_token, tok))
            return i;
        i = (i + 1) & mask;
    }
    return SIZE_MAX;
}

/* Why a CreateSession of this channel and address cannot have a session
 * now (under the table lock), logged; Good when it can. */
static uas_status admit(uas_session_table *t, const uas_server_config *cfg, uint32_t channel,
                        uint64_t akey, const char *address)
{
    if (t->count >= t->max) {
        UAS_LOG_LIMITED(UAS_LOG_WARN, "session",
                        "CreateSession refused: %u sessions open (max_sessions)", t->count);
        return UAS_BAD_TOO_MANY_SESSIONS;
    }
    uint32_t n = quota_get(&t->by_channel, channel);
    if (cfg->max_unactivated_per_channel && n >= cfg->max_unactivated_per_channel) {
        UAS_LOG_LIMITED(UAS_LOG_WARN, "session",
                        "CreateSession refused: channel %u (client %s) has %u unactivated "
                        "sessions (max_unactivated_per_channel)",
                        channel, address, n);
        return UAS_BAD_TOO_MANY_SESSIONS;
    }
    n = quota_get(&t->by_address, akey);
    if (cfg->max_unactivated_per_address && n >= cfg->max_unactivated_per_address) {
        UAS_LOG_LIMITED(UAS_LOG_WARN, "session",
                        "CreateSession refused: client %s has %u unactivated sessions "
                        "(max_unactivated_per_address)",
                        address, n);
        return UAS_BAD_TOO_MANY_SESSIONS;
    }
    return UAS_GOOD;
}

uas_status uas_sessions_create(uas_session_table *t, uas_server *s, const uas_request_ctx *ctx,
                               int64_t timeout_ms, uas_session **out)
{
    char address[80] = "?";
    uint64_t akey = 0;
    if (ctx->conn && uas_conn_peer_group(ctx->conn, address, sizeof(address)))
        akey = uas_address_key(t->address_key, address);
    else
        snprintf(address, sizeof(address), "?");
    uas_session *se = uas_calloc(1, sizeof(*se));
    if (!se)
        return UAS_BAD_OUT_OF_MEMORY;
    atomic_init(&se->refs, 2);
    atomic_init(&se->closed, false);
    atomic_init(&se->activated, false);
    atomic_init(&se->last_activity_ms, ctx->now_ms);
    pthread_mutex_init(&se->lock, NULL);
    se->delete_subscriptions = true; /* abandoned sessions take theirs along */
    se->channel_id = ctx->channel_id;
    se->timeout_ms = timeout_ms;
    se->created_ms = ctx->now_ms;
    se->created_at = uas_datetime_now();
    se->session_id.ns = 1;
    se->session_id.kind = UAS_NODEID_GUID;
    uas_random_bytes(&se->session_id.id.guid, sizeof(uas_guid));
    se->auth_token.ns = 0;
    se->auth_token.kind = UAS_NODEID_GUID;
    uas_random_bytes(se->server_nonce, sizeof(se->server_nonce));
    UAS_LOCK_PLAIN(&t->lock);
    uas_status st = admit(t, &s->cfg, ctx->channel_id, akey, address);
    if (st != UAS_GOOD) {
        UAS_UNLOCK(&t->lock);
        pthread_mutex_destroy(&se->lock);
        uas_free(se, sizeof(*se));
        atomic_fetch_add(&s->counters.rejected_sessions, 1);
        return st;
    }
    do /* a collision of 128 random bits will not happen, but cost nothing to rule out */
        uas_random_bytes(&se->auth_token.id.guid, sizeof(uas_guid));
    while (table_find(t, &se->auth_token) != SIZE_MAX);
    table_insert(t, se);
    se->quota_channel = ctx->channel_id;
    se->quota_address = akey;
    atomic_init(&se->quota_held, true);
    quota_add(&t->by_channel, se->quota_channel);
    quota_add(&t->by_address, se->quota_address);
    UAS_UNLOCK(&t->lock);
    atomic_fetch_add(&s->counters.cumulated_sessions, 1);
    *out = se;
    return UAS_GOOD;
}

void uas_sessions_activated(uas_session_table *t, uas_session *se)
{
    UAS_LOCK_PLAIN(&t->lock);
    quota_release(t, se);
    UAS_UNLOCK(&t->lock);
}

uint32_t uas_sessions_unactivated_on_channel(uas_session_table *t, uint32_t channel_id)
{
    UAS_LOCK_PLAIN(&t->lock);
    uint32_t n = quota_get(&t->by_channel, channel_id);
    UAS_UNLOCK(&t->lock);
    return n;
}

uint32_t uas_sessions_unactivated_from(uas_session_table *t, const char *address)
{
    UAS_LOCK_PLAIN(&t->lock);
    uint32_t n = quota_get(&t->by_address, uas_address_key(t->address_key, address));
    UAS_UNLOCK(&t->lock);
    return n;
}

uas_session *uas_sessions_find(uas_session_table *t, const uas_nodeid *token)
{
    UAS_LOCK_PLAIN(&t->lock);
    size_t i = table_find(t, token);
    uas_session *se = i == SIZE_MAX ? NULL : t->slots[i];
    if (se)
        uas_session_ref(se);
    UAS_UNLOCK(&t->lock);
    return se;
}

void uas_sessions_remove(uas_session_table *t, uas_session *se)
{
    UAS_LOCK_PLAIN(&t->lock);
    size_t i = table_find(t, &se->auth_token);
    bool found = i != SIZE_MAX && t->slots[i] == se;
    if (found) {
        table_remove_at(t, i);
        quota_release(t, se);
    }
    atomic_store(&se->closed, true);
    UAS_UNLOCK(&t->lock);
    if (found)
        uas_session_unref(NULL, se);
}

void uas_sessions_expire(uas_session_table *t, uas_server *s, int64_t now_ms)
{
    uas_session *expired[64];
    size_t n;
    do {
        n = 0;
        UAS_LOCK_PLAIN(&t->lock);
        for (size_t i = 0; i < t->cap && n < 64; i++) {
            uas_session *se = t->slots[i];
            if (!se)
                continue;
            int64_t last = atomic_load_explicit(&se->last_activity_ms, memory_order_relaxed);
            int64_t activation = s->cfg.session_activation_timeout_ms;
            if (now_ms - last > se->timeout_ms || (activation && !atomic_load(&se->activated) &&
                                                   now_ms - se->created_ms > activation)) {
                table_remove_at(t, i);
                quota_release(t, se);
                atomic_store(&se->closed, true);
                expired[n++] = se;
                i--; /* the slot may now hold a shifted entry */
            }
        }
        UAS_UNLOCK(&t->lock);
        for (size_t i = 0; i < n; i++) {
            if (atomic_load(&expired[i]->activated))
                uas_log(UAS_LOG_INFO, "session", "session %.*s timed out after %lld ms",
                        (int)(expired[i]->name.data ? expired[i]->name.length : 0),
                        expired[i]->name.data ? (const char *)expired[i]->name.data : "",
                        (long long)expired[i]->timeout_ms);
            else /* a flood of abandoned sessions must not flood the log */
                UAS_LOG_LIMITED(UAS_LOG_INFO, "session",
                                "session %.*s closed: not activated %lld ms after its creation",
                                (int)(expired[i]->name.data ? expired[i]->name.length : 0),
                                expired[i]->name.data ? (const char *)expired[i]->name.data : "",
                                (long long)(now_ms - expired[i]->created_ms));
            atomic_fetch_add(&s->counters.session_timeouts, 1);
            uas_server_system_event(s, 300, "Session timed out");
            uas_session_unref(s, expired[i]);
        }
    } while (n == 64);
}

uint32_t uas_sessions_count(uas_session_table *t)
{
    UAS_LOCK_PLAIN(&t->lock);
    uint32_t n = t->count;
    UAS_UNLOCK(&t->lock);
    return n;
}
