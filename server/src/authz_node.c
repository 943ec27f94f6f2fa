/* Node permissions: a node's own RolePermissions (the NodeSet's for
 * namespace 0 rows, a program's for its nodes), else its namespace's
 * default, united over the session's roles. */
#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <string.h>

#include <ua/mem.h>

#include "authz_node.h"

void as_rp_free(struct as_rp *rp)
{
    if (!rp)
        return;
    for (size_t i = 0; i < rp->count; i++)
        uas_clear(&rp->list[i], UAS_TYPE(ROLE_PERMISSION_TYPE));
    if (rp->list)
        uas_free(rp->list, rp->count * sizeof(*rp->list));
    uas_free(rp, sizeof(*rp));
}

static void rp_free_rcu(as_rcu_item *it)
{
    as_rp_free((struct as_rp *)((char *)it - offsetof(struct as_rp, rcu)));
}

static int ns0_role(uint32_t id)
{
    uas_nodeid n = uas_nodeid_numeric(0, id);
    return uas_role_by_nodeid(&n);
}

uint32_t as_perms(const uas_aspace *as, const as_nv *nv, uint32_t roles)
{
    if (roles & UAS_ROLES_INTERNAL)
        return UAS_PERMISSIONS_ALL;
    const as_node *d = nv->d;
    uint32_t p = 0;
    /* Loaded once: a concurrent change publishes another record. */
    const struct as_rp *rp = d ? atomic_load_explicit(&d->rp, memory_order_acquire) : NULL;
    if (rp) {
        uint32_t set = roles & ((1u << UAS_ROLE_WELL_KNOWN) - 1);
        while (set) {
            p |= rp->by_role[__builtin_ctz(set)];
            set &= set - 1;
        }
        return p;
    }
    const uas_ns0_node *s = nv->s;
    if (s && s->role_permission_count) {
        const uint32_t *pairs = uas_ns0_u32 + s->role_permissions;
        for (size_t i = 0; i < s->role_permission_count; i++) {
            int r = ns0_role(pairs[2 * i]);
            if (r >= 0 && (roles & UAS_ROLE_BIT(r)))
                p |= pairs[2 * i + 1];
        }
        return p;
    }
    return uas_authz_default_perms(as->server->authz, s ? 0 : d->id.ns, roles);
}

uint32_t as_read_needs(uint32_t attr, bool monitored)
{
    if (attr == AS_ATTR_VALUE)
        return UAS_PERMISSION_TYPE_READ;
    if (attr == AS_ATTR_ROLE_PERMISSIONS)
        return UAS_PERMISSION_TYPE_READ_ROLE_PERMISSIONS;
    if (monitored && attr == AS_ATTR_EVENT_NOTIFIER)
        return UAS_PERMISSION_TYPE_RECEIVE_EVENTS;
    return UAS_PERMISSION_TYPE_BROWSE;
}

uint8_t as_user_access_level(uint8_t access, uint32_t perms)
{
    uint8_t keep = UAS_ACCESS_LEVEL_TYPE_SEMANTIC_CHANGE;
    if (perms & UAS_PERMISSION_TYPE_READ)
        keep |= UAS_ACCESS_LEVEL_TYPE_CURRENT_READ;
    if (perms & UAS_PERMISSION_TYPE_WRITE)
        keep |= UAS_ACCESS_LEVEL_TYPE_CURRENT_WRITE | UAS_ACCESS_LEVEL_TYPE_STATUS_WRITE |
                UAS_ACCESS_LEVEL_TYPE_TIMESTAMP_WRITE;
    if (perms & UAS_PERMISSION_TYPE_READ_HISTORY)
        keep |= UAS_ACCESS_LEVEL_TYPE_HISTORY_READ;
    if (perms & (UAS_PERMISSION_TYPE_INSERT_HISTORY | UAS_PERMISSION_TYPE_MODIFY_HISTORY |
                 UAS_PERMISSION_TYPE_DELETE_HISTORY))
        keep |= UAS_ACCESS_LEVEL_TYPE_HISTORY_WRITE;
    return access & keep;
}

/* AttributeWriteMask bits (Part 3, 8.60) with a permission of their own. */
#define WM_HISTORIZING      (1u << 9)
#define WM_ROLE_PERMISSIONS (1u << 23)

uint32_t as_user_write_mask(uint32_t write_mask, uint32_t perms)
{
    uint32_t keep = 0;
    if (perms & UAS_PERMISSION_TYPE_WRITE_ATTRIBUTE)
        keep |= ~(WM_HISTORIZING | WM_ROLE_PERMISSIONS);
    if (perms & UAS_PERMISSION_TYPE_WRITE_HISTORIZING)
        keep |= WM_HISTORIZING;
    if (perms & UAS_PERMISSION_TYPE_WRITE_ROLE_PERMISSIONS)
        keep |= WM_ROLE_PERMISSIONS;
    return write_mask & keep;
}

