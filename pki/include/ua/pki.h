/* PKI of uastack: the application instance certificate, the certificate
 * store of OPC UA Part 12 (own/ trusted/ issuers/ rejected/), certificate
 * validation following Part 4 6.1.3, and the user store (argon2id password
 * hashes) with failed-login throttling.
 *
 * Store layout under the store directory:
 *
 *   own/certs/<name>.der        this application's certificate (DER)
 *   own/private/<name>.pem      its private key (PEM, mode 0600, folder 0700)
 *   trusted/certs/              trusted application and CA certificates
 *   trusted/crl/                CRLs of the trusted CAs
 *   issuers/certs/              CA certificates needed to build chains, not trusted by themselves
 *   issuers/crl/                CRLs of those CAs
 *   rejected/certs/             certificates that failed the trust check (bounded), for an
 *                               administrator to promote with uas_pki_trust_rejected / `uapki
 * trust`
 *
 * Certificates in the folders may be DER or PEM (.der .pem .crt .cer), CRLs
 * DER or PEM (.crl .der .pem). Files the library writes are named
 * "<CommonName> [<thumbprint>].der" (Part 12), CRLs "<CommonName> [<sha1>].crl".
 *
 * The store is read from disk at every validation, so a certificate trusted
 * with `uapki trust` while a server runs applies to the next connection.
 * Every function may be called from several threads at once; the store
 * handle itself is immutable after uas_pki_store_open.
 *
 * Errors are status codes. Besides the certificate codes of validation:
 * UAS_BAD_INVALID_ARGUMENT (bad parameter), UAS_BAD_NOT_FOUND (no such file or
 * certificate), UAS_BAD_ENTRY_EXISTS (would overwrite), UAS_BAD_CERTIFICATE_INVALID
 * (input is not a certificate), UAS_BAD_DECODING_ERROR (input is not a CRL),
 * UAS_BAD_RESOURCE_UNAVAILABLE (file system error, logged with its reason),
 * UAS_BAD_OUT_OF_MEMORY. */
#ifndef UA_PKI_H
#define UA_PKI_H

#include <ua/export.h>
UAS_API_BEGIN

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ua/builtin.h>
#include <ua/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uas_pki_store uas_pki_store;

typedef enum uas_pki_folder {
    UAS_PKI_OWN = 0,      /* own/certs */
    UAS_PKI_TRUSTED = 1,  /* trusted/certs */
    UAS_PKI_ISSUERS = 2,  /* issuers/certs */
    UAS_PKI_REJECTED = 3, /* rejected/certs */
} uas_pki_folder;

/* What a CA in the chain without a CRL means.
 * STRICT (default, as Part 4 asks): the certificates it issued get
 *   Bad_CertificateRevocationUnknown (the leaf's issuer) or
 *   Bad_CertificateIssuerRevocationUnknown (an intermediate's issuer).
 * LENIENT: a missing CRL is accepted (logged at debug level); a CRL that is
 *   present is still checked. Meant for small installations whose CAs
 *   publish no CRL. */
typedef enum uas_pki_revocation {
    UAS_PKI_REVOCATION_STRICT = 0,
    UAS_PKI_REVOCATION_LENIENT = 1,
} uas_pki_revocation;

typedef struct uas_pki_options {
    uas_pki_revocation revocation; /* default STRICT */
    /* LAB ONLY. Accept certificates that fail only the trust-list check
     * (every other check still applies). Each use logs a WARN line. Off by
     * default; never enable it on a network you do not own. */
    bool auto_accept;
    bool allow_sha1;       /* accept SHA-1 signed certificates (legacy policies); default false */
    uint32_t max_rejected; /* files kept in rejected/certs; when full, new ones are not
                              recorded (nothing is evicted); default 100 */
    uint32_t max_chain;    /* certificates in a chain, leaf included; default 10, at most 32 */
    /* Signature verifications one validation may spend on building the
     * chain (self-signature checks included); 0: max_chain + 2. A chain
     * that needs more is Bad_CertificateChainIncomplete. */
    uint32_t max_signature_checks;
    /* Largest RSA key of a CA certificate taken into a chain; default 4096
     * (at most 16384). Larger ones are skipped without a signature check. */
    uint32_t max_ca_key_bits;
    /* Rejected certificates (rejected/certs) that validation records for
     * an administrator. Recording is done by a writer thread of the store,
     * never by the validating thread: */
    uint32_t rejected_max_cert_size;     /* larger certificates are not recorded; default 16384 */
    uint32_t rejected_writes_per_minute; /* new files per minute, all peers; default 10 */
} uas_pki_options;

