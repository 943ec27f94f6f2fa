/* `uaserver --self-load SCENARIO ...`: request scenarios (read, write,
 * browse), closed loop or at a fixed offered rate (--rate), against a child uaserver (or --target
 * URL), measured the way the peer's harness measures: server CPU and heap per operation from the
 * child only, latency from a log-linear histogram, several rounds with variants alternated and
 * reversed every other round, median and range. The subscription scenarios (sub, sessions,
 * counters) live in scn_sub.c and share the options, the rounds and the result block. */
#define _GNU_SOURCE
#include <ev.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <ua/log.h>
#include <ua/nodeids.h>

#include "loadgen_internal.h"

enum { MAX_VARIANTS = LG_MAX_VARIANTS, MAX_ROUNDS = LG_MAX_ROUNDS };

typedef struct lg_run lg_run;
typedef struct lg_sess lg_sess;

typedef struct lg_slot {
    lg_sess *s;
    uint64_t sent_ns;
} lg_slot;

struct lg_sess {
    lg_run *run;
    uas_client *c;
    lg_slot *slots;
    unsigned index;
    uas_read_request rr;
    uas_write_request wr;
    uas_browse_request br;
    uas_read_value_id *ids;
    uas_write_value *wv;
    int32_t *vals;
    uas_browse_description bd;
    unsigned *free_slots; /* open loop: slots with no request outstanding */
    unsigned nfree;
};

enum { PH_CONNECT, PH_WARMUP, PH_MEASURE, PH_DRAIN };

struct lg_run {
    const lg_opts *o;
    const lg_sec *sec;
    bool secure_sessions; /* the measured sessions use sec (else None) */
    uas_loop *loop;
    lg_sess *sess;
    int phase;
    uint64_t outstanding;
    uint64_t ops, errors;
    uint64_t answered; /* good responses in every phase, for the progress line */
    uas_status first_error;
    uas_hist hist;
    /* Open loop (--rate): request k is due at rate_t0 + k / rate and goes
     * to session k % sessions; due, late and capped count the window. */
    ev_timer pace;
    uint64_t rate_t0, rate_next, late_ns;
    uint64_t due, late, capped;
    lg_logins *logins; /* --logins: secured session set-ups beside the load */
};

static void issue(lg_slot *slot, uint64_t due_ns);

/* A response counts only if it carries what was asked for: one result per
 * node, each Good (and, for reads, an Int32 value). */
static uas_status check_response(const lg_opts *o, const void *resp, const uas_type *t)
{
    if (!resp)
        return UAS_BAD_NO_DATA;
    if (t == UAS_TYPE(READ_RESPONSE)) {
        const uas_read_response *r = resp;
        if (r->results_count != o->nodes)
            return UAS_BAD_UNEXPECTED_ERROR;
        for (size_t i = 0; i < r->results_count; i++)
            if ((r->results[i].has_status && uas_is_bad(r->results[i].status)) ||
                !r->results[i].value.type || r->results[i].value.type->kind != UAS_BUILTIN_INT32)
                return r->results[i].has_status ? r->results[i].status : UAS_BAD_TYPE_MISMATCH;
    } else if (t == UAS_TYPE(WRITE_RESPONSE)) {
        const uas_write_response *r = resp;
        if (r->results_count != o->nodes)
            return UAS_BAD_UNEXPECTED_ERROR;
        for (size_t i = 0; i < r->results_count; i++)
            if (uas_is_bad(r->results[i]))
                return r->results[i];
    } else if (t == UAS_TYPE(BROWSE_RESPONSE)) {
        const uas_browse_response *r = resp;
        if (r->results_count != 1 || uas_is_bad(r->results[0].status_code) ||
            r->results[0].references_count == 0)
            return UAS_BAD_UNEXPECTED_ERROR;
    } else {
        return UAS_BAD_UNEXPECTED_ERROR;
    }
    return UAS_GOOD;
}

static void on_response(uas_client *c, void *ud, uas_status st, const void *resp, const uas_type *t)
{
    (void)c;
    lg_slot *slot = ud;
    lg_run *run = slot->s->run;
    if (st == UAS_GOOD)
        st = check_response(run->o, resp, t);
    run->outstanding--;
    if (st == UAS_GOOD)
        run->answered++;
    if (run->phase == PH_MEASURE) {
        if (st == UAS_GOOD) {
            run->ops++;
            uas_hist_add(&run->hist, lg_now_ns() - slot->sent_ns);
        } else {
            if (!run->errors)
                run->first_error = st;
            run->errors++;
        }
    }
    if (run->o->rate > 0)
        slot->s->free_slots[slot->s->nfree++] = (unsigned)(slot - slot->s->slots);
    else if (run->phase == PH_WARMUP || run->phase == PH_MEASURE)
        issue(slot, lg_now_ns());
}

/* Open loop: sends every request due by now. A request whose session has
 * --inflight outstanding is not sent (and counted): queueing it would turn
 * the open loop back into a closed one. The pace timer fires every
 * millisecond (epoll's timeout resolution), so a request normally leaves
 * within about 1 ms of its time; one later than run->late_ns means the
 * load generator fell behind and is counted. Latency counts from the send:
 * the lateness is reported on its own instead of being added to the
 * server's answer time. */
static void pace(lg_run *run)
{
    const lg_opts *o = run->o;
    if (run->phase != PH_WARMUP && run->phase != PH_MEASURE)
        return;
    uint64_t now = lg_now_ns();
    double per_ns = 1e9 / o->rate;
    uint64_t due_by_now = (uint64_t)((double)(now - run->rate_t0) / per_ns) + 1;
    bool measured = run->phase == PH_MEASURE;
    while (run->rate_next < due_by_now) {
        uint64_t at = run->rate_t0 + (uint64_t)((double)run->rate_next * per_ns);
        lg_sess *s = &run->sess[run->rate_next % o->sessions];
        run->rate_next++;
        run->due += measured;
        if (!s->nfree) {
            run->capped += measured;
            continue;
        }
        if (now - at > run->late_ns)
            run->late += measured;
        issue(&s->slots[s->free_slots[--s->nfree]], now);
    }
}

static void on_pace(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    pace(w->data);
}

static void issue(lg_slot *slot, uint64_t due_ns)
{
    lg_sess *s = slot->s;
    const lg_opts *o = s->run->o;
    slot->sent_ns = due_ns;
    uas_status st;
    switch (o->scenario) {
    case SC_WRITE:
        st = uas_client_request(s->c, &s->wr, UAS_TYPE(WRITE_REQUEST), on_response, slot);
        break;
    case SC_BROWSE:
        st = uas_client_request(s->c, &s->br, UAS_TYPE(BROWSE_REQUEST), on_response, slot);
        break;
    default:
        st = uas_client_request(s->c, &s->rr, UAS_TYPE(READ_REQUEST), on_response, slot);
        break;
    }
    if (st == UAS_GOOD) {
        s->run->outstanding++;
        return;
    }
    if (o->rate > 0)
        s->free_slots[s->nfree++] = (unsigned)(slot - s->slots);
    if (s->run->phase == PH_MEASURE) {
        if (!s->run->errors)
            s->run->first_error = st;
        s->run->errors++;
    }
}

