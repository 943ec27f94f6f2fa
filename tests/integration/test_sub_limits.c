/* Subscription bounds of issue 12 over real sockets: orphaned
 * subscriptions of 1,000 sessions, a session that tries to pass its caps,
 * server-wide counts across event loops, ConditionRefresh and Call storms
 * of a client that never reads. Each asserts that memory stays bounded
 * (the server's counts, the process RSS) and env_stop that a second,
 * normal client is still served. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ua/nodeids.h>
#include <ua/pki.h>

#include "helper_sub.h"
#include "sub_diag.h"

static double rss_mib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    cr_assert(f);
    cr_assert_eq(fscanf(f, "%ld %ld", &size, &res), 2);
    fclose(f);
    return (double)res * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

static uas_subs_figures figures(env *e)
{
    uas_subs_figures f;
    uas_subs_get_figures(e->server, &f);
    return f;
}

/* The server releases a closed session after its last request is
 * answered, so its orphans appear a moment after CloseSession's answer:
 * wait (up to ENV_WAIT_MS) until the server counts want orphans and no
 * other subscriptions. */
static uas_subs_figures settle_orphans(env *e, uint32_t want)
{
    bool never = false;
    for (int i = 0;
         i < ENV_WAIT_MS / 20 && (figures(e).orphans != want || figures(e).current != want); i++)
        env_run_until(e, &never, 20);
    return figures(e);
}

static uas_status close_session_keep_subscriptions(uas_client *c)
{
    uas_close_session_request req;
    memset(&req, 0, sizeof(req));
    req.delete_subscriptions = false;
    uas_close_session_response resp;
    env_arena m;
    uas_status st =
        uas_client_call_sync(c, &req, UAS_TYPE(CLOSE_SESSION_REQUEST), &resp,
                             UAS_TYPE(CLOSE_SESSION_RESPONSE), env_arena_init(&m), ENV_WAIT_MS);
    uas_arena_free(&m.a);
    return st;
}

/* TransferSubscriptions of one id: the result's status. */
static uas_status transfer(uas_client *c, uint32_t id)
{
    uas_transfer_subscriptions_request req;
    memset(&req, 0, sizeof(req));
    req.subscription_ids = &id;
    req.subscription_ids_count = 1;
    uas_transfer_subscriptions_response resp;
    env_arena m;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(TRANSFER_SUBSCRIPTIONS_REQUEST), &resp,
                                         UAS_TYPE(TRANSFER_SUBSCRIPTIONS_RESPONSE),
                                         env_arena_init(&m), ENV_WAIT_MS);
    if (st == UAS_GOOD) {
        cr_assert_eq(resp.results_count, 1);
        st = resp.results[0].status_code;
    }
    uas_arena_free(&m.a);
    return st;
}

static uint32_t read_u32(uas_client *c, uint32_t id)
{
    uas_datavalue dv;
    env_arena m;
    uas_nodeid n = uas_nodeid_numeric(0, id);
    cr_assert_eq(env_read(c, &n, ENV_ATTR_VALUE, &dv, env_arena_init(&m)), UAS_GOOD);
    cr_assert(dv.has_value && dv.value.type == UAS_TYPE(UINT32), "node %u", id);
    uint32_t v = *(uint32_t *)dv.value.data;
    uas_arena_free(&m.a);
    return v;
}

/* ---- orphaned subscriptions ---- */

static void orphan_caps(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->max_orphaned_subscriptions = 200;
    cfg->max_orphaned_per_user = 100000; /* the server-wide cap is the one tested */
    cfg->log_level = UAS_LOG_ERROR;
}

