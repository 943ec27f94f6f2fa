/* The NodeManagement store (nodeset_store = FILE): the nodes clients added
 * with AddNodes, written as a NodeSet2 file that the next start loads.
 *
 * What it holds: every heap node marked persist (added through AddNodes,
 * or loaded from the store), with its attributes, its Value when that is a
 * builtin scalar or one-dimensional array, its DataTypeDefinition, and
 * every reference stored on it whose target exists, in both directions.
 * So an added node, a reference added to or from one, and the deletion of
 * one (it is no longer written) all survive a restart. What it does not
 * hold, and says so in docs/Configuration.md: deletions of nodes that the
 * configured NodeSets or the program create (they come back), references
 * between two such nodes and values of structures. A value written to a
 * stored node (Write, uas_server_write_value) marks the store dirty too.
 *
 * When: a change marks the store dirty and wakes its thread, which waits
 * until nodeset_store_interval_ms have passed since its last write (so a
 * burst of changes costs one write), serializes under the address space's
 * read lock into memory, then writes FILE.tmp, fsyncs it, renames it over
 * FILE and fsyncs the directory: a crash leaves the old or the new file,
 * never half of one. The file I/O is off the event loops. uas_server_delete
 * writes what is pending before the address space goes.
 *
 * Loading: at uas_server_listen (after the program has added its own
 * nodes, which stored nodes may reference), through the NodeSet2 loader,
 * so a corrupt or inconsistent store is refused with file:line and the
 * server does not start. A missing file is an empty store. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nodeset.h"

struct uas_nodeset_store {
    uas_server *s;
    char *path;
    uint32_t interval_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool dirty, stop, thread_started;
    pthread_mutex_t wmu; /* one write at a time (the thread, a flush) */
    uint64_t writes;
    pthread_t thread;
};

/* FILE.tmp, fsync, rename, fsync of the directory. */
static uas_status write_atomically(const char *path, const char *text, size_t len)
{
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 5);
    char *dir = malloc(pl + 2);
    if (!tmp || !dir) {
        free(tmp);
        free(dir);
        return UAS_BAD_OUT_OF_MEMORY;
    }
    memcpy(tmp, path, pl);
    memcpy(tmp + pl, ".tmp", 5);
    memcpy(dir, path, pl + 1);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir ? 1 : 0] = 0;
    else
        strcpy(dir, ".");
    uas_status st = UAS_BAD_RESOURCE_UNAVAILABLE;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        size_t off = 0;
        while (off < len) {
            ssize_t w = write(fd, text + off, len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        bool ok = off == len && fsync(fd) == 0;
        ok = close(fd) == 0 && ok;
        if (ok && rename(tmp, path) == 0) {
            int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd >= 0) {
                fsync(dfd);
                close(dfd);
            }
            st = UAS_GOOD;
        } else {
            unlink(tmp);
        }
    }
    if (st != UAS_GOOD)
        uas_log(UAS_LOG_ERROR, "nodeset", "store: cannot write %s: %s", path, strerror(errno));
    free(tmp);
    free(dir);
    return st;
}

static uas_status store_write(uas_nodeset_store *st)
{
    char *text = NULL;
    size_t len = 0, nodes = 0;
    pthread_mutex_lock(&st->wmu);
    uas_status rc = ns_store_text(st->s, &text, &len, &nodes);
    if (rc == UAS_GOOD)
        rc = write_atomically(st->path, text, len);
    pthread_mutex_unlock(&st->wmu);
    if (rc == UAS_GOOD)
        uas_log(UAS_LOG_DEBUG, "nodeset", "store: %zu nodes written to %s", nodes, st->path);
    else if (rc == UAS_BAD_OUT_OF_MEMORY)
        uas_log(UAS_LOG_ERROR, "nodeset", "store: out of memory writing %s", st->path);
    free(text);
    return rc;
}