/* Requests are built once per session; the client only reads them. */
static int build_requests(lg_sess *s, const lg_opts *o)
{
    unsigned n = o->nodes;
    s->ids = calloc(n, sizeof(*s->ids));
    s->wv = calloc(n, sizeof(*s->wv));
    s->vals = calloc(n, sizeof(*s->vals));
    s->slots = calloc(o->inflight, sizeof(*s->slots));
    s->free_slots = calloc(o->inflight, sizeof(*s->free_slots));
    if (!s->ids || !s->wv || !s->vals || !s->slots || !s->free_slots)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        uint32_t id = 1001 + (s->index * 7 + i) % 100;
        s->ids[i].node_id = uas_nodeid_numeric(1, id);
        s->ids[i].attribute_id = 13;
        s->vals[i] = (int32_t)i;
        s->wv[i].node_id = s->ids[i].node_id;
        s->wv[i].attribute_id = 13;
        s->wv[i].value.has_value = true;
        uas_variant_set_scalar(&s->wv[i].value.value, &s->vals[i], UAS_TYPE(INT32));
    }
    s->rr.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_NEITHER;
    s->rr.nodes_to_read_count = n;
    s->rr.nodes_to_read = s->ids;
    s->wr.nodes_to_write_count = n;
    s->wr.nodes_to_write = s->wv;
    s->bd.node_id = uas_nodeid_numeric(0, UAS_NS0ID_SERVER);
    s->bd.browse_direction = UAS_BROWSE_DIRECTION_FORWARD;
    s->bd.reference_type_id = uas_nodeid_numeric(0, UAS_NS0ID_HIERARCHICALREFERENCES);
    s->bd.include_subtypes = true;
    s->bd.result_mask = 63;
    s->br.nodes_to_browse_count = 1;
    s->br.nodes_to_browse = &s->bd;
    for (unsigned i = 0; i < o->inflight; i++) {
        s->slots[i].s = s;
        s->free_slots[i] = o->inflight - 1 - i;
    }
    s->nfree = o->inflight;
    return 0;
}

static void free_sess(lg_sess *s)
{
    if (s->c)
        uas_client_delete(s->c);
    free(s->ids);
    free(s->wv);
    free(s->vals);
    free(s->slots);
    free(s->free_slots);
}

/* UInt64 variables ns=1;s=<name> of the child, read in one request. */
static int read_u64s(uas_client *ctrl, const char *const *names, size_t n, uint64_t *out)
{
    uas_read_value_id ids[4];
    memset(ids, 0, sizeof(ids));
    for (size_t i = 0; i < n; i++) {
        ids[i].node_id = uas_nodeid_string(1, names[i]);
        ids[i].attribute_id = 13;
    }
    uas_read_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_read = ids;
    req.nodes_to_read_count = n;
    uas_read_response resp;
    uint8_t mem[4096];
    uas_arena a;
    uas_arena_init(&a, mem, sizeof(mem), 1 << 20);
    uas_status st = uas_client_call_sync(ctrl, &req, UAS_TYPE(READ_REQUEST), &resp,
                                         UAS_TYPE(READ_RESPONSE), &a, 10000);
    int rc = st == UAS_GOOD && resp.results_count == n ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const uas_variant *v = &resp.results[i].value;
        if (!v->type || v->type->kind != UAS_BUILTIN_UINT64 || v->is_array)
            rc = -1;
        else
            out[i] = *(const uint64_t *)v->data;
    }
    uas_arena_free(&a);
    return rc;
}

int lg_read_heap(uas_client *ctrl, uint64_t *bytes, uint64_t *allocs)
{
    static const char *const names[] = {"uastack.HeapBytesAllocated", "uastack.HeapAllocations"};
    uint64_t v[2];
    if (read_u64s(ctrl, names, 2, v) != 0)
        return -1;
    *bytes = v[0];
    *allocs = v[1];
    return 0;
}

int lg_read_lock_waits(uas_client *ctrl, uint64_t waits[4])
{
    static const char *const names[] = {"uastack.LockWaits.AddressSpace", "uastack.LockWaits.Value",
                                        "uastack.LockWaits.Session",
                                        "uastack.LockWaits.Subscriptions"};
    return read_u64s(ctrl, names, 4, waits);
}

void lg_lock_waits_delta(uas_result *r, const uint64_t a[4], const uint64_t b[4])
{
    r->has_locks = true;
    for (int i = 0; i < 4; i++)
        r->lock_waits[i] = b[i] - a[i];
}

int lg_read_u64(uas_client *ctrl, const char *name, uint64_t *value)
{
    return read_u64s(ctrl, &name, 1, value);
}

static void on_tick(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)w;
    (void)revents; /* only wakes the loop so the phases advance on time */
}

static void run_until(lg_run *run, uint64_t deadline_ns, const char *what, unsigned round,
                      unsigned rounds)
{
    uint64_t start = lg_now_ns(), last = 0;
    /* Counted in every phase: the warm-up's rate shows too. */
    uint64_t ops0 = run->answered;
    while (lg_now_ns() < deadline_ns) {
        uas_loop_run_once(run->loop, true);
        lg_logins_poll(run->logins);
        uint64_t now = lg_now_ns();
        if (now - last > 1000000000ull) {
            last = now;
            double el = (double)(now - start) / 1e9;
            fprintf(stderr, "\rself-load %s round %u/%u: %s %.0fs/%.0fs, %.0f ops/s   ",
                    run->o->scenario_name, round, rounds, what, el,
                    (double)(deadline_ns - start) / 1e9,
                    el > 0 ? (double)(run->answered - ops0) / el : 0.0);
        }
    }
}