void uas_pki_options_default(uas_pki_options *o);

/* Opens the store at dir, creating the missing folders of the layout
 * (own/private with mode 0700). opts NULL: defaults. */
uas_status uas_pki_store_open(const char *dir, const uas_pki_options *opts, uas_pki_store **out);
void uas_pki_store_close(uas_pki_store *s);
const char *uas_pki_store_dir(const uas_pki_store *s);
/* Reads the trust lists and CRLs again at the next validation and forgets
 * the cached verdicts: for files rewritten in place, whose folder's mtime
 * does not change (uaserver calls it on SIGHUP). */
void uas_pki_store_reload(uas_pki_store *s);
/* The certificate folder of f, e.g. "<dir>/trusted/certs". */
const char *uas_pki_folder_path(const uas_pki_store *s, uas_pki_folder f);
/* "own", "trusted", "issuers", "rejected". */
const char *uas_pki_folder_name(uas_pki_folder f);

/* Zeroes and frees bytes returned by this module (uas_malloc memory). */
void uas_pki_bytes_free(uas_bytestring *b);

/* ---- certificate information ------------------------------------------- */

#define UAS_PKI_THUMBPRINT_HEX 41 /* 40 hex digits + NUL */

typedef struct uas_pki_cert_info {
    char thumbprint[UAS_PKI_THUMBPRINT_HEX]; /* SHA-1 of the DER, upper-case hex */
    char subject[256];                       /* RFC 2253 one-liner */
    char issuer[256];
    char common_name[128];
    char application_uri[256]; /* first URI of subjectAltName, "" if none */
    char serial[64];           /* hex */
    uas_datetime not_before;
    uas_datetime not_after;
    uint32_t key_bits;
    bool is_ca;       /* basicConstraints CA:TRUE */
    bool self_signed; /* issuer == subject and the signature verifies with its own key */
    char file[256];   /* uas_pki_list: file name inside the folder */
} uas_pki_cert_info;

/* Fills info from a DER certificate. UAS_BAD_CERTIFICATE_INVALID if it is not one. */
uas_status uas_pki_cert_info_get(const uint8_t *der, size_t len, uas_pki_cert_info *info);
/* SHA-1 thumbprint of len bytes as 40 upper-case hex digits. */
void uas_pki_thumbprint(const uint8_t *der, size_t len, char out[UAS_PKI_THUMBPRINT_HEX]);

/* Every certificate of a folder, sorted by subject. Unreadable files are
 * skipped with a WARN log line. Free with uas_pki_list_free. */
uas_status uas_pki_list(uas_pki_store *s, uas_pki_folder f, uas_pki_cert_info **items,
                        size_t *count);
void uas_pki_list_free(uas_pki_cert_info *items, size_t count);

/* Reads a certificate file (DER or PEM) into DER bytes (free with
 * uas_pki_bytes_free). */
uas_status uas_pki_read_cert_file(const char *path, uas_bytestring *der);

/* Looks a certificate up by thumbprint (or a unique prefix of at least 8 hex
 * digits, any case) in a folder. path (may be NULL) receives the file path.
 * UAS_BAD_NOT_FOUND, or UAS_BAD_INVALID_ARGUMENT when the prefix is ambiguous.
 * Trusting takes the full thumbprint only (uas_pki_trust_rejected). */
uas_status uas_pki_find(uas_pki_store *s, uas_pki_folder f, const char *thumbprint,
                        uas_bytestring *der, char *path, size_t path_cap);

/* ---- the application instance certificate ------------------------------ */

