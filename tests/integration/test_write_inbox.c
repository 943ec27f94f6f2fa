/* Writes reach monitored items of other loops through each engine's inbox
 * (issue 16) without losing a value: two threads of the program write one
 * node as fast as they can, interleaved, while a client's monitored item
 * (sampling interval 0, a queue for every value) on a two-loop server
 * watches it. Every written value must arrive exactly once, each writer's
 * values in the order written, and the last one must be the node's value.
 * A hook that samples the node when it is told of a change, instead of
 * carrying the written value, loses or repeats values here. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "helper_sub.h"

enum { PER_WRITER = 150, WRITERS = 2, NODE = 1001 };

typedef struct writer_arg {
    env *e;
    int first; /* writes first, first + WRITERS, ... */
    atomic_int *go;
    int failed;
} writer_arg;

static void *writer(void *p)
{
    writer_arg *w = p;
    while (!atomic_load(w->go))
        ;
    uas_nodeid id = uas_nodeid_numeric(1, NODE);
    for (int i = 0; i < PER_WRITER; i++) {
        int32_t x = w->first + i * WRITERS;
        uas_variant v;
        uas_variant_set_scalar(&v, &x, UAS_TYPE(INT32));
        if (uas_server_write_value(w->e->server, &id, &v) != UAS_GOOD)
            w->failed++;
    }
    return NULL;
}