Test(sub_limits, orphans_of_1000_sessions_are_capped_oldest_first, .timeout = 300)
{
    env e;
    env_options o = {.threads = 2, .configure = orphan_caps};
    env_start(&e, &o);
    double rss0 = rss_mib();
    enum { SESSIONS = 1000, SUBS = 2 };
    uint32_t first = 0, last = 0;
    for (unsigned i = 0; i < SESSIONS; i++) {
        uas_client *c = env_client(&e, true, 0);
        for (unsigned k = 0; k < SUBS; k++) {
            uint32_t id;
            /* The longest lifetime a client may ask for. */
            cr_assert_eq(env_create_sub(c, 100, 30000, &id), UAS_GOOD);
            uas_status st[1];
            cr_assert_eq(env_create_items(c, id, &(env_items){false, 1, 100, NULL}, st, NULL),
                         UAS_GOOD);
            cr_assert_eq(st[0], UAS_GOOD);
            if (!first)
                first = id;
            last = id;
        }
        cr_assert_eq(close_session_keep_subscriptions(c), UAS_GOOD);
        uas_client_delete(c);
    }
    uas_subs_figures f = settle_orphans(&e, 200);
    cr_expect_eq(f.orphans, 200, "orphans: %u", f.orphans);
    cr_expect_eq(f.current, 200, "subscriptions: %u", f.current);
    cr_expect_eq(f.orphans_dropped, SESSIONS * SUBS - 200, "dropped: %u", f.orphans_dropped);
    cr_expect_eq(f.monitored_items, 200);
    double rss1 = rss_mib();
    cr_expect_lt(rss1 - rss0, 64, "RSS grew from %.1f to %.1f MiB", rss0, rss1);
    /* The oldest went first: the first session's subscription is gone, the
     * last one's is there (another anonymous session of a None channel may
     * not take it: BadUserAccessDenied says it exists). */
    uas_client *c = env_client(&e, true, 0);
    cr_expect_eq(transfer(c, first), UAS_BAD_SUBSCRIPTION_ID_INVALID);
    uas_status st = transfer(c, last);
    cr_expect(st == UAS_BAD_USER_ACCESS_DENIED || st == UAS_GOOD, "%s", uas_status_name(st));
    /* ServerDiagnosticsSummary shows the live count. */
    cr_expect_eq(
        read_u32(
            c,
            UAS_NS0ID_SERVER_SERVERDIAGNOSTICS_SERVERDIAGNOSTICSSUMMARY_CURRENTSUBSCRIPTIONCOUNT),
        200);
    env_client_close(c);
    env_stop(&e);
}

static void short_orphans(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->max_orphan_lifetime_ms = 1000;
}

Test(sub_limits, an_orphan_lives_no_longer_than_max_orphan_lifetime, .timeout = 60)
{
    env e;
    env_options o = {.threads = 1, .configure = short_orphans};
    env_start(&e, &o);
    uas_client *c = env_client(&e, true, 0);
    uint32_t id;
    cr_assert_eq(env_create_sub(c, 100, 30000, &id), UAS_GOOD);
    cr_assert_eq(close_session_keep_subscriptions(c), UAS_GOOD);
    uas_client_delete(c);
    cr_expect_eq(settle_orphans(&e, 1).orphans, 1);
    bool never = false;
    env_run_until(&e, &never, 2000);
    uas_subs_figures f = figures(&e);
    cr_expect_eq(f.orphans, 0, "an orphan of a 100 ms x 30000 lifetime outlived 1 s");
    cr_expect_eq(f.current, 0);
    cr_expect_eq(f.orphans_dropped, 1);
    env_stop(&e);
}

/* ---- per-session, per-subscription and server-wide caps ---- */

static void small_caps(uas_server_config *cfg, void *ud)
{
    (void)ud;
    cfg->max_subscriptions = 12;
    cfg->max_subscriptions_per_session = 5;
    cfg->max_monitored_items_per_subscription = 60;
    cfg->max_monitored_items_per_session = 100;
    cfg->max_queued_per_subscription = 200;
}

