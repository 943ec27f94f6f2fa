/* Authorization with the OPC UA role model (Part 3, 4.9 and 5.2.9; Part
 * 18): sessions hold roles, nodes grant permissions to roles, services
 * check the permission an operation needs.
 *
 * A session's roles are a bit set computed once when ActivateSession
 * succeeds (uas_authz_session_roles). Bits 0..7 are the well-known roles
 * of namespace 0; the remaining bits are free for roles a program defines
 * later (a role table maps a bit to its NodeId, so nothing else changes).
 * UAS_ROLES_INTERNAL marks the server itself (local reads, sampling of
 * monitored items, requests driven without a session): every permission.
 *
 * A node's permissions for a session are the union, over the session's
 * roles, of the node's RolePermissions: the node's own list when it has one
 * (namespace 0 rows of the NodeSet, nodes given one by the program), else
 * the default of its namespace (built in, replaced per namespace and role
 * by the configuration). The check is a few loads and ORs: no allocation,
 * no lock (the Read hot path runs it per item). */
#ifndef UAS_AUTHZ_H
#define UAS_AUTHZ_H

#include <stdbool.h>
#include <stdint.h>

#include <ua/types.h>

#include "server_internal.h"

enum {
    UAS_ROLE_ANONYMOUS = 0,
    UAS_ROLE_AUTHENTICATED_USER,
    UAS_ROLE_OBSERVER,
    UAS_ROLE_OPERATOR,
    UAS_ROLE_ENGINEER,
    UAS_ROLE_SUPERVISOR,
    UAS_ROLE_CONFIGURE_ADMIN,
    UAS_ROLE_SECURITY_ADMIN,
    UAS_ROLE_WELL_KNOWN /* count */
};

#define UAS_ROLE_BIT(r)     (1u << (r))
#define UAS_ROLES_INTERNAL  0x80000000u
#define UAS_PERMISSIONS_ALL 0x0001FFFFu /* every PermissionType bit of Part 3 */

/* Namespaces with a default table of their own; higher indices use the
 * default of "*" (every namespace but 0). */
#define UAS_AUTHZ_NS_MAX 64

typedef struct uas_authz uas_authz;

/* Compiles the [roles] part of s->cfg (anonymous_roles, x509_roles,
 * role_permissions) against the namespaces registered so far.
 * BadConfigurationError (logged with the offending entry), BadOutOfMemory. */
uas_status uas_authz_new(uas_server *s, uas_authz **out);
void uas_authz_delete(uas_authz *z);
/* A namespace was added: rules naming its URI apply to its index now. */
void uas_authz_namespace_added(uas_authz *z, uint16_t idx, const char *uri);

/* ActivateSession succeeded with this identity token: sets se->roles.
 * Anonymous (empty or AnonymousIdentityToken): Anonymous plus the
 * configured anonymous roles. A user name (se->user, checked): Anonymous,
 * AuthenticatedUser and the roles of the users file. An X.509 user:
 * Anonymous, AuthenticatedUser and the roles mapped to its thumbprint or
 * subject. Unknown role names are logged and ignored. */
void uas_authz_session_roles(uas_server *s, uas_session *se, const uas_extensionobject *identity);

/* The roles a request acts with. */
static inline uint32_t uas_authz_ctx_roles(const uas_request_ctx *ctx)
{
    return ctx->session ? ctx->session->roles : UAS_ROLES_INTERNAL;
}

/* Permissions of a node of namespace ns without RolePermissions of its own. */
uint32_t uas_authz_default_perms(const uas_authz *z, uint16_t ns, uint32_t roles);
/* The default entry of one role in namespace ns. */
uint32_t uas_authz_default_role_perms(const uas_authz *z, uint16_t ns, unsigned role);

/* A monitored item on item->node_id (authz_node.c): an event item (the
 * EventNotifier attribute) needs ReceiveEvents on the notifier, a data item
 * what a Read of its attribute needs. Good (also for an unknown node: the
 * caller reports that), or BadUserAccessDenied. Takes the read lock. */
uas_status uas_authz_check_monitor(uas_server *s, const uas_read_value_id *item, uint32_t roles);

/* NodeManagement (AddNodes, AddReferences, DeleteNodes, DeleteReferences):
 * the server has no such service yet; when it gets one, it asks here:
 * AddNode on the parent, AddReference/RemoveReference on the source,
 * DeleteNode on the node. Good or BadUserAccessDenied. */
uas_status uas_authz_check(uint32_t perms, uint32_t needed);

/* Well-known roles by name ("Operator"), by NodeId, and back. */
int uas_role_by_name(const char *name, size_t len); /* -1: unknown */
int uas_role_by_nodeid(const uas_nodeid *id);       /* -1: not well-known */
uint32_t uas_role_nodeid(unsigned role);            /* ns=0 numeric id */
const char *uas_role_name(unsigned role);
/* "Operator,Engineer" into role bits; "" is none. BadConfigurationError
 * names the first unknown role in err. */
uas_status uas_roles_parse(const char *list, size_t len, uint32_t *roles, char *err, size_t cap);
/* "Browse,Read,Write" into PermissionType bits ("None": 0). */
uas_status uas_perms_parse(const char *list, size_t len, uint32_t *perms, char *err, size_t cap);
/* Role names of a set, comma-separated, for logs. */
void uas_roles_format(uint32_t roles, char *buf, size_t cap);

/* Data sources on the Identities property of each well-known role of
 * Server.ServerCapabilities.RoleSet, answering the mapping rules in force
 * (authz.c). BadOutOfMemory. */
uas_status uas_authz_roleset_init(uas_server *s);

#endif
