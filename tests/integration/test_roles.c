#define _GNU_SOURCE
/* Authorization over real sockets (docs/Security.md, "Roles and
 * permissions"): the server runs with the production default (anonymous
 * sessions browse and read namespace 1), users of a users file carry
 * roles, an X.509 user is mapped by thumbprint, one node has
 * RolePermissions of its own. Every refusal is BadUserAccessDenied for
 * that operation only: the session goes on, and a second client (and
 * env_stop's fresh one) keeps being served. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/nodeids.h>
#include <ua/pki.h>

#include "helper_env.h"

#define B256 "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256"

enum { ATTR_VALUE = 13, ATTR_USER_ACCESS_LEVEL = 18, ATTR_EVENT_NOTIFIER = 12 };

typedef struct renv {
    env e;
    char dir[64];
    char server_pki[128];
    char client_pki[128];
    char users[128];
    char x509_roles[128];
    uas_bytestring server_cert;
    uas_bytestring user_cert, user_key; /* the X.509 user "carol" */
} renv;

static void configure(uas_server_config *cfg, void *ud)
{
    renv *r = ud;
    cfg->security = "None, Basic256Sha256:SignAndEncrypt";
    cfg->pki_dir = r->server_pki;
    cfg->users_file = r->users;
    cfg->auto_accept = true;      /* the clients' self-made certificates */
    cfg->role_permissions = NULL; /* the production default, not the contract's */
    cfg->x509_roles = r->x509_roles;
}

/* ns=1;i=1050 is readable by Operator only (RolePermissions of its own). */
static void restrict_node(uas_server *s)
{
    uas_role_permission_type rp[1];
    memset(rp, 0, sizeof(rp));
    rp[0].role_id = uas_nodeid_numeric(0, UAS_NS0ID_WELLKNOWNROLE_OPERATOR);
    rp[0].permissions = UAS_PERMISSION_TYPE_BROWSE | UAS_PERMISSION_TYPE_READ;
    uas_nodeid id = uas_nodeid_numeric(1, 1050);
    cr_assert_eq(uas_server_set_role_permissions(s, &id, rp, 1), UAS_GOOD);
}

static void renv_start(renv *r)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->dir, sizeof(r->dir), "/tmp/uas-roles-XXXXXX");
    cr_assert(mkdtemp(r->dir));
    snprintf(r->server_pki, sizeof(r->server_pki), "%s/server-pki", r->dir);
    snprintf(r->client_pki, sizeof(r->client_pki), "%s/client-pki", r->dir);
    snprintf(r->users, sizeof(r->users), "%s/users", r->dir);
    cr_assert_eq(uas_user_add(r->users, "olive", "op-pass", 7, "Operator", NULL), UAS_GOOD);
    cr_assert_eq(uas_user_add(r->users, "eddie", "eng-pass", 8, "Engineer", NULL), UAS_GOOD);
    /* The X.509 user: trusted by the server's user store, mapped to
     * Engineer by its thumbprint. */
    char store[160];
    snprintf(store, sizeof(store), "%s/user-cert", r->dir);
    env_make_cert(store, "carol", "urn:uastack:user:carol", &r->user_cert, &r->user_key);
    snprintf(store, sizeof(store), "%s/user", r->server_pki);
    uas_pki_store *ps;
    cr_assert_eq(uas_pki_store_open(store, NULL, &ps), UAS_GOOD);
    cr_assert_eq(uas_pki_add(ps, UAS_PKI_TRUSTED, r->user_cert.data, r->user_cert.length),
                 UAS_GOOD);
    uas_pki_store_close(ps);
    char thumb[UAS_PKI_THUMBPRINT_HEX];
    uas_pki_thumbprint(r->user_cert.data, r->user_cert.length, thumb);
    snprintf(r->x509_roles, sizeof(r->x509_roles), "Engineer thumbprint=%s", thumb);

    env_options o = {.configure = configure, .configure_ud = r};
    env_start(&r->e, &o);
    restrict_node(r->e.server);
    uint8_t level = 0;
    uas_status st = uas_client_select_endpoint(r->e.loop, r->e.url, B256,
                                               UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT,
                                               ENV_WAIT_MS, &r->server_cert, &level);
    cr_assert_eq(st, UAS_GOOD, "select_endpoint: %s", uas_status_name(st));
}