/* Part 6 6.2.2 profile of the certificate uas_pki_create_own makes:
 * RSA key (2048 bits unless asked), SHA-256 signature, random 159-bit serial,
 * subject CN=<application_name>[, O=<organization>][, DC=<first DNS name>],
 * self-signed (issuer = subject), validity from now - 1 h to now + days,
 * subjectAltName URI=<application_uri>, DNS=<dns names>, IP=<addresses>,
 * basicConstraints critical CA:FALSE,
 * keyUsage critical digitalSignature, nonRepudiation, keyEncipherment,
 *   dataEncipherment, keyCertSign (self-signed),
 * extendedKeyUsage serverAuth, clientAuth,
 * subjectKeyIdentifier, authorityKeyIdentifier. */
typedef struct uas_pki_create_params {
    const char *application_uri;  /* required; printable ASCII */
    const char *application_name; /* CN; NULL: "uastack" */
    const char *organization;     /* O; NULL: none */
    const char *const *dns_names;
    size_t dns_count;
    const char *const *ip_addresses; /* IPv4 or IPv6 text */
    size_t ip_count;
    uint32_t key_bits; /* 0: 2048; else 2048..8192 */
    /* The key type: NULL or "rsa" (RSA of key_bits), "rsa2048", "rsa3072",
     * "rsa4096", or an ECC certificate type: "nistP256", "nistP384",
     * "brainpoolP256r1", "brainpoolP384r1", "curve25519" (Ed25519),
     * "curve448" (Ed448). */
    const char *key_type;
    uint32_t validity_days; /* 0: 730 (two years); at most 36500 */
    /* Base of the file names (own/certs/<name>.der, own/private/<name>.pem);
     * NULL: application_name with characters other than [A-Za-z0-9._-]
     * replaced by '_' (then uas_pki_ensure_own takes the store's only own
     * certificate when it has one under another name). */
    const char *file_name;
    bool overwrite; /* replace an existing pair (else UAS_BAD_ENTRY_EXISTS) */
} uas_pki_create_params;

/* Makes a key pair and the self-signed certificate and writes them to the
 * own folders: the key file is created with mode 0600 whatever the umask,
 * and written before the certificate, so a certificate never exists without
 * its key. now: validity start (uas_datetime_now() normally). */
uas_status uas_pki_create_own(uas_pki_store *s, const uas_pki_create_params *p, uas_datetime now);
/* Whether uas_pki_create_params.key_type names a type uas_pki_create_own
 * knows. */
bool uas_pki_key_type_valid(const char *key_type);

/* Loads own/certs/<name>.der and own/private/<name>.pem and checks that the
 * key belongs to the certificate. cert receives the DER certificate, key
 * the DER private key (PKCS#1 for RSA; read it with d2i_AutoPrivateKey).
 * Both may be NULL; free them with uas_pki_bytes_free (the key is zeroed).
 * UAS_BAD_NOT_FOUND if either file is missing; UAS_BAD_CERTIFICATE_INVALID
 * if the key does not match. A WARN line is logged when the certificate has
 * expired or the key file is readable by group or others. */
uas_status uas_pki_load_own(uas_pki_store *s, const char *name, uas_bytestring *cert,
                            uas_bytestring *key);

/* Loads the own pair named p->file_name (or derived as above), creating it
 * first when it does not exist: what a server does on first start. */
uas_status uas_pki_ensure_own(uas_pki_store *s, const uas_pki_create_params *p, uas_datetime now,
                              uas_bytestring *cert, uas_bytestring *key);

/* ---- trust list management -------------------------------------------- */

/* Copies a DER certificate into trusted/certs, issuers/certs or
 * rejected/certs (f must be one of these). Adding a certificate that is
 * already there is not an error. Adding to trusted or issuers removes the
 * same certificate from rejected. UAS_BAD_CERTIFICATE_INVALID if der is not
 * a certificate. */
