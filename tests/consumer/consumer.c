/* A program outside uastack, built against it the three ways an embedder
 * does (tests/consumer/CMakeLists.txt: add_subdirectory, find_package,
 * pkg-config): a server on an ephemeral port with one variable of its own,
 * and a client that opens a session to it. Exits 0 when the server
 * listened, the session became active and the variable reads back. */
#include <stdio.h>
#include <string.h>

#include <ua/client.h>
#include <ua/net.h>
#include <ua/nodeids.h>
#include <ua/server.h>

static int fail(const char *what, uas_status st)
{
    fprintf(stderr, "consumer: %s: %s\n", what, uas_status_name(st));
    return 1;
}

static int run_client(uint16_t port)
{
    char url[64];
    snprintf(url, sizeof(url), "opc.tcp://127.0.0.1:%u", port);
    uas_loop *loop = uas_loop_new(0);
    if (!loop)
        return fail("loop", UAS_BAD_OUT_OF_MEMORY);
    uas_client_config cc;
    uas_client_config_default(&cc);
    cc.endpoint_url = url;
    cc.create_session = true;
    uas_client *c = uas_client_new(loop, &cc, NULL, NULL);
    uas_status st = c ? uas_client_connect(c) : UAS_BAD_OUT_OF_MEMORY;
    if (st == UAS_GOOD)
        st = uas_client_wait_state(c, UAS_CLIENT_SESSION_ACTIVE, 5000);
    if (c)
        uas_client_delete(c);
    uas_loop_delete(loop);
    return st == UAS_GOOD ? 0 : fail("client session", st);
}

int main(void)
{
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.bind_address = "127.0.0.1";
    cfg.port = 0;
    cfg.log_level = UAS_LOG_WARN;
    uas_status st;
    uas_server *s = uas_server_new(&cfg, &st);
    if (!s)
        return fail("server", st);
    uint16_t ns = uas_server_add_namespace(s, "urn:uastack:consumer");
    uas_nodeid id = uas_nodeid_numeric(ns, 1);
    uas_nodeid objects = uas_nodeid_numeric(0, UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid organizes = uas_nodeid_numeric(0, UAS_NS0ID_ORGANIZES);
    uas_nodeid type = uas_nodeid_numeric(0, UAS_NS0ID_BASEDATAVARIABLETYPE);
    uas_qualifiedname bn = {ns, uas_string_from("Answer")};
    uas_variable_attributes va = {0};
    int32_t answer = 42;
    va.data_type = uas_nodeid_numeric(0, UAS_NS0ID_INT32);
    va.value_rank = -1;
    va.access_level = va.user_access_level = 0x01; /* CurrentRead */
    va.display_name.text = uas_string_from("Answer");
    uas_variant_set_scalar(&va.value, &answer, UAS_TYPE(INT32));
    st = uas_server_add_variable(s, &id, &objects, &organizes, &bn, &type, &va);
    if (st == UAS_GOOD)
        st = uas_server_listen(s);
    if (st == UAS_GOOD)
        st = uas_server_start(s);
    int rc = st == UAS_GOOD ? 0 : fail("server start", st);
    uas_variant v;
    memset(&v, 0, sizeof(v));
    if (rc == 0 && (st = uas_server_read_value(s, &id, &v)) != UAS_GOOD)
        rc = fail("read back", st);
    else if (rc == 0 && (v.type != UAS_TYPE(INT32) || *(const int32_t *)v.data != 42))
        rc = fail("read back", UAS_BAD_TYPE_MISMATCH);
    uas_clear(&v, UAS_TYPE(VARIANT));
    if (rc == 0)
        rc = run_client(uas_server_port(s));
    if (rc == 0)
        printf("consumer: server on port %u, session active, Answer = 42\n", uas_server_port(s));
    uas_server_stop(s);
    uas_server_delete(s);
    return rc;
}
