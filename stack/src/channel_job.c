/* Parking a channel while expensive work runs elsewhere. The secure
 * channel stays I/O-free and thread-free: the asymmetric work of a server's
 * OPN (validate_peer, RSA decrypt and verify of the request, RSA sign and
 * encrypt of the response) is packed into a job that owns copies of
 * everything it reads, and the owner decides where it runs (the server
 * hands it to its worker pool; without an offload callback it runs inline).
 * While a job is out, or while the owner parks a request it received
 * (uas_channel_hold), the channel is held: bytes that arrive wait in a
 * backlog and are processed, in order, when the job completes or the hold
 * ends. The policy's hooks are called through its vtable, so any policy
 * (the RSA ones today, ECC ones later) takes the same route. */
#include <stdlib.h>
#include <string.h>

#include <ua/log.h>
#include <ua/mem.h>

#include "channel_internal.h"

enum { JOB_OPN_IN = 1, JOB_OPN_OUT = 2 };

struct uas_channel_job {
    int kind;
    bool renew;
    const uas_secpol *policy;
    uas_secpol_keys *keys; /* the job's own: same credentials, no shared state */
    uas_status (*validate)(void *ud, const uint8_t *der, size_t len);
    void *validate_ud;
    uas_status vst; /* validate_peer's verdict */
    uas_status st;  /* asym_unprotect's / asym_protect's */
    size_t cert_off, cert_len;
    size_t header_len;
    size_t len; /* bytes in data; after run: end of the plaintext (IN) or wire size (OUT) */
    size_t cap;
    size_t alloc;
    uint8_t data[];
};

static uas_channel_job *job_new(int kind, size_t cap)
{
    size_t alloc = sizeof(uas_channel_job) + cap;
    uas_channel_job *job = uas_malloc(alloc);
    if (!job)
        return NULL;
    memset(job, 0, sizeof(*job));
    job->kind = kind;
    job->cap = cap;
    job->alloc = alloc;
    return job;
}

void uas_channel_job_free(uas_channel_job *job)
{
    if (!job)
        return;
    uas_secpol_keys_free(job->keys);
    uas_wipe(job->data, job->cap); /* decrypted OPN bodies carry nonces */
    uas_free(job, job->alloc);
}

void uas_channel_job_run(uas_channel_job *job)
{
    if (job->kind == JOB_OPN_IN) {
        job->vst = job->validate
                       ? job->validate(job->validate_ud, job->data + job->cert_off, job->cert_len)
                       : UAS_GOOD;
        if (job->vst != UAS_GOOD)
            return;
        size_t end = job->len;
        job->st = job->policy->asym_unprotect(job->keys, job->data, job->header_len, &end);
        if (job->st == UAS_GOOD)
            job->len = end;
    } else {
        size_t len = job->len;
        job->st = job->policy->asym_protect(job->keys, job->data, job->header_len, &len, job->cap);
        if (job->st == UAS_GOOD)
            job->len = len;
    }
}

/* The inline path of a client, or of a server without offload: the checks
 * on the channel's own keys, in place, as they always ran. */
static uas_status opn_inline(uas_channel *ch, const uas_secpol *policy, uint8_t *chunk, size_t len,
                             size_t header_len, size_t cert_off, size_t cert_len, int64_t now_ms)
{
    if (ch->cfg.validate_peer) {
        uas_status vst = ch->cfg.validate_peer(ch->cfg.validate_ud, chunk + cert_off, cert_len);
        if (vst != UAS_GOOD)
            return uas__channel_fail(ch, vst,
                                     ch->state == UAS_CHANNEL_OPEN
                                         ? "peer certificate refused on renewal"
                                         : "peer certificate refused");
    }
    size_t end = len;
    uas_status st = policy->asym_unprotect(ch->keys, chunk, header_len, &end);
    if (st != UAS_GOOD)
        return uas__channel_open_failed(ch, st);
    return uas__channel_open_finish(ch, policy, chunk, header_len, end, now_ms);
}