static void deadline(struct timespec *ts, uint32_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void *store_main(void *arg)
{
    uas_nodeset_store *st = arg;
    pthread_mutex_lock(&st->mu);
    for (;;) {
        while (!st->dirty && !st->stop)
            pthread_cond_wait(&st->cv, &st->mu);
        if (!st->dirty)
            break;
        st->dirty = false;
        pthread_mutex_unlock(&st->mu);
        store_write(st);
        pthread_mutex_lock(&st->mu);
        st->writes++;
        pthread_cond_broadcast(&st->cv);
        /* At most one write per interval: changes meanwhile only set dirty
         * (a stop ends the wait; what is dirty is still written). */
        struct timespec until;
        deadline(&until, st->interval_ms);
        while (!st->stop && pthread_cond_timedwait(&st->cv, &st->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

/* ---- API ---- */

uas_status uas_nodeset_store_open(uas_server *s)
{
    const char *path = s->cfg.nodeset_store;
    if (!path || !*path || s->store)
        return UAS_GOOD;
    uas_nodeset_store *st = calloc(1, sizeof(*st));
    if (!st || !(st->path = strdup(path))) {
        free(st);
        return UAS_BAD_OUT_OF_MEMORY;
    }
    st->s = s;
    st->interval_ms = s->cfg.nodeset_store_interval_ms;
    struct stat sb;
    uas_status rc = UAS_GOOD;
    if (stat(path, &sb) == 0) {
        char err[512];
        ns_limits lim = {
            .max_file_size = s->cfg.nodeset_max_file_size,
            .max_nodes = s->cfg.nodeset_max_nodes,
            .max_depth = s->cfg.nodeset_max_depth,
            .persist = true,
        };
        const char *paths[1] = {path};
        rc = uas__nodeset_load(s, paths, 1, &lim, err, sizeof(err));
        if (rc != UAS_GOOD)
            uas_log(UAS_LOG_ERROR, "nodeset", "the NodeManagement store is refused: %s", err);
    } else if (errno != ENOENT) {
        uas_log(UAS_LOG_ERROR, "nodeset", "store: cannot read %s: %s", path, strerror(errno));
        rc = UAS_BAD_CONFIGURATION_ERROR;
    }
    pthread_condattr_t ca;
    bool cv_ok = false;
    if (rc == UAS_GOOD && pthread_condattr_init(&ca) == 0) {
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        cv_ok = pthread_cond_init(&st->cv, &ca) == 0;
        pthread_condattr_destroy(&ca);
    }
    bool mu_ok = rc == UAS_GOOD && cv_ok && pthread_mutex_init(&st->mu, NULL) == 0;
    bool wmu_ok = mu_ok && pthread_mutex_init(&st->wmu, NULL) == 0;
    if (rc == UAS_GOOD && (!wmu_ok || pthread_create(&st->thread, NULL, store_main, st) != 0))
        rc = UAS_BAD_RESOURCE_UNAVAILABLE;
    if (rc != UAS_GOOD) {
        if (mu_ok)
            pthread_mutex_destroy(&st->mu);
        if (wmu_ok)
            pthread_mutex_destroy(&st->wmu);
    }
    if (rc != UAS_GOOD) {
        if (cv_ok)
            pthread_cond_destroy(&st->cv);
        free(st->path);
        free(st);
        return rc;
    }
    st->thread_started = true;
    s->store = st;
    uas_log(UAS_LOG_INFO, "nodeset", "NodeManagement store %s", path);
    return UAS_GOOD;
}

void uas_nodeset_store_touch(uas_server *s)
{
    uas_nodeset_store *st = s->store;
    if (!st)
        return;
    pthread_mutex_lock(&st->mu);
    st->dirty = true;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

uas_status uas_nodeset_store_flush(uas_server *s)
{
    uas_nodeset_store *st = s->store;
    if (!st)
        return UAS_BAD_INVALID_STATE;
    pthread_mutex_lock(&st->mu);
    st->dirty = false;
    pthread_mutex_unlock(&st->mu);
    return store_write(st);
}

void uas_nodeset_store_close(uas_server *s)
{
    uas_nodeset_store *st = s->store;
    if (!st)
        return;
    pthread_mutex_lock(&st->mu);
    st->stop = true;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    if (st->thread_started)
        pthread_join(st->thread, NULL);
    pthread_cond_destroy(&st->cv);
    pthread_mutex_destroy(&st->mu);
    pthread_mutex_destroy(&st->wmu);
    free(st->path);
    free(st);
    s->store = NULL;
}
