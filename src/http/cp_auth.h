/* cp_auth.h -- who is asking and what they may see (issue 17).
 *
 * A request's credentials become an identity (a user name and the groups or roles it
 * holds): from an htpasswd file and an Apache group file (`--auth basic`), from a bearer
 * JWT or a UI session (`--auth oidc`), or an upload credential (`--upload-token`, an mTLS
 * client certificate). The policy turns an identity into a principal: a role and the
 * namespaces it may see. Every endpoint asks the principal; a resource of a namespace the
 * principal may not see answers as if it did not exist (404, never 403 with its data).
 *
 * Roles (a group or claim value naming one grants it; the highest wins):
 *   viewer   -- read everything it may see
 *   operator -- viewer + delete dumps, run compaction
 *   admin    -- everything
 * Namespaces (`--auth-namespaces NAME=ns1,ns2`, repeatable; NAME a role or a group; `*`
 * means every namespace): without any such flag every principal sees every namespace;
 * with them, a principal sees the union of the entries of its groups and its role, and
 * nothing when none matches.
 *
 * Pure: no I/O here (auth.c reads the files and keeps them fresh).
 */
#ifndef CP_AUTH_H
#define CP_AUTH_H

#include "common/cp_common.h"

#include <stddef.h>
#include <stdint.h>

typedef enum cp_auth_mode { CP_AUTH_NONE = 0, CP_AUTH_BASIC = 1, CP_AUTH_OIDC = 2 } cp_auth_mode;

typedef enum cp_role { CP_ROLE_NONE = 0, CP_ROLE_VIEWER = 1, CP_ROLE_OPERATOR = 2, CP_ROLE_ADMIN = 3 } cp_role;

#define CP_AUTH_MAX_USER 256     /* bytes of a user name */
#define CP_AUTH_MAX_GROUPS 64    /* groups (or role-claim values) of one identity kept */
#define CP_AUTH_MAX_GROUP 128    /* bytes of one group name */
#define CP_AUTH_MAX_NS 256       /* namespaces one principal may be limited to */

/* What the credentials say. */
typedef struct cp_identity {
    char user[CP_AUTH_MAX_USER];
    char groups[CP_AUTH_MAX_GROUPS][CP_AUTH_MAX_GROUP];
    size_t ngroups;
    int64_t expires_ms;          /* a token's exp; 0 = none */
} cp_identity;

/* What the request may do. */
typedef struct cp_principal {
    char user[CP_AUTH_MAX_USER]; /* "" with --auth none */
    cp_role role;
    int all_namespaces;          /* 1: every namespace (ns unused) */
    char ns[CP_AUTH_MAX_NS][CP_AUTH_MAX_GROUP]; /* sorted, distinct */
    size_t nns;
    int uploader;                /* an upload credential: may upload and import, nothing else */
} cp_principal;

const char *cp_auth_mode_name(cp_auth_mode m);
const char *cp_role_name(cp_role r);

/* The principal of --auth none: an admin that sees everything. */
void cp_principal_anyone(cp_principal *p);
/* 1 if p may see namespace ns. */
int cp_principal_sees(const cp_principal *p, const char *ns);
/* 1 if p's role is at least r. */
static inline int cp_principal_can(const cp_principal *p, cp_role r) { return p->role >= r; }

/* ---- the policy -------------------------------------------------------------------------- */

typedef struct cp_auth_policy cp_auth_policy;

/* Builds a policy from the --auth-namespaces values (each "NAME=ns1,ns2"; NULL / 0 =
 * none: everyone sees everything). CP_OK, or CP_EINVAL with a message in err. */
int cp_auth_policy_new(const char *const *ns_rules, size_t nrules, cp_auth_policy **out, char *err, size_t errlen);
void cp_auth_policy_free(cp_auth_policy *p);
/* The principal of an identity. A role comes from a group named viewer, operator or admin;
 * an identity with none gets CP_ROLE_NONE (every endpoint but health and metrics: 403). */
void cp_auth_policy_resolve(const cp_auth_policy *p, const cp_identity *id, cp_principal *out);

#endif
