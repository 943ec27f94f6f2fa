/* The minimal profile (UA_MINIMAL) reads no NodeSet2 files: it has no XML
 * parser, and a device's model is built in code (uas_server_add_*). This
 * file stands in for nodeset_load.c, nodeset_xml.c, nodeset_value.c and
 * nodeset_types.c there (server/CMakeLists.txt), so the loader's 22 KB of
 * code stay out of the program: a load is refused with the reason. */
#define _POSIX_C_SOURCE 200809L

#include "nodeset.h"

static uas_status refuse(size_t count)
{
    if (count == 0)
        return UAS_GOOD;
    uas_log(UAS_LOG_ERROR, "nodeset",
            "NodeSet2 files are not read by the minimal profile (no XML parser)");
    return UAS_BAD_NOT_SUPPORTED;
}

uas_status uas_server_load_nodesets(uas_server *s, const char *const *paths, size_t count)
{
    (void)s;
    (void)paths;
    return refuse(count);
}

uas_status uas_nodeset_load_config(uas_server *s, const char *list)
{
    (void)s;
    size_t n = 0;
    for (const char *p = list; p && *p; p++)
        n += *p != ' ' && *p != '\t' && *p != ',' && *p != '\n';
    return refuse(n);
}

void uas_nodeset_registry_free(uas_server *s)
{
    (void)s; /* nothing is ever loaded */
}

uas_status uas_server_bind_method(uas_server *s, const uas_nodeid *id, uas_method_fn fn, void *ud)
{
    return uas_aspace_set_method(s->as, id, fn, ud);
}

/* DataTypeDefinitions of structures come only from NodeSet2 files, so no
 * DataType of this profile has a run-time type to check against. */
uas_status as_rt_check(uas_aspace *as, const uas_nodeid *data_type, const uas_extensionobject *x)
{
    (void)as;
    (void)data_type;
    (void)x;
    return UAS_GOOD;
}

/* No NodeManagement, hence nothing to store: a configured store is refused
 * at start rather than silently never written. */
uas_status uas_nodeset_store_open(uas_server *s)
{
    if (!s->cfg.nodeset_store || !*s->cfg.nodeset_store)
        return UAS_GOOD;
    uas_log(UAS_LOG_ERROR, "nodeset",
            "nodeset_store is not kept by the minimal profile (no NodeManagement)");
    return UAS_BAD_NOT_SUPPORTED;
}

void uas_nodeset_store_close(uas_server *s)
{
    (void)s;
}

/* No node is ever marked persist here; a written value has nothing to mark. */
void uas_nodeset_store_touch(uas_server *s)
{
    (void)s;
}
