/* Login load beside a measured scenario (--logins N): N loops on the load
 * generator's own loop, each a whole secured session set-up again and
 * again: a new connection, OPN (SignAndEncrypt with the run's policy),
 * CreateSession, ActivateSession with a user name (argon2id on the server)
 * or anonymous (--login-identity), then dropped. It measures what one
 * login costs the other clients of the server (issue 11: expensive work
 * off the event loops), and how many set-ups per second the server
 * completes. The logins' own client-side CPU is taken from the same cores
 * as the measured load. */
#include <stdlib.h>
#include <string.h>

#include <ua/pki.h>

#include "loadgen_internal.h"

typedef struct login_slot {
    struct lg_logins *owner;
    uas_client *c;
    int outcome; /* 0 running, 1 session active, -1 failed */
    uas_status reason;
} login_slot;

struct lg_logins {
    uas_loop *loop;
    uas_client_config cc;
    unsigned n;
    bool counting;
    uint64_t ok, failed;
    uas_status first_error;
    login_slot *slots;
};

static void on_state(uas_client *c, void *ud, uas_client_state state, uas_status reason)
{
    (void)c;
    login_slot *s = ud;
    if (s->outcome)
        return;
    if (state == UAS_CLIENT_SESSION_ACTIVE)
        s->outcome = 1;
    else if (state == UAS_CLIENT_CLOSED) {
        s->outcome = -1;
        s->reason = reason;
    }
}

/* A fresh client for slot s: the next login. */
static void start(lg_logins *l, login_slot *s)
{
    s->owner = l;
    s->outcome = 0;
    s->c = uas_client_new(l->loop, &l->cc, on_state, s);
    if (!s->c || uas_client_connect(s->c) != UAS_GOOD) {
        s->outcome = -1;
        s->reason = UAS_BAD_NOT_CONNECTED;
    }
}

int lg_logins_new(lg_logins **out, uas_loop *loop, const lg_sec *sec, const char *url, unsigned n,
                  bool anonymous)
{
    *out = NULL;
    if (n == 0)
        return 0;
    lg_logins *l = calloc(1, sizeof(*l));
    if (!l)
        return -1;
    l->slots = calloc(n, sizeof(login_slot));
    if (!l->slots) {
        free(l);
        return -1;
    }
    l->n = n;
    uas_client_config_default(&l->cc);
    l->cc.endpoint_url = url;
    l->cc.create_session = true;
    l->cc.session_name = "self-load login";
    lg_sec_apply(sec, &l->cc);
    if (!anonymous) {
        l->cc.user.kind = UAS_CLIENT_USER_NAME;
        l->cc.user.name = LG_LOGIN_USER;
        l->cc.user.password = LG_LOGIN_PASSWORD;
        l->cc.user.password_len = strlen(LG_LOGIN_PASSWORD);
    }
    l->loop = loop;
    *out = l;
    return 0;
}

void lg_logins_begin(lg_logins *l)
{
    for (unsigned i = 0; l && i < l->n; i++)
        start(l, &l->slots[i]);
}

void lg_logins_poll(lg_logins *l)
{
    for (unsigned i = 0; l && i < l->n; i++) {
        login_slot *s = &l->slots[i];
        if (!s->outcome)
            continue;
        if (l->counting && s->outcome > 0) {
            l->ok++;
        } else if (l->counting) {
            if (!l->failed)
                l->first_error = s->reason;
            l->failed++;
        }
        /* Dropped without CloseSession, as a client that logs in, looks
         * and goes away; the server's session expires on its timeout. */
        if (s->c)
            uas_client_delete(s->c);
        start(l, s);
    }
}

void lg_logins_count(lg_logins *l, bool on)
{
    if (l)
        l->counting = on;
}

void lg_logins_result(const lg_logins *l, uint64_t *ok, uint64_t *failed, uas_status *first)
{
    *ok = l ? l->ok : 0;
    *failed = l ? l->failed : 0;
    *first = l ? l->first_error : UAS_GOOD;
}

void lg_logins_free(lg_logins *l)
{
    if (!l)
        return;
    for (unsigned i = 0; i < l->n; i++)
        if (l->slots[i].c)
            uas_client_delete(l->slots[i].c);
    free(l->slots);
    free(l);
}

int lg_logins_user_file(const char *dir, char *path, size_t cap)
{
    snprintf(path, cap, "%s/users", dir);
#ifndef UAS_ENABLE_ENCRYPTION
    fprintf(stderr, "self-load: --logins needs a build with encryption (user names are "
                    "encrypted)\n");
    return -1;
#else
    bool added = false;
    uas_status st = uas_user_add(path, LG_LOGIN_USER, LG_LOGIN_PASSWORD, strlen(LG_LOGIN_PASSWORD),
                                 NULL, &added);
    if (st != UAS_GOOD) {
        fprintf(stderr, "self-load: cannot make the users file %s: %s\n", path,
                uas_status_name(st));
        return -1;
    }
    return 0;
#endif
}
