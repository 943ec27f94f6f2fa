/* Symbol visibility of the uastack libraries. They are compiled with
 * -fvisibility=hidden, so only what their public headers declare is
 * exported: each public header brackets its declarations with
 * UAS_API_BEGIN / UAS_API_END (every declaration between them is
 * UAS_EXPORT), and a single declaration elsewhere can carry UAS_EXPORT.
 * `nm -D` on a shared library then lists the uas_* API and nothing else
 * (ctest shared_exports_public_only). */
#ifndef UA_EXPORT_H
#define UA_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define UAS_EXPORT    __attribute__((visibility("default")))
#define UAS_API_BEGIN _Pragma("GCC visibility push(default)")
#define UAS_API_END   _Pragma("GCC visibility pop")
#else
#define UAS_EXPORT
#define UAS_API_BEGIN
#define UAS_API_END
#endif

#endif
