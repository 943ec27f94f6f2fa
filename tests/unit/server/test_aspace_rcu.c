/* Lock-free Reads (aspace_rcu.h) under fire: three threads act as event
 * loops (announcing quiescent points as the loops do) and Read without any
 * lock, while NodeManagement adds and deletes nodes (the hash table grows
 * and is replaced under them), Writes replace a string and an array value,
 * and a node's RolePermissions are replaced. Every value read must be one
 * that was written, whole: a snapshot freed too early shows up as a torn
 * or foreign value, and under AddressSanitizer as a use after free. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "aspace_internal.h"
#include "authz.h"
#include "helper_aspace.h"

#define RW    (UAS_ACCESS_LEVEL_TYPE_CURRENT_READ | UAS_ACCESS_LEVEL_TYPE_CURRENT_WRITE)
#define LOOPS 3
#define ADDS  3000

static fx f;

typedef struct stress {
    atomic_bool stop;
    atomic_int bad;
    atomic_long reads;
    atomic_int added; /* nodes N1(10000 + k) for k < added were added */
} stress;

static stress st;

static void setup(void)
{
    uas_server_config c;
    uas_server_config_default(&c);
    c.threads = LOOPS; /* one reclamation slot per loop; the loops do not run */
    fx_init(&f, &c);
}

static void teardown(void)
{
    fx_fini(&f);
}

TestSuite(rcu, .init = setup, .fini = teardown);

static void bad(const char *what)
{
    if (atomic_fetch_add(&st.bad, 1) < 5)
        fprintf(stderr, "bad read: %s\n", what);
}

/* ---- readers: one per loop slot ---- */

static void check_string(const uas_datavalue *d)
{
    if (d->status != UAS_GOOD || !d->value.type || d->value.type != UAS_TYPE(STRING)) {
        bad("string status or type");
        return;
    }
    const uas_string *s = d->value.data;
    if (!s->data || s->length < 1 || s->length > 290) {
        bad("string length");
        return;
    }
    for (size_t i = 1; i < s->length; i++)
        if (s->data[i] != s->data[0]) {
            bad("torn string");
            return;
        }
    /* The length says which write it was. */
    if ((size_t)(s->data[0] - 'a') != (s->length - 1) % 26)
        bad("foreign string");
}