static int connect_all(lg_run *run, const char *url, uas_client **ctrl)
{
    const lg_opts *o = run->o;
    uas_client_config cc;
    uas_client_config_default(&cc);
    cc.endpoint_url = url;
    cc.create_session = true;
    cc.session_name = "self-load";
    cc.max_inflight = o->inflight + 4;
    if (run->secure_sessions)
        lg_sec_apply(run->sec, &cc);
    /* In batches: the server refuses more than 128 sessions per address
     * that are not activated yet (max_unactivated_per_address). */
    enum { BATCH = 64 };
    for (unsigned i = 0; i < o->sessions; i++) {
        lg_sess *s = &run->sess[i];
        s->run = run;
        s->index = i;
        if (build_requests(s, o))
            return -1;
        s->c = uas_client_new(run->loop, &cc, NULL, s);
        if (!s->c || uas_client_connect(s->c) != UAS_GOOD)
            return -1;
        if (i % BATCH == BATCH - 1)
            for (unsigned k = i + 1 - BATCH; k <= i; k++)
                if (uas_client_wait_state(run->sess[k].c, UAS_CLIENT_SESSION_ACTIVE, 30000) !=
                    UAS_GOOD)
                    return -1;
    }
    cc.session_timeout_ms = 3600000; /* the control session idles through set-up */
    *ctrl = uas_client_new(run->loop, &cc, NULL, NULL);
    if (!*ctrl || uas_client_connect(*ctrl) != UAS_GOOD)
        return -1;
    for (unsigned i = 0; i < o->sessions; i++)
        if (uas_client_wait_state(run->sess[i].c, UAS_CLIENT_SESSION_ACTIVE, 30000) != UAS_GOOD)
            return -1;
    return uas_client_wait_state(*ctrl, UAS_CLIENT_SESSION_ACTIVE, 30000) == UAS_GOOD ? 0 : -1;
}

/* One measured run of one variant; fills r. 0 on success. */
static int run_once(const lg_opts *o, const lg_variant *var, unsigned round, uas_result *r)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->scenario, sizeof(r->scenario), "%s", o->scenario_name);
    snprintf(r->args, sizeof(r->args), "%s", o->args);
    lg_variant_label(o, var, r->variant, sizeof(r->variant));
    lg_child child;
    memset(&child, 0, sizeof(child));
    lg_sec sec;
    /* Logins beside a None load are secured with the run's policy in
     * SignAndEncrypt; the measured sessions stay None. */
    int level = var->security == LG_SEC_NONE && var->logins ? LG_SEC_ENCRYPT : var->security;
    if (lg_sec_open(&sec, o, level) != 0) {
        lg_sec_close(&sec);
        return -1;
    }
    char users[160], offers[256];
    if (var->logins && !o->target && lg_logins_user_file(sec.dir, users, sizeof(users)) != 0) {
        lg_sec_close(&sec);
        return -1;
    }
    const char *url = o->target;
    if (!url) {
        const char *extra[12];
        int n = lg_sec_child_args(&sec, extra, 0);
        if (var->logins) {
            /* None for the measured sessions (when they are None), the
             * policy in both modes, the login user. */
            snprintf(offers, sizeof(offers), "None, %s:Sign, %s:SignAndEncrypt", o->policy,
                     o->policy);
            extra[1] = offers;
            extra[n++] = "--users";
            extra[n++] = users;
        }
        extra[n] = NULL;
        if (lg_child_start(&child, o->exe, var->threads, o->server_cpus, extra) != 0) {
            fprintf(stderr, "self-load: cannot start the server child (%s)\n", o->exe);
            lg_sec_close(&sec);
            return -1;
        }
        url = child.url;
    }
    r->has_server = !o->target || o->target_pid > 0;
    if (o->target && o->target_pid > 0)
        child.pid = o->target_pid; /* sampled only, never started or stopped */
    lg_run *run = calloc(1, sizeof(*run));
    int rc = -1;
    uas_client *ctrl = NULL;
    if (!run)
        goto out;
    run->o = o;
    run->sec = &sec;
    run->secure_sessions = var->security != LG_SEC_NONE;
    uas_hist_init(&run->hist);
    run->loop = uas_loop_new(64u << 20);
    run->sess = calloc(o->sessions, sizeof(lg_sess));
    if (!run->loop || !run->sess || lg_sec_discover(&sec, run->loop, url) != 0)
        goto out;
    ev_timer tick;
    ev_timer_init(&tick, on_tick, 0.1, 0.1);
    ev_timer_start(uas_loop_ev(run->loop), &tick);
    fprintf(stderr, "\rself-load %s round %u/%u: connecting %u sessions to %s   ", o->scenario_name,
            round, o->rounds, o->sessions, url);
    if (connect_all(run, url, &ctrl) != 0) {
        fprintf(stderr, "\nself-load: could not establish %u sessions with %s\n", o->sessions, url);
        goto out;
    }
    if (lg_logins_new(&run->logins, run->loop, &sec, url, var->logins, o->login_anonymous) != 0)
        goto out;
    lg_logins_begin(run->logins);
    run->phase = PH_WARMUP;
    if (o->rate > 0) {
        run->rate_t0 = lg_now_ns();
        /* Late: sent after the session's next request was due (and at
         * least 10 ms after its time: the pace timer's resolution is 1 ms
         * and a busy machine delays it by a few). */
        double interval_ns = 1e9 * o->sessions / o->rate;
        run->late_ns = interval_ns > UAS_RATE_LATE_NS ? (uint64_t)interval_ns : UAS_RATE_LATE_NS;
        ev_timer_init(&run->pace, on_pace, 0.001, 0.001);
        run->pace.data = run;
        ev_timer_start(uas_loop_ev(run->loop), &run->pace);
        pace(run);
    } else {
        for (unsigned i = 0; i < o->sessions; i++)
            for (unsigned k = 0; k < o->inflight; k++)
                issue(&run->sess[i].slots[k], lg_now_ns());
    }
    run_until(run, lg_now_ns() + (uint64_t)(o->warmup * 1e9), "warm-up", round, o->rounds);

    lg_proc_sample a, b;
    uint64_t heap_a = 0, heap_b = 0, allocs_a = 0, allocs_b = 0;
    bool heap_ok = !o->target && lg_read_heap(ctrl, &heap_a, &allocs_a) == 0;
    uint64_t locks_a[4], locks_b[4];
    bool locks_ok = !o->target && lg_read_lock_waits(ctrl, locks_a) == 0;
    if (r->has_server)
        lg_child_sample(&child, &a);
    uint64_t t0 = lg_now_ns();
    run->phase = PH_MEASURE;
    lg_logins_count(run->logins, true);
    run_until(run, t0 + (uint64_t)(o->duration * 1e9), "measuring", round, o->rounds);
    uint64_t t1 = lg_now_ns();
    lg_logins_count(run->logins, false);
    run->phase = PH_DRAIN;
    if (o->rate > 0)
        ev_timer_stop(uas_loop_ev(run->loop), &run->pace);
    uint64_t ops = run->ops;
    if (r->has_server)
        lg_child_sample(&child, &b);
    heap_ok = heap_ok && lg_read_heap(ctrl, &heap_b, &allocs_b) == 0;
    if (locks_ok && lg_read_lock_waits(ctrl, locks_b) == 0)
        lg_lock_waits_delta(r, locks_a, locks_b);
    uint64_t drain_end = lg_now_ns() + 10000000000ull;
    while (run->outstanding > 0 && lg_now_ns() < drain_end)
        uas_loop_run_once(run->loop, true);
    fprintf(stderr, "\r%80s\r", "");

    r->duration_s = (double)(t1 - t0) / 1e9;
    r->requests = ops;
    r->errors = run->errors;
    r->throughput = (double)ops / r->duration_s;
    r->p50_ns = uas_hist_quantile(&run->hist, 0.50);
    r->p99_ns = uas_hist_quantile(&run->hist, 0.99);
    r->max_ns = run->hist.max;
    if (o->rate > 0) {
        r->has_rate = true;
        r->offered_rate = o->rate;
        r->due = run->due;
        r->sent_late = run->late;
        r->late_ns = run->late_ns;
        r->capped = run->capped;
        uas_rate_judge(r);
    }
    if (run->logins) {
        uas_status first;
        lg_logins_result(run->logins, &r->logins, &r->login_failures, &first);
        r->logins_per_s = (double)r->logins / r->duration_s;
        if (r->login_failures)
            fprintf(stderr, "self-load: %llu logins failed, first: %s\n",
                    (unsigned long long)r->login_failures, uas_status_name(first));
    }
    if (r->has_server && ops > 0) {
        double cpu_ns = (double)(b.cpu_ns - a.cpu_ns);
        r->server_cpu_us_per_op = cpu_ns / 1e3 / (double)ops;
        r->busy_cores = cpu_ns / (double)(t1 - t0);
        r->server_rss_kb = b.rss_kb;
        lg_judge_window(&a, &b, cpu_ns, r);
        if (heap_ok) {
            r->server_bytes_per_op = (double)(heap_b - heap_a) / (double)ops;
            r->server_allocs_per_op = (double)(allocs_b - allocs_a) / (double)ops;
        } else {
            r->server_bytes_per_op = r->server_allocs_per_op = -1;
        }
    }
    if (run->errors)
        fprintf(stderr, "self-load: %llu operations failed, first: %s\n",
                (unsigned long long)run->errors, uas_status_name(run->first_error));
    rc = ops > 0 ? 0 : -1;