uas_status uas__channel_opn_job(uas_channel *ch, const uas_secpol *policy, const uint8_t *chunk,
                                size_t len, size_t header_len, size_t cert_off, size_t cert_len,
                                int64_t now_ms)
{
    if (!ch->cfg.offload || ch->cfg.role != UAS_CHANNEL_SERVER)
        return opn_inline(ch, policy, (uint8_t *)chunk, len, header_len, cert_off, cert_len,
                          now_ms);
    uas_channel_job *job = job_new(JOB_OPN_IN, len);
    if (!job)
        return uas__channel_fail(ch, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES, "out of memory");
    uas_status st = uas_secpol_keys_new(policy, uas__channel_cred_for(ch, policy), &job->keys);
    if (st != UAS_GOOD) {
        uas_channel_job_free(job);
        return uas__channel_fail(ch, st, "no credentials for this policy");
    }
    memcpy(job->data, chunk, len);
    job->len = len;
    job->renew = ch->state == UAS_CHANNEL_OPEN;
    job->policy = policy;
    job->validate = ch->cfg.validate_peer;
    job->validate_ud = ch->cfg.validate_ud;
    job->header_len = header_len;
    job->cert_off = cert_off;
    job->cert_len = cert_len;
    return uas__channel_park(ch, job, now_ms);
}

uas_channel_job *uas__channel_opn_out_job(uas_channel *ch, const uint8_t *chunk, size_t header_len,
                                          size_t len, size_t cap)
{
    uas_channel_job *job = job_new(JOB_OPN_OUT, cap);
    if (!job)
        return NULL;
    if (uas_secpol_keys_clone_peer(ch->keys, &job->keys) != UAS_GOOD) {
        uas_channel_job_free(job);
        return NULL;
    }
    memcpy(job->data, chunk, len);
    job->len = len;
    job->policy = ch->policy;
    job->header_len = header_len;
    return job;
}

/* Completes a job on the channel's thread; frees it. */
static uas_status complete(uas_channel *ch, uas_channel_job *job, int64_t now_ms)
{
    uas_status st = UAS_GOOD;
    if (ch->state == UAS_CHANNEL_CLOSED) {
        st = ch->close_reason == UAS_GOOD ? UAS_BAD_SECURE_CHANNEL_CLOSED : ch->close_reason;
    } else if (job->kind == JOB_OPN_IN) {
        if (job->vst != UAS_GOOD) {
            st = uas__channel_fail(ch, job->vst,
                                   job->renew ? "peer certificate refused on renewal"
                                              : "peer certificate refused");
        } else if (job->st != UAS_GOOD) {
            st = uas__channel_open_failed(ch, job->st);
        } else if (job->renew) {
            /* Every OPN of a channel comes from the certificate of its
             * first one (asym_unprotect checks that on the channel's keys
             * when it runs inline). */
            const uint8_t *had = uas_secpol_keys_peer_thumbprint(ch->keys);
            const uint8_t *now = uas_secpol_keys_peer_thumbprint(job->keys);
            if (!had || !now || memcmp(had, now, 20) != 0)
                st = uas__channel_fail(ch, UAS_BAD_SECURITY_CHECKS_FAILED,
                                       "OPN failed verification");
        } else {
            /* The first OPN: its keys (with the peer adopted) become the
             * channel's; nothing of the channel's old, empty ones is used. */
            uas_secpol_keys_free(ch->keys);
            ch->keys = job->keys;
            job->keys = NULL;
        }
        if (st == UAS_GOOD)
            st = uas__channel_open_finish(ch, job->policy, job->data, job->header_len, job->len,
                                          now_ms);
    } else if (job->st != UAS_GOOD) {
        st = uas__channel_fail(ch, job->st, "cannot send OPN response");
    } else {
        uas_secpol_keys_adopt_sign_state(ch->keys, job->keys);
        uas_buf *b = uas_buf_get(ch->pool, job->len);
        if (!b) {
            st = uas__channel_fail(ch, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES, "out of memory");
        } else {
            memcpy(b->data, job->data, job->len);
            b->len = (uint32_t)job->len;
            st = ch->cb.send(ch->ud, b);
            if (st != UAS_GOOD)
                st = uas__channel_fail(ch, st, "cannot send OPN response");
        }
    }
    uas_channel_job_free(job);
    return st;
}

