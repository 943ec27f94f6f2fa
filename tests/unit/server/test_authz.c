/* Authorization (authz.h): role and permission names, the [roles]
 * configuration, the roles a session gets at activation, and the checks of
 * Read, Write, Call, Browse, HistoryRead, monitored items and the user
 * attributes for sessions of given roles. */
#define _GNU_SOURCE

#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "authz_node.h"
#include "config.h"
#include "helper_aspace.h"

#define ROLE(r) UAS_ROLE_BIT(UAS_ROLE_##r)
#define ANON    ROLE(ANONYMOUS)
#define USER    (ANON | ROLE(AUTHENTICATED_USER))

enum { ATTR_WRITE_MASK = 6, ATTR_USER_WRITE_MASK = 7, ATTR_ACCESS_LEVEL = 17 };
enum { ATTR_USER_ACCESS_LEVEL = 18, ATTR_USER_EXECUTABLE = 22 };
enum { ATTR_ROLE_PERMISSIONS = 24, ATTR_USER_ROLE_PERMISSIONS = 25 };

static fx f;

static uas_status add_fn(void *ud, const uas_nodeid *object, const uas_nodeid *method,
                         size_t in_count, const uas_variant *in, size_t *out_count,
                         uas_variant **out, uas_arena *arena)
{
    (void)ud, (void)object, (void)method, (void)in_count, (void)in, (void)out, (void)arena;
    *out_count = 0;
    return UAS_GOOD;
}

/* ns=1;i=1 writable Int32, ns=1;i=2 read-only, object ns=1;s=Obj with
 * method ns=1;s=Obj.M. */
