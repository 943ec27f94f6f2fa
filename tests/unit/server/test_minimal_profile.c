/* What the minimal profile (UA_MINIMAL) leaves out, and how it says so:
 * no NodeManagement services (a device's model is built by its program),
 * no NodeSet2 files (no XML parser). Built only in that profile
 * (tests/CMakeLists.txt). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <unistd.h>

#include "dispatch.h"
#include "helper_aspace.h"

static bool served(const uas_type *request)
{
    return uas_service_find(request->binary_encoding_id) != NULL;
}

Test(minimal_profile, device_services_only)
{
    cr_assert(served(UAS_TYPE(READ_REQUEST)));
    cr_assert(served(UAS_TYPE(CALL_REQUEST)));
    cr_assert(served(UAS_TYPE(CREATE_MONITORED_ITEMS_REQUEST)));
    cr_assert(!served(UAS_TYPE(ADD_NODES_REQUEST)));
    cr_assert(!served(UAS_TYPE(ADD_REFERENCES_REQUEST)));
    cr_assert(!served(UAS_TYPE(DELETE_NODES_REQUEST)));
    cr_assert(!served(UAS_TYPE(DELETE_REFERENCES_REQUEST)));
}

Test(minimal_profile, nodeset_files_refused)
{
    fx f;
    fx_init(&f, NULL);
    const char *paths[] = {"Opc.Ua.Di.NodeSet2.xml"};
    cr_assert_eq(uas_server_load_nodesets(f.s, paths, 1), UAS_BAD_NOT_SUPPORTED);
    cr_assert_eq(uas_server_load_nodesets(f.s, paths, 0), UAS_GOOD);
    fx_fini(&f);

    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.nodesets = " Opc.Ua.Di.NodeSet2.xml";
    uas_status st = UAS_GOOD;
    cr_assert_null(uas_server_new(&cfg, &st));
    cr_assert_eq(st, UAS_BAD_NOT_SUPPORTED);
    cfg.nodesets = " , ";
    uas_server *s = uas_server_new(&cfg, &st);
    cr_assert_not_null(s);
    uas_server_delete(s);
}

/* No NodeManagement, so no store of its changes: configuring one is an
 * error at start, not a file that is silently never written. */
Test(minimal_profile, nodeset_store_refused)
{
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.bind_address = "127.0.0.1";
    cfg.port = 0;
    cfg.nodeset_store = "/tmp/uas-minimal-store.xml";
    uas_status st = UAS_GOOD;
    uas_server *s = uas_server_new(&cfg, &st);
    cr_assert_not_null(s);
    cr_expect_eq(uas_server_listen(s), UAS_BAD_NOT_SUPPORTED);
    uas_server_delete(s);
    cr_expect_eq(access("/tmp/uas-minimal-store.xml", F_OK), -1);
}
