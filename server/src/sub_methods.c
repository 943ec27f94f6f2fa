/* Engine side of the Server object methods GetMonitoredItems and
 * ResendData (Part 5, 9.1 and 9.2): both act on a subscription of the
 * calling session only. */
#include "sub_internal.h"
#include "sub_methods.h"

/* The caller's subscription, or the status for an id that is not: another
 * session's subscription is not the caller's to inspect (Part 5, 9.1). */
static uas_status own_sub(uas_sub_session *s, uint32_t sub_id, sub_sub **out)
{
    *out = s ? sub_find(s, sub_id) : NULL;
    if (*out)
        return UAS_GOOD;
    if (s && sub_map_get(&s->e->subs_by_id, sub_id))
        return UAS_BAD_USER_ACCESS_DENIED;
    return UAS_BAD_SUBSCRIPTION_ID_INVALID;
}

uas_status uas_sub_get_monitored_items(uas_sub_session *s, uint32_t sub_id, uas_arena *a,
                                       uint32_t **server_handles, uint32_t **client_handles,
                                       size_t *count)
{
    sub_sub *sub;
    uas_status st = own_sub(s, sub_id, &sub);
    if (st != UAS_GOOD)
        return st;
    size_t n = sub->item_count;
    uint32_t *sh = n ? uas_arena_alloc(a, n * sizeof(uint32_t)) : UAS_EMPTY_ARRAY;
    uint32_t *ch = n ? uas_arena_alloc(a, n * sizeof(uint32_t)) : UAS_EMPTY_ARRAY;
    if (!sh || !ch)
        return UAS_BAD_OUT_OF_MEMORY;
    size_t i = 0;
    for (sub_list *l = sub->items.next; l != &sub->items && i < n; l = l->next, i++) {
        sub_item *it = SUB_CONTAINER(l, sub_item, sub_link);
        sh[i] = it->id;
        ch[i] = it->client_handle;
    }
    *server_handles = sh;
    *client_handles = ch;
    *count = i;
    return UAS_GOOD;
}

uas_status uas_sub_resend_data(uas_sub_session *s, uint32_t sub_id, int64_t now)
{
    sub_sub *sub;
    uas_status st = own_sub(s, sub_id, &sub);
    if (st != UAS_GOOD)
        return st;
    for (sub_list *l = sub->items.next; l != &sub->items; l = l->next)
        sub_item_resend_last(SUB_CONTAINER(l, sub_item, sub_link), now);
    sub_mark_dirty(s);
    return UAS_GOOD;
}

bool uas_sub_engine_has_subscription(uas_sub_engine *e, uint32_t sub_id)
{
    return sub_map_get(&e->subs_by_id, sub_id) != NULL;
}

uas_status uas_sub_condition_refresh(uas_sub_session *s, uint32_t sub_id, uint32_t item_id,
                                     const uas_sub_event *start, const uas_sub_event *end,
                                     int64_t now)
{
    sub_sub *sub;
    uas_status st = own_sub(s, sub_id, &sub);
    if (st != UAS_GOOD)
        return st;
    sub_item *one = NULL;
    if (item_id) {
        one = sub_map_get(&sub->item_map, item_id);
        if (!one || one->kind != SUB_ITEM_EVENT)
            return UAS_BAD_MONITORED_ITEM_ID_INVALID;
    }
    /* One refresh at a time: a client that calls again and again without
     * taking the events it asked for gets a status, not more queued work. */
    if (sub->refresh_pending) {
        sub_limit_hit(s->e, "ConditionRefresh while one is in progress", 1);
        return UAS_BAD_REFRESH_IN_PROGRESS;
    }
    for (sub_list *l = sub->items.next; l != &sub->items; l = l->next) {
        sub_item *it = SUB_CONTAINER(l, sub_item, sub_link);
        if (it->kind != SUB_ITEM_EVENT || (one && it != one))
            continue;
        sub_item_event_unfiltered(it, start, now);
        sub_item_event_unfiltered(it, end, now);
    }
    sub->refresh_pending = !sub_list_empty(&sub->ready);
    sub_mark_dirty(s);
    return UAS_GOOD;
}
