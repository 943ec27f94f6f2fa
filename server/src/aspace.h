/* The address space: namespace 0 from the generated static tables (ns0.h)
 * plus the nodes a program adds, and the services that read it: View
 * (Browse, BrowseNext, TranslateBrowsePathsToNodeIds, RegisterNodes,
 * UnregisterNodes), Attribute (Read, Write, HistoryRead) and Method (Call).
 *
 * Shared by all event loops: structure changes (adding nodes and
 * references) take a write lock, services other than Read a read lock;
 * Read takes no lock at all (aspace_rcu.h): values are immutable
 * snapshots published with one atomic store, and what a change replaces is
 * freed only after every loop has passed a quiescent point. */
#ifndef UAS_ASPACE_H
#define UAS_ASPACE_H

#include "server_internal.h"

uas_aspace *uas_aspace_new(uas_server *s);
void uas_aspace_delete(uas_aspace *as);

/* Service handlers (see uas_service_fn). Each checks the operation limits
 * of ctx->server->cfg (BadTooManyOperations), BadNothingToDo for empty
 * requests, and gives every item its own status code. */
void uas_svc_read(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_write(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_history_read(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_browse(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_browse_next(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_translate(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_register_nodes(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_unregister_nodes(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_call(uas_request_ctx *ctx, const void *req, void *resp);
/* NodeManagement (svc_nodemgmt.c). */
void uas_svc_add_nodes(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_add_references(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_delete_nodes(uas_request_ctx *ctx, const void *req, void *resp);
void uas_svc_delete_references(uas_request_ctx *ctx, const void *req, void *resp);

/* Quiescent points of loop i (aspace_rcu.h): online when the loop woke up
 * and is about to run callbacks (ev_check), offline before it sleeps
 * (ev_prepare; also frees what every reader has passed). Between the two,
 * Reads on that loop take no lock and hold no reference beyond the
 * callback. */
void uas_aspace_loop_online(uas_aspace *as, unsigned i);
void uas_aspace_loop_offline(uas_aspace *as, unsigned i);

/* Frees the continuation points a session holds (session close/timeout). */
void uas_view_session_release(uas_session *se);

/* Called after a variable's value changed (client Write or
 * uas_server_write_value), with no address space lock held. The hook reads
 * the new value with uas_aspace_read when it needs it; it must not add
 * nodes. One hook (the subscription module); NULL removes it. */
typedef void (*uas_aspace_change_fn)(void *ud, const uas_nodeid *id);
void uas_aspace_set_change_hook(uas_aspace *as, uas_aspace_change_fn fn, void *ud);

/* Called for every value written (client Write or uas_server_write_value)
 * with the value itself, under the node's value lock, so calls for one node
 * come in the order the values were published. It must only copy what it
 * needs and queue it (no locks besides its own leaf ones, no address space
 * calls); then once more with id NULL after the lock is dropped (a flush:
 * the hook may apply what it queued for the calling thread's own loop).
 * The change hook is still called after it. */
typedef void (*uas_aspace_value_fn)(void *ud, const uas_nodeid *id, const uas_datavalue *dv);
void uas_aspace_set_value_hook(uas_aspace *as, uas_aspace_value_fn fn, void *ud);

/* One attribute of one node, as the Read service returns it (same status
 * codes per item, index range and data encoding rules), for sampling by
 * monitored items. Memory from arena. Takes no lock (a read-side critical
 * section of aspace_rcu.h off the loops). */
void uas_aspace_read(uas_aspace *as, const uas_read_value_id *rv, uas_timestamps_to_return ttr,
                     uas_datetime now, uas_datavalue *out, uas_arena *arena);

/* Attach a callback to a Method node, also to namespace 0 methods (the
 * Server object's GetMonitoredItems, ...). BadNodeIdUnknown,
 * BadNodeClassInvalid, BadOutOfMemory. */
uas_status uas_aspace_set_method(uas_aspace *as, const uas_nodeid *id, uas_method_fn fn, void *ud);

#endif
