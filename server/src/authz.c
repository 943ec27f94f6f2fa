/* Roles of sessions and the permission defaults of namespaces (authz.h).
 *
 * The configuration is compiled once: role names become bits, permission
 * names become PermissionType masks, and every namespace index below
 * UAS_AUTHZ_NS_MAX gets a table of eight masks (one per well-known role).
 * The rules are kept so a namespace added later, or named by URI, is
 * computed the same way: built-in default, then every matching rule in
 * file order (a later rule replaces an earlier one). */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ua/mem.h>
#include <ua/nodeids.h>
#include <ua/pki.h>

#include "lockdef.h"
#include "authz.h"

#define ROLE(name, sym)                                                                            \
    {                                                                                              \
        name, UAS_NS0ID_WELLKNOWNROLE_##sym, UAS_NS0ID_WELLKNOWNROLE_##sym##_IDENTITIES            \
    }

static const struct {
    const char *name;
    uint32_t id;
    uint32_t identities; /* its Identities property */
} roles[UAS_ROLE_WELL_KNOWN] = {
    ROLE("Anonymous", ANONYMOUS),
    ROLE("AuthenticatedUser", AUTHENTICATEDUSER),
    ROLE("Observer", OBSERVER),
    ROLE("Operator", OPERATOR),
    ROLE("Engineer", ENGINEER),
    ROLE("Supervisor", SUPERVISOR),
    ROLE("ConfigureAdmin", CONFIGUREADMIN),
    ROLE("SecurityAdmin", SECURITYADMIN),
};

/* PermissionType bit n is named perm_names[n] (Part 3, 8.55). */
static const char *const perm_names[] = {
    "Browse",
    "ReadRolePermissions",
    "WriteAttribute",
    "WriteRolePermissions",
    "WriteHistorizing",
    "Read",
    "Write",
    "ReadHistory",
    "InsertHistory",
    "ModifyHistory",
    "DeleteHistory",
    "ReceiveEvents",
    "Call",
    "AddReference",
    "RemoveReference",
    "DeleteNode",
    "AddNode",
};

/* ---- built-in defaults (docs/Security.md, "Roles and permissions") ---- */

#define P(x)  UAS_PERMISSION_TYPE_##x
#define SEE   (P(BROWSE) | P(READ) | P(RECEIVE_EVENTS))
#define HIST  P(READ_HISTORY)
#define NODES (P(ADD_NODE) | P(DELETE_NODE) | P(ADD_REFERENCE) | P(REMOVE_REFERENCE))

/* Namespaces of the application (1 and up): anonymous sessions browse,
 * read (values and history) and subscribe; Operator writes; Engineer writes and calls;
 * Supervisor calls; ConfigureAdmin also manages nodes and attributes;
 * SecurityAdmin reads and writes RolePermissions. */
static const uint32_t app_defaults[UAS_ROLE_WELL_KNOWN] = {
    [UAS_ROLE_ANONYMOUS] = SEE | HIST,
    [UAS_ROLE_AUTHENTICATED_USER] = SEE | HIST,
    [UAS_ROLE_OBSERVER] = SEE | HIST,
    [UAS_ROLE_OPERATOR] = SEE | HIST | P(WRITE),
    [UAS_ROLE_ENGINEER] = SEE | HIST | P(WRITE) | P(CALL) | P(WRITE_HISTORIZING),
    [UAS_ROLE_SUPERVISOR] = SEE | HIST | P(CALL),
    [UAS_ROLE_CONFIGURE_ADMIN] = SEE | HIST | P(WRITE) | P(CALL) | P(WRITE_ATTRIBUTE) |
                                 P(WRITE_HISTORIZING) | P(READ_ROLE_PERMISSIONS) | NODES,
    [UAS_ROLE_SECURITY_ADMIN] = SEE | HIST | P(READ_ROLE_PERMISSIONS) | P(WRITE_ROLE_PERMISSIONS),
};

/* Namespace 0 is the same, except that every role may Call: the methods of
 * namespace 0 the server implements (GetMonitoredItems, ResendData, ...)
 * act on the caller's own subscriptions, and the security-relevant ones
 * carry RolePermissions of their own in the NodeSet, which win. */
static uint32_t ns0_default(unsigned role)
{
    return app_defaults[role] | P(CALL);
}

/* ---- the compiled configuration ---- */

typedef struct perm_rule {
    int32_t ns; /* index, -1: "*" (every namespace but 0), -2: by uri */
    char *uri;  /* heap, when ns == -2 */
    uint8_t role;
    uint32_t perms;
} perm_rule;