static void add_nodes(fx *x)
{
    uas_variant v = v_int32(x, 5);
    cr_assert_eq(add_var(x, N1(1), "W", &v, N0(UAS_NS0ID_INT32), -1, 3), UAS_GOOD);
    cr_assert_eq(add_var(x, N1(2), "R", &v, N0(UAS_NS0ID_INT32), -1, 1), UAS_GOOD);
    uas_nodeid obj = S1("Obj"), objects = N0(UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid org = N0(UAS_NS0ID_ORGANIZES), comp = N0(UAS_NS0ID_HASCOMPONENT);
    uas_qualifiedname bn = QN(1, "Obj");
    cr_assert_eq(uas_server_add_object(x->s, &obj, &objects, &org, &bn, NULL, NULL), UAS_GOOD);
    uas_nodeid m = S1("Obj.M");
    uas_qualifiedname mbn = QN(1, "M");
    cr_assert_eq(
        uas_server_add_method(x->s, &m, &obj, &comp, &mbn, NULL, 0, NULL, 0, NULL, add_fn, NULL),
        UAS_GOOD);
}

static void setup(void)
{
    fx_init(&f, NULL);
    add_nodes(&f);
}

static void teardown(void)
{
    fx_fini(&f);
}

static void start_with(const uas_server_config *overrides)
{
    fx_fini(&f);
    fx_init(&f, overrides);
    add_nodes(&f);
}

static uas_server_config base_config(void)
{
    uas_server_config c;
    uas_server_config_default(&c);
    c.threads = 1;
    c.log_level = UAS_LOG_ERROR;
    return c;
}

static uas_status call_m(fx *x)
{
    uas_call_method_request m;
    memset(&m, 0, sizeof(m));
    m.object_id = S1("Obj");
    m.method_id = S1("Obj.M");
    uas_call_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.methods_to_call = &m;
    rq.methods_to_call_count = 1;
    uas_call_response *rs = uas_arena_calloc(&x->arena, 1, sizeof(*rs));
    uas_svc_call(&x->ctx, &rq, rs);
    cr_assert_eq(rs->results_count, 1);
    return rs->results[0].status_code;
}

#ifndef UAS_MINIMAL /* the profile serves no HistoryRead (and has no descriptors of it) */
static uas_status history(fx *x, uas_nodeid id)
{
    uas_read_raw_modified_details d;
    memset(&d, 0, sizeof(d));
    uas_history_read_value_id hv;
    memset(&hv, 0, sizeof(hv));
    hv.node_id = id;
    uas_history_read_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.history_read_details.encoding = UAS_EXTOBJ_DECODED;
    rq.history_read_details.content.decoded.type = UAS_TYPE(READ_RAW_MODIFIED_DETAILS);
    rq.history_read_details.content.decoded.data = &d;
    rq.timestamps_to_return = UAS_TIMESTAMPS_TO_RETURN_BOTH;
    rq.nodes_to_read = &hv;
    rq.nodes_to_read_count = 1;
    uas_history_read_response *rs = uas_arena_calloc(&x->arena, 1, sizeof(*rs));
    uas_svc_history_read(&x->ctx, &rq, rs);
    cr_assert_eq(rs->results_count, 1);
    return rs->results[0].status_code;
}
#endif

static uint8_t byte_attr(fx *x, uas_nodeid id, uint32_t attr)
{
    uas_datavalue dv = read_attr(x, id, attr, NULL);
    cr_assert_eq(dv.status, UAS_GOOD, "%s", uas_status_name(dv.status));
    return *(uint8_t *)dv.value.data;
}

static bool bool_attr(fx *x, uas_nodeid id, uint32_t attr)
{
    uas_datavalue dv = read_attr(x, id, attr, NULL);
    cr_assert_eq(dv.status, UAS_GOOD, "%s", uas_status_name(dv.status));
    return *(bool *)dv.value.data;
}

TestSuite(authz, .init = setup, .fini = teardown);

Test(authz, names_of_roles_and_permissions)
{
    uint32_t set = 0, perms = 0;
    char err[128];
    cr_assert_eq(uas_roles_parse(" Operator , engineer", 20, &set, err, sizeof(err)), UAS_GOOD);
    cr_assert_eq(set, ROLE(OPERATOR) | ROLE(ENGINEER));
    cr_assert_eq(uas_roles_parse("Operator,Wizard", 15, &set, err, sizeof(err)),
                 UAS_BAD_CONFIGURATION_ERROR);
    cr_assert(strstr(err, "Wizard"), "%s", err);
    cr_assert_eq(uas_perms_parse("Browse,Read,Call,AddNode", 24, &perms, err, sizeof(err)),
                 UAS_GOOD);
    cr_assert_eq(perms, UAS_PERMISSION_TYPE_BROWSE | UAS_PERMISSION_TYPE_READ |
                            UAS_PERMISSION_TYPE_CALL | UAS_PERMISSION_TYPE_ADD_NODE);
    cr_assert_eq(uas_perms_parse("None", 4, &perms, err, sizeof(err)), UAS_GOOD);
    cr_assert_eq(perms, 0);
    cr_assert_eq(uas_perms_parse("Read,Fly", 8, &perms, err, sizeof(err)),
                 UAS_BAD_CONFIGURATION_ERROR);
    uas_nodeid op = uas_nodeid_numeric(0, UAS_NS0ID_WELLKNOWNROLE_OPERATOR);
    cr_assert_eq(uas_role_by_nodeid(&op), UAS_ROLE_OPERATOR);
    cr_assert_eq(uas_role_nodeid(UAS_ROLE_ENGINEER), UAS_NS0ID_WELLKNOWNROLE_ENGINEER);
    char names[128];
    uas_roles_format(USER | ROLE(SECURITY_ADMIN), names, sizeof(names));
    cr_assert_str_eq(names, "Anonymous,AuthenticatedUser,SecurityAdmin");
}

Test(authz, bad_configuration_refuses_to_start)
{
    const char *bad_perms[] = {
        "1 Anonymous Read,Fly",
        "1 Wizard Read",
        "1 Anonymous",
        "99999999 Anonymous Read",
    };
    for (size_t i = 0; i < sizeof(bad_perms) / sizeof(bad_perms[0]); i++) {
        uas_server_config c = base_config();
        c.role_permissions = bad_perms[i];
        uas_status st;
        uas_server *s = uas_server_new(&c, &st);
        cr_expect_null(s, "'%s' accepted", bad_perms[i]);
        cr_expect_eq(st, UAS_BAD_CONFIGURATION_ERROR, "'%s': %s", bad_perms[i],
                     uas_status_name(st));
        uas_server_delete(s);
    }
    const char *bad_x509[] = {"Operator thumbprint=ABCD", "Operator fingerprint=AB",
                              "Wizard subject=CN=x", "Operator thumbprint=" /* empty */};
    for (size_t i = 0; i < sizeof(bad_x509) / sizeof(bad_x509[0]); i++) {
        uas_server_config c = base_config();
        c.x509_roles = bad_x509[i];
        uas_status st;
        uas_server *s = uas_server_new(&c, &st);
        cr_expect_null(s, "'%s' accepted", bad_x509[i]);
        uas_server_delete(s);
    }
    uas_server_config c = base_config();
    c.anonymous_roles = "Observer,Nobody";
    uas_status st;
    uas_server *s = uas_server_new(&c, &st);
    cr_expect_null(s);
    uas_server_delete(s);
}

Test(authz, anonymous_reads_operator_writes_engineer_calls)
{
    uas_variant v = v_int32(&f, 7);
    f.se.roles = ANON;
    cr_expect_eq(read_attr(&f, N1(1), 13, NULL).status, UAS_GOOD);
    cr_expect_eq(write_value(&f, N1(1), &v, NULL), UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(call_m(&f), UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(byte_attr(&f, N1(1), ATTR_ACCESS_LEVEL), 3);
    cr_expect_eq(byte_attr(&f, N1(1), ATTR_USER_ACCESS_LEVEL), 1);
    cr_expect_eq(bool_attr(&f, S1("Obj.M"), ATTR_USER_EXECUTABLE), false);

    f.se.roles = USER; /* authenticated, no role mapped */
    cr_expect_eq(write_value(&f, N1(1), &v, NULL), UAS_BAD_USER_ACCESS_DENIED);

    f.se.roles = USER | ROLE(OPERATOR);
    cr_expect_eq(write_value(&f, N1(1), &v, NULL), UAS_GOOD);
    cr_expect_eq(byte_attr(&f, N1(1), ATTR_USER_ACCESS_LEVEL), 3);
    cr_expect_eq(call_m(&f), UAS_BAD_USER_ACCESS_DENIED);
    /* AccessLevel still rules: a read-only node is not writable for anyone. */
    cr_expect_eq(write_value(&f, N1(2), &v, NULL), UAS_BAD_NOT_WRITABLE);

    f.se.roles = USER | ROLE(ENGINEER);
    cr_expect_eq(call_m(&f), UAS_GOOD);
    cr_expect_eq(bool_attr(&f, S1("Obj.M"), ATTR_USER_EXECUTABLE), true);

    /* A session that was never activated has no role at all. */
    f.se.roles = 0;
    cr_expect_eq(read_attr(&f, N1(1), 13, NULL).status, UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(read_attr(&f, N1(1), 3, NULL).status, UAS_BAD_USER_ACCESS_DENIED);
}

Test(authz, namespace_defaults_from_configuration)
{
    uas_server_config c = base_config();
    c.role_permissions = "1 Anonymous Browse,Read,Write\n"
                         "urn:test:late Operator Browse\n"
                         "* Observer Browse,Read,Call";
    c.anonymous_roles = "Observer";
    start_with(&c);
    uas_variant v = v_int32(&f, 7);
    f.se.roles = ANON;
    cr_expect_eq(write_value(&f, N1(1), &v, NULL), UAS_GOOD);
    cr_expect_eq(call_m(&f), UAS_BAD_USER_ACCESS_DENIED);
    f.se.roles = ROLE(OBSERVER);
    cr_expect_eq(call_m(&f), UAS_GOOD, "'*' covers namespace 1");

    /* A namespace named by URI, added after the server was made. */
    uint16_t ns = uas_server_add_namespace(f.s, "urn:test:late");
    cr_assert_eq(ns, 2);
    uas_nodeid id = uas_nodeid_numeric(ns, 1);
    cr_assert_eq(add_var(&f, id, "Late", &v, N0(UAS_NS0ID_INT32), -1, 3), UAS_GOOD);
    f.se.roles = ROLE(OPERATOR); /* alone: Anonymous would add its default */
    cr_expect_eq(read_attr(&f, id, 13, NULL).status, UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(read_attr(&f, id, 3, NULL).status, UAS_GOOD, "Browse covers BrowseName");
    cr_expect_eq(write_value(&f, id, &v, NULL), UAS_BAD_USER_ACCESS_DENIED);

    /* The anonymous roles come with every anonymous activation. */
    uas_extensionobject none;
    memset(&none, 0, sizeof(none));
    uas_authz_session_roles(f.s, &f.se, &none);
    cr_expect_eq(f.se.roles, ANON | ROLE(OBSERVER));
}

Test(authz, session_roles_of_each_identity)
{
    uas_extensionobject tok;
    memset(&tok, 0, sizeof(tok));
    uas_authz_session_roles(f.s, &f.se, &tok);
    cr_expect_eq(f.se.roles, ANON);
    uas_anonymous_identity_token anon;
    memset(&anon, 0, sizeof(anon));
    tok.encoding = UAS_EXTOBJ_DECODED;
    tok.content.decoded.type = UAS_TYPE(ANONYMOUS_IDENTITY_TOKEN);
    tok.content.decoded.data = &anon;
    uas_authz_session_roles(f.s, &f.se, &tok);
    cr_expect_eq(f.se.roles, ANON);
    /* A user name without a users file: authenticated, nothing mapped. */
    uas_user_name_identity_token un;
    memset(&un, 0, sizeof(un));
    tok.content.decoded.type = UAS_TYPE(USER_NAME_IDENTITY_TOKEN);
    tok.content.decoded.data = &un;
    snprintf(f.se.user, sizeof(f.se.user), "olive");
    uas_authz_session_roles(f.s, &f.se, &tok);
    cr_expect_eq(f.se.roles, USER);
}

#ifdef UAS_ENABLE_ENCRYPTION /* users files need libsodium */
static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

Test(authz, users_file_roles_map_to_well_known_roles)
{
    char dir[] = "/tmp/uas-authz-XXXXXX";
    cr_assert(mkdtemp(dir));
    char users[64];
    snprintf(users, sizeof(users), "%s/users", dir);
    cr_assert_eq(uas_user_add(users, "olive", "pw", 2, "Operator,Engineer,Gardener", NULL),
                 UAS_GOOD);
    uas_server_config c = base_config();
    c.security = "Basic256Sha256"; /* users are read with a secured endpoint only */
    c.users_file = users;
    c.pki_dir = dir;
    start_with(&c);
    uas_user_name_identity_token un;
    memset(&un, 0, sizeof(un));
    uas_extensionobject tok;
    memset(&tok, 0, sizeof(tok));
    tok.encoding = UAS_EXTOBJ_DECODED;
    tok.content.decoded.type = UAS_TYPE(USER_NAME_IDENTITY_TOKEN);
    tok.content.decoded.data = &un;
    snprintf(f.se.user, sizeof(f.se.user), "olive");
    uas_authz_session_roles(f.s, &f.se, &tok);
    /* Gardener is not a role this server knows: ignored (logged). */
    cr_expect_eq(f.se.roles, USER | ROLE(OPERATOR) | ROLE(ENGINEER));
    cr_expect_eq(nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}
#endif

static const uas_reference_description *ref_to(const uas_browse_result *r, uas_nodeid id)
{
    for (size_t i = 0; i < r->references_count; i++)
        if (uas_equal(&r->references[i].node_id.nodeid, &id, UAS_TYPE(NODE_ID)))
            return &r->references[i];
    return NULL;
}

Test(authz, node_role_permissions_hide_it_from_browse_and_reads)
{
    uas_role_permission_type rp[2];
    memset(rp, 0, sizeof(rp));
    rp[0].role_id = N0(UAS_NS0ID_WELLKNOWNROLE_OPERATOR);
    rp[0].permissions = UAS_PERMISSION_TYPE_BROWSE | UAS_PERMISSION_TYPE_READ;
    rp[1].role_id = uas_nodeid_string(2, "CustomRole"); /* kept, grants nothing yet */
    rp[1].permissions = UAS_PERMISSION_TYPE_WRITE;
    cr_assert_eq(uas_server_set_role_permissions(f.s, &(uas_nodeid){0}, rp, 1),
                 UAS_BAD_NODE_ID_UNKNOWN);
    cr_assert_eq(uas_server_set_role_permissions(f.s, &(uas_nodeid[]){N1(1)}[0], rp, 2), UAS_GOOD);
    uas_nodeid objects = N0(UAS_NS0ID_OBJECTSFOLDER), all = {0};

    f.se.roles = ANON;
    uas_browse_response *b = browse(&f, objects, 0, all, true, 0, 0x3f, 0);
    cr_expect_null(ref_to(&b->results[0], N1(1)), "hidden from anonymous");
    cr_expect_not_null(ref_to(&b->results[0], N1(2)));
    b = browse(&f, N1(1), 2, all, true, 0, 0x3f, 0);
    cr_expect_eq(b->results[0].status_code, UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(read_attr(&f, N1(1), 13, NULL).status, UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(read_attr(&f, N1(1), 4, NULL).status, UAS_BAD_USER_ACCESS_DENIED);

    f.se.roles = USER | ROLE(OPERATOR);
    b = browse(&f, objects, 0, all, true, 0, 0x3f, 0);
    cr_expect_not_null(ref_to(&b->results[0], N1(1)));
    cr_expect_eq(read_attr(&f, N1(1), 13, NULL).status, UAS_GOOD);
    uas_variant v = v_int32(&f, 1);
    cr_expect_eq(write_value(&f, N1(1), &v, NULL), UAS_BAD_USER_ACCESS_DENIED,
                 "the node's own list replaces the namespace default");
    uas_datavalue mine = read_attr(&f, N1(1), ATTR_USER_ROLE_PERMISSIONS, NULL);
    cr_assert_eq(mine.status, UAS_GOOD);
    cr_expect_eq(mine.value.array_length, 1);

    /* RolePermissions needs ReadRolePermissions; SecurityAdmin has it. */
    cr_expect_eq(read_attr(&f, N1(1), ATTR_ROLE_PERMISSIONS, NULL).status,
                 UAS_BAD_USER_ACCESS_DENIED);
    f.se.roles = USER | ROLE(SECURITY_ADMIN);
    uas_datavalue all_rp = read_attr(&f, N1(2), ATTR_ROLE_PERMISSIONS, NULL);
    cr_assert_eq(all_rp.status, UAS_GOOD);
    cr_expect_eq(all_rp.value.array_length, 8, "the namespace default, one entry per role");
    /* Returned to the default. */
    cr_assert_eq(uas_server_set_role_permissions(f.s, &(uas_nodeid[]){N1(1)}[0], NULL, 0),
                 UAS_GOOD);
    f.se.roles = ANON;
    cr_expect_eq(read_attr(&f, N1(1), 13, NULL).status, UAS_GOOD);
}

Test(authz, namespace0_role_permissions_of_the_nodeset)
{
    need_full_ns0();
    /* WellKnownRole_Operator.Identities lists SecurityAdmin only. */
    uas_nodeid ids = N0(UAS_NS0ID_WELLKNOWNROLE_OPERATOR_IDENTITIES);
    f.se.roles = USER | ROLE(OPERATOR);
    cr_expect_eq(read_attr(&f, ids, 4, NULL).status, UAS_BAD_USER_ACCESS_DENIED);
    f.se.roles = USER | ROLE(SECURITY_ADMIN);
    cr_expect_eq(read_attr(&f, ids, 4, NULL).status, UAS_GOOD);
    /* ServerConfiguration: Anonymous Browse, ConfigureAdmin, SecurityAdmin;
     * UserRolePermissions shows the session's two. */
    uas_datavalue mine = read_attr(&f, N0(12637), ATTR_USER_ROLE_PERMISSIONS, NULL);
    cr_assert_eq(mine.status, UAS_GOOD);
    cr_expect_eq(mine.value.array_length, 2);
    /* Every role may call the namespace 0 methods that act on the caller's
     * own subscriptions. */
    f.se.roles = ANON;
    cr_expect(bool_attr(&f, N0(UAS_NS0ID_SERVER_GETMONITOREDITEMS), ATTR_USER_EXECUTABLE));
}

#ifndef UAS_MINIMAL
Test(authz, history_read_needs_read_history)
{
    cr_expect_eq(history(&f, N1(1)), UAS_BAD_HISTORY_OPERATION_UNSUPPORTED);
    uas_server_config c = base_config();
    c.role_permissions = "1 Anonymous Browse,Read";
    start_with(&c);
    f.se.roles = ANON;
    cr_expect_eq(history(&f, N1(1)), UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(history(&f, N1(999)), UAS_BAD_NODE_ID_UNKNOWN);
    f.se.roles = USER;
    cr_expect_eq(history(&f, N1(1)), UAS_BAD_HISTORY_OPERATION_UNSUPPORTED);
}
#endif

Test(authz, monitored_items_need_read_or_receive_events)
{
    uas_server_config c = base_config();
    c.role_permissions = "0 Anonymous Browse,Read\n1 Anonymous Browse";
    start_with(&c);
    uas_read_value_id rv;
    memset(&rv, 0, sizeof(rv));
    rv.node_id = N0(UAS_NS0ID_SERVER);
    rv.attribute_id = 12; /* EventNotifier: an event item */
    cr_expect_eq(uas_authz_check_monitor(f.s, &rv, ANON), UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(uas_authz_check_monitor(f.s, &rv, USER), UAS_GOOD);
    rv.node_id = N1(1);
    rv.attribute_id = 13;
    cr_expect_eq(uas_authz_check_monitor(f.s, &rv, ANON), UAS_BAD_USER_ACCESS_DENIED);
    cr_expect_eq(uas_authz_check_monitor(f.s, &rv, USER), UAS_GOOD);
    rv.attribute_id = 3; /* BrowseName: Browse is enough */
    cr_expect_eq(uas_authz_check_monitor(f.s, &rv, ANON), UAS_GOOD);
    cr_expect_eq(uas_authz_check_monitor(f.s, &rv, UAS_ROLES_INTERNAL), UAS_GOOD);
}

Test(authz, user_write_mask_and_access_level_follow_permissions)
{
    cr_expect_eq(as_user_write_mask(0xffffffffu, UAS_PERMISSION_TYPE_WRITE_ATTRIBUTE),
                 0xffffffffu & ~((1u << 9) | (1u << 23)));
    cr_expect_eq(as_user_write_mask(0xffffffffu, UAS_PERMISSION_TYPE_WRITE_ROLE_PERMISSIONS),
                 1u << 23);
    cr_expect_eq(as_user_access_level(0x7f, UAS_PERMISSION_TYPE_READ), 0x11);
    cr_expect_eq(as_user_access_level(0x7f, UAS_PERMISSION_TYPE_READ | UAS_PERMISSION_TYPE_WRITE |
                                                UAS_PERMISSION_TYPE_READ_HISTORY),
                 0x77);
}

#ifndef UAS_MINIMAL /* the minimal profile has no INI files */
Test(authz, config_file_roles_section)
{
    char path[] = "/tmp/uas-authz-ini-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs("[roles]\nanonymous = Observer\npermissions = 1 Anonymous Browse,Read,Write\n"
          "permissions = 1 Operator Browse\nx509 = Operator subject=CN=bob, O=Acme\n",
          fp);
    fclose(fp);
    uas_server_config c = base_config();
    uas_config_file *keep = NULL;
    char err[256];
    cr_assert_eq(uas_server_config_load_file(path, &c, &keep, err, sizeof(err)), UAS_GOOD, "%s",
                 err);
    cr_expect_str_eq(c.anonymous_roles, "Observer");
    cr_expect_str_eq(c.role_permissions, "1 Anonymous Browse,Read,Write\n1 Operator Browse");
    cr_expect_str_eq(c.x509_roles, "Operator subject=CN=bob, O=Acme");
    start_with(&c);
    uas_variant v = v_int32(&f, 3);
    f.se.roles = ANON;
    cr_expect_eq(write_value(&f, N1(1), &v, NULL), UAS_GOOD);
    f.se.roles = USER | ROLE(OPERATOR);
    cr_expect_eq(write_value(&f, N1(1), &v, NULL), UAS_GOOD, "Operator also holds Anonymous");
    uas_server_config_file_free(keep);
    unlink(path);
}
#endif