static void check_array(const uas_datavalue *d)
{
    if (d->status != UAS_GOOD || d->value.type != UAS_TYPE(INT32) || !d->value.is_array) {
        bad("array status or type");
        return;
    }
    const int32_t *x = d->value.data;
    size_t n = d->value.array_length;
    if (n < 1 || n > 64) {
        bad("array length");
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (x[i] != (int32_t)n * 1000 + (int32_t)i) {
            bad("torn array");
            return;
        }
}

static void check_rp(const uas_datavalue *d)
{
    if (d->status != UAS_GOOD || !d->value.is_array) {
        bad("role permissions status");
        return;
    }
    const uas_role_permission_type *rp = d->value.data;
    size_t n = d->value.array_length;
    if (n != 1 && n != 3) {
        bad("role permissions count");
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (rp[i].permissions != 0x100u + (uint32_t)n) {
            bad("torn role permissions");
            return;
        }
}

static void check_added(const uas_datavalue *d, uint32_t k, int added_before)
{
    if (d->status == UAS_BAD_NODE_ID_UNKNOWN) {
        /* Deleted (odd k) or not added yet; the ones added before the
         * read started and not deleted must be found. */
        if ((int)k < added_before && k % 2 == 0)
            bad("added node not found");
        return;
    }
    if (d->status != UAS_GOOD || d->value.type != UAS_TYPE(QUALIFIED_NAME)) {
        bad("browse name status");
        return;
    }
    const uas_qualifiedname *q = d->value.data;
    char want[32];
    snprintf(want, sizeof(want), "o%u", (unsigned)k);
    if (q->ns != 1 || !uas_string_eq_cstr(&q->name, want))
        bad("wrong node");
}

static void *reader(void *p)
{
    unsigned slot = (unsigned)(uintptr_t)p;
    static _Thread_local uint8_t first[16384];
    uas_arena a;
    uas_arena_init(&a, first, sizeof(first), 0);
    uas_session se;
    memset(&se, 0, sizeof(se));
    se.activated = true;
    se.roles = UAS_ROLES_INTERNAL;
    uas_request_ctx ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.server = f.s;
    ctx.session = &se;
    ctx.arena = &a;
    uint32_t rnd = 12345u + slot;
    while (!atomic_load(&st.stop)) {
        /* One "loop iteration": online, a few requests, offline. */
        uas_aspace_loop_online(f.s->as, slot);
        for (int req = 0; req < 8; req++) {
            rnd = rnd * 1103515245u + 12345u;
            int added = atomic_load(&st.added);
            uint32_t k = added ? (rnd >> 8) % (uint32_t)added : 0;
            uas_read_value_id ids[4];
            memset(ids, 0, sizeof(ids));
            ids[0].node_id = S1("str");
            ids[0].attribute_id = 13;
            ids[1].node_id = S1("arr");
            ids[1].attribute_id = 13;
            ids[2].node_id = S1("str");
            ids[2].attribute_id = 24; /* RolePermissions */
            ids[3].node_id = N1(10000 + k);
            ids[3].attribute_id = 3; /* BrowseName */
            uas_read_request rq;
            memset(&rq, 0, sizeof(rq));
            rq.nodes_to_read = ids;
            rq.nodes_to_read_count = added ? 4 : 3;
            rq.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
            uas_read_response rs;
            memset(&rs, 0, sizeof(rs));
            ctx.now = uas_datetime_now();
            uas_svc_read(&ctx, &rq, &rs);
            if (rs.response_header.service_result != UAS_GOOD) {
                bad("service result");
            } else {
                check_string(&rs.results[0]);
                check_array(&rs.results[1]);
                check_rp(&rs.results[2]);
                if (added)
                    check_added(&rs.results[3], k, added);
            }
            uas_arena_reset(&a);
            atomic_fetch_add_explicit(&st.reads, 1, memory_order_relaxed);
        }
        uas_aspace_loop_offline(f.s->as, slot);
    }
    uas_arena_free(&a);
    return NULL;
}

/* ---- mutators ---- */

static void *writer(void *p)
{
    (void)p;
    char buf[300];
    int32_t arr[64];
    uas_nodeid str = S1("str"), an = S1("arr");
    for (int i = 0; !atomic_load(&st.stop); i++) {
        size_t n = 1 + (size_t)(i * 37 % 290);
        memset(buf, 'a' + (int)((n - 1) % 26), n);
        buf[n] = 0;
        uas_string s = uas_string_from(buf);
        uas_variant v;
        uas_variant_set_scalar(&v, &s, UAS_TYPE(STRING));
        if (uas_server_write_value(f.s, &str, &v) != UAS_GOOD)
            bad("string write");
        size_t m = 1 + (size_t)(i * 7 % 64);
        for (size_t j = 0; j < m; j++)
            arr[j] = (int32_t)m * 1000 + (int32_t)j;
        uas_variant_set_array(&v, arr, m, UAS_TYPE(INT32));
        if (uas_server_write_value(f.s, &an, &v) != UAS_GOOD)
            bad("array write");
        uas_role_permission_type rp[3];
        memset(rp, 0, sizeof(rp));
        size_t c = i % 2 ? 3 : 1;
        for (size_t j = 0; j < c; j++) {
            rp[j].role_id = N0(UAS_NS0ID_WELLKNOWNROLE_OBSERVER);
            rp[j].permissions = 0x100u + (uint32_t)c;
        }
        if (uas_server_set_role_permissions(f.s, &str, rp, c) != UAS_GOOD)
            bad("role permissions");
    }
    return NULL;
}

/* NodeManagement on a context of its own: adds objects N1(10000 + k) and
 * deletes the odd ones again. */
static void *node_manager(void *p)
{
    (void)p;
    static uint8_t first[8192];
    uas_arena a;
    uas_arena_init(&a, first, sizeof(first), 0);
    uas_request_ctx ctx = f.ctx;
    ctx.arena = &a;
    for (uint32_t k = 0; k < ADDS; k++) {
        char name[32];
        snprintf(name, sizeof(name), "o%u", (unsigned)k);
        uas_add_nodes_item it;
        memset(&it, 0, sizeof(it));
        it.parent_node_id = X(N0(UAS_NS0ID_OBJECTSFOLDER));
        it.reference_type_id = N0(UAS_NS0ID_ORGANIZES);
        it.requested_new_node_id = X(N1(10000 + k));
        it.browse_name = QN(1, name);
        it.node_class = UAS_NODE_CLASS_OBJECT;
        it.type_definition = X(N0(UAS_NS0ID_BASEOBJECTTYPE));
        uas_add_nodes_request rq;
        memset(&rq, 0, sizeof(rq));
        rq.nodes_to_add = &it;
        rq.nodes_to_add_count = 1;
        uas_add_nodes_response rs;
        memset(&rs, 0, sizeof(rs));
        uas_svc_add_nodes(&ctx, &rq, &rs);
        if (rs.response_header.service_result != UAS_GOOD || rs.results[0].status_code != UAS_GOOD)
            bad("add");
        atomic_store(&st.added, (int)k + 1);
        if (k % 2) {
            uas_delete_nodes_item d = {.node_id = N1(10000 + k), .delete_target_references = true};
            uas_delete_nodes_request drq;
            memset(&drq, 0, sizeof(drq));
            drq.nodes_to_delete = &d;
            drq.nodes_to_delete_count = 1;
            uas_delete_nodes_response drs;
            memset(&drs, 0, sizeof(drs));
            uas_svc_delete_nodes(&ctx, &drq, &drs);
            if (drs.response_header.service_result != UAS_GOOD || drs.results[0] != UAS_GOOD)
                bad("delete");
        }
        uas_arena_reset(&a);
    }
    uas_arena_free(&a);
    return NULL;
}

Test(rcu, reads_on_three_loops_during_node_management_and_writes)
{
#ifdef UAS_SINGLE_LOOP
    cr_skip_test("one event loop: no second thread reads");
#endif
    uas_variant v = v_string(&f, "a");
    cr_assert_eq(add_var(&f, S1("str"), "Str", &v, N0(UAS_NS0ID_STRING), -1, RW), UAS_GOOD);
    int32_t one = 1000;
    v = v_int32_array(&f, &one, 1);
    cr_assert_eq(add_var(&f, S1("arr"), "Arr", &v, N0(UAS_NS0ID_INT32), 1, RW), UAS_GOOD);
    uas_role_permission_type rp = {.role_id = N0(UAS_NS0ID_WELLKNOWNROLE_OBSERVER),
                                   .permissions = 0x101u};
    uas_nodeid str = S1("str");
    cr_assert_eq(uas_server_set_role_permissions(f.s, &str, &rp, 1), UAS_GOOD);
    atomic_store(&st.stop, false);
    atomic_store(&st.bad, 0);
    atomic_store(&st.reads, 0);
    atomic_store(&st.added, 0);
    pthread_t rd[LOOPS], w, nm;
    for (unsigned i = 0; i < LOOPS; i++)
        pthread_create(&rd[i], NULL, reader, (void *)(uintptr_t)i);
    pthread_create(&w, NULL, writer, NULL);
    pthread_create(&nm, NULL, node_manager, NULL);
    pthread_join(nm, NULL);
    /* Writes and reads go on for a while after the last add: the longer
     * they overlap, the likelier an early free is caught. */
    struct timespec t = {2, 0};
    nanosleep(&t, NULL);
    atomic_store(&st.stop, true);
    pthread_join(w, NULL);
    for (unsigned i = 0; i < LOOPS; i++)
        pthread_join(rd[i], NULL);
    cr_assert_eq(atomic_load(&st.bad), 0, "%d bad reads", atomic_load(&st.bad));
    cr_assert_gt(atomic_load(&st.reads), 1000);
    /* Replaced snapshots and tables were retired, and freed once every
     * loop passed a quiescent point (readers are offline now). */
    as_rcu *r = &f.s->as->rcu;
    cr_assert_gt(atomic_load(&r->retired), 100);
    as_rcu_reclaim(r);
    cr_assert_eq(atomic_load(&r->freed), atomic_load(&r->retired));
}

/* A loop that stays online (a long iteration) holds reclamation back;
 * once it passes a quiescent point the snapshot is freed. */
Test(rcu, online_loop_holds_back_reclamation)
{
    uas_variant v = v_string(&f, "a");
    cr_assert_eq(add_var(&f, S1("str"), "Str", &v, N0(UAS_NS0ID_STRING), -1, RW), UAS_GOOD);
    as_rcu *r = &f.s->as->rcu;
    uas_aspace_loop_online(f.s->as, 0);
    uas_nodeid id = S1("str");
    uas_variant w = v_string(&f, "bb");
    cr_assert_eq(uas_server_write_value(f.s, &id, &w), UAS_GOOD);
    cr_assert_eq(uas_server_write_value(f.s, &id, &w), UAS_GOOD); /* retires the first */
    uint64_t retired = atomic_load(&r->retired);
    cr_assert_geq(retired, 1);
    as_rcu_reclaim(r);
    cr_assert_eq(atomic_load(&r->freed), 0, "freed while a loop may hold it");
    as_rcu_quiescent(r, 0);
    as_rcu_reclaim(r);
    cr_assert_eq(atomic_load(&r->freed), retired);
    uas_aspace_loop_offline(f.s->as, 0);
}
