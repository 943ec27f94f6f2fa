/* Internal pieces of the load generator. */
#ifndef UAS_LOADGEN_INTERNAL_H
#define UAS_LOADGEN_INTERNAL_H

#include <sys/types.h>

#include <ua/client.h>
#include <ua/loadgen.h>

typedef struct lg_child {
    pid_t pid;
    int out_fd;
    char url[256];
} lg_child;

typedef struct lg_proc_sample {
    uint64_t wall_ns;
    uint64_t cpu_ns;  /* user + system */
    uint64_t runq_ns; /* summed run-queue delay of the threads */
    uint64_t rss_kb;
} lg_proc_sample;

/* Start `exe --contract --port 0 --bind 127.0.0.1 --threads N`; 0 on
 * success with c->url set. */
int lg_child_start(lg_child *c, const char *exe, unsigned threads, const char *array_sizes);
void lg_child_stop(lg_child *c);
int lg_child_sample(const lg_child *c, lg_proc_sample *s);
uint64_t lg_now_ns(void);

#endif
