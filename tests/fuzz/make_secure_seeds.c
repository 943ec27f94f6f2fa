/* Records what a client sends on a Basic256Sha256 channel with the fixed
 * keys of fuzz_fixed.h, as seeds for fuzz_secure: a client channel put
 * into OPEN sends Read requests (one chunk, several chunks) and closes;
 * each seed holds the chunks twice over, once as they went out (valid for
 * fuzz_secure's server, whose keys come from the same nonces) and once
 * unsealed, as plaintext frames that fuzz_secure seals itself.
 *
 *   make_secure_seeds OUTDIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/bufpool.h>
#include <ua/channel.h>
#include <ua/codec.h>

#include "fuzz_fixed.h"

typedef struct rec {
    uas_bufpool *pool;
    uint8_t *chunks[64];
    size_t lens[64];
    size_t n;
} rec;

static uas_status on_send(void *ud, uas_buf *b)
{
    rec *r = ud;
    if (r->n < 64) {
        r->chunks[r->n] = malloc(b->len);
        memcpy(r->chunks[r->n], b->data, b->len);
        r->lens[r->n++] = b->len;
    }
    uas_buf_put(r->pool, b);
    return UAS_GOOD;
}

static void on_message(void *ud, uint32_t id, const uint8_t *body, size_t len)
{
    (void)ud, (void)id, (void)body, (void)len;
}

static void frame(FILE *f, uint8_t kind, const uint8_t *p, size_t n, const uint8_t *pre,
                  size_t pre_len)
{
    size_t len = 1 + pre_len + n;
    fputc((int)(len & 0xff), f);
    fputc((int)(len >> 8), f);
    fputc(kind, f);
    fwrite(pre, 1, pre_len, f);
    fwrite(p, 1, n, f);
}

static void seed(const char *dir, const char *name, fz_identity *id, bool enc, bool renewed,
                 size_t nodes, int requests, uint8_t flags_extra)
{
    rec r = {uas_bufpool_new(1 << 20), {0}, {0}, 0};
    uas_channel_config cfg;
    uas_channel_config_default(&cfg, UAS_CHANNEL_CLIENT);
    cfg.recv_buffer_size = cfg.send_buffer_size = FZ_BUF;
    uas_channel_callbacks cb = {0};
    cb.send = on_send;
    cb.on_message = on_message;
    uas_channel *ch = uas_channel_new(&cfg, &cb, &r, r.pool, 1000);
    int32_t mode =
        enc ? UAS_MESSAGE_SECURITY_MODE_SIGN_AND_ENCRYPT : UAS_MESSAGE_SECURITY_MODE_SIGN;
    fz_channel_open_fixed(ch, &uas_secpol_basic256sha256, id->cred, mode, renewed ? 2 : 1, false,
                          1000);
    for (int q = 0; q < requests; q++) {
        uas_read_request req;
        memset(&req, 0, sizeof(req));
        uas_read_value_id *ids = calloc(nodes, sizeof(*ids));
        for (size_t i = 0; i < nodes; i++) {
            ids[i].node_id = uas_nodeid_numeric(1, (uint32_t)(1001 + i));
            ids[i].attribute_id = 13;
        }
        req.nodes_to_read = ids;
        req.nodes_to_read_count = nodes;
        req.request_header.request_handle = (uint32_t)q + 1;
        if (uas_channel_send(ch, uas_channel_next_request_id(ch), &req, UAS_TYPE(READ_REQUEST)) !=
            UAS_GOOD) {
            fprintf(stderr, "send failed\n");
            exit(1);
        }
        free(ids);
    }
    uas_channel_close(ch, UAS_GOOD); /* CLO */
    fz_sym sym = {NULL, &uas_secpol_basic256sha256, enc};
    fz_fixed_keys(&uas_secpol_basic256sha256, id->cred, mode, false, renewed ? 2 : 1, &sym.keys);

    for (int sealed = 0; sealed < 2; sealed++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s_%s.bin", dir, name, sealed ? "plain" : "wire");
        FILE *f = fopen(path, "wb");
        if (!f) {
            perror(path);
            exit(1);
        }
        fputc((enc ? 1 : 0) | (renewed ? 2 : 0) | flags_extra, f);
        fputc(0, f);
        for (size_t i = 0; i < r.n; i++) {
            if (!sealed) { /* as sent */
                frame(f, 0, r.chunks[i], r.lens[i], NULL, 0);
                continue;
            }
            /* unsealed, for fuzz_secure to seal again */
            const uint8_t *plain;
            size_t plain_len;
            uint8_t pre[6] = {r.chunks[i][0] == 'C' ? 1 : 0, r.chunks[i][3]};
            memcpy(pre + 2, r.chunks[i] + 12, 4);
            if (!fz_unseal(&sym, r.chunks[i], r.lens[i], &plain, &plain_len)) {
                fprintf(stderr, "%s: chunk %zu does not verify\n", name, i);
                exit(1);
            }
            frame(f, 1 | 4, plain, plain_len, pre, sizeof(pre));
        }
        fclose(f);
        printf("%s: %zu chunks\n", path, r.n);
    }
    for (size_t i = 0; i < r.n; i++)
        free(r.chunks[i]);
    uas_secpol_keys_free(sym.keys);
    uas_channel_delete(ch);
    uas_bufpool_delete(r.pool);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_secure_seeds OUTDIR\n");
        return 2;
    }
    fz_identity id;
    fz_identity_make(&id, 2048, "make_secure_seeds");
    seed(argv[1], "read_encrypt", &id, true, false, 1, 2, 0);
    seed(argv[1], "read_sign", &id, false, false, 3, 1, 0);
    seed(argv[1], "read_multichunk_encrypt", &id, true, false, 900, 1, 4);
    seed(argv[1], "read_renewed_encrypt", &id, true, true, 2, 1, 0);
    fz_identity_free(&id);
    return 0;
}
