/* Address-space queries for monitored items (aspace_monitor.c). */
#ifndef UAS_ASPACE_MONITOR_H
#define UAS_ASPACE_MONITOR_H

#include "aspace.h"

/* BadNodeIdUnknown, or Good with: pushed (value changes are reported by
 * the change hook) and numeric (a subtype of Number: deadbands allowed). */
uas_status uas_aspace_monitor_info(uas_aspace *as, const uas_nodeid *id, bool *pushed,
                                   bool *numeric);
/* The EURange property of an analog item; BadDeadbandFilterInvalid when
 * it has none. */
uas_status uas_aspace_eu_range(uas_aspace *as, const uas_nodeid *id, uas_range *out);

#endif
