/* The service table: which request type runs which handler, and whether it
 * needs a session (created, or activated). A request not in it is answered
 * with BadServiceUnsupported. */
#include "aspace.h"
#include "dispatch.h"
#include "svc_subscription.h"

#define SVC(req, resp, fn, sess)                                                                   \
    {                                                                                              \
        UAS_TYPE(req), UAS_TYPE(resp), fn, sess                                                    \
    }

static const uas_service services[] = {
    SVC(READ_REQUEST, READ_RESPONSE, uas_svc_read, SVC_SESSION_ACTIVE),
    SVC(WRITE_REQUEST, WRITE_RESPONSE, uas_svc_write, SVC_SESSION_ACTIVE),
    SVC(BROWSE_REQUEST, BROWSE_RESPONSE, uas_svc_browse, SVC_SESSION_ACTIVE),
    SVC(BROWSE_NEXT_REQUEST, BROWSE_NEXT_RESPONSE, uas_svc_browse_next, SVC_SESSION_ACTIVE),
    SVC(TRANSLATE_BROWSE_PATHS_TO_NODE_IDS_REQUEST, TRANSLATE_BROWSE_PATHS_TO_NODE_IDS_RESPONSE,
        uas_svc_translate, SVC_SESSION_ACTIVE),
    SVC(REGISTER_NODES_REQUEST, REGISTER_NODES_RESPONSE, uas_svc_register_nodes,
        SVC_SESSION_ACTIVE),
    SVC(UNREGISTER_NODES_REQUEST, UNREGISTER_NODES_RESPONSE, uas_svc_unregister_nodes,
        SVC_SESSION_ACTIVE),
    SVC(CALL_REQUEST, CALL_RESPONSE, uas_svc_call, SVC_SESSION_ACTIVE),
#ifndef UAS_MINIMAL /* a device's model is built by its program, not by clients */
    SVC(ADD_NODES_REQUEST, ADD_NODES_RESPONSE, uas_svc_add_nodes, SVC_SESSION_ACTIVE),
    SVC(ADD_REFERENCES_REQUEST, ADD_REFERENCES_RESPONSE, uas_svc_add_references,
        SVC_SESSION_ACTIVE),
    SVC(DELETE_NODES_REQUEST, DELETE_NODES_RESPONSE, uas_svc_delete_nodes, SVC_SESSION_ACTIVE),
    SVC(DELETE_REFERENCES_REQUEST, DELETE_REFERENCES_RESPONSE, uas_svc_delete_references,
        SVC_SESSION_ACTIVE),
#endif
    SVC(PUBLISH_REQUEST, PUBLISH_RESPONSE, uas_svc_publish, SVC_SESSION_ACTIVE),
    SVC(CREATE_MONITORED_ITEMS_REQUEST, CREATE_MONITORED_ITEMS_RESPONSE,
        uas_svc_create_monitored_items, SVC_SESSION_ACTIVE),
    SVC(CREATE_SUBSCRIPTION_REQUEST, CREATE_SUBSCRIPTION_RESPONSE, uas_svc_create_subscription,
        SVC_SESSION_ACTIVE),
    SVC(MODIFY_SUBSCRIPTION_REQUEST, MODIFY_SUBSCRIPTION_RESPONSE, uas_svc_modify_subscription,
        SVC_SESSION_ACTIVE),
    SVC(SET_PUBLISHING_MODE_REQUEST, SET_PUBLISHING_MODE_RESPONSE, uas_svc_set_publishing_mode,
        SVC_SESSION_ACTIVE),
    SVC(DELETE_SUBSCRIPTIONS_REQUEST, DELETE_SUBSCRIPTIONS_RESPONSE, uas_svc_delete_subscriptions,
        SVC_SESSION_ACTIVE),
    SVC(REPUBLISH_REQUEST, REPUBLISH_RESPONSE, uas_svc_republish, SVC_SESSION_ACTIVE),
#ifndef UAS_MINIMAL /* a device's clients do not move subscriptions between sessions */
    SVC(TRANSFER_SUBSCRIPTIONS_REQUEST, TRANSFER_SUBSCRIPTIONS_RESPONSE,
        uas_svc_transfer_subscriptions, SVC_SESSION_ACTIVE),
#endif
    SVC(MODIFY_MONITORED_ITEMS_REQUEST, MODIFY_MONITORED_ITEMS_RESPONSE,
        uas_svc_modify_monitored_items, SVC_SESSION_ACTIVE),
    SVC(DELETE_MONITORED_ITEMS_REQUEST, DELETE_MONITORED_ITEMS_RESPONSE,
        uas_svc_delete_monitored_items, SVC_SESSION_ACTIVE),
    SVC(SET_MONITORING_MODE_REQUEST, SET_MONITORING_MODE_RESPONSE, uas_svc_set_monitoring_mode,
        SVC_SESSION_ACTIVE),
#ifndef UAS_MINIMAL /* the minimal profile: no triggering links, no history */
    SVC(SET_TRIGGERING_REQUEST, SET_TRIGGERING_RESPONSE, uas_svc_set_triggering,
        SVC_SESSION_ACTIVE),
    SVC(HISTORY_READ_REQUEST, HISTORY_READ_RESPONSE, uas_svc_history_read, SVC_SESSION_ACTIVE),
#endif
    SVC(CREATE_SESSION_REQUEST, CREATE_SESSION_RESPONSE, uas_svc_create_session, SVC_NO_SESSION),
    SVC(ACTIVATE_SESSION_REQUEST, ACTIVATE_SESSION_RESPONSE, uas_svc_activate_session,
        SVC_SESSION_CREATED),
    SVC(CLOSE_SESSION_REQUEST, CLOSE_SESSION_RESPONSE, uas_svc_close_session, SVC_SESSION_CREATED),
    SVC(CANCEL_REQUEST, CANCEL_RESPONSE, uas_svc_cancel, SVC_SESSION_ACTIVE),
    SVC(GET_ENDPOINTS_REQUEST, GET_ENDPOINTS_RESPONSE, uas_svc_get_endpoints, SVC_NO_SESSION),
    SVC(FIND_SERVERS_REQUEST, FIND_SERVERS_RESPONSE, uas_svc_find_servers, SVC_NO_SESSION),
};

const uas_service *uas_service_find(uint32_t encoding_id)
{
    /* Read first: the table is ordered by how often real clients call. */
    for (size_t i = 0; i < sizeof(services) / sizeof(services[0]); i++)
        if (services[i].request->binary_encoding_id == encoding_id)
            return &services[i];
    return NULL;
}