out:
    if (run) {
        lg_logins_free(run->logins);
        if (ctrl)
            uas_client_delete(ctrl);
        for (unsigned i = 0; run->sess && i < o->sessions; i++)
            free_sess(&run->sess[i]);
        free(run->sess);
        if (run->loop)
            uas_loop_delete(run->loop);
        free(run);
    }
    if (!o->target)
        lg_child_stop(&child);
    lg_sec_close(&sec);
    return rc;
}

void lg_variant_label(const lg_opts *o, const lg_variant *v, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    if (o->nthreads > 1)
        n += (size_t)snprintf(buf, len, "threads=%u", v->threads);
    if (o->nsecurity > 1 || v->security != LG_SEC_NONE)
        n += (size_t)snprintf(buf + n, len - n, "%s%s%s%s", n ? " " : "",
                              lg_security_name(v->security), v->security != LG_SEC_NONE ? " " : "",
                              v->security != LG_SEC_NONE ? o->policy : "");
    if ((o->nlogins > 1 || v->logins) && n < len)
        snprintf(buf + n, len - n, "%slogins=%u", n ? " " : "", v->logins);
}

/* "uaserver threads=N [security policy]" or the target URL, for the tables. */
static void variant_name(const lg_opts *o, unsigned v, char *buf, size_t len)
{
    const lg_variant *var = &o->variants[v];
    bool sec = var->security != LG_SEC_NONE || o->nsecurity > 1;
    int n = o->target ? snprintf(buf, len, "%s", o->target)
                      : snprintf(buf, len, "uaserver threads=%u", var->threads);
    if (sec && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " %s%s%s", lg_security_name(var->security),
                      var->security != LG_SEC_NONE ? " " : "",
                      var->security != LG_SEC_NONE ? o->policy : "");
    if ((o->nlogins > 1 || var->logins) && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " logins=%u%s", var->logins,
                 var->logins && o->login_anonymous ? " anonymous" : "");
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: uaserver --self-load read|write|browse|sub|sessions|counters|events\n"
            "       [options]\n"
            "       uaserver --self-load capacity [options]   every table of\n"
            "       docs/Benchmarks.md (see uaserver --self-load capacity --help)\n"
            "  --sessions N      concurrent sessions (10; sessions: the target, 500;\n"
            "                    counters: always 1)\n"
            "  --inflight N      outstanding requests per session, closed loop (10);\n"
            "                    with --rate, the cap per session\n"
            "  --rate N          read, write, browse: open loop, N requests/s in all,\n"
            "                    spread over the sessions (request k is due at k/N s and\n"
            "                    goes to session k mod sessions); requests sent late (after\n"
            "                    the session's next was due, >= 10 ms) or refused by the\n"
            "                    cap are counted; a run that\n"
            "                    cannot keep the rate\n"
            "                    says RATE NOT KEPT and why, and exits 1\n"
            "  --nodes N         values per Read/Write request (1); monitored items per\n"
            "                    subscription (sub: 1, on ns=1;i=1001.. wrapping after 100;\n"
            "                    counters: 1000 counters ns=1;i=100001..)\n"
            "  --threads N[,M]   server event loops; a list alternates variants (1)\n"
            "  --duration S      measurement window in seconds (10; sub, counters: 20;\n"
            "                    sessions: 60)\n"
            "  --warmup S        warm-up in seconds (3; subscription scenarios: 5)\n"
            "  --rounds N        rounds, median and range reported (1)\n"
            "  --security L[,M]  none, sign or encrypt (SignAndEncrypt); a list alternates\n"
            "                    variants (none). Sessions use a client certificate made\n"
            "                    for the run, which the child trusts (a --target server\n"
            "                    must accept it, e.g. by auto-accept in a lab)\n"
            "  --policy NAME     security policy of sign/encrypt (Basic256Sha256)\n"
            "  --logins N[,M]    read/write/browse: N loops of secured session set-ups\n"
            "                    beside the load (new connection, OPN SignAndEncrypt with\n"
            "                    --policy, CreateSession, ActivateSession with user\n"
            "                    '" LG_LOGIN_USER "', then dropped); a list alternates variants\n"
            "                    (0). Reports logins/s; a --target server needs that user\n"
            "  --login-identity name|anonymous  what the logins present (name)\n"
            "  --server-cpus L   processors of the child server, e.g. 1 or 2-3 (not pinned)\n"
            "  --client-cpus L   processors of the load generator, e.g. 0 (not pinned)\n"
            "  --target URL      drive an external server instead of a child\n"
            "  --target-pid PID  with --target: sample that process's CPU and memory\n"
            "  --out FILE        append the Markdown results to FILE\n"
            "subscription scenarios (see docs/Benchmarks.md for what is expected):\n"
            "  --subs N          subscriptions per session (1)\n"
            "  --pub MS          publishing interval (1000)\n"
            "  --queue-size N    monitored item queue size (1)\n"
            "  --sampling MS     sampling interval (0; counters: 100)\n"
            "  --writers N       dedicated writer sessions (sub: 0 = the first subscriber\n"
            "                    writes; sessions: 1)\n"
            "  --write-nodes N   monitored nodes written (all, at most 100)\n"
            "  --write-interval MS  writer period (sub: 1300; sessions: 500; 0: closed loop)\n"
            "  --publish-requests N  Publish requests outstanding per session (subs + 2,\n"
            "                    3 to 20)\n"
            "  --keep-alive N    requested max keep-alive count (10)\n"
            "  --ramp-rate N     sessions started per second (0: as fast as allowed)\n"
            "  --connect-parallel N  session set-ups in flight at once (64)\n"
            "  --sources N       loopback source addresses 127.0.0.2.. (0: one per 4096\n"
            "                    sessions)\n"
            "events (event items on the Server object, --subs per session):\n"
            "  --event-rate N    events per second the server reports (100); the queue\n"
            "                    size defaults to two publishing intervals of events\n");
}