Test(sub_limits, a_session_cannot_pass_its_caps, .timeout = 60)
{
    env e;
    env_options o = {.threads = 2, .configure = small_caps};
    env_start(&e, &o);
    uas_client *c = env_client(&e, true, 0);
    uint32_t ids[5], id;
    for (int i = 0; i < 5; i++)
        cr_assert_eq(env_create_sub(c, 100, 0, &ids[i]), UAS_GOOD);
    cr_expect_eq(env_create_sub(c, 100, 0, &id), UAS_BAD_TOO_MANY_SUBSCRIPTIONS);
    /* 60 per subscription... */
    uas_status st[200];
    uint32_t q[200];
    cr_assert_eq(env_create_items(c, ids[0], &(env_items){false, 61, 1, NULL}, st, NULL), UAS_GOOD);
    cr_expect_eq(st[59], UAS_GOOD);
    cr_expect_eq(st[60], UAS_BAD_TOO_MANY_MONITORED_ITEMS);
    /* ... 100 per session... */
    cr_assert_eq(env_create_items(c, ids[1], &(env_items){false, 50, 1, NULL}, st, NULL), UAS_GOOD);
    cr_expect_eq(st[39], UAS_GOOD);
    cr_expect_eq(st[40], UAS_BAD_TOO_MANY_MONITORED_ITEMS);
    cr_expect_eq(figures(&e).monitored_items, 100);
    /* ... and queue slots per subscription: 4 x 80 asked, 200 given. */
    cr_assert_eq(env_create_items(c, ids[2], &(env_items){true, 1, 0, "EventType"}, st, NULL),
                 UAS_GOOD); /* event item, queue 100 */
    cr_expect_eq(st[0], UAS_BAD_TOO_MANY_MONITORED_ITEMS, "the session has 100 items");
#ifndef UAS_TEST_NS0_REDUCED /* the reduced namespace 0 has no such nodes */
    /* The caps are advertised. */
    cr_expect_eq(read_u32(c, UAS_NS0ID_SERVER_SERVERCAPABILITIES_MAXSUBSCRIPTIONSPERSESSION), 5);
    cr_expect_eq(read_u32(c, UAS_NS0ID_SERVER_SERVERCAPABILITIES_MAXMONITOREDITEMSPERSUBSCRIPTION),
                 60);
    cr_expect_eq(read_u32(c, UAS_NS0ID_SERVER_SERVERCAPABILITIES_MAXSUBSCRIPTIONS), 12);
#endif

    /* Another session has caps of its own, but the server only 12
     * subscriptions in all, whichever loop serves them. */
    uas_client *d = env_client(&e, true, 0);
    uint32_t dsub;
    cr_assert_eq(env_create_sub(d, 100, 0, &dsub), UAS_GOOD);
    cr_assert_eq(env_create_items(d, dsub, &(env_items){false, 4, 80, NULL}, st, q), UAS_GOOD);
    cr_expect_eq(q[0], 80);
    cr_expect_eq(q[1], 80);
    cr_expect_eq(q[2], 40, "revised to the 200 slots of the subscription");
    cr_expect_eq(st[3], UAS_BAD_TOO_MANY_MONITORED_ITEMS);
    uas_client *more[6];
    unsigned created = 6; /* c's 5 and d's 1 */
    for (int i = 0; i < 6; i++) {
        more[i] = env_client(&e, true, 0);
        for (int k = 0; k < 2; k++)
            created += env_create_sub(more[i], 100, 0, &id) == UAS_GOOD;
    }
    cr_expect_eq(created, 12, "%u subscriptions on 2 loops", created);
    cr_expect_eq(figures(&e).current, 12);
    cr_expect_geq(figures(&e).refused, 5);
    for (int i = 0; i < 6; i++)
        env_client_close(more[i]);
    env_client_close(d);
    env_client_close(c);
    env_stop(&e);
}

/* ---- storms of a client that never reads ---- */

/* A client on a loop of its own that the test stops running once it is
 * set up: nothing it is sent is read any more. */
typedef struct hostile {
    uas_loop *loop;
    uas_client *c;
    uint32_t sub;
} hostile;

