/* Connection handling and service dispatch of the server. */
#ifndef UAS_DISPATCH_H
#define UAS_DISPATCH_H

#include "server_internal.h"

typedef struct uas_sconn uas_sconn;

/* Take over an accepted socket on loop l. */
void uas_dispatch_accept(uas_sloop *l, int fd);
/* Close every connection of a stopped loop (server shutdown). */
void uas_dispatch_abort_all(uas_sloop *l);
/* Remember that session se is bound to this connection's channel. */
void uas_sconn_cache_add(uas_sconn *sc, uas_session *se);

/* Session and discovery services (svc_session.c, svc_discovery.c). */
void uas_svc_find_servers(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_get_endpoints(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_create_session(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_activate_session(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_close_session(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_cancel(uas_request_ctx *ctx, const void *req, void *resp);

#endif