static int parse_uint(const char *opt, const char *v, unsigned lo, unsigned hi, unsigned *out)
{
    char *end;
    unsigned long n = v ? strtoul(v, &end, 10) : 0;
    if (!v || end == v || *end || n < lo || n > hi) {
        fprintf(stderr, "uaserver --self-load: %s takes a number from %u to %u\n", opt, lo, hi);
        return -1;
    }
    *out = (unsigned)n;
    return 0;
}

enum { UNSET = 0xFFFFFFFFu };

/* Defaults that depend on the scenario, for the options not given. */
static void scenario_defaults(lg_opts *o)
{
#define DEF(field, v)                                                                              \
    do {                                                                                           \
        if (o->field == UNSET)                                                                     \
            o->field = (v);                                                                        \
    } while (0)
    bool sub = o->scenario >= SC_SUB;
    DEF(sessions, o->scenario == SC_SESSIONS ? 500 : 10);
    if (o->scenario == SC_COUNTERS)
        o->sessions = 1;
    DEF(nodes, o->scenario == SC_COUNTERS ? 1000 : 1);
    if (o->scenario == SC_SESSIONS || o->scenario == SC_EVENTS)
        o->nodes = 1;
    DEF(event_rate, 100);
    DEF(subs, 1);
    DEF(pub_ms, 1000);
    if (o->scenario == SC_EVENTS) {
        /* Room for two publishing intervals of events (the server caps
         * event queues at 10,000). */
        uint64_t q = 2ull * o->event_rate * o->pub_ms / 1000 + 10;
        DEF(queue_size, q < 100 ? 100 : q > 10000 ? 10000 : (unsigned)q);
        o->writers = o->write_nodes = 0;
    }
    DEF(queue_size, 1);
    DEF(sampling_ms, o->scenario == SC_COUNTERS ? 100 : 0);
    DEF(writers, o->scenario == SC_SESSIONS ? 1 : 0);
    DEF(write_nodes, o->nodes < 100 ? o->nodes : 100);
    if (o->write_nodes > o->nodes)
        o->write_nodes = o->nodes;
    if (o->write_nodes > 100)
        o->write_nodes = 100;
    DEF(write_interval_ms, o->scenario == SC_SESSIONS ? 500 : 1300);
    /* One Publish per subscription and cycle, and slack for the round
     * trip: subs + 2, at least 3, at most the server's 20 parked. */
    DEF(publish_requests, o->subs + 2 < 3 ? 3 : o->subs + 2 > 20 ? 20 : o->subs + 2);
    DEF(keep_alive, 10);
    DEF(ramp_rate, 0);
    DEF(connect_parallel, 64);
    DEF(sources, 0);
    if (o->duration < 0)
        o->duration = o->scenario == SC_SESSIONS ? 60 : sub ? 20 : 10;
    if (o->warmup < 0)
        o->warmup = sub ? 5 : 3;
#undef DEF
}