static void hostile_start(env *e, hostile *h)
{
    h->loop = uas_loop_new(0);
    cr_assert(h->loop);
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e->url;
    cfg.create_session = true;
    cfg.max_inflight = 65536;
    cfg.request_timeout_ms = 600000;
    h->c = uas_client_new(h->loop, &cfg, NULL, NULL);
    cr_assert(h->c);
    cr_assert_eq(uas_client_connect(h->c), UAS_GOOD);
    cr_assert_eq(uas_client_wait_state(h->c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS), UAS_GOOD);
    cr_assert_eq(env_create_sub(h->c, 100, 600, &h->sub), UAS_GOOD);
    uas_status st[1];
    cr_assert_eq(
        env_create_items(h->c, h->sub, &(env_items){true, 1, 10000, "EventType"}, st, NULL),
        UAS_GOOD);
    cr_assert_eq(st[0], UAS_GOOD);
}

static void hostile_stop(hostile *h)
{
    uas_client_delete(h->c);
    uas_loop_delete(h->loop);
}

static void ignore(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)c, (void)ud, (void)st, (void)resp, (void)t;
}

static uas_call_method_request method(uint32_t object, uint32_t m, uas_variant *args, size_t n)
{
    uas_call_method_request r;
    memset(&r, 0, sizeof(r));
    r.object_id = uas_nodeid_numeric(0, object);
    r.method_id = uas_nodeid_numeric(0, m);
    r.input_arguments = args;
    r.input_arguments_count = n;
    return r;
}

/* Sends n Calls of m without reading; returns how many went out. */
static unsigned storm(hostile *h, uas_call_method_request *m, unsigned n)
{
    uas_call_request req;
    memset(&req, 0, sizeof(req));
    req.methods_to_call = m;
    req.methods_to_call_count = 1;
    unsigned sent = 0;
    while (sent < n &&
           uas_client_request(h->c, &req, UAS_TYPE(CALL_REQUEST), ignore, NULL) == UAS_GOOD)
        sent++;
    return sent;
}

static uas_status call1(uas_client *c, uas_call_method_request *m)
{
    uas_call_request req;
    memset(&req, 0, sizeof(req));
    req.methods_to_call = m;
    req.methods_to_call_count = 1;
    uas_call_response resp;
    env_arena mm;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(CALL_REQUEST), &resp,
                                         UAS_TYPE(CALL_RESPONSE), env_arena_init(&mm), ENV_WAIT_MS);
    if (st == UAS_GOOD) {
        cr_assert_eq(resp.results_count, 1);
        st = resp.results[0].status_code;
    }
    uas_arena_free(&mm.a);
    return st;
}