static void renv_stop(renv *r)
{
    env_stop(&r->e);
    uas_clear(&r->server_cert, UAS_TYPE(BYTE_STRING));
    uas_pki_bytes_free(&r->user_cert);
    uas_pki_bytes_free(&r->user_key);
    cr_expect(env_rmtree(r->dir));
}

static uas_status pin(void *ud, const uint8_t *der, size_t len)
{
    const uas_bytestring *want = ud;
    return len == want->length && memcmp(der, want->data, len) == 0 ? UAS_GOOD
                                                                    : UAS_BAD_CERTIFICATE_UNTRUSTED;
}

/* A session on Basic256Sha256 SignAndEncrypt as a user name (password
 * NULL: the X.509 user; name NULL: anonymous). */
static uas_client *user_client(renv *r, const char *name, const char *password)
{
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = r->e.url;
    cfg.create_session = true;
    cfg.request_timeout_ms = ENV_WAIT_MS;
    cfg.security.policy_uri = B256;
    cfg.security.mode = UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    cfg.security.pki_dir = r->client_pki;
    cfg.security.server_cert = r->server_cert.data;
    cfg.security.server_cert_len = r->server_cert.length;
    cfg.security.validate_server = pin;
    cfg.security.validate_ud = &r->server_cert;
    if (name && password) {
        cfg.user.kind = UAS_CLIENT_USER_NAME;
        cfg.user.name = name;
        cfg.user.password = password;
        cfg.user.password_len = strlen(password);
    } else if (name) {
        cfg.user.kind = UAS_CLIENT_USER_X509;
        cfg.user.cert = r->user_cert.data;
        cfg.user.cert_len = r->user_cert.length;
        cfg.user.key = r->user_key.data;
        cfg.user.key_len = r->user_key.length;
    }
    uas_client *c = uas_client_new(r->e.loop, &cfg, NULL, NULL);
    cr_assert(c);
    uas_status st = uas_client_connect(c);
    if (st == UAS_GOOD)
        st = uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "session of %s: %s", name ? name : "anonymous", uas_status_name(st));
    return c;
}

/* An X.509 user login with cert and its key: the status the session
 * reached (the client is closed). */
static uas_status x509_login(renv *r, const uas_bytestring *cert, const uas_bytestring *key)
{
    uas_client_config cfg;
    uas_client_config_default(&cfg);
    cfg.endpoint_url = r->e.url;
    cfg.create_session = true;
    cfg.request_timeout_ms = ENV_WAIT_MS;
    cfg.security.policy_uri = B256;
    cfg.security.mode = UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT;
    cfg.security.pki_dir = r->client_pki;
    cfg.security.server_cert = r->server_cert.data;
    cfg.security.server_cert_len = r->server_cert.length;
    cfg.security.validate_server = pin;
    cfg.security.validate_ud = &r->server_cert;
    cfg.user.kind = UAS_CLIENT_USER_X509;
    cfg.user.cert = cert->data;
    cfg.user.cert_len = cert->length;
    cfg.user.key = key->data;
    cfg.user.key_len = key->length;
    uas_client *c = uas_client_new(r->e.loop, &cfg, NULL, NULL);
    cr_assert(c);
    uas_status st = uas_client_connect(c);
    if (st == UAS_GOOD)
        st = uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, ENV_WAIT_MS);
    env_client_close(c);
    return st;
}

