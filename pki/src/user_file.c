/* The users file: parsing, atomic rewrite with mode 0600, and the admin
 * operations uas_user_add / remove / list. */
#define _GNU_SOURCE
#include "pki_internal.h"
#include "user_internal.h"

#include <stdio.h>
#include <string.h>

#include <ua/log.h>
#include <ua/mem.h>

bool user_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > UAS_USER_NAME_MAX || name[0] == '#')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c <= 0x20 || c == 0x7f || c == ':')
            return false;
    }
    return true;
}

static bool roles_ok(const char *roles)
{
    size_t n = strlen(roles);
    if (n > UAS_USER_ROLES_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)roles[i];
        if (c <= 0x20 || c == 0x7f || c == ':')
            return false;
    }
    return true;
}

static user_line *db_push(user_db *db)
{
    if (db->count == db->cap) {
        size_t ncap = db->cap ? db->cap * 2 : 16;
        user_line *n = uas_realloc(db->lines, db->cap * sizeof(*n), ncap * sizeof(*n));
        if (!n)
            return NULL;
        db->lines = n;
        db->cap = ncap;
    }
    user_line *l = &db->lines[db->count++];
    memset(l, 0, sizeof(*l));
    return l;
}

/* "name:hash[:roles]" into l; false if malformed. */
static bool parse_user(const char *line, user_line *l)
{
    const char *c1 = strchr(line, ':');
    if (!c1 || (size_t)(c1 - line) > UAS_USER_NAME_MAX)
        return false;
    memcpy(l->name, line, (size_t)(c1 - line));
    l->name[c1 - line] = 0;
    const char *h = c1 + 1;
    const char *c2 = strchr(h, ':');
    size_t hlen = c2 ? (size_t)(c2 - h) : strlen(h);
    if (hlen == 0 || hlen >= sizeof(l->hash) || strncmp(h, "$argon2", 7) != 0)
        return false;
    memcpy(l->hash, h, hlen);
    l->hash[hlen] = 0;
    if (c2) {
        if (!roles_ok(c2 + 1))
            return false;
        snprintf(l->roles, sizeof(l->roles), "%s", c2 + 1);
    }
    if (!user_name_ok(l->name))
        return false;
    l->is_user = true;
    return true;
}

uas_status user_db_load(const char *file, user_db *db, bool missing_ok)
{
    memset(db, 0, sizeof(*db));
    pki_buf b;
    uas_status st = pki_read_file(file, USER_MAX_FILE, &b);
    if (st == UAS_BAD_NOT_FOUND && missing_ok)
        return UAS_GOOD;
    if (st != UAS_GOOD)
        return st;
    char *text = (char *)b.data; /* NUL-terminated by pki_read_file */
    size_t lineno = 0;
    for (char *p = text; *p && st == UAS_GOOD;) {
        char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n > 0 && p[n - 1] == '\r')
            p[n - 1] = 0;
        p[n] = 0;
        lineno++;
        user_line *l = db_push(db);
        if (!l) {
            st = UAS_BAD_OUT_OF_MEMORY;
            break;
        }
        bool blank = p[strspn(p, " \t")] == 0;
        if (blank || p[0] == '#' || !parse_user(p, l)) {
            if (!blank && p[0] != '#')
                uas_log(UAS_LOG_WARN, USER_LOG, "%s: line %zu is not name:argon2id-hash[:roles]",
                        file, lineno);
            memset(l, 0, sizeof(*l));
            if (n >= USER_MAX_LINE) {
                p[USER_MAX_LINE - 1] = 0;
                n = USER_MAX_LINE - 1;
            }
            l->raw = pki_strdup_printf("%s", p);
            if (!l->raw) {
                db->count--;
                st = UAS_BAD_OUT_OF_MEMORY;
            }
        }
        p = nl ? nl + 1 : p + strlen(p);
    }
    pki_buf_free(&b, true);
    if (st != UAS_GOOD)
        user_db_free(db);
    return st;
}

void user_db_free(user_db *db)
{
    for (size_t i = 0; i < db->count; i++) {
        pki_str_free(db->lines[i].raw);
        sodium_memzero(&db->lines[i], sizeof(db->lines[i]));
    }
    uas_free(db->lines, db->cap * sizeof(*db->lines));
    memset(db, 0, sizeof(*db));
}

long user_db_find(const user_db *db, const char *name)
{
    for (size_t i = 0; i < db->count; i++)
        if (db->lines[i].is_user && strcmp(db->lines[i].name, name) == 0)
            return (long)i;
    return -1;
}

