/* What the minimal profile (UA_MINIMAL) leaves out, and how it says so:
 * no NodeManagement services (a device's model is built by its program),
 * no NodeSet2 files (no XML parser). Built only in that profile
 * (tests/CMakeLists.txt). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <unistd.h>

#include <ua/codec.h>
#include <ua/nodeids.h>
#include <ua/types.h>

#include "dispatch.h"
#include "helper_aspace.h"

static bool served(uint32_t encoding_id)
{
    return uas_service_find(encoding_id) != NULL;
}

/* By encoding id: the profile has no descriptors of the services it
 * leaves out. */
Test(minimal_profile, device_services_only)
{
    cr_assert(served(UAS_TYPE(READ_REQUEST)->binary_encoding_id));
    cr_assert(served(UAS_TYPE(CALL_REQUEST)->binary_encoding_id));
    cr_assert(served(UAS_TYPE(CREATE_MONITORED_ITEMS_REQUEST)->binary_encoding_id));
    cr_assert(!served(UAS_NS0ID_ADDNODESREQUEST_ENCODING_DEFAULTBINARY));
    cr_assert(!served(UAS_NS0ID_ADDREFERENCESREQUEST_ENCODING_DEFAULTBINARY));
    cr_assert(!served(UAS_NS0ID_DELETENODESREQUEST_ENCODING_DEFAULTBINARY));
    cr_assert(!served(UAS_NS0ID_DELETEREFERENCESREQUEST_ENCODING_DEFAULTBINARY));
    cr_assert(!served(UAS_NS0ID_TRANSFERSUBSCRIPTIONSREQUEST_ENCODING_DEFAULTBINARY));
    cr_assert(!served(UAS_NS0ID_HISTORYREADREQUEST_ENCODING_DEFAULTBINARY));
}

/* Types outside the profile have no descriptor: an ExtensionObject of one
 * decodes to its encoded body, which re-encodes to the same bytes. */
Test(minimal_profile, unknown_structure_kept_encoded)
{
    cr_assert_null(uas_type_by_encoding_id(UAS_NS0ID_AGGREGATEFILTER_ENCODING_DEFAULTBINARY));
    cr_assert_null(uas_type_by_id(UAS_NS0ID_AGGREGATEFILTER));
    cr_assert_not_null(uas_type_by_encoding_id(UAS_NS0ID_DATACHANGEFILTER_ENCODING_DEFAULTBINARY));
    /* ExtensionObject: TypeId 730 (four-byte NodeId), binary body of 3 bytes. */
    const uint8_t wire[] = {0x01, 0x00, 0xDA, 0x02, 0x01, 0x03, 0x00, 0x00, 0x00, 0xAA, 0xBB, 0xCC};
    uas_arena a;
    uas_arena_init(&a, NULL, 0, 0);
    uas_decoder d;
    uas_decoder_init(&d, wire, sizeof(wire), &a, &uas_limits_default);
    uas_extensionobject x;
    cr_assert_eq(uas_decode(&d, &x, UAS_TYPE(EXTENSION_OBJECT)), UAS_GOOD);
    cr_assert_eq(x.encoding, UAS_EXTOBJ_BYTESTRING);
    cr_assert_eq(x.content.encoded.type_id.id.numeric, 730);
    cr_assert_eq(x.content.encoded.body.length, 3);
    uas_arena_free(&a);
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