typedef struct x509_rule {
    uint32_t roles;
    bool subject; /* else thumbprint */
    char *match;  /* heap: upper-case hex thumbprint, or the subject one-liner */
} x509_rule;

struct uas_authz {
    uas_server *server;
    /* Read on every operation, written when a namespace is added (before
     * or while the server runs): relaxed atomics, a plain load on x86-64
     * and arm64. */
    _Atomic uint32_t ns_perms[UAS_AUTHZ_NS_MAX][UAS_ROLE_WELL_KNOWN];
    uint32_t other[UAS_ROLE_WELL_KNOWN]; /* namespaces >= UAS_AUTHZ_NS_MAX */
    uint32_t anonymous_roles;
    perm_rule *rules;
    size_t rule_count;
    x509_rule *x509;
    size_t x509_count;
    bool x509_subjects; /* some rule matches a subject: parse the certificate */
    struct identities_ud {
        const struct uas_authz *z;
        unsigned role;
    } identities[UAS_ROLE_WELL_KNOWN];
};

/* ---- names ---- */

int uas_role_by_name(const char *name, size_t len)
{
    for (unsigned i = 0; i < UAS_ROLE_WELL_KNOWN; i++)
        if (strlen(roles[i].name) == len && strncasecmp(roles[i].name, name, len) == 0)
            return (int)i;
    return -1;
}

int uas_role_by_nodeid(const uas_nodeid *id)
{
    if (id->ns != 0 || id->kind != UAS_NODEID_NUMERIC)
        return -1;
    for (unsigned i = 0; i < UAS_ROLE_WELL_KNOWN; i++)
        if (roles[i].id == id->id.numeric)
            return (int)i;
    return -1;
}

uint32_t uas_role_nodeid(unsigned role)
{
    return role < UAS_ROLE_WELL_KNOWN ? roles[role].id : 0;
}

const char *uas_role_name(unsigned role)
{
    return role < UAS_ROLE_WELL_KNOWN ? roles[role].name : "?";
}

void uas_roles_format(uint32_t set, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (unsigned i = 0; i < UAS_ROLE_WELL_KNOWN; i++) {
        if (!(set & UAS_ROLE_BIT(i)))
            continue;
        int w = snprintf(buf + n, cap - n, "%s%s", n ? "," : "", roles[i].name);
        if (w < 0 || (size_t)w >= cap - n)
            return;
        n += (size_t)w;
    }
}

/* Calls fn on each comma-separated, space-trimmed item of list[0..len). */
typedef uas_status (*item_fn)(const char *item, size_t len, uint32_t *acc, char *err, size_t cap);

static uas_status each_item(const char *list, size_t len, item_fn fn, uint32_t *acc, char *err,
                            size_t cap)
{
    *acc = 0;
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && list[j] != ',')
            j++;
        size_t a = i, b = j;
        while (a < b && isspace((unsigned char)list[a]))
            a++;
        while (b > a && isspace((unsigned char)list[b - 1]))
            b--;
        if (b > a) {
            uas_status st = fn(list + a, b - a, acc, err, cap);
            if (st != UAS_GOOD)
                return st;
        }
        i = j + 1;
    }
    return UAS_GOOD;
}

static uas_status role_item(const char *item, size_t len, uint32_t *acc, char *err, size_t cap)
{
    int r = uas_role_by_name(item, len);
    if (r < 0) {
        snprintf(err, cap, "unknown role '%.*s'", (int)len, item);
        return UAS_BAD_CONFIGURATION_ERROR;
    }
    *acc |= UAS_ROLE_BIT(r);
    return UAS_GOOD;
}

static uas_status perm_item(const char *item, size_t len, uint32_t *acc, char *err, size_t cap)
{
    if (len == 4 && strncasecmp(item, "None", 4) == 0)
        return UAS_GOOD;
    if (len == 3 && strncasecmp(item, "All", 3) == 0) {
        *acc |= UAS_PERMISSIONS_ALL;
        return UAS_GOOD;
    }
    for (unsigned i = 0; i < sizeof(perm_names) / sizeof(perm_names[0]); i++) {
        if (strlen(perm_names[i]) == len && strncasecmp(perm_names[i], item, len) == 0) {
            *acc |= 1u << i;
            return UAS_GOOD;
        }
    }
    snprintf(err, cap, "unknown permission '%.*s'", (int)len, item);
    return UAS_BAD_CONFIGURATION_ERROR;
}

