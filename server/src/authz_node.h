/* Permissions of nodes for a session's roles (authz.h), on the address
 * space's node view. Callers hold the address space read lock. */
#ifndef UAS_AUTHZ_NODE_H
#define UAS_AUTHZ_NODE_H

#include "aspace_internal.h"
#include "authz.h"

/* RolePermissions a program gave a node (uas_server_set_role_permissions):
 * the list as given, and its well-known entries folded per role. */
struct as_rp {
    as_rcu_item rcu; /* replaced ones are freed after lock-free Reads */
    uint32_t by_role[UAS_ROLE_WELL_KNOWN];
    size_t count;
    uas_role_permission_type *list; /* heap, deep */
};
void as_rp_free(struct as_rp *rp);

/* The union over roles of the node's permissions (UAS_PERMISSIONS_ALL for
 * UAS_ROLES_INTERNAL). No allocation, no lock. */
uint32_t as_perms(const uas_aspace *as, const as_nv *nv, uint32_t roles);

/* The permission reading attribute attr needs (Part 3, 8.55), for Read and
 * for a monitored item on it: Read for a Value, ReceiveEvents for an
 * EventNotifier's events, ReadRolePermissions for RolePermissions, Browse
 * for the rest. */
uint32_t as_read_needs(uint32_t attr, bool monitored);

/* AccessLevel cut to what the permissions allow (UserAccessLevel). */
uint8_t as_user_access_level(uint8_t access, uint32_t perms);
/* WriteMask cut to what the permissions allow (UserWriteMask). */
uint32_t as_user_write_mask(uint32_t write_mask, uint32_t perms);

/* The node's RolePermissions (own list, else its namespace default), as an
 * array of RolePermissionType from arena; only the entries of roles when
 * user (UserRolePermissions; UAS_ROLES_INTERNAL: all). */
uas_status as_read_role_permissions(const uas_aspace *as, const as_nv *nv, uint32_t roles,
                                    bool user, uas_variant *v, uas_arena *arena);

#endif
