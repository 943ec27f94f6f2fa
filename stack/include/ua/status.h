/* One status type everywhere: the OPC UA StatusCode itself, so the value a
 * function returns is the value that goes on the wire. The named codes are
 * generated from StatusCode.csv into <ua/statuscodes.h>. */
#ifndef UA_STATUS_H
#define UA_STATUS_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t uas_status;

#ifdef __cplusplus
}
#endif

#include <ua/statuscodes.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline bool uas_is_good(uas_status s)
{
    return (s >> 30) == 0;
}
static inline bool uas_is_uncertain(uas_status s)
{
    return (s >> 30) == 1;
}
static inline bool uas_is_bad(uas_status s)
{
    return (s >> 30) >= 2;
}

/* Name and description of the code with the low 16 bits (info bits) masked
 * off; "Unknown" / "" for codes not in the table. Never NULL. The minimal
 * profile (UA_MINIMAL) has no names: the name is the code in hex
 * ("0x80340000", info bits included, valid until the same thread's fourth
 * next call) and the description "". */
const char *uas_status_name(uas_status s);
const char *uas_status_description(uas_status s);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
