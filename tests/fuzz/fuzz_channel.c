/* libFuzzer target for the server side of chunk framing and the secure
 * channel state machine (uas_channel_recv): HEL, OPN with policy None, MSG
 * chunks (whole, partial, aborted), CLO, and anything else, in pieces.
 *
 * Input layout: byte 0 picks how the rest is cut before it is fed (0: whole;
 * else pieces of 1..255 bytes, the piece sizes cycling through the next
 * bytes' values), byte 1 advances the clock between pieces (in 100 ms
 * steps, so timeouts fire too). The seeds are a client's whole conversation
 * recorded by make_channel_seeds.c.
 *
 * Checked: the channel never fails an assertion or a sanitizer, every
 * chunk it sends is a well-formed chunk header of at most the send buffer
 * size, a MSG body handed up never exceeds the configured limits, and no
 * pool buffer is left outstanding once the channel is deleted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ua/bufpool.h>
#include <ua/channel.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { BUF = 8192, MAX_MSG = 65536, MAX_CHUNKS = 16 };

typedef struct world {
    uas_bufpool *pool;
    size_t sent;
} world;

static uint32_t u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uas_status on_send(void *ud, uas_buf *chunk)
{
    world *w = ud;
    /* Every chunk out: type, 'F'/'C'/'A', a size that matches. */
    if (chunk->len < 8 || chunk->len > BUF || u32(chunk->data + 4) != chunk->len)
        abort();
    w->sent++;
    uas_buf_put(w->pool, chunk);
    return UAS_GOOD;
}

static void on_message(void *ud, uint32_t request_id, const uint8_t *body, size_t len)
{
    (void)ud;
    (void)request_id;
    if (len > MAX_MSG || (len && !body))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t cut = data[0], step = data[1];
    data += 2;
    size -= 2;
    world w = {uas_bufpool_new(1 << 20), 0};
    if (!w.pool)
        return 0;
    uas_channel_config cfg;
    uas_channel_config_default(&cfg, UAS_CHANNEL_SERVER);
    cfg.channel_id = 7;
    cfg.recv_buffer_size = cfg.send_buffer_size = BUF;
    cfg.max_message_size = MAX_MSG;
    cfg.max_chunk_count = MAX_CHUNKS;
    uas_channel_callbacks cb;
    memset(&cb, 0, sizeof(cb));
    cb.send = on_send;
    cb.on_message = on_message;
    int64_t now = 1000;
    uas_channel *ch = uas_channel_new(&cfg, &cb, &w, w.pool, now);
    if (!ch) {
        uas_bufpool_delete(w.pool);
        return 0;
    }
    /* The bytes are fed from a copy: the channel decrypts in place. */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        abort();
    memcpy(copy, data, size);
    size_t off = 0, k = 0;
    while (off < size) {
        size_t n = size - off;
        if (cut) {
            size_t want = data[k++ % size] % cut + 1;
            n = want < n ? want : n;
        }
        uas_status st = uas_channel_recv(ch, copy + off, n, now);
        off += n;
        now += (int64_t)step * 100;
        uas_channel_tick(ch, now);
        if (st != UAS_GOOD && uas_channel_get_state(ch) != UAS_CHANNEL_CLOSED)
            abort(); /* a fatal status must leave the channel closed */
        if (uas_channel_get_state(ch) == UAS_CHANNEL_CLOSED)
            break;
    }
    uas_channel_close(ch, UAS_GOOD);
    uas_channel_delete(ch);
    free(copy);
    uas_bufpool_stats s;
    uas_bufpool_get_stats(w.pool, &s);
    if (s.live != 0)
        abort(); /* a chunk buffer leaked */
    uas_bufpool_delete(w.pool);
    return 0;
}