Test(sub_limits, condition_refresh_storm_without_reading_stays_bounded, .timeout = 120)
{
#ifdef UAS_TEST_NS0_REDUCED
    cr_skip_test("the reduced namespace 0 has no ConditionType (nor ConditionRefresh)");
#endif
    env e;
    env_options o = {.threads = 2};
    env_start(&e, &o);
    double rss0 = rss_mib();
    hostile h;
    hostile_start(&e, &h);
    uas_variant arg;
    uas_variant_set_scalar(&arg, &h.sub, UAS_TYPE(UINT32));
    uas_call_method_request m =
        method(UAS_NS0ID_CONDITIONTYPE, UAS_NS0ID_CONDITIONTYPE_CONDITIONREFRESH, &arg, 1);
    unsigned sent = storm(&h, &m, 30000);
    cr_assert_gt(sent, 1000);
    /* The server works through the storm while others are served. */
    env_check_alive(&e);
    bool never = false;
    env_run_until(&e, &never, 2000);
    env_check_alive(&e);
    /* One refresh was in progress at a time: only its two events were
     * queued, every other call was refused. */
    uas_subs_figures f = figures(&e);
    cr_expect_geq(f.refused, 1000, "refused ConditionRefresh calls: %u", f.refused);
    double rss1 = rss_mib();
    cr_expect_lt(rss1 - rss0, 96, "RSS grew from %.1f to %.1f MiB", rss0, rss1);
    hostile_stop(&h);

    /* A normal client's ConditionRefresh: Good, then BadRefreshInProgress
     * until its events went out with a Publish. */
    uas_client *c = env_client(&e, true, 0);
    uint32_t sub;
    cr_assert_eq(env_create_sub(c, 100, 600, &sub), UAS_GOOD);
    uas_status st[1];
    cr_assert_eq(env_create_items(c, sub, &(env_items){true, 1, 10, "EventType"}, st, NULL),
                 UAS_GOOD);
    uas_variant_set_scalar(&arg, &sub, UAS_TYPE(UINT32));
    m = method(UAS_NS0ID_CONDITIONTYPE, UAS_NS0ID_CONDITIONTYPE_CONDITIONREFRESH, &arg, 1);
    cr_expect_eq(call1(c, &m), UAS_GOOD);
    cr_expect_eq(call1(c, &m), UAS_BAD_REFRESH_IN_PROGRESS);
    uas_publish_request preq;
    memset(&preq, 0, sizeof(preq));
    uas_publish_response presp;
    env_arena pm;
    bool seen_start = false, seen_end = false;
    for (int i = 0; i < 5 && !seen_end; i++) {
        cr_assert_eq(uas_client_call_sync(c, &preq, UAS_TYPE(PUBLISH_REQUEST), &presp,
                                          UAS_TYPE(PUBLISH_RESPONSE), env_arena_init(&pm),
                                          ENV_WAIT_MS),
                     UAS_GOOD);
        const uas_notification_message *nm = &presp.notification_message;
        for (size_t k = 0; k < nm->notification_data_count; k++) {
            const uas_extensionobject *x = &nm->notification_data[k];
            if (x->content.decoded.type != UAS_TYPE(EVENT_NOTIFICATION_LIST))
                continue;
            const uas_event_notification_list *l = x->content.decoded.data;
            for (size_t j = 0; j < l->events_count; j++) {
                const uas_variant *v = &l->events[j].event_fields[0];
                if (v->type != UAS_TYPE(NODE_ID))
                    continue;
                uint32_t t = ((const uas_nodeid *)v->data)->id.numeric;
                seen_start |= t == UAS_NS0ID_REFRESHSTARTEVENTTYPE;
                seen_end |= t == UAS_NS0ID_REFRESHENDEVENTTYPE;
            }
        }
        uas_arena_free(&pm.a);
    }
    cr_expect(seen_start && seen_end, "RefreshStart %d, RefreshEnd %d", seen_start, seen_end);
    cr_expect_eq(call1(c, &m), UAS_GOOD, "the last refresh was delivered");
    /* ConditionRefresh2 names an event item of the subscription. */
    uas_variant args2[2];
    uint32_t bad_item = 999;
    uas_variant_set_scalar(&args2[0], &sub, UAS_TYPE(UINT32));
    uas_variant_set_scalar(&args2[1], &bad_item, UAS_TYPE(UINT32));
    uas_call_method_request m2 =
        method(UAS_NS0ID_CONDITIONTYPE, UAS_NS0ID_CONDITIONTYPE_CONDITIONREFRESH2, args2, 2);
    cr_expect_eq(call1(c, &m2), UAS_BAD_MONITORED_ITEM_ID_INVALID);
    env_client_close(c);
    env_stop(&e);
}

Test(sub_limits, call_storm_without_reading_leaves_others_served, .timeout = 120)
{
    env e;
    env_options o = {.threads = 2};
    env_start(&e, &o);
    double rss0 = rss_mib();
    hostile h;
    hostile_start(&e, &h);
    uas_variant arg;
    uas_variant_set_scalar(&arg, &h.sub, UAS_TYPE(UINT32));
    uas_call_method_request m =
        method(UAS_NS0ID_SERVER, UAS_NS0ID_SERVER_GETMONITOREDITEMS, &arg, 1);
    unsigned sent = storm(&h, &m, 30000);
    cr_assert_gt(sent, 1000);
    env_check_alive(&e);
    bool never = false;
    env_run_until(&e, &never, 2000);
    env_check_alive(&e);
    double rss1 = rss_mib();
    cr_expect_lt(rss1 - rss0, 160, "RSS grew from %.1f to %.1f MiB", rss0, rss1);
    hostile_stop(&h);
    env_stop(&e);
}