static uas_status write_i32(uas_client *c, uint32_t id, int32_t v)
{
    uas_write_value wv;
    memset(&wv, 0, sizeof(wv));
    wv.node_id = uas_nodeid_numeric(1, id);
    wv.attribute_id = ATTR_VALUE;
    uas_variant_set_scalar(&wv.value.value, &v, UAS_TYPE(INT32));
    wv.value.has_value = true;
    uas_write_request req;
    memset(&req, 0, sizeof(req));
    req.nodes_to_write_count = 1;
    req.nodes_to_write = &wv;
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_write_response resp;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(WRITE_REQUEST), &resp,
                                         UAS_TYPE(WRITE_RESPONSE), &a, ENV_WAIT_MS);
    if (st == UAS_GOOD) {
        cr_assert_eq(resp.results_count, 1);
        st = resp.results[0];
    }
    uas_arena_free(&a);
    return st;
}

/* Demo.Add(2, 40): the operation status (42 checked when Good). */
static uas_status call_add(uas_client *c)
{
    int32_t x[2] = {2, 40};
    uas_variant in[2];
    uas_variant_set_scalar(&in[0], &x[0], UAS_TYPE(INT32));
    uas_variant_set_scalar(&in[1], &x[1], UAS_TYPE(INT32));
    uas_call_method_request m;
    memset(&m, 0, sizeof(m));
    m.object_id = uas_nodeid_string(1, "Demo");
    m.method_id = uas_nodeid_string(1, "Demo.Add");
    m.input_arguments_count = 2;
    m.input_arguments = in;
    uas_call_request req;
    memset(&req, 0, sizeof(req));
    req.methods_to_call_count = 1;
    req.methods_to_call = &m;
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_call_response resp;
    uas_status st = uas_client_call_sync(c, &req, UAS_TYPE(CALL_REQUEST), &resp,
                                         UAS_TYPE(CALL_RESPONSE), &a, ENV_WAIT_MS);
    if (st == UAS_GOOD) {
        cr_assert_eq(resp.results_count, 1);
        st = resp.results[0].status_code;
        if (st == UAS_GOOD)
            cr_expect_eq(*(int32_t *)resp.results[0].output_arguments[0].data, 42);
    }
    uas_arena_free(&a);
    return st;
}

static uas_status read_status(uas_client *c, uint32_t id, uint32_t attr, uint8_t *byte)
{
    uas_nodeid n = uas_nodeid_numeric(1, id);
    uas_datavalue dv;
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_status st = env_read(c, &n, attr, &dv, &a);
    if (st == UAS_GOOD)
        st = dv.status;
    if (st == UAS_GOOD && byte && dv.value.type == UAS_TYPE(BYTE))
        *byte = *(uint8_t *)dv.value.data;
    uas_arena_free(&a);
    return st;
}

/* TranslateBrowsePaths from start, one hierarchical step to the node
 * named ns=1 name: the path's status (and *target its first target). */
static uas_status translate(uas_client *c, uas_nodeid start, const char *name, uas_nodeid *target)
{
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_relative_path_element el;
    memset(&el, 0, sizeof(el));
    el.reference_type_id = uas_nodeid_numeric(0, UAS_NS0ID_HIERARCHICALREFERENCES);
    el.include_subtypes = true;
    el.target_name.ns = 1;
    el.target_name.name.data = (uint8_t *)name;
    el.target_name.name.length = (int32_t)strlen(name);
    uas_browse_path bp;
    memset(&bp, 0, sizeof(bp));
    bp.starting_node = start;
    bp.relative_path.elements = &el;
    bp.relative_path.elements_count = 1;
    uas_translate_browse_paths_to_node_ids_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.browse_paths = &bp;
    rq.browse_paths_count = 1;
    uas_translate_browse_paths_to_node_ids_response rs;
    uas_status st = uas_client_call_sync(
        c, &rq, UAS_TYPE(TRANSLATE_BROWSE_PATHS_TO_NODE_IDS_REQUEST), &rs,
        UAS_TYPE(TRANSLATE_BROWSE_PATHS_TO_NODE_IDS_RESPONSE), &a, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "Translate: %s", uas_status_name(st));
    cr_assert_eq(rs.results_count, 1);
    st = rs.results[0].status_code;
    if (st == UAS_GOOD && target)
        *target = rs.results[0].targets[0].target_id.nodeid;
    uas_arena_free(&a);
    return st;
}

