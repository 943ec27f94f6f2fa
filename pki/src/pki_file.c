/* File helpers of the PKI: bounded reads, umask-proof writes, folder walks.
 * Private keys and the users file go through pki_write_file, so their mode
 * is exactly what the caller asks whatever the process umask. */
#define _GNU_SOURCE
#include "pki_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ua/log.h>
#include <ua/mem.h>

static uas_status errno_status(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
        return UAS_BAD_NOT_FOUND;
    case EEXIST:
        return UAS_BAD_ENTRY_EXISTS;
    case ENOMEM:
        return UAS_BAD_OUT_OF_MEMORY;
    default:
        return UAS_BAD_RESOURCE_UNAVAILABLE;
    }
}

uas_status pki_read_file(const char *path, size_t max, pki_buf *out)
{
    out->data = NULL;
    out->len = 0;
    out->cap = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e != ENOENT)
            uas_log(UAS_LOG_WARN, PKI_LOG, "cannot open %s: %s", path, strerror(e));
        return errno_status(e);
    }
    uas_status st = UAS_GOOD;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = UAS_BAD_NOT_FOUND;
        goto out;
    }
    if ((uint64_t)sb.st_size > max) {
        uas_log(UAS_LOG_WARN, PKI_LOG, "%s is larger than %zu bytes, ignored", path, max);
        st = UAS_BAD_ENCODING_LIMITS_EXCEEDED;
        goto out;
    }
    size_t cap = (size_t)sb.st_size + 1;
    out->data = uas_malloc(cap);
    if (!out->data) {
        st = UAS_BAD_OUT_OF_MEMORY;
        goto out;
    }
    /* The file may change while we read: never read past cap - 1. */
    while (out->len < cap - 1) {
        ssize_t n = read(fd, out->data + out->len, cap - 1 - out->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            uas_log(UAS_LOG_WARN, PKI_LOG, "cannot read %s: %s", path, strerror(errno));
            st = UAS_BAD_RESOURCE_UNAVAILABLE;
            break;
        }
        if (n == 0)
            break;
        out->len += (size_t)n;
    }
    if (st != UAS_GOOD) {
        uas_free(out->data, cap);
        out->data = NULL;
        out->len = 0;
    } else {
        out->cap = cap;
        out->data[out->len] = 0; /* handy for text files */
    }
out:
    close(fd);
    return st;
}

void pki_buf_free(pki_buf *b, bool wipe)
{
    if (!b->data)
        return;
    if (wipe)
        uas_wipe(b->data, b->len);
    uas_free(b->data, b->cap);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

static bool write_all(int fd, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

static void fsync_parent(const char *path)
{
    char dir[PKI_PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == dir)
        dir[1] = 0;
    else
        *slash = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

uas_status pki_write_file(const char *path, const void *data, size_t len, unsigned mode,
                          bool exclusive)
{
    char tmp[PKI_PATH_MAX];
    int fd;
    if (exclusive) {
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
    } else {
        if (snprintf(tmp, sizeof(tmp), "%s.tmpXXXXXX", path) >= (int)sizeof(tmp))
            return UAS_BAD_INVALID_ARGUMENT;
        fd = mkostemp(tmp, O_CLOEXEC); /* O_EXCL, mode 0600 */
    }
    if (fd < 0) {
        int e = errno;
        if (e != EEXIST)
            uas_log(UAS_LOG_ERROR, PKI_LOG, "cannot create %s: %s", path, strerror(e));
        return errno_status(e);
    }
    /* The umask may have narrowed the mode, never widened it; fchmod makes
     * it exact either way (a 0600 request stays 0600). */
    bool ok = fchmod(fd, (mode_t)mode) == 0 && write_all(fd, data, len) && fsync(fd) == 0;
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (ok && !exclusive && rename(tmp, path) != 0) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        uas_log(UAS_LOG_ERROR, PKI_LOG, "cannot write %s: %s", path, strerror(e));
        unlink(exclusive ? path : tmp);
        return UAS_BAD_RESOURCE_UNAVAILABLE;
    }
    fsync_parent(path);
    return UAS_GOOD;
}

uas_status pki_mkdirs(const char *path, unsigned mode)
{
    char buf[PKI_PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return UAS_BAD_INVALID_ARGUMENT;
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = 0;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
            uas_log(UAS_LOG_ERROR, PKI_LOG, "cannot create folder %s: %s", buf, strerror(errno));
            return errno_status(errno);
        }
        *p = '/';
    }
    if (mkdir(buf, (mode_t)mode) != 0) {
        if (errno != EEXIST) {
            uas_log(UAS_LOG_ERROR, PKI_LOG, "cannot create folder %s: %s", buf, strerror(errno));
            return errno_status(errno);
        }
    } else if (chmod(buf, (mode_t)mode) != 0) {
        return errno_status(errno);
    }
    struct stat sb;
    if (stat(buf, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        uas_log(UAS_LOG_ERROR, PKI_LOG, "%s is not a folder", buf);
        return UAS_BAD_RESOURCE_UNAVAILABLE;
    }
    return UAS_GOOD;
}

char *pki_strdup_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = uas_malloc((size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

void pki_str_free(char *s)
{
    if (s)
        uas_free(s, strlen(s) + 1);
}

bool pki_path(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    return n >= 0 && (size_t)n < cap;
}

uas_status pki_for_each_file(const char *dir, pki_file_fn fn, void *ud)
{
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        uas_log(UAS_LOG_WARN, PKI_LOG, "cannot open folder %s: %s", dir, strerror(e));
        return errno_status(e);
    }
    unsigned seen = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        /* Hidden files, and temporaries of pki_write_file ("<name>.tmpXXXXXX"). */
        size_t n = strlen(de->d_name);
        if (de->d_name[0] == '.' || (n > 10 && memcmp(de->d_name + n - 10, ".tmp", 4) == 0))
            continue;
        if (++seen > PKI_MAX_FOLDER_FILES) {
            uas_log(UAS_LOG_WARN, PKI_LOG, "%s has more than %u files; the rest are ignored", dir,
                    PKI_MAX_FOLDER_FILES);
            break;
        }
        char path[PKI_PATH_MAX];
        if (!pki_path(path, sizeof(path), dir, de->d_name))
            continue;
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (!fn(ud, path, de->d_name))
            break;
    }
    closedir(d);
    return UAS_GOOD;
}