#ifdef UAS_ENABLE_ENCRYPTION
/* ---- orphans of one user identity ---- */

#define BOB_PASSWORD "pw-of-bob-1"

typedef struct user_world {
    env e;
    char dir[64], pki[128], users[128];
} user_world;

static void user_caps(uas_server_config *cfg, void *ud)
{
    user_world *w = ud;
    cfg->security = "None, Basic256Sha256:SignAndEncrypt";
    cfg->pki_dir = w->pki;
    cfg->users_file = w->users;
    cfg->max_orphaned_per_user = 3;
    cfg->log_level = UAS_LOG_ERROR;
}

static uas_client *bob(env *e)
{
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = e->url;
    cfg.create_session = true;
    cfg.user.kind = UAS_CLIENT_USER_NAME;
    cfg.user.name = "bob";
    cfg.user.password = BOB_PASSWORD;
    cfg.user.password_len = strlen(BOB_PASSWORD);
    uas_client *c = uas_client_new(e->loop, &cfg, NULL, NULL);
    cr_assert(c);
    cr_assert_eq(uas_client_connect(c), UAS_GOOD);
    cr_assert_eq(uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS), UAS_GOOD);
    return c;
}

Test(sub_limits, orphans_of_one_user_are_capped_and_still_transferable, .timeout = 120)
{
    user_world w;
    memset(&w, 0, sizeof(w));
    snprintf(w.dir, sizeof(w.dir), "/tmp/uas-suborph-XXXXXX");
    cr_assert(mkdtemp(w.dir));
    snprintf(w.pki, sizeof(w.pki), "%s/pki", w.dir);
    snprintf(w.users, sizeof(w.users), "%s/users", w.dir);
    bool added = false;
    cr_assert_eq(uas_user_add(w.users, "bob", BOB_PASSWORD, strlen(BOB_PASSWORD), NULL, &added),
                 UAS_GOOD);
    env_options o = {.threads = 2, .configure = user_caps, .configure_ud = &w};
    env_start(&w.e, &o);
    /* An anonymous session's orphan is another owner's: it stays. */
    uas_client *anon = env_client(&w.e, true, 0);
    uint32_t anon_id, ids[10];
    cr_assert_eq(env_create_sub(anon, 100, 30000, &anon_id), UAS_GOOD);
    cr_assert_eq(close_session_keep_subscriptions(anon), UAS_GOOD);
    uas_client_delete(anon);
    for (int i = 0; i < 5; i++) {
        uas_client *c = bob(&w.e);
        cr_assert_eq(env_create_sub(c, 100, 30000, &ids[2 * i]), UAS_GOOD);
        cr_assert_eq(env_create_sub(c, 100, 30000, &ids[2 * i + 1]), UAS_GOOD);
        cr_assert_eq(close_session_keep_subscriptions(c), UAS_GOOD);
        uas_client_delete(c);
        settle_orphans(&w.e, (uint32_t)(i < 1 ? 3 : 4));
    }
    uas_subs_figures f = settle_orphans(&w.e, 4);
    cr_expect_eq(f.orphans, 4, "bob's 3 and the anonymous one: %u", f.orphans);
    cr_expect_eq(f.orphans_dropped, 7);
    /* Bob takes his newest orphan over; his oldest are gone. */
    uas_client *c = bob(&w.e);
    cr_expect_eq(transfer(c, ids[0]), UAS_BAD_SUBSCRIPTION_ID_INVALID);
    cr_expect_eq(transfer(c, ids[6]), UAS_BAD_SUBSCRIPTION_ID_INVALID);
    cr_expect_eq(transfer(c, ids[9]), UAS_GOOD);
    cr_expect_eq(transfer(c, anon_id), UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(figures(&w.e).orphans, 3);
    env_client_close(c);
    env_stop(&w.e);
    cr_expect(env_rmtree(w.dir));
}
#endif