uas_status uas_roles_parse(const char *list, size_t len, uint32_t *out, char *err, size_t cap)
{
    return each_item(list, len, role_item, out, err, cap);
}

uas_status uas_perms_parse(const char *list, size_t len, uint32_t *out, char *err, size_t cap)
{
    return each_item(list, len, perm_item, out, err, cap);
}

uas_status uas_authz_check(uint32_t perms, uint32_t needed)
{
    return (perms & needed) == needed ? UAS_GOOD : UAS_BAD_USER_ACCESS_DENIED;
}

/* ---- namespace tables ---- */

uint32_t uas_authz_default_role_perms(const uas_authz *z, uint16_t ns, unsigned role)
{
    if (role >= UAS_ROLE_WELL_KNOWN)
        return 0;
    if (ns < UAS_AUTHZ_NS_MAX)
        return atomic_load_explicit(&z->ns_perms[ns][role], memory_order_relaxed);
    return z->other[role];
}

uint32_t uas_authz_default_perms(const uas_authz *z, uint16_t ns, uint32_t set)
{
    if (set & UAS_ROLES_INTERNAL)
        return UAS_PERMISSIONS_ALL;
    uint32_t p = 0;
    set &= (1u << UAS_ROLE_WELL_KNOWN) - 1;
    if (ns < UAS_AUTHZ_NS_MAX) {
        const _Atomic uint32_t *t = z->ns_perms[ns];
        while (set) {
            unsigned r = (unsigned)__builtin_ctz(set);
            p |= atomic_load_explicit(&t[r], memory_order_relaxed);
            set &= set - 1;
        }
    } else {
        while (set) {
            unsigned r = (unsigned)__builtin_ctz(set);
            p |= z->other[r];
            set &= set - 1;
        }
    }
    return p;
}

/* Built-in default, then the rules in order. ns < 0: the "other" table. */
static void compute(const uas_authz *z, int ns, const char *uri, uint32_t out[UAS_ROLE_WELL_KNOWN])
{
    for (unsigned r = 0; r < UAS_ROLE_WELL_KNOWN; r++)
        out[r] = ns == 0 ? ns0_default(r) : app_defaults[r];
    for (size_t i = 0; i < z->rule_count; i++) {
        const perm_rule *rule = &z->rules[i];
        bool match = rule->ns == -1   ? ns != 0
                     : rule->ns == -2 ? uri && strcmp(rule->uri, uri) == 0
                                      : ns >= 0 && rule->ns == ns;
        if (match)
            out[rule->role] = rule->perms;
    }
}

void uas_authz_namespace_added(uas_authz *z, uint16_t idx, const char *uri)
{
    if (!z || idx >= UAS_AUTHZ_NS_MAX)
        return;
    uint32_t t[UAS_ROLE_WELL_KNOWN];
    compute(z, idx, uri, t);
    for (unsigned r = 0; r < UAS_ROLE_WELL_KNOWN; r++)
        atomic_store_explicit(&z->ns_perms[idx][r], t[r], memory_order_relaxed);
}

/* ---- parsing the configuration ---- */

static char *dup_n(const char *p, size_t n)
{
    char *c = uas_malloc(n + 1);
    if (c) {
        memcpy(c, p, n);
        c[n] = 0;
    }
    return c;
}

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && isspace((unsigned char)*p))
        p++;
    return p;
}

static const char *token_end(const char *p, const char *end)
{
    while (p < end && !isspace((unsigned char)*p))
        p++;
    return p;
}