uas_status uas_pki_add(uas_pki_store *s, uas_pki_folder f, const uint8_t *der, size_t len);
/* uas_pki_add(s, UAS_PKI_REJECTED, ...), bounded so that peers can
 * neither fill the disk nor push another peer's entry out: at most
 * max_rejected files; when the folder is full a new certificate is not
 * recorded (UAS_BAD_RESOURCE_UNAVAILABLE, logged) and nothing is evicted;
 * a certificate over rejected_max_cert_size is not recorded
 * (UAS_BAD_ENCODING_LIMITS_EXCEEDED). Writes synchronously. */
uas_status uas_pki_reject(uas_pki_store *s, const uint8_t *der, size_t len);
/* What a validation does with an untrusted certificate: queue it for the
 * store's writer thread, which records it as uas_pki_reject does. The
 * caller never touches the disk: the queue is bounded (a full queue drops
 * the certificate), each certificate is queued once, and at most
 * rejected_writes_per_minute new files are written. The folder is known
 * from an index kept in memory (read again only when the folder changes
 * on disk). Good when queued or already recorded. */
uas_status uas_pki_reject_async(uas_pki_store *s, const uint8_t *der, size_t len);
/* Waits until the writer thread has handled everything queued so far. */
void uas_pki_reject_flush(uas_pki_store *s);

typedef struct uas_pki_reject_stats {
    uint64_t written;      /* files written by the writer thread */
    uint64_t known;        /* already recorded or queued: nothing to do */
    uint64_t queue_full;   /* dropped: the queue was full */
    uint64_t rate_limited; /* dropped: over rejected_writes_per_minute */
    uint64_t too_large;    /* dropped: over rejected_max_cert_size */
    uint64_t folder_full;  /* not written: max_rejected files present */
    uint64_t folder_scans; /* times the folder was read to refresh the index */
} uas_pki_reject_stats;
void uas_pki_reject_stats_get(uas_pki_store *s, uas_pki_reject_stats *out);

/* Moves a certificate from rejected/certs to trusted/certs. thumbprint:
 * the full 40 hex digits (any case); a prefix is refused with
 * UAS_BAD_INVALID_ARGUMENT, so that a planted certificate sharing a prefix
 * can never be trusted by mistake. */
uas_status uas_pki_trust_rejected(uas_pki_store *s, const char *thumbprint);
/* Deletes the certificate from trusted, issuers and rejected (never own).
 * removed (may be NULL) receives the number of files deleted;
 * UAS_BAD_NOT_FOUND if none. */
uas_status uas_pki_remove(uas_pki_store *s, const char *thumbprint, size_t *removed);

/* Adds a CRL (DER or PEM) to trusted/crl (issuers = false) or issuers/crl.
 * The CRL must be signed by a CA certificate of trusted/certs or
 * issuers/certs (UAS_BAD_NOT_FOUND when its issuer is not there,
 * UAS_BAD_CERTIFICATE_INVALID when the signature does not verify or the CA
 * may not sign CRLs). Older CRLs of the same CA in that folder are deleted;
 * UAS_BAD_INVALID_STATE if the folder already has a newer one. */
uas_status uas_pki_add_crl(uas_pki_store *s, const uint8_t *data, size_t len, bool issuers);

/* ---- validation -------------------------------------------------------- */

typedef enum uas_pki_usage {
    UAS_PKI_USAGE_CLIENT = 0, /* the peer is a client (a server validating it) */
    UAS_PKI_USAGE_SERVER = 1, /* the peer is a server (a client validating it) */
} uas_pki_usage;

typedef struct uas_pki_verdict {
    uas_status status;
    uint32_t depth;            /* chain position the status is about: 0 the certificate itself */
    uint32_t chain_length;     /* certificates in the chain that was built */
    bool auto_accepted;        /* untrusted but accepted by options.auto_accept */
    uint32_t signature_checks; /* signatures verified to build the chain */
    char thumbprint[UAS_PKI_THUMBPRINT_HEX]; /* of the certificate itself */
    char reason[256];                        /* one line for logs and tools */
} uas_pki_verdict;

