/* The users file in memory: one entry per line, comments and lines we do
 * not understand kept verbatim so that a rewrite does not lose them. */
#ifndef UAS_USER_INTERNAL_H
#define UAS_USER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <sodium.h>

#include <ua/pki.h>

#define USER_LOG          "users"
#define USER_MAX_FILE     (4u * 1024u * 1024u)
#define USER_MAX_LINE     1024u
#define USER_MAX_PASSWORD 4096u

typedef struct user_line {
    bool is_user; /* else raw holds the line */
    char name[UAS_USER_NAME_MAX + 1];
    char hash[crypto_pwhash_STRBYTES];
    char roles[UAS_USER_ROLES_MAX + 1];
    char *raw; /* uas_malloc'd, NUL-terminated */
} user_line;

typedef struct user_db {
    user_line *lines;
    size_t count, cap;
} user_db;

/* Reads the file. missing_ok: a missing file is an empty db, else
 * UAS_BAD_NOT_FOUND. Malformed user lines are kept raw (WARN). */
uas_status user_db_load(const char *file, user_db *db, bool missing_ok);
/* Writes the db atomically with mode 0600. */
uas_status user_db_save(const char *file, const user_db *db);
void user_db_free(user_db *db);
/* Index of the user, or -1. */
long user_db_find(const user_db *db, const char *name);
bool user_name_ok(const char *name);

#endif