int lg_parse_opts(int argc, char **argv, lg_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->sessions = UNSET;
    o->inflight = 10;
    o->nodes = UNSET;
    o->rounds = 1;
    o->threads[0] = 1;
    o->nthreads = 1;
    o->security[0] = LG_SEC_NONE;
    o->nsecurity = 1;
    o->logins[0] = 0;
    o->nlogins = 1;
    o->policy = "Basic256Sha256";
    o->duration = -1;
    o->warmup = -1;
    o->subs = o->pub_ms = o->queue_size = o->sampling_ms = UNSET;
    o->writers = o->write_nodes = o->write_interval_ms = o->publish_requests = UNSET;
    o->ramp_rate = o->connect_parallel = o->sources = o->keep_alive = o->event_rate = UNSET;
    size_t len = 0;
    for (int i = 0; i < argc && len < sizeof(o->args) - 1; i++)
        len +=
            (size_t)snprintf(o->args + len, sizeof(o->args) - len, "%s%s", i ? " " : "", argv[i]);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 1;
    }
    if (argc < 2 || argv[1][0] == '-') {
        usage(stderr);
        return -1;
    }
    o->scenario_name = argv[1];
    if (!strcmp(argv[1], "read"))
        o->scenario = SC_READ;
    else if (!strcmp(argv[1], "write"))
        o->scenario = SC_WRITE;
    else if (!strcmp(argv[1], "browse"))
        o->scenario = SC_BROWSE;
    else if (!strcmp(argv[1], "sub"))
        o->scenario = SC_SUB;
    else if (!strcmp(argv[1], "sessions"))
        o->scenario = SC_SESSIONS;
    else if (!strcmp(argv[1], "counters"))
        o->scenario = SC_COUNTERS;
    else if (!strcmp(argv[1], "events"))
        o->scenario = SC_EVENTS;
    else {
        fprintf(stderr,
                "uaserver --self-load: unknown scenario '%s' (read, write, browse, sub, "
                "sessions, counters, events)\n",
                argv[1]);
        return -1;
    }
    static const struct {
        const char *name;
        size_t off;
        unsigned lo, hi;
    } sub_opts[] = {
        {"--subs", offsetof(lg_opts, subs), 1, 1000},
        {"--pub", offsetof(lg_opts, pub_ms), 1, 3600000},
        {"--queue-size", offsetof(lg_opts, queue_size), 1, 100000},
        {"--sampling", offsetof(lg_opts, sampling_ms), 0, 3600000},
        {"--writers", offsetof(lg_opts, writers), 0, 1000},
        {"--write-nodes", offsetof(lg_opts, write_nodes), 0, 100},
        {"--write-interval", offsetof(lg_opts, write_interval_ms), 0, 3600000},
        {"--publish-requests", offsetof(lg_opts, publish_requests), 1, 20},
        {"--keep-alive", offsetof(lg_opts, keep_alive), 1, 10000},
        {"--ramp-rate", offsetof(lg_opts, ramp_rate), 0, 1000000},
        {"--connect-parallel", offsetof(lg_opts, connect_parallel), 1, 100000},
        {"--sources", offsetof(lg_opts, sources), 0, 250},
        {"--event-rate", offsetof(lg_opts, event_rate), 1, 1000000},
    };
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        size_t k = 0;
        while (k < sizeof(sub_opts) / sizeof(sub_opts[0]) && strcmp(a, sub_opts[k].name))
            k++;
        if (k < sizeof(sub_opts) / sizeof(sub_opts[0])) {
            if (o->scenario < SC_SUB) {
                fprintf(stderr,
                        "uaserver --self-load: %s is an option of sub, sessions, counters "
                        "and events\n",
                        a);
                return -1;
            }
            bad = parse_uint(a, v, sub_opts[k].lo, sub_opts[k].hi,
                             (unsigned *)((char *)o + sub_opts[k].off));
        } else if (!strcmp(a, "--sessions"))
            bad = parse_uint(a, v, 1, 1000000, &o->sessions);
        else if (!strcmp(a, "--inflight"))
            bad = parse_uint(a, v, 1, 10000, &o->inflight);
        else if (!strcmp(a, "--rate")) {
            unsigned rate = 0;
            bad = parse_uint(a, v, 1, 10000000, &rate);
            o->rate = rate;
        } else if (!strcmp(a, "--nodes"))
            bad = parse_uint(a, v, 1, 100000, &o->nodes);
        else if (!strcmp(a, "--rounds"))
            bad = parse_uint(a, v, 1, MAX_ROUNDS, &o->rounds);
        else if (!strcmp(a, "--duration") || !strcmp(a, "--warmup")) {
            unsigned s = 0;
            bad = parse_uint(a, v, !strcmp(a, "--duration") ? 1 : 0, 3600, &s);
            if (!strcmp(a, "--duration"))
                o->duration = s;
            else
                o->warmup = s;
        } else if (!strcmp(a, "--threads")) {
            o->nthreads = 0;
            char buf[64];
            snprintf(buf, sizeof(buf), "%s", v ? v : "");
            for (char *t = strtok(buf, ","); t && !bad; t = strtok(NULL, ",")) {
                if (o->nthreads == MAX_VARIANTS) {
                    fprintf(stderr, "uaserver --self-load: at most %d --threads variants\n",
                            MAX_VARIANTS);
                    bad = -1;
                } else {
                    bad = parse_uint(a, t, 1, 256, &o->threads[o->nthreads++]);
                }
            }
            bad = bad || o->nthreads == 0 ? -1 : 0;
        } else if (!strcmp(a, "--security")) {
            o->nsecurity = 0;
            char buf[64];
            snprintf(buf, sizeof(buf), "%s", v ? v : "");
            for (char *t = strtok(buf, ","); t && !bad; t = strtok(NULL, ",")) {
                if (o->nsecurity == MAX_VARIANTS ||
                    lg_security_parse(t, &o->security[o->nsecurity++]) != 0) {
                    fprintf(stderr,
                            "uaserver --self-load: --security takes up to %d of none, "
                            "sign, encrypt, comma-separated\n",
                            MAX_VARIANTS);
                    bad = -1;
                }
            }
            bad = bad || o->nsecurity == 0 ? -1 : 0;
        } else if (!strcmp(a, "--logins") && v) {
            o->nlogins = 0;
            char buf[64];
            snprintf(buf, sizeof(buf), "%s", v);
            for (char *t = strtok(buf, ","); t && !bad; t = strtok(NULL, ",")) {
                if (o->nlogins == MAX_VARIANTS) {
                    fprintf(stderr, "uaserver --self-load: at most %d --logins variants\n",
                            MAX_VARIANTS);
                    bad = -1;
                } else {
                    bad = parse_uint(a, t, 0, 10000, &o->logins[o->nlogins++]);
                }
            }
            bad = bad || o->nlogins == 0 ? -1 : 0;
        } else if (!strcmp(a, "--login-identity") && v) {
            if (!strcmp(v, "anonymous") || !strcmp(v, "name")) {
                o->login_anonymous = !strcmp(v, "anonymous");
            } else {
                fprintf(stderr, "uaserver --self-load: --login-identity takes name or "
                                "anonymous\n");
                bad = -1;
            }
        } else if (!strcmp(a, "--policy") && v) {
            o->policy = v;
            if (lg_policy_check(v) != 0) {
                fprintf(stderr,
                        "uaserver --self-load: unknown security policy '%s' (Basic256Sha256, "
                        "Aes128_Sha256_RsaOaep, Aes256_Sha256_RsaPss, Basic256)\n",
                        v);
                bad = -1;
            }
        } else if (!strcmp(a, "--server-cpus") || !strcmp(a, "--client-cpus")) {
            uint64_t *m = !strcmp(a, "--server-cpus") ? &o->server_cpus : &o->client_cpus;
            if (!v || uas_cpu_list_parse(v, m) != 0 || *m == 0) {
                fprintf(stderr,
                        "uaserver --self-load: %s takes a processor list such as 1, 0-1 or "
                        "0,2 (processors 0 to 63)\n",
                        a);
                bad = -1;
            }
        } else if (!strcmp(a, "--target") && v) {
            o->target = v;
        } else if (!strcmp(a, "--target-pid")) {
            unsigned pid = 0;
            bad = parse_uint(a, v, 1, 4194304, &pid);
            o->target_pid = (int)pid;
        } else if (!strcmp(a, "--out") && v) {
            o->out = v;
        } else if (!strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        } else {
            fprintf(stderr, "uaserver --self-load: unknown option or missing value '%s'\n", a);
            bad = -1;
        }
        if (bad)
            return -1;
        if (strcmp(a, "--help"))
            i++;
    }
    if (o->target && o->server_cpus) {
        fprintf(stderr, "uaserver --self-load: --server-cpus places the child server; pin a "
                        "--target server where it is started (taskset)\n");
        return -1;
    }
    if (o->rate > 0 && o->scenario >= SC_SUB) {
        fprintf(stderr, "uaserver --self-load: --rate is an option of read, write and browse\n");
        return -1;
    }
    if (o->scenario >= SC_SUB && (o->nlogins > 1 || o->logins[0])) {
        fprintf(stderr, "uaserver --self-load: --logins is an option of read, write and browse\n");
        return -1;
    }
    if (o->nthreads * o->nsecurity * o->nlogins > MAX_VARIANTS) {
        fprintf(stderr,
                "uaserver --self-load: --threads x --security x --logins make %u variants, at "
                "most %d\n",
                o->nthreads * o->nsecurity * o->nlogins, MAX_VARIANTS);
        return -1;
    }
    o->nvariants = 0;
    for (unsigned t = 0; t < o->nthreads; t++)
        for (unsigned k = 0; k < o->nsecurity; k++)
            for (unsigned m = 0; m < o->nlogins; m++)
                o->variants[o->nvariants++] =
                    (lg_variant){o->threads[t], o->security[k], o->logins[m]};
    scenario_defaults(o);
    return 0;
}

