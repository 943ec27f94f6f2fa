/* Connection handling and service dispatch of the server. */
#ifndef UAS_DISPATCH_H
#define UAS_DISPATCH_H

#include "server_internal.h"

typedef struct uas_sconn uas_sconn;

/* Take over an accepted socket on loop l; peer is its struct sockaddr
 * (NULL: unknown), counted against max_connections_per_address. Refused
 * sockets get ERR BadTcpNotEnoughResources and are closed. */
void uas_dispatch_accept(uas_sloop *l, int fd, const void *peer);
/* Memory pressure: drops this loop's largest consumer when it is the
 * largest of all loops (and holds at least 256 KiB); the last loop to look
 * re-arms the budget's pressure hook. */
void uas_dispatch_relieve(uas_sloop *l);
/* Send a service's response: a Bad service result becomes a ServiceFault,
 * and so does a response that cannot be encoded or exceeds the client's
 * limits before any chunk left (one cut short by an abort chunk is already
 * answered). */
void uas_dispatch_respond(uas_server *s, uas_conn *c, uint32_t request_id, const void *resp,
                          const uas_type *t);

/* Close the connections of loop l whose channel has no session and has
 * carried no request for channel_idle_timeout_ms (BadTimeout). */
void uas_dispatch_close_idle(uas_sloop *l, int64_t now_ms);
/* Close every connection of a stopped loop (server shutdown). */
void uas_dispatch_abort_all(uas_sloop *l);
/* The sockets of the loop's connections and their poll() events, the
 * first cap of them into fds; returns how many there are. */
struct pollfd;
size_t uas_dispatch_pollfds(uas_sloop *l, struct pollfd *fds, size_t cap);
/* Seconds until the earliest timer of the loop's connections, -1: none. */
double uas_dispatch_timer_remaining(uas_sloop *l);
/* A parked request's work came back to its loop (the done hook of the
 * loop's work inbox): resume the request, or drop the result when its
 * connection is gone. */
struct uas_work;
void uas_dispatch_work_done(struct uas_work *w);
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
