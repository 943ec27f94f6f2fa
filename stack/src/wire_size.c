/* Minimum encoded size of every described type, for the decoder's check of
 * array counts against the bytes left. Computed once from the descriptors
 * (structures nest without cycles except through Variant/ExtensionObject,
 * whose minimum is fixed, so one recursive pass terminates). */
#include <pthread.h>

#include "codec_internal.h"

static uint32_t min_size[UAS_TYPES_COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static uint32_t builtin_min(uint8_t kind)
{
    switch (kind) {
    case UAS_BUILTIN_STRING:
    case UAS_BUILTIN_BYTESTRING:
    case UAS_BUILTIN_XMLELEMENT:
        return 4; /* length */
    case UAS_BUILTIN_NODEID:
    case UAS_BUILTIN_EXPANDEDNODEID:
        return 2; /* two-byte form */
    case UAS_BUILTIN_QUALIFIEDNAME:
        return 6;
    case UAS_BUILTIN_EXTENSIONOBJECT:
        return 3; /* two-byte type id + encoding byte */
    case UAS_BUILTIN_LOCALIZEDTEXT:
    case UAS_BUILTIN_DATAVALUE:
    case UAS_BUILTIN_VARIANT:
    case UAS_BUILTIN_DIAGNOSTICINFO:
        return 1; /* mask byte */
    default:
        return (uint32_t)uas_wire_size(kind);
    }
}

static uint32_t compute(const uas_type *t)
{
    size_t idx = (size_t)(t - uas_types);
    if (min_size[idx] != UINT32_MAX)
        return min_size[idx];
    uint32_t n = 0;
    if (t->kind == UAS_KIND_STRUCT) {
        for (uint16_t i = 0; i < t->member_count; i++)
            n += t->members[i].is_array ? 4 : compute(uas_member_type(&t->members[i]));
    } else {
        n = builtin_min(t->kind);
    }
    min_size[idx] = n;
    return n;
}

static void init(void)
{
    for (size_t i = 0; i < UAS_TYPES_COUNT; i++)
        min_size[i] = UINT32_MAX;
    for (size_t i = 0; i < UAS_TYPES_COUNT; i++)
        compute(&uas_types[i]);
}

size_t uas_min_wire_size(const uas_type *t)
{
    pthread_once(&once, init);
    if (t >= uas_types && t < uas_types + UAS_TYPES_COUNT)
        return min_size[t - uas_types];
    /* A descriptor from outside the generated table (a custom type): be
     * conservative. */
    return t->kind == UAS_KIND_STRUCT && t->member_count == 0 ? 0 : 1;
}