/* One data item on ns=1;i=id in a new subscription: the item's status. */
static uas_status monitor(uas_client *c, uint32_t id)
{
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_create_subscription_request cs;
    memset(&cs, 0, sizeof(cs));
    cs.requested_publishing_interval = 1000;
    cs.requested_lifetime_count = 60;
    cs.requested_max_keep_alive_count = 10;
    cs.publishing_enabled = true;
    uas_create_subscription_response csr;
    uas_status st = uas_client_call_sync(c, &cs, UAS_TYPE(CREATE_SUBSCRIPTION_REQUEST), &csr,
                                         UAS_TYPE(CREATE_SUBSCRIPTION_RESPONSE), &a, ENV_WAIT_MS);
    cr_assert_eq(st, UAS_GOOD, "CreateSubscription: %s", uas_status_name(st));
    uas_monitored_item_create_request it;
    memset(&it, 0, sizeof(it));
    it.item_to_monitor.node_id = uas_nodeid_numeric(1, id);
    it.item_to_monitor.attribute_id = ATTR_VALUE;
    it.monitoring_mode = UAS_MONITORING_MODE_REPORTING;
    it.requested_parameters.sampling_interval = 100;
    it.requested_parameters.queue_size = 1;
    uas_create_monitored_items_request mi;
    memset(&mi, 0, sizeof(mi));
    mi.subscription_id = csr.subscription_id;
    mi.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    mi.items_to_create_count = 1;
    mi.items_to_create = &it;
    uas_create_monitored_items_response mir;
    st = uas_client_call_sync(c, &mi, UAS_TYPE(CREATE_MONITORED_ITEMS_REQUEST), &mir,
                              UAS_TYPE(CREATE_MONITORED_ITEMS_RESPONSE), &a, ENV_WAIT_MS);
    if (st == UAS_GOOD) {
        cr_assert_eq(mir.results_count, 1);
        st = mir.results[0].status_code;
    }
    uas_arena_free(&a);
    return st;
}