/* Validates a peer's application instance certificate, following Part 4
 * 6.1.3. der is the DER certificate, optionally followed by the DER
 * certificates of its issuers (as a SenderCertificate may carry them); those
 * help to build the chain but are never trusted by themselves.
 *
 * Steps, in this order; each is done for every certificate of the chain
 * before the next step starts, and the first failure is the result:
 *  1. structure: DER parse, X.509 v3, no unknown critical extension
 *     -> Bad_CertificateInvalid; then the leaf's key, before any signature
 *     is checked: RSA of min_key_bits..max_key_bits (0: no bound, at most
 *     16384 bits) with an odd public exponent of at most 32 bits
 *     -> Bad_CertificatePolicyCheckFailed
 *  2. chain: issuers found in trusted/certs, issuers/certs or the sent
 *     certificates by name, key identifier and signature, up to a
 *     self-signed root, at most max_chain long, no certificate twice
 *     -> Bad_CertificateChainIncomplete; a signature that does not verify
 *     -> Bad_CertificateInvalid (leaf) / Bad_SecurityChecksFailed (issuer);
 *     an issuer certificate with a bad structure -> Bad_SecurityChecksFailed.
 *     Bounded work: a candidate issuer whose key is refused (as above, up
 *     to max_ca_key_bits) or whose RSA modulus is not as long as the
 *     signature is skipped unverified; more than max_signature_checks
 *     verifications -> Bad_CertificateChainIncomplete (WARN log line)
 *  3. security policy: no MD5 signature, no SHA-1 unless allow_sha1
 *     -> Bad_CertificatePolicyCheckFailed
 *  4. trust list: the certificate or a CA of its chain is in trusted/certs
 *     -> Bad_CertificateUntrusted, and the certificate is queued for
 *     rejected/certs (uas_pki_reject_async; unless auto_accept, see
 *     uas_pki_options)
 *  5. validity period at now -> Bad_CertificateTimeInvalid (leaf) /
 *     Bad_CertificateIssuerTimeInvalid (any CA)
 *  6. application URI: when expected_uri is not NULL, a subjectAltName URI
 *     equal to it -> Bad_CertificateUriInvalid
 *  7. usage: leaf keyUsage with digitalSignature and keyEncipherment,
 *     extendedKeyUsage (if present) with clientAuth / serverAuth for usage
 *     -> Bad_CertificateUseNotAllowed; each CA: basicConstraints CA:TRUE,
 *     keyCertSign if it has keyUsage, path length constraint
 *     -> Bad_CertificateIssuerUseNotAllowed
 *  8. revocation list: each CA that issued a certificate of the chain has a
 *     CRL signed by it in trusted/crl or issuers/crl
 *     -> Bad_CertificateRevocationUnknown (the leaf's CA) /
 *     Bad_CertificateIssuerRevocationUnknown (a higher CA); see
 *     uas_pki_revocation for LENIENT
 *  9. revocation: -> Bad_CertificateRevoked / Bad_CertificateIssuerRevoked
 * The host name check of Part 4 belongs to the caller that knows the
 * endpoint URL. verdict (may be NULL) receives the details. Returns the
 * verdict's status: UAS_GOOD or one of the codes above (or
 * UAS_BAD_OUT_OF_MEMORY). */
uas_status uas_pki_validate(uas_pki_store *s, const uint8_t *der, size_t len,
                            const char *expected_uri, uas_pki_usage usage, uint32_t min_key_bits,
                            uint32_t max_key_bits, uas_datetime now, uas_pki_verdict *verdict);

/* ---- user store -------------------------------------------------------- */

/* The users file has one line per user, "name:hash[:roles]": hash is a
 * libsodium argon2id string ($argon2id$v=19$m=...,t=...,p=...$salt$hash),
 * roles a comma-separated list. Lines starting with '#' and blank lines are
 * ignored. Names are 1..64 bytes without ':', '#' at the start, whitespace
 * or control characters. The file is rewritten atomically (temporary file +
 * rename) with mode 0600. */

#define UAS_USER_NAME_MAX  64
#define UAS_USER_ROLES_MAX 256

typedef struct uas_user_info {
    char name[UAS_USER_NAME_MAX + 1];
    char roles[UAS_USER_ROLES_MAX + 1];
} uas_user_info;