Test(write_inbox, every_interleaved_write_reaches_a_monitored_item_in_order)
{
#ifdef UAS_SINGLE_LOOP
    /* One loop and its locks compiled out: the program may write only from
     * the loop's thread, so two writer threads are outside the profile. */
    cr_skip_test("one event loop: no concurrent writers, no other loop's inbox");
#endif
    env e;
    env_options o = {.threads = 2};
    env_start(&e, &o);
    uas_client *c = env_client(&e, true, 0);

    /* Start from a value no writer writes. */
    uas_nodeid id = uas_nodeid_numeric(1, NODE);
    int32_t zero = 0;
    uas_variant v0;
    uas_variant_set_scalar(&v0, &zero, UAS_TYPE(INT32));
    cr_assert_eq(uas_server_write_value(e.server, &id, &v0), UAS_GOOD);

    uas_create_subscription_request sreq;
    memset(&sreq, 0, sizeof(sreq));
    sreq.requested_publishing_interval = 50;
    sreq.requested_lifetime_count = 600;
    sreq.requested_max_keep_alive_count = 10;
    sreq.max_notifications_per_publish = 0;
    sreq.publishing_enabled = true;
    uas_create_subscription_response sresp;
    env_arena m;
    cr_assert_eq(uas_client_call_sync(c, &sreq, UAS_TYPE(CREATE_SUBSCRIPTION_REQUEST), &sresp,
                                      UAS_TYPE(CREATE_SUBSCRIPTION_RESPONSE), env_arena_init(&m),
                                      ENV_WAIT_MS),
                 UAS_GOOD);
    uint32_t sub = sresp.subscription_id;
    uas_arena_free(&m.a);

    uas_monitored_item_create_request it;
    memset(&it, 0, sizeof(it));
    it.item_to_monitor.node_id = id;
    it.item_to_monitor.attribute_id = ENV_ATTR_VALUE;
    it.monitoring_mode = UAS_MONITORING_MODE_REPORTING;
    it.requested_parameters.client_handle = 7;
    it.requested_parameters.sampling_interval = 0;
    it.requested_parameters.queue_size = WRITERS * PER_WRITER + 10;
    it.requested_parameters.discard_oldest = true;
    uas_create_monitored_items_request mreq;
    memset(&mreq, 0, sizeof(mreq));
    mreq.subscription_id = sub;
    mreq.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    mreq.items_to_create = &it;
    mreq.items_to_create_count = 1;
    uas_create_monitored_items_response mresp;
    cr_assert_eq(uas_client_call_sync(c, &mreq, UAS_TYPE(CREATE_MONITORED_ITEMS_REQUEST), &mresp,
                                      UAS_TYPE(CREATE_MONITORED_ITEMS_RESPONSE), env_arena_init(&m),
                                      ENV_WAIT_MS),
                 UAS_GOOD);
    cr_assert_eq(mresp.results[0].status_code, UAS_GOOD);
    cr_assert_geq(mresp.results[0].revised_queue_size, WRITERS * PER_WRITER + 1,
                  "queue revised to %u", mresp.results[0].revised_queue_size);
    cr_assert_eq(mresp.results[0].revised_sampling_interval, 0.0);
    uas_arena_free(&m.a);

    /* Two program threads write, interleaved. */
    atomic_int go = 0;
    writer_arg wa[WRITERS];
    pthread_t th[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        wa[w] = (writer_arg){&e, w + 1, &go, 0};
        pthread_create(&th[w], NULL, writer, &wa[w]);
    }
    atomic_store(&go, 1);
    for (int w = 0; w < WRITERS; w++) {
        pthread_join(th[w], NULL);
        cr_assert_eq(wa[w].failed, 0);
    }
    int32_t final = env_read_i32(c, NODE);

    /* Collect the item's values until the final one came and no more do. */
    static int32_t got[WRITERS * PER_WRITER * 2 + 16];
    size_t n = 0;
    int quiet = 0;
    while (quiet < 3) {
        uas_publish_request preq;
        memset(&preq, 0, sizeof(preq));
        uas_publish_response presp;
        cr_assert_eq(uas_client_call_sync(c, &preq, UAS_TYPE(PUBLISH_REQUEST), &presp,
                                          UAS_TYPE(PUBLISH_RESPONSE), env_arena_init(&m),
                                          ENV_WAIT_MS),
                     UAS_GOOD);
        const uas_notification_message *nm = &presp.notification_message;
        size_t before = n;
        for (size_t k = 0; k < nm->notification_data_count; k++) {
            const uas_extensionobject *x = &nm->notification_data[k];
            if (x->content.decoded.type != UAS_TYPE(DATA_CHANGE_NOTIFICATION))
                continue;
            const uas_data_change_notification *d = x->content.decoded.data;
            for (size_t j = 0; j < d->monitored_items_count; j++) {
                const uas_monitored_item_notification *mi = &d->monitored_items[j];
                cr_assert_eq(mi->client_handle, 7);
                cr_assert_eq(mi->value.value.type, UAS_TYPE(INT32));
                cr_assert_lt(n, sizeof(got) / sizeof(got[0]));
                got[n++] = *(const int32_t *)mi->value.value.data;
            }
        }
        uas_arena_free(&m.a);
        quiet = n == before ? quiet + 1 : 0;
    }

    /* The first is the value at creation (0); then every write once. */
    cr_assert_geq(n, 1);
    cr_expect_eq(got[0], 0);
    static int seen[WRITERS * PER_WRITER + 1];
    memset(seen, 0, sizeof(seen));
    int32_t last[WRITERS] = {0};
    size_t dup = 0, order = 0;
    for (size_t i = 1; i < n; i++) {
        int32_t x = got[i];
        cr_assert(x >= 1 && x <= WRITERS * PER_WRITER, "foreign value %d", x);
        if (seen[x]++)
            dup++;
        int w = (x - 1) % WRITERS;
        if (x <= last[w])
            order++;
        last[w] = x;
    }
    size_t missing = 0;
    for (int x = 1; x <= WRITERS * PER_WRITER; x++)
        missing += seen[x] == 0;
    cr_expect_eq(missing, 0, "%zu of %d written values never arrived", missing,
                 WRITERS * PER_WRITER);
    cr_expect_eq(dup, 0, "%zu values arrived twice", dup);
    cr_expect_eq(order, 0, "%zu values out of their writer's order", order);
    cr_expect_eq(got[n - 1], final, "last notification %d, node value %d", got[n - 1], final);

    env_client_close(c);
    env_stop(&e);
}