Test(roles, anonymous_reads_but_may_not_write_or_call, .timeout = 60)
{
    renv r;
    renv_start(&r);
    uas_client *anon = env_client(&r.e, true, 0); /* None channel, anonymous */
    uas_client *other = user_client(&r, "olive", "op-pass");
    int32_t before = env_read_i32(anon, 1001);
    cr_expect_eq(write_i32(anon, 1001, before + 1), UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(env_read_i32(anon, 1001), before, "a refused write changes nothing");
    cr_expect_eq(call_add(anon), UAS_BAD_USER_ACCESS_DENIED);
    uint8_t ual = 0xff;
    cr_expect_eq(read_status(anon, 1001, ATTR_USER_ACCESS_LEVEL, &ual), UAS_GOOD);
    cr_expect_eq(ual, UAS_ACCESS_LEVEL_TYPE_CURRENT_READ);
    /* The session goes on, and another client is served meanwhile. */
    cr_expect_eq(env_read_i32(other, 1002), 1);
    cr_expect_eq(env_read_i32(anon, 1002), 1);
    env_client_close(anon);
    env_client_close(other);
    renv_stop(&r);
}

Test(roles, users_file_roles_grant_write_and_call, .timeout = 60)
{
    renv r;
    renv_start(&r);
    uas_client *op = user_client(&r, "olive", "op-pass");
    cr_expect_eq(write_i32(op, 1003, 7), UAS_GOOD);
    cr_expect_eq(env_read_i32(op, 1003), 7);
    cr_expect_eq(call_add(op), UAS_BAD_USER_ACCESS_DENIED, "Operator may not call");
    uas_client *eng = user_client(&r, "eddie", "eng-pass");
    cr_expect_eq(call_add(eng), UAS_GOOD);
    cr_expect_eq(write_i32(eng, 1003, 8), UAS_GOOD);
    env_client_close(op);
    env_client_close(eng);
    renv_stop(&r);
}

Test(roles, x509_user_mapped_by_thumbprint, .timeout = 60)
{
    renv r;
    renv_start(&r);
    uas_client *carol = user_client(&r, "carol", NULL);
    cr_expect_eq(call_add(carol), UAS_GOOD);
    cr_expect_eq(write_i32(carol, 1004, 9), UAS_GOOD);
    env_client_close(carol);
    renv_stop(&r);
}

Test(roles, node_role_permissions_hide_it_from_reads_and_monitored_items, .timeout = 60)
{
    renv r;
    renv_start(&r);
    uas_client *anon = env_client(&r.e, true, 0);
    uas_client *op = user_client(&r, "olive", "op-pass");
    cr_expect_eq(read_status(anon, 1050, ATTR_VALUE, NULL), UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(monitor(anon, 1050), UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(monitor(anon, 1051), UAS_GOOD, "the neighbour keeps the namespace default");
    cr_expect_eq(read_status(op, 1050, ATTR_VALUE, NULL), UAS_GOOD);
    cr_expect_eq(monitor(op, 1050), UAS_GOOD);
    env_client_close(anon);
    env_client_close(op);
    renv_stop(&r);
}

Test(roles, translate_browse_paths_only_finds_what_browse_shows, .timeout = 60)
{
    renv r;
    renv_start(&r);
    uas_client *anon = env_client(&r.e, true, 0);
    uas_client *op = user_client(&r, "olive", "op-pass");
    uas_nodeid objects = uas_nodeid_numeric(0, UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid found = {0};
    /* ns=1;i=1050 may only be browsed by Operator: to anyone else a path
     * through it matches nothing, and starting from it is refused. */
    cr_expect_eq(translate(anon, objects, "BenchmarkValue49", NULL), UAS_BAD_NO_MATCH);
    cr_expect_eq(translate(anon, uas_nodeid_numeric(1, 1050), "Anything", NULL),
                 UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(translate(anon, objects, "BenchmarkValue48", &found), UAS_GOOD,
                 "the neighbour keeps the namespace default");
    cr_expect(found.ns == 1 && found.id.numeric == 1049);
    cr_expect_eq(translate(op, objects, "BenchmarkValue49", &found), UAS_GOOD);
    cr_expect(found.ns == 1 && found.id.numeric == 1050);
    env_client_close(anon);
    env_client_close(op);
    renv_stop(&r);
}

/* X.509 user tokens count against the login throttle as user names do: a
 * client that keeps presenting certificates the user trust list refuses is
 * refused without more work, even with a trusted one, while others are
 * served. */
Test(roles, x509_user_failures_are_throttled, .timeout = 90)
{
    renv r;
    renv_start(&r);
    char dir[160];
    snprintf(dir, sizeof(dir), "%s/mallory", r.dir);
    uas_bytestring other_cert, other_key;
    env_make_cert(dir, "mallory", "urn:uastack:user:mallory", &other_cert, &other_key);
    for (int i = 0; i < 5; i++) {
        uas_status st = x509_login(&r, &other_cert, &other_key);
        cr_expect_eq(st, UAS_BAD_IDENTITY_TOKEN_REJECTED, "an untrusted user: %s",
                     uas_status_name(st));
    }
    cr_expect_eq(x509_login(&r, &r.user_cert, &r.user_key), UAS_BAD_USER_ACCESS_DENIED,
                 "throttled: a trusted user is refused too");
    uas_client *anon = env_client(&r.e, true, 0);
    cr_expect_eq(read_status(anon, 1001, ATTR_VALUE, NULL), UAS_GOOD, "others are served");
    env_client_close(anon);
    uas_pki_bytes_free(&other_cert);
    uas_pki_bytes_free(&other_key);
    renv_stop(&r);
}