static double g_tp(const uas_result *r)
{
    return r->throughput;
}
static double g_p50_us(const uas_result *r)
{
    return (double)r->p50_ns / 1e3;
}
static double g_p99_us(const uas_result *r)
{
    return (double)r->p99_ns / 1e3;
}

static double g_logins(const uas_result *r)
{
    return r->logins_per_s;
}

static double g_login_failures(const uas_result *r)
{
    return (double)r->login_failures;
}

static void print_summary(FILE *f, const lg_opts *o, uas_result res[][MAX_VARIANTS],
                          unsigned rounds)
{
    fprintf(f, "### Summary: %s, %u round%s (%s)\n\n", o->scenario_name, rounds,
            rounds == 1 ? "" : "s", rounds == 1 ? "one round: no range" : "median [min–max]");
    bool rate = o->rate > 0;
    if (rate)
        fprintf(f, "Open loop: %.0f requests/s offered over %u sessions (in-flight cap %u).\n\n",
                o->rate, o->sessions, o->inflight);
    fprintf(f,
            "| server | throughput (ops/s) | p50 (µs) | p99 (µs) | server CPU/op (µs) | "
            "CPU/op ÷ first, paired | server heap B/op | disturbed rounds |%s\n"
            "|---|---|---|---|---|---|---|---|%s\n",
            rate ? " rate kept |" : "", rate ? "---|" : "");

    for (unsigned v = 0; v < o->nvariants; v++) {
        unsigned disturbed = 0;
        for (unsigned r = 0; r < rounds; r++)
            disturbed += res[r][v].disturbed;
        char name[160], tp[128], p50[128], p99[128], heap[128] = "n/a", cpu[128] = "n/a", ratio[64];
        variant_name(o, v, name, sizeof(name));
        lg_stat_text(tp, sizeof(tp), res, rounds, v, g_tp, "%.0f");
        lg_stat_text(p50, sizeof(p50), res, rounds, v, g_p50_us, "%.0f");
        lg_stat_text(p99, sizeof(p99), res, rounds, v, g_p99_us, "%.0f");
        if (res[0][v].has_server) {
            lg_stat_text(cpu, sizeof(cpu), res, rounds, v, lg_get_cpu, "%.2f");
            if (res[0][v].server_bytes_per_op >= 0)
                lg_stat_text(heap, sizeof(heap), res, rounds, v, lg_get_heap, "%.1f");
        }
        lg_cpu_ratio_text(ratio, sizeof(ratio), res, rounds, v);
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %u |", name, tp, p50, p99, cpu, ratio,
                heap, disturbed);
        if (rate) {
            unsigned kept = 0;
            for (unsigned r = 0; r < rounds; r++)
                kept += res[r][v].rate_kept;
            fprintf(f, " %s%u of %u%s |", kept == rounds ? "" : "**", kept, rounds,
                    kept == rounds ? "" : " (RATE NOT KEPT)**");
        }
        fprintf(f, "\n");
    }
    bool logins = false;
    for (unsigned v = 0; v < o->nvariants; v++)
        logins = logins || o->variants[v].logins;
    if (logins) {
        fprintf(f, "\n| server | logins/s (set-ups completed beside the load) | failed |\n"
                   "|---|---|---|\n");
        for (unsigned v = 0; v < o->nvariants; v++) {
            char name[160], lps[128], fail[128];
            variant_name(o, v, name, sizeof(name));
            lg_stat_text(lps, sizeof(lps), res, rounds, v, g_logins, "%.1f");
            lg_stat_text(fail, sizeof(fail), res, rounds, v, g_login_failures, "%.0f");
            fprintf(f, "| %s | %s | %s |\n", name, lps, fail);
        }
    }
    fprintf(f, "\n");
}

const char *lg_stat_text(char *buf, size_t len, uas_result res[][LG_MAX_VARIANTS], unsigned rounds,
                         unsigned v, double (*get)(const uas_result *), const char *fmt)
{
    double x[MAX_ROUNDS] = {0};
    for (unsigned r = 0; r < rounds; r++)
        x[r] = get(&res[r][v]);
    uas_stat st;
    uas_stat_compute(x, rounds, &st);
    char a[32], b[32], c[32];
    snprintf(a, sizeof(a), fmt, st.median);
    snprintf(b, sizeof(b), fmt, st.min);
    snprintf(c, sizeof(c), fmt, st.max);
    if (rounds == 1)
        snprintf(buf, len, "%s", a);
    else
        snprintf(buf, len, "%s [%s–%s]", a, b, c);
    return buf;
}

const char *lg_cpu_ratio_text(char *buf, size_t len, uas_result res[][LG_MAX_VARIANTS],
                              unsigned rounds, unsigned v)
{
    double a[MAX_ROUNDS], b[MAX_ROUNDS];
    for (unsigned r = 0; r < rounds; r++) {
        a[r] = res[r][v].has_server ? res[r][v].server_cpu_us_per_op : 0;
        b[r] = res[r][0].has_server ? res[r][0].server_cpu_us_per_op : 0;
    }
    uas_stat q;
    uas_stat_paired_ratio(a, b, rounds, &q);
    if (v == 0 || q.n == 0)
        snprintf(buf, len, "–");
    else if (q.n == 1)
        snprintf(buf, len, "%.2f", q.median);
    else
        snprintf(buf, len, "%.2f [%.2f–%.2f]", q.median, q.min, q.max);
    return buf;
}

static double g_notif(const uas_result *r)
{
    return r->notif_per_s;
}
static double g_deliv(const uas_result *r)
{
    return r->delivery_pct;
}
static double g_missed(const uas_result *r)
{
    return (double)r->notif_missed;
}
static double g_p50(const uas_result *r)
{
    return (double)r->p50_ns / 1e6;
}
static double g_p99(const uas_result *r)
{
    return (double)r->p99_ns / 1e6;
}
double lg_get_cpu(const uas_result *r)
{
    return r->server_cpu_us_per_op;
}
double lg_get_heap(const uas_result *r)
{
    return r->server_bytes_per_op;
}
static double g_cores(const uas_result *r)
{
    return r->busy_cores;
}
static double g_rss(const uas_result *r)
{
    return (double)r->server_rss_kb / 1024.0;
}
static double g_rate(const uas_result *r)
{
    return r->session_rate;
}
static double g_setup_cpu(const uas_result *r)
{
    return r->server_cpu_us_per_session;
}
static double g_kib(const uas_result *r)
{
    return r->rss_per_session_kb;
}
static double g_samples(const uas_result *r)
{
    return r->samples_per_s;
}
static double g_minpct(const uas_result *r)
{
    return r->min_sample_pct;
}
static double g_minnotif(const uas_result *r)
{
    return r->min_notif_pct;
}
static double g_cpusample(const uas_result *r)
{
    return r->server_cpu_us_per_sample;
}

