#define _POSIX_C_SOURCE 200809L
/* What the subscription engine needs to know about a monitored node: does
 * its value arrive by writes (pushed) or must it be sampled (a data source),
 * is its type numeric (deadbands), and its EURange (percent deadband). */
#include <string.h>

#include <ua/nodeids.h>

#include "aspace_internal.h"
#include "aspace_monitor.h"

uas_status uas_aspace_monitor_info(uas_aspace *as, const uas_nodeid *id, bool *pushed,
                                   bool *numeric)
{
    as_rdlock(as);
    as_nv nv = as_lookup(as, id);
    uas_status st = UAS_GOOD;
    if (!as_nv_found(&nv)) {
        st = UAS_BAD_NODE_ID_UNKNOWN;
    } else {
        /* A static value never changes and a stored one changes only by a
         * write, which the change hook reports; only callbacks need sampling. */
        const as_dsrc *ds = as_node_dsrc(nv.d);
        *pushed = !(ds && ds->read);
        uas_nodeid dt = as_nv_data_type(&nv);
        *numeric = dt.ns == 0 && dt.kind == UAS_NODEID_NUMERIC &&
                   as_ns0_is_subtype(dt.id.numeric, UAS_NS0ID_NUMBER);
    }
    as_unlock(as);
    return st;
}

uas_status uas_aspace_eu_range(uas_aspace *as, const uas_nodeid *id, uas_range *out)
{
    uint8_t mem[512];
    uas_arena a;
    uas_arena_init(&a, mem, sizeof(mem), 65536);
    as_rdlock(as);
    as_nv nv = as_lookup(as, id);
    uas_status st = UAS_BAD_DEADBAND_FILTER_INVALID; /* Part 8: no EURange */
    if (as_nv_found(&nv)) {
        as_nv prop = as_find_child(as, &nv, UAS_NS0ID_HASPROPERTY, "EURange");
        uas_datavalue dv;
        memset(&dv, 0, sizeof(dv));
        as_range whole;
        memset(&whole, 0, sizeof(whole));
        if (as_nv_found(&prop) && as_read_value(as, &prop, &whole, &dv, &a) == UAS_GOOD &&
            dv.value.type == UAS_TYPE(RANGE) && !dv.value.is_array && dv.value.data) {
            *out = *(const uas_range *)dv.value.data;
            st = out->high > out->low ? UAS_GOOD : UAS_BAD_DEADBAND_FILTER_INVALID;
        }
    }
    as_unlock(as);
    uas_arena_free(&a);
    return st;
}