/* Adds the user or replaces its password (and its roles when roles is not
 * NULL). Hashes with crypto_pwhash_str (argon2id, OPSLIMIT_INTERACTIVE,
 * MEMLIMIT_INTERACTIVE). The password is not kept; the caller zeroes its
 * buffer. *added (may be NULL): true for a new user. */
uas_status uas_user_add(const char *file, const char *name, const char *password,
                        size_t password_len, const char *roles, bool *added);
/* UAS_BAD_NOT_FOUND if the user does not exist. */
uas_status uas_user_remove(const char *file, const char *name);
/* The users of the file in file order (a missing file has none). */
uas_status uas_user_list(const char *file, uas_user_info **items, size_t *count);
void uas_user_list_free(uas_user_info *items, size_t count);

typedef struct uas_user_store uas_user_store;

/* Failed-login throttling, per client key (the peer's address, say; an
 * IPv6 address counts as its /64): after max_failures failed checks within
 * window_ms, every check for that key is refused for backoff_ms without
 * looking at the password; each further block of the same key doubles the
 * back-off up to max_backoff_ms. A successful check clears the key. The
 * table holds table_size keys; when full, an idle key seen least recently
 * is forgotten, never a blocked one. Server-wide, global_max_failures
 * failures of all keys together within window_ms refuse every login for
 * backoff_ms (one WARN line each time). */
typedef struct uas_user_throttle {
    uint32_t max_failures;        /* default 5 */
    uint32_t window_ms;           /* default 60000 */
    uint32_t backoff_ms;          /* default 60000 */
    uint32_t max_backoff_ms;      /* default 900000 */
    uint32_t table_size;          /* default 1024 */
    uint32_t global_max_failures; /* default 100 */
} uas_user_throttle;

void uas_user_throttle_default(uas_user_throttle *t);

/* Loads the users file (UAS_BAD_NOT_FOUND if missing). The file is read
 * again when it changes on disk. throttle NULL: defaults. Logs a WARN line
 * when the file is readable by group or others. */
uas_status uas_user_store_open(const char *file, const uas_user_throttle *throttle,
                               uas_user_store **out);
/* As uas_user_store_open, but a missing file is no error: the store is
 * empty until the file appears, and is read then (a server started before
 * its first `uapki user add`). */
uas_status uas_user_store_watch(const char *file, const uas_user_throttle *throttle,
                                uas_user_store **out);
/* Whether the users file exists now (it is read again if it changed). */
bool uas_user_store_present(uas_user_store *s);
/* Reads the users file again now, even if it looks unchanged (SIGHUP). */
void uas_user_store_reload(uas_user_store *s);
void uas_user_store_close(uas_user_store *s);
/* Monotonic clock of the throttle in ms (default uas_monotonic_ms). */
void uas_user_store_set_clock(uas_user_store *s, int64_t (*now_ms)(void *ud), void *ud);

/* Checks a user name and password. UAS_GOOD, or UAS_BAD_USER_ACCESS_DENIED
 * for an unknown user, a wrong password and a throttled client key alike.
 * The time taken does not depend on the password nor on whether the user
 * exists (an unknown user is checked against a dummy hash). client_key
 * (NULL: "") names the peer for throttling. Thread-safe. */
uas_status uas_user_check(uas_user_store *s, const char *client_key, const char *name,
                          const char *password, size_t password_len);
/* Whether a login from client_key may be tried now, without any hashing:
 * UAS_GOOD, BadUserAccessDenied (the key is blocked) or
 * BadTooManyOperations (the server-wide budget is spent). For work that
 * must not be done for a throttled client, such as decrypting a token. */
uas_status uas_user_throttle_check(uas_user_store *s, const char *client_key);
/* Counts a failed login of client_key that never reached
 * uas_user_check (a token that does not decrypt, say). */
void uas_user_throttle_fail(uas_user_store *s, const char *client_key);
/* Roles of a user (comma-separated, "" if none). UAS_BAD_NOT_FOUND. */
uas_status uas_user_roles(uas_user_store *s, const char *name, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
UAS_API_END
#endif