uas_status uas__channel_park(uas_channel *ch, uas_channel_job *job, int64_t now_ms)
{
    if (!ch->cfg.offload) {
        uas_channel_job_run(job);
        return complete(ch, job, now_ms);
    }
    ch->held = true;
    ch->job_out = true;
    uas_status st = ch->cfg.offload(ch->cfg.offload_ud, job);
    if (st != UAS_GOOD) {
        ch->job_out = false;
        uas_channel_job_free(job);
        uas_log(UAS_LOG_WARN, "channel", "channel %u: OPN refused: %s (worker queue full)",
                ch->channel_id, uas_status_name(st));
        return uas__channel_fail(ch, st, "server too busy");
    }
    return UAS_GOOD;
}

/* The most a held channel keeps: one receive buffer and two reads. */
static size_t backlog_max(const uas_channel *ch)
{
    return (size_t)ch->recv_buffer + 2 * 65536;
}

uas_status uas__channel_keep(uas_channel *ch, const uint8_t *data, size_t len)
{
    /* An owner that asks uas_channel_wants_input never passes the bound;
     * one that keeps feeding a held channel ends it. */
    size_t have = ch->backlog ? ch->backlog->len : 0;
    if (have + len > backlog_max(ch))
        return uas__channel_fail(ch, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES,
                                 "too much input while a request is parked");
    if (!ch->backlog || ch->backlog->cap < have + len) {
        uas_buf *nb = uas_buf_get(ch->pool, have + len);
        if (!nb)
            return uas__channel_fail(ch, UAS_BAD_TCP_NOT_ENOUGH_RESOURCES, "out of memory");
        if (have)
            memcpy(nb->data, ch->backlog->data, have);
        nb->len = (uint32_t)have;
        uas_buf_put(ch->pool, ch->backlog);
        ch->backlog = nb;
    }
    memcpy(ch->backlog->data + have, data, len);
    ch->backlog->len = (uint32_t)(have + len);
    return UAS_GOOD;
}

/* Processes what waited while held, until it is gone or the channel is
 * held again (what is left then waits in a new backlog). */
static uas_status drain(uas_channel *ch, int64_t now_ms)
{
    uas_status st = UAS_GOOD;
    while (st == UAS_GOOD && ch->backlog && !ch->held && ch->state != UAS_CHANNEL_CLOSED) {
        uas_buf *b = ch->backlog;
        ch->backlog = NULL;
        st = uas_channel_recv(ch, b->data, b->len, now_ms);
        uas_buf_put(ch->pool, b);
    }
    if (st == UAS_GOOD && ch->state == UAS_CHANNEL_CLOSED && ch->close_reason != UAS_GOOD)
        st = ch->close_reason;
    return st;
}

bool uas_channel_held(const uas_channel *ch)
{
    return ch->held;
}

bool uas_channel_wants_input(const uas_channel *ch, size_t read_size)
{
    size_t have = ch->backlog ? ch->backlog->len : 0;
    return !ch->held || have + read_size <= backlog_max(ch);
}

void uas_channel_hold(uas_channel *ch)
{
    ch->held = true;
}

uas_status uas_channel_release(uas_channel *ch, int64_t now_ms)
{
    if (ch->job_out)
        return UAS_GOOD; /* the job's completion releases */
    ch->held = false;
    return drain(ch, now_ms);
}

uas_status uas_channel_job_done(uas_channel *ch, uas_channel_job *job, int64_t now_ms)
{
    ch->job_out = false;
    ch->held = false;
    uas_status st = complete(ch, job, now_ms);
    if (st != UAS_GOOD)
        return st;
    return drain(ch, now_ms);
}