uas_status user_db_save(const char *file, const user_db *db)
{
    size_t cap = 1;
    for (size_t i = 0; i < db->count; i++) {
        const user_line *l = &db->lines[i];
        cap += l->is_user ? strlen(l->name) + strlen(l->hash) + strlen(l->roles) + 3
                          : strlen(l->raw) + 1;
    }
    char *buf = uas_malloc(cap);
    if (!buf)
        return UAS_BAD_OUT_OF_MEMORY;
    size_t n = 0;
    for (size_t i = 0; i < db->count; i++) {
        const user_line *l = &db->lines[i];
        if (!l->is_user)
            n += (size_t)snprintf(buf + n, cap - n, "%s\n", l->raw);
        else if (l->roles[0])
            n += (size_t)snprintf(buf + n, cap - n, "%s:%s:%s\n", l->name, l->hash, l->roles);
        else
            n += (size_t)snprintf(buf + n, cap - n, "%s:%s\n", l->name, l->hash);
    }
    uas_status st = pki_write_file(file, buf, n, 0600, false);
    uas_free(buf, cap);
    return st;
}

uas_status uas_user_add(const char *file, const char *name, const char *password,
                        size_t password_len, const char *roles, bool *added)
{
    if (added)
        *added = false;
    if (!file || !user_name_ok(name) || !password || password_len == 0 ||
        password_len > USER_MAX_PASSWORD || (roles && !roles_ok(roles)))
        return UAS_BAD_INVALID_ARGUMENT;
    if (sodium_init() < 0)
        return UAS_BAD_INTERNAL_ERROR;
    char hash[crypto_pwhash_STRBYTES];
    if (crypto_pwhash_str(hash, password, password_len, crypto_pwhash_OPSLIMIT_INTERACTIVE,
                          crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0)
        return UAS_BAD_OUT_OF_MEMORY;
    user_db db;
    uas_status st = user_db_load(file, &db, true);
    if (st != UAS_GOOD)
        goto out;
    long i = user_db_find(&db, name);
    user_line *l = i >= 0 ? &db.lines[i] : db_push(&db);
    if (!l) {
        st = UAS_BAD_OUT_OF_MEMORY;
        goto out;
    }
    if (i < 0) {
        l->is_user = true;
        snprintf(l->name, sizeof(l->name), "%s", name);
    }
    snprintf(l->hash, sizeof(l->hash), "%s", hash);
    if (roles)
        snprintf(l->roles, sizeof(l->roles), "%s", roles);
    st = user_db_save(file, &db);
    if (st == UAS_GOOD && added)
        *added = i < 0;
out:
    user_db_free(&db);
    sodium_memzero(hash, sizeof(hash));
    return st;
}

uas_status uas_user_remove(const char *file, const char *name)
{
    if (!file || !name)
        return UAS_BAD_INVALID_ARGUMENT;
    user_db db;
    uas_status st = user_db_load(file, &db, false);
    if (st != UAS_GOOD)
        return st;
    long i = user_db_find(&db, name);
    if (i < 0) {
        st = UAS_BAD_NOT_FOUND;
    } else {
        pki_str_free(db.lines[i].raw);
        memmove(&db.lines[i], &db.lines[i + 1], (db.count - (size_t)i - 1) * sizeof(*db.lines));
        db.count--;
        st = user_db_save(file, &db);
    }
    user_db_free(&db);
    return st;
}

uas_status uas_user_list(const char *file, uas_user_info **items, size_t *count)
{
    if (!file || !items || !count)
        return UAS_BAD_INVALID_ARGUMENT;
    *items = NULL;
    *count = 0;
    user_db db;
    uas_status st = user_db_load(file, &db, true);
    if (st != UAS_GOOD)
        return st;
    size_t n = 0;
    for (size_t i = 0; i < db.count; i++)
        n += db.lines[i].is_user;
    if (n > 0) {
        *items = uas_calloc(n, sizeof(**items));
        if (!*items) {
            st = UAS_BAD_OUT_OF_MEMORY;
        } else {
            for (size_t i = 0, k = 0; i < db.count; i++) {
                if (!db.lines[i].is_user)
                    continue;
                snprintf((*items)[k].name, sizeof((*items)[k].name), "%s", db.lines[i].name);
                snprintf((*items)[k].roles, sizeof((*items)[k].roles), "%s", db.lines[i].roles);
                k++;
            }
            *count = n;
        }
    }
    user_db_free(&db);
    return st;
}

void uas_user_list_free(uas_user_info *items, size_t count)
{
    if (items)
        uas_free(items, count * sizeof(*items));
}