/* "NS ROLE PERMS": NS an index, "*" or a namespace URI. */
static uas_status parse_perm_line(uas_authz *z, const char *p, const char *end, char *err,
                                  size_t cap)
{
    const char *ns = skip_space(p, end), *ns_end = token_end(ns, end);
    const char *role = skip_space(ns_end, end), *role_end = token_end(role, end);
    const char *perms = skip_space(role_end, end);
    if (ns == ns_end || role == role_end || perms == end) {
        snprintf(err, cap, "'%.*s': expected NAMESPACE ROLE PERMISSIONS", (int)(end - p), p);
        return UAS_BAD_CONFIGURATION_ERROR;
    }
    perm_rule rule = {0};
    int r = uas_role_by_name(role, (size_t)(role_end - role));
    if (r < 0) {
        snprintf(err, cap, "unknown role '%.*s'", (int)(role_end - role), role);
        return UAS_BAD_CONFIGURATION_ERROR;
    }
    rule.role = (uint8_t)r;
    uas_status st = uas_perms_parse(perms, (size_t)(end - perms), &rule.perms, err, cap);
    if (st != UAS_GOOD)
        return st;
    size_t nlen = (size_t)(ns_end - ns);
    bool digits = true;
    for (size_t i = 0; i < nlen; i++)
        digits &= isdigit((unsigned char)ns[i]) != 0;
    if (nlen == 1 && ns[0] == '*') {
        rule.ns = -1;
    } else if (digits && nlen <= 5) {
        unsigned long v = strtoul(ns, NULL, 10);
        if (v > UINT16_MAX) {
            snprintf(err, cap, "namespace index %.*s out of range", (int)nlen, ns);
            return UAS_BAD_CONFIGURATION_ERROR;
        }
        rule.ns = (int32_t)v;
    } else if (digits) {
        snprintf(err, cap, "namespace index %.*s out of range", (int)nlen, ns);
        return UAS_BAD_CONFIGURATION_ERROR;
    } else {
        rule.ns = -2;
        if (!(rule.uri = dup_n(ns, nlen)))
            return UAS_BAD_OUT_OF_MEMORY;
    }
    perm_rule *grown =
        uas_realloc(z->rules, z->rule_count * sizeof(*grown), (z->rule_count + 1) * sizeof(*grown));
    if (!grown) {
        if (rule.uri)
            uas_free(rule.uri, strlen(rule.uri) + 1);
        return UAS_BAD_OUT_OF_MEMORY;
    }
    z->rules = grown;
    z->rules[z->rule_count++] = rule;
    return UAS_GOOD;
}

/* "ROLES thumbprint=HEX" or "ROLES subject=DN". */
static uas_status parse_x509_line(uas_authz *z, const char *p, const char *end, char *err,
                                  size_t cap)
{
    const char *rl = skip_space(p, end), *rl_end = token_end(rl, end);
    const char *m = skip_space(rl_end, end);
    while (end > m && isspace((unsigned char)end[-1]))
        end--;
    x509_rule rule = {0};
    size_t mlen = (size_t)(end - m);
    const char *value;
    if (mlen > 11 && strncasecmp(m, "thumbprint=", 11) == 0) {
        value = m + 11;
    } else if (mlen > 8 && strncasecmp(m, "subject=", 8) == 0) {
        value = m + 8;
        rule.subject = true;
    } else {
        snprintf(err, cap, "'%.*s': expected ROLES thumbprint=HEX or ROLES subject=NAME",
                 (int)(end - p), p);
        return UAS_BAD_CONFIGURATION_ERROR;
    }
    uas_status st = uas_roles_parse(rl, (size_t)(rl_end - rl), &rule.roles, err, cap);
    if (st != UAS_GOOD)
        return st;
    size_t vlen = (size_t)(end - value);
    if (!(rule.match = dup_n(value, vlen)))
        return UAS_BAD_OUT_OF_MEMORY;
    if (!rule.subject) {
        /* Hex digits, colons or spaces between bytes allowed: 40 digits. */
        size_t n = 0;
        for (size_t i = 0; i < vlen; i++) {
            char c = value[i];
            if (isxdigit((unsigned char)c) && n < 40)
                rule.match[n++] = (char)toupper((unsigned char)c);
            else if (!(c == ':' || c == ' ') || isxdigit((unsigned char)c))
                n = 41;
        }
        if (n != 40) {
            snprintf(err, cap, "'%.*s': a thumbprint is 40 hex digits (SHA-1)", (int)vlen, value);
            uas_free(rule.match, vlen + 1);
            return UAS_BAD_CONFIGURATION_ERROR;
        }
        rule.match[40] = 0;
    }
    x509_rule *grown =
        uas_realloc(z->x509, z->x509_count * sizeof(*grown), (z->x509_count + 1) * sizeof(*grown));
    if (!grown) {
        uas_free(rule.match, vlen + 1);
        return UAS_BAD_OUT_OF_MEMORY;
    }
    z->x509 = grown;
    z->x509[z->x509_count++] = rule;
    z->x509_subjects |= rule.subject;
    return UAS_GOOD;
}

typedef uas_status (*line_fn)(uas_authz *z, const char *p, const char *end, char *err, size_t cap);