static bool wanted(uint32_t roles, bool user, const uas_nodeid *role)
{
    if (!user || (roles & UAS_ROLES_INTERNAL))
        return true;
    int r = uas_role_by_nodeid(role);
    return r >= 0 && (roles & UAS_ROLE_BIT(r));
}

uas_status as_read_role_permissions(const uas_aspace *as, const as_nv *nv, uint32_t roles,
                                    bool user, uas_variant *v, uas_arena *arena)
{
    const as_node *d = nv->d;
    const uas_ns0_node *s = nv->s;
    size_t cap = UAS_ROLE_WELL_KNOWN;
    /* Loaded once: a concurrent change publishes another record. */
    const struct as_rp *rp = d ? atomic_load_explicit(&d->rp, memory_order_acquire) : NULL;
    if (rp)
        cap = rp->count;
    else if (s && s->role_permission_count)
        cap = s->role_permission_count;
    uas_role_permission_type *out = UAS_EMPTY_ARRAY;
    if (cap && !(out = uas_arena_calloc(arena, cap, sizeof(*out))))
        return UAS_BAD_OUT_OF_MEMORY;
    size_t n = 0;
    if (rp) {
        for (size_t i = 0; i < rp->count; i++)
            if (wanted(roles, user, &rp->list[i].role_id))
                out[n++] = rp->list[i]; /* strings stay in the record until the loop's
                                           next quiescent point */
    } else if (s && s->role_permission_count) {
        const uint32_t *pairs = uas_ns0_u32 + s->role_permissions;
        for (size_t i = 0; i < s->role_permission_count; i++) {
            uas_nodeid id = uas_nodeid_numeric(0, pairs[2 * i]);
            if (wanted(roles, user, &id)) {
                out[n].role_id = id;
                out[n++].permissions = pairs[2 * i + 1];
            }
        }
    } else {
        uint16_t ns = s ? 0 : d->id.ns;
        for (unsigned r = 0; r < UAS_ROLE_WELL_KNOWN; r++) {
            uint32_t p = uas_authz_default_role_perms(as->server->authz, ns, r);
            uas_nodeid id = uas_nodeid_numeric(0, uas_role_nodeid(r));
            if (p && wanted(roles, user, &id)) {
                out[n].role_id = id;
                out[n++].permissions = p;
            }
        }
    }
    if (n == 0)
        out = UAS_EMPTY_ARRAY;
    uas_variant_set_array(v, out, n, UAS_TYPE(ROLE_PERMISSION_TYPE));
    return UAS_GOOD;
}

uas_status uas_authz_check_monitor(uas_server *s, const uas_read_value_id *item, uint32_t roles)
{
    if (roles & UAS_ROLES_INTERNAL)
        return UAS_GOOD;
    uint32_t need = as_read_needs(item->attribute_id, true);
    uas_aspace *as = s->as;
    as_rdlock(as);
    as_nv nv = as_lookup(as, &item->node_id);
    uas_status st = UAS_GOOD;
    if (as_nv_found(&nv))
        st = uas_authz_check(as_perms(as, &nv, roles), need);
    as_unlock(as);
    return st;
}

/* ---- server.h ---- */

uas_status uas_server_set_role_permissions(uas_server *s, const uas_nodeid *id,
                                           const uas_role_permission_type *list, size_t count)
{
    struct as_rp *rp = NULL;
    if (list) {
        rp = uas_calloc(1, sizeof(*rp));
        if (!rp)
            return UAS_BAD_OUT_OF_MEMORY;
        if (count && !(rp->list = uas_calloc(count, sizeof(*rp->list)))) {
            as_rp_free(rp);
            return UAS_BAD_OUT_OF_MEMORY;
        }
        for (size_t i = 0; i < count; i++) {
            if (uas_copy(&list[i], &rp->list[i], UAS_TYPE(ROLE_PERMISSION_TYPE)) != UAS_GOOD) {
                rp->count = count;
                as_rp_free(rp);
                return UAS_BAD_OUT_OF_MEMORY;
            }
            int r = uas_role_by_nodeid(&list[i].role_id);
            if (r >= 0)
                rp->by_role[r] |= list[i].permissions;
        }
        rp->count = count;
    }
    uas_aspace *as = s->as;
    as_wrlock(as);
    as_nv nv = as_lookup(as, id);
    uas_status st = UAS_GOOD;
    as_node *d = NULL;
    if (!as_nv_found(&nv))
        st = UAS_BAD_NODE_ID_UNKNOWN;
    else if (!(d = as_overlay(as, &nv)))
        st = UAS_BAD_OUT_OF_MEMORY;
    struct as_rp *old = NULL;
    if (st == UAS_GOOD)
        old = atomic_exchange(&d->rp, rp);
    else
        as_rp_free(rp);
    as_unlock(as);
    /* A lock-free Read on another loop may be reading the old one. */
    if (old)
        as_rcu_retire(&as->rcu, &old->rcu, rp_free_rcu);
    return st;
}
