/* Re-reading what an operator edits while the server runs. The trust
 * lists and the users file are watched anyway (by folder and file look);
 * this forces a read for files rewritten in place. */
#include "server_internal.h"

void uas_server_reload_security(uas_server *s)
{
    if (!s)
        return;
#ifdef UAS_ENABLE_ENCRYPTION
    uas_pki_store_reload(s->pki);
    uas_pki_store_reload(s->user_pki);
    uas_user_store_reload(s->users);
    uas_log(UAS_LOG_INFO, "security", "trust lists, CRLs and users file read again");
#endif
}
