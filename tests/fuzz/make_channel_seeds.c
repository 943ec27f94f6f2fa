/* Records what a client sends a server in whole conversations, as seeds
 * for fuzz_channel: a client uas_channel and a server uas_channel joined in
 * memory, each side's chunks fed to the other until the client's request
 * is answered. Each file starts with fuzz_channel's two control bytes.
 *
 *   make_channel_seeds OUTDIR */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/bufpool.h>
#include <ua/channel.h>
#include <ua/codec.h>

typedef struct side {
    uas_channel *ch;
    uas_bufpool *pool;
    uint8_t *out; /* bytes sent, not yet delivered */
    size_t len, cap;
    uint8_t *log; /* client side: every byte ever sent */
    size_t log_len, log_cap;
    int answered;
} side;

static void append(uint8_t **buf, size_t *len, size_t *cap, const uint8_t *p, size_t n)
{
    if (*len + n > *cap) {
        *cap = (*len + n) * 2;
        *buf = realloc(*buf, *cap);
        if (!*buf)
            exit(1);
    }
    memcpy(*buf + *len, p, n);
    *len += n;
}

static uas_status on_send(void *ud, uas_buf *b)
{
    side *s = ud;
    append(&s->out, &s->len, &s->cap, b->data, b->len);
    if (s->log || s->log_cap == 1) /* the client records */
        append(&s->log, &s->log_len, &s->log_cap, b->data, b->len);
    uas_buf_put(s->pool, b);
    return UAS_GOOD;
}

static void on_client_message(void *ud, uint32_t id, const uint8_t *body, size_t len)
{
    (void)id, (void)body, (void)len;
    ((side *)ud)->answered++;
}

static side *server_side;

/* The server answers every request with an empty ReadResponse. */
static void on_server_message(void *ud, uint32_t id, const uint8_t *body, size_t len)
{
    (void)ud, (void)body, (void)len;
    uas_read_response r;
    memset(&r, 0, sizeof(r));
    uas_channel_send(server_side->ch, id, &r, UAS_TYPE(READ_RESPONSE));
}

static void deliver(side *from, side *to)
{
    if (!from->len)
        return;
    uint8_t *copy = malloc(from->len);
    memcpy(copy, from->out, from->len);
    size_t n = from->len;
    from->len = 0;
    uas_channel_recv(to->ch, copy, n, 1000);
    free(copy);
}

static void conversation(const char *dir, const char *name, size_t nodes, int requests, uint8_t cut,
                         uint8_t step)
{
    uas_bufpool *pool = uas_bufpool_new(1 << 20);
    side c = {0}, s = {0};
    c.pool = s.pool = pool;
    c.log_cap = 1; /* marks the recording side */
    server_side = &s;
    uas_channel_config cc, sc;
    uas_channel_config_default(&cc, UAS_CHANNEL_CLIENT);
    uas_channel_config_default(&sc, UAS_CHANNEL_SERVER);
    cc.recv_buffer_size = cc.send_buffer_size = 8192;
    sc.recv_buffer_size = sc.send_buffer_size = 8192;
    sc.channel_id = 7;
    cc.policy = uas_security_policy("http://opcfoundation.org/UA/SecurityPolicy#None", false);
    cc.mode = UAS_MESSAGE_SECURITY_MODE_NONE;
    uas_channel_callbacks ccb = {0}, scb = {0};
    ccb.send = scb.send = on_send;
    ccb.on_message = on_client_message;
    scb.on_message = on_server_message;
    c.ch = uas_channel_new(&cc, &ccb, &c, pool, 1000);
    s.ch = uas_channel_new(&sc, &scb, &s, pool, 1000);
    uas_channel_connect(c.ch, "opc.tcp://fuzz:4840", 1000);
    for (int i = 0; i < 8; i++) {
        deliver(&c, &s);
        deliver(&s, &c);
    }
    for (int r = 0; r < requests; r++) {
        uas_read_request req;
        memset(&req, 0, sizeof(req));
        uas_read_value_id *ids = calloc(nodes, sizeof(*ids));
        for (size_t i = 0; i < nodes; i++) {
            ids[i].node_id = uas_nodeid_numeric(1, (uint32_t)(1001 + i));
            ids[i].attribute_id = 13;
        }
        req.nodes_to_read = ids;
        req.nodes_to_read_count = nodes;
        uas_channel_send(c.ch, uas_channel_next_request_id(c.ch), &req, UAS_TYPE(READ_REQUEST));
        free(ids);
        deliver(&c, &s);
        deliver(&s, &c);
    }
    uas_channel_close(c.ch, UAS_GOOD);
    deliver(&c, &s);
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputc(cut, f);
    fputc(step, f);
    fwrite(c.log, 1, c.log_len, f);
    fclose(f);
    printf("%s: %zu bytes, %d answers\n", path, c.log_len + 2, c.answered);
    uas_channel_delete(c.ch);
    uas_channel_delete(s.ch);
    free(c.out);
    free(s.out);
    free(c.log);
    uas_bufpool_delete(pool);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_channel_seeds OUTDIR\n");
        return 2;
    }
    conversation(argv[1], "read_1", 1, 1, 0, 0);
    conversation(argv[1], "read_3_pieces", 3, 3, 61, 0);
    /* A request over one 8 KiB chunk: several chunks. */
    conversation(argv[1], "read_multichunk", 900, 1, 0, 1);
    conversation(argv[1], "read_multichunk_pieces", 900, 2, 200, 3);
    return 0;
}