/* Entries are separated by newlines (a repeated INI key). */
static uas_status each_line(uas_authz *z, const char *text, const char *key, line_fn fn)
{
    if (!text)
        return UAS_GOOD;
    const char *p = text;
    while (*p) {
        const char *e = strchr(p, '\n');
        if (!e)
            e = p + strlen(p);
        if (skip_space(p, e) < e) {
            char err[200] = "";
            uas_status st = fn(z, p, e, err, sizeof(err));
            if (st != UAS_GOOD) {
                uas_log(UAS_LOG_ERROR, "authz", "roles.%s: %s", key,
                        err[0] ? err : "out of memory");
                return st;
            }
        }
        p = *e ? e + 1 : e;
    }
    return UAS_GOOD;
}

uas_status uas_authz_new(uas_server *s, uas_authz **out)
{
    *out = NULL;
    uas_authz *z = uas_calloc(1, sizeof(*z));
    if (!z)
        return UAS_BAD_OUT_OF_MEMORY;
    z->server = s;
    const uas_server_config *c = &s->cfg;
    uas_status st = UAS_GOOD;
    if (c->anonymous_roles) {
        char err[200] = "";
        st = uas_roles_parse(c->anonymous_roles, strlen(c->anonymous_roles), &z->anonymous_roles,
                             err, sizeof(err));
        if (st != UAS_GOOD)
            uas_log(UAS_LOG_ERROR, "authz", "roles.anonymous: %s", err);
    }
    if (st == UAS_GOOD)
        st = each_line(z, c->x509_roles, "x509", parse_x509_line);
    if (st == UAS_GOOD)
        st = each_line(z, c->role_permissions, "permissions", parse_perm_line);
    if (st != UAS_GOOD) {
        uas_authz_delete(z);
        return st;
    }
    compute(z, -1, NULL, z->other);
    UAS_LOCK_PLAIN(&s->ns_lock);
    for (uint16_t i = 0; i < UAS_AUTHZ_NS_MAX; i++)
        uas_authz_namespace_added(z, i, i < s->namespace_count ? s->namespaces[i] : NULL);
    UAS_UNLOCK(&s->ns_lock);
    *out = z;
    return UAS_GOOD;
}

void uas_authz_delete(uas_authz *z)
{
    if (!z)
        return;
    for (size_t i = 0; i < z->rule_count; i++)
        if (z->rules[i].uri)
            uas_free(z->rules[i].uri, strlen(z->rules[i].uri) + 1);
    if (z->rules)
        uas_free(z->rules, z->rule_count * sizeof(*z->rules));
    for (size_t i = 0; i < z->x509_count; i++)
        uas_free(z->x509[i].match, strlen(z->x509[i].match) + 1);
    if (z->x509)
        uas_free(z->x509, z->x509_count * sizeof(*z->x509));
    uas_free(z, sizeof(*z));
}

/* ---- roles of a session ---- */

static uint32_t user_roles(uas_server *s, const char *name)
{
#ifndef UAS_ENABLE_ENCRYPTION
    (void)s, (void)name; /* no users file without encryption */
    return 0;
#else
    char list[UAS_USER_ROLES_MAX + 1];
    if (!s->users || uas_user_roles(s->users, name, list, sizeof(list)) != UAS_GOOD)
        return 0;
    /* Names the server does not know are skipped (a users file may be
     * shared with a server that defines roles of its own). */
    uint32_t set = 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        if (!e)
            e = p + strlen(p);
        const char *a = skip_space(p, e);
        const char *b = e;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        int r = b > a ? uas_role_by_name(a, (size_t)(b - a)) : -1;
        if (r >= 0)
            set |= UAS_ROLE_BIT(r);
        else if (b > a)
            uas_log(UAS_LOG_WARN, "authz", "user %s: unknown role '%.*s' ignored", name,
                    (int)(b - a), a);
        p = *e ? e + 1 : e;
    }
    return set;
#endif
}

/* thumb: the leaf's thumbprint as validation reported it (the token may
 * carry a chain after the leaf). */
static uint32_t x509_roles(const uas_authz *z, const uas_x509_identity_token *t, const char *thumb)
{
    if (z->x509_count == 0 || !t->certificate_data.data)
        return 0;
#ifndef UAS_ENABLE_ENCRYPTION
    (void)thumb; /* no X.509 users without encryption */
    return 0;
#else
    uas_pki_cert_info info;
    bool have_subject =
        z->x509_subjects && uas_pki_cert_info_get(t->certificate_data.data,
                                                  t->certificate_data.length, &info) == UAS_GOOD;
    uint32_t set = 0;
    for (size_t i = 0; i < z->x509_count; i++) {
        const x509_rule *r = &z->x509[i];
        if (r->subject ? have_subject && strcmp(r->match, info.subject) == 0
                       : strcmp(r->match, thumb) == 0)
            set |= r->roles;
    }
    return set;
#endif
}

