/* A server with its address space and a hand-made request context, to
 * drive the View, Attribute and Method service handlers directly. */
#ifndef HELPER_ASPACE_H
#define HELPER_ASPACE_H

#include <ua/nodeids.h>
#include <ua/server.h>

#include "aspace.h"

typedef struct fx {
    uas_server *s;
    uas_session se;
    uas_arena arena;
    uas_request_ctx ctx;
} fx;

/* cfg NULL: the default configuration (one thread). */
void fx_init(fx *f, const uas_server_config *cfg);
void fx_fini(fx *f);
/* Forget the previous response (the arena of one request). */
void fx_reset(fx *f);

uas_nodeid N0(uint32_t id);
uas_nodeid N1(uint32_t id);
uas_nodeid S1(const char *id);
uas_qualifiedname QN(uint16_t ns, const char *name);
uas_expandednodeid X(uas_nodeid id);

/* Namespace 0 is the full NodeSet (not the reduced build option). Tests
 * of nodes only the full set has call need_full_ns0(), which skips them. */
bool full_ns0(void);
void need_full_ns0(void);

/* One Read of one attribute. */
uas_datavalue read_attr(fx *f, uas_nodeid id, uint32_t attr, const char *range);
/* One Write of the Value attribute; returns the operation status. */
uas_status write_value(fx *f, uas_nodeid id, const uas_variant *v, const char *range);

/* Browse one node; the response lives in f's arena. */
uas_browse_response *browse(fx *f, uas_nodeid id, int dir, uas_nodeid reftype, bool subtypes,
                            uint32_t ncmask, uint32_t rmask, uint32_t max);
/* Number of references of a node in one direction, paging through
 * continuation points as a client would. */
size_t browse_count(fx *f, uas_nodeid id, int dir, uas_nodeid reftype);
/* The reference whose target has this browse name, or NULL. */
const uas_reference_description *find_ref(const uas_browse_result *r, const char *name);

/* Values made in the arena. */
uas_variant v_int32(fx *f, int32_t x);
uas_variant v_double(fx *f, double x);
uas_variant v_string(fx *f, const char *s);
uas_variant v_int32_array(fx *f, const int32_t *x, size_t n);

/* A plain variable under Objects (Organizes), value copied. */
uas_status add_var(fx *f, uas_nodeid id, const char *name, const uas_variant *value,
                   uas_nodeid data_type, int32_t rank, uint8_t access);

#endif