/* The subscription scenarios: delivery first, then costs. */
static void print_sub_summary(FILE *f, const lg_opts *o, uas_result res[][MAX_VARIANTS],
                              unsigned rounds)
{
    fprintf(f, "### Summary: %s, %u round%s (%s)\n\n", o->scenario_name, rounds,
            rounds == 1 ? "" : "s", rounds == 1 ? "one round: no range" : "median [min–max]");
    bool sess = o->scenario == SC_SESSIONS, cnt = o->scenario == SC_COUNTERS;
    fprintf(f,
            "| server | notif/s | %s | %s | server CPU/notif (µs) | "
            "server heap B/notif | busy cores | server RSS (MiB) |%s passed |\n",
            cnt ? "samples/s | worst item samples %" : "delivery % | missed",
            cnt                        ? "worst item cycles % | server CPU/sample (µs)"
            : o->scenario == SC_EVENTS ? "report→notify p50 / p99 (ms)"
                                       : "write→notify p50 / p99 (ms)",
            sess ? " sessions/s | server CPU/session set-up (µs) | KiB/session |" : "");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|%s---|\n",
            sess  ? "---|---|---|"
            : cnt ? "---|"
                  : "");
    for (unsigned v = 0; v < o->nvariants; v++) {
        char name[160], b1[128], b2[128], b3[128], b4[128], b5[128], b6[128], b7[128], b8[128],
            b9[128], b10[128];
        variant_name(o, v, name, sizeof(name));
        unsigned passed = 0;
        for (unsigned r = 0; r < rounds; r++)
            passed += res[r][v].pass;
        fprintf(f,
                cnt ? "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                    : "| %s | %s | %s | %s | %s / %s | %s | %s | %s | %s |",
                name, lg_stat_text(b1, sizeof(b1), res, rounds, v, g_notif, "%.0f"),
                cnt ? lg_stat_text(b2, sizeof(b2), res, rounds, v, g_samples, "%.0f")
                    : lg_stat_text(b2, sizeof(b2), res, rounds, v, g_deliv, "%.2f"),
                cnt ? lg_stat_text(b3, sizeof(b3), res, rounds, v, g_minpct, "%.2f")
                    : lg_stat_text(b3, sizeof(b3), res, rounds, v, g_missed, "%.0f"),
                cnt ? lg_stat_text(b4, sizeof(b4), res, rounds, v, g_minnotif, "%.2f")
                    : lg_stat_text(b4, sizeof(b4), res, rounds, v, g_p50, "%.1f"),
                cnt ? lg_stat_text(b5, sizeof(b5), res, rounds, v, g_cpusample, "%.2f")
                    : lg_stat_text(b5, sizeof(b5), res, rounds, v, g_p99, "%.1f"),
                res[0][v].has_server
                    ? lg_stat_text(b6, sizeof(b6), res, rounds, v, lg_get_cpu, "%.2f")
                    : "n/a",
                res[0][v].server_bytes_per_op >= 0 && res[0][v].has_server
                    ? lg_stat_text(b7, sizeof(b7), res, rounds, v, lg_get_heap, "%.1f")
                    : "n/a",
                res[0][v].has_server ? lg_stat_text(b8, sizeof(b8), res, rounds, v, g_cores, "%.2f")
                                     : "n/a",
                res[0][v].has_server ? lg_stat_text(b9, sizeof(b9), res, rounds, v, g_rss, "%.1f")
                                     : "n/a");
        if (sess)
            fprintf(f, " %s | %s | %s |",
                    lg_stat_text(b10, sizeof(b10), res, rounds, v, g_rate, "%.0f"),
                    res[0][v].has_server
                        ? lg_stat_text(b2, sizeof(b2), res, rounds, v, g_setup_cpu, "%.0f")
                        : "n/a",
                    res[0][v].has_server
                        ? lg_stat_text(b1, sizeof(b1), res, rounds, v, g_kib, "%.1f")
                        : "n/a");
        fprintf(f, " %u of %u |\n", passed, rounds);
    }
    fprintf(f, "\n");
}

/* Subscription scenarios open a socket per session on both sides: raise the
 * descriptor limit to the hard limit (the child inherits it). */
unsigned long lg_raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return (unsigned long)rl.rlim_cur;
}

int lg_run_rounds(const lg_opts *o, uas_result res[][LG_MAX_VARIANTS], const uas_run_record *rec,
                  FILE *blocks[2], bool *verdict_failed)
{
    bool sub = o->scenario >= SC_SUB;
    if (lg_placement(o->server_cpus, o->client_cpus) != 0)
        return -1;
    for (unsigned r = 0; r < o->rounds; r++) {
        for (unsigned k = 0; k < o->nvariants; k++) {
            unsigned v = uas_round_variant(r, k, o->nvariants);
            int rc = sub ? lg_sub_run_once(o, &o->variants[v], r + 1, &res[r][v])
                         : run_once(o, &o->variants[v], r + 1, &res[r][v]);
            if (rc != 0)
                return -1;
            if ((sub || o->rate > 0) && !res[r][v].pass)
                *verdict_failed = true;
            for (int i = 0; i < 2; i++)
                if (blocks[i]) {
                    uas_result_print(blocks[i], &res[r][v], rec);
                    fflush(blocks[i]);
                }
        }
    }
    return 0;
}

void lg_print_summary(FILE *f, const lg_opts *o, uas_result res[][LG_MAX_VARIANTS])
{
    if (o->scenario >= SC_SUB)
        print_sub_summary(f, o, res, o->rounds);
    else
        print_summary(f, o, res, o->rounds);
}

int uas_selfload_main(int argc, char **argv, const char *exe)
{
    lg_opts o;
    if (argc > 1 && !strcmp(argv[1], "capacity"))
        return lg_capacity_main(argc, argv, exe);
    int prc = lg_parse_opts(argc, argv, &o);
    if (prc != 0)
        return prc > 0 ? 0 : 2;
    o.exe = exe;
    uas_log_set_level(UAS_LOG_WARN);
    (void)lg_raise_fd_limit();
    uas_run_record rec;
    uas_run_record_fill(&rec);
    uas_run_record_calibrate(&rec);
    static uas_result res[MAX_ROUNDS][MAX_VARIANTS];
    FILE *out = o.out ? fopen(o.out, "a") : NULL;
    if (o.out && !out) {
        fprintf(stderr, "uaserver --self-load: cannot open %s\n", o.out);
        return 2;
    }
    bool verdict_failed = false;
    FILE *blocks[2] = {stdout, out};
    int failed = lg_run_rounds(&o, res, &rec, blocks, &verdict_failed) != 0;
    if (!failed) {
        lg_print_summary(stdout, &o, res);
        if (out)
            lg_print_summary(out, &o, res);
    }
    if (out)
        fclose(out);
    return failed || verdict_failed ? 1 : 0;
}