void uas_authz_session_roles(uas_server *s, uas_session *se, const uas_extensionobject *identity)
{
    const uas_authz *z = s->authz;
    uint32_t set = UAS_ROLE_BIT(UAS_ROLE_ANONYMOUS);
    const uas_type *type =
        identity->encoding == UAS_EXTOBJ_DECODED ? identity->content.decoded.type : NULL;
    /* Every session holds Anonymous: the NodeSet grants some nodes to
     * Anonymous only, and an authenticated user must not see less than an
     * anonymous one. */
    if (type == UAS_TYPE(USER_NAME_IDENTITY_TOKEN)) {
        set |= UAS_ROLE_BIT(UAS_ROLE_AUTHENTICATED_USER) | user_roles(s, se->user);
    } else if (type == UAS_TYPE(X509_IDENTITY_TOKEN)) {
        set |= UAS_ROLE_BIT(UAS_ROLE_AUTHENTICATED_USER);
        /* svc_session.c names an X.509 user "x509:<thumbprint>". */
        const char *thumb = strncmp(se->user, "x509:", 5) == 0 ? se->user + 5 : "";
        if (z)
            set |= x509_roles(z, identity->content.decoded.data, thumb);
    } else if (z) {
        set |= z->anonymous_roles;
    }
    se->roles = set;
    char names[160];
    uas_roles_format(set, names, sizeof(names));
    uas_log(UAS_LOG_DEBUG, "authz", "session of %s has roles %s",
            se->user[0] ? se->user : "anonymous", names);
}

/* ---- Identities of the RoleSet (Part 18, 4.4.2) ---- */

/* The mapping rules in force for one role: what the configuration maps to
 * it (anonymous roles, X.509 thumbprints and subjects) and the built-in
 * rules of Anonymous and AuthenticatedUser. User names are mapped by the
 * users file, which the server reads again when it changes: they are not
 * listed (uapki user list shows them). */
static uas_status identities_read(void *ud, const uas_nodeid *node, uas_datavalue *out,
                                  uas_arena *arena)
{
    (void)node;
    const struct identities_ud *u = ud;
    const uas_authz *z = u->z;
    uint32_t bit = UAS_ROLE_BIT(u->role);
    uas_identity_mapping_rule_type *rules =
        uas_arena_calloc(arena, 2 + z->x509_count, sizeof(*rules));
    if (!rules)
        return UAS_BAD_OUT_OF_MEMORY;
    size_t n = 0;
    if (u->role == UAS_ROLE_ANONYMOUS || (z->anonymous_roles & bit))
        rules[n++].criteria_type = UAS_IDENTITY_CRITERIA_TYPE_ANONYMOUS;
    if (u->role == UAS_ROLE_ANONYMOUS || u->role == UAS_ROLE_AUTHENTICATED_USER)
        rules[n++].criteria_type = UAS_IDENTITY_CRITERIA_TYPE_AUTHENTICATED_USER;
    for (size_t i = 0; i < z->x509_count; i++) {
        if (!(z->x509[i].roles & bit))
            continue;
        rules[n].criteria_type = z->x509[i].subject ? UAS_IDENTITY_CRITERIA_TYPE_X509_SUBJECT
                                                    : UAS_IDENTITY_CRITERIA_TYPE_THUMBPRINT;
        rules[n++].criteria = uas_string_from(z->x509[i].match);
    }
    uas_variant_set_array(&out->value, n ? (void *)rules : UAS_EMPTY_ARRAY, n,
                          UAS_TYPE(IDENTITY_MAPPING_RULE_TYPE));
    return UAS_GOOD;
}

uas_status uas_authz_roleset_init(uas_server *s)
{
    uas_authz *z = s->authz;
    for (unsigned r = 0; r < UAS_ROLE_WELL_KNOWN; r++) {
        z->identities[r].z = z;
        z->identities[r].role = r;
        uas_nodeid id = uas_nodeid_numeric(0, roles[r].identities);
        uas_status st =
            uas_server_set_data_source(s, &id, identities_read, NULL, &z->identities[r]);
        /* The reduced namespace 0 has no RoleSet. */
        if (st != UAS_GOOD && st != UAS_BAD_NODE_ID_UNKNOWN)
            return st;
    }
    return UAS_GOOD;
}
