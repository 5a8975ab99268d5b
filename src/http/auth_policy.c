/* auth_policy.c -- identities to principals (cp_auth.h): the role from the groups, the
 * namespaces from the --auth-namespaces rules. Pure: no I/O, no locks (a policy is built
 * once at start and only read afterwards).
 */
#include "http/cp_auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLICY_MAX_RULES 1024 /* --auth-namespaces values */

typedef struct policy_rule {
    char name[CP_AUTH_MAX_GROUP];   /* a role or a group */
    int all;                        /* "*" among the namespaces */
    char (*ns)[CP_AUTH_MAX_GROUP];
    size_t nns;
} policy_rule;

struct cp_auth_policy {
    policy_rule *rules;
    size_t nrules;
};

const char *cp_auth_mode_name(cp_auth_mode m)
{
    return m == CP_AUTH_BASIC ? "basic" : m == CP_AUTH_OIDC ? "oidc" : "none";
}

const char *cp_role_name(cp_role r)
{
    switch (r) {
    case CP_ROLE_VIEWER: return "viewer";
    case CP_ROLE_OPERATOR: return "operator";
    case CP_ROLE_ADMIN: return "admin";
    default: return "none";
    }
}

void cp_principal_anyone(cp_principal *p)
{
    p->user[0] = 0;
    p->role = CP_ROLE_ADMIN;
    p->all_namespaces = 1;
    p->nns = 0;
    p->uploader = 0;
}

static int ns_cmp(const void *a, const void *b) { return strcmp(a, b); }

int cp_principal_sees(const cp_principal *p, const char *ns)
{
    if (p->all_namespaces) return 1;
    if (!ns) return 0;
    return bsearch(ns, p->ns, p->nns, sizeof p->ns[0], ns_cmp) != NULL;
}

void cp_auth_policy_free(cp_auth_policy *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->nrules; i++) free(p->rules[i].ns);
    free(p->rules);
    free(p);
}

/* Copies [s, s+n) into dst (CP_AUTH_MAX_GROUP bytes): CP_EINVAL when empty or too long. */
static int copy_name(char *dst, const char *s, size_t n)
{
    if (n == 0 || n >= CP_AUTH_MAX_GROUP) return CP_EINVAL;
    memcpy(dst, s, n);
    dst[n] = 0;
    return CP_OK;
}

/* One "NAME=ns1,ns2" into r. */
static int parse_rule(const char *text, policy_rule *r, char *err, size_t errlen)
{
    const char *eq = strchr(text, '=');
    if (!eq || copy_name(r->name, text, (size_t)(eq - text)) != CP_OK) {
        snprintf(err, errlen, "--auth-namespaces: '%.100s' is not NAME=ns1,ns2 (NAME 1..%d bytes)", text,
                 CP_AUTH_MAX_GROUP - 1);
        return CP_EINVAL;
    }
    size_t cap = 1;
    for (const char *c = eq + 1; *c; c++) cap += *c == ',';
    if (cap > CP_AUTH_MAX_NS) {
        snprintf(err, errlen, "--auth-namespaces: more than %d namespaces for '%s'", CP_AUTH_MAX_NS, r->name);
        return CP_EINVAL;
    }
    r->ns = calloc(cap, sizeof *r->ns);
    if (!r->ns) {
        snprintf(err, errlen, "--auth-namespaces: out of memory");
        return CP_ENOMEM;
    }
    const char *s = eq + 1;
    for (;;) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n == 1 && *s == '*') {
            r->all = 1;
        } else if (copy_name(r->ns[r->nns], s, n) == CP_OK) {
            r->nns++;
        } else {
            snprintf(err, errlen, "--auth-namespaces: an empty or over-long namespace in '%.100s'", text);
            return CP_EINVAL;
        }
        if (!end) break;
        s = end + 1;
    }
    return CP_OK;
}

int cp_auth_policy_new(const char *const *ns_rules, size_t nrules, cp_auth_policy **out, char *err, size_t errlen)
{
    *out = NULL;
    if (nrules > POLICY_MAX_RULES) {
        snprintf(err, errlen, "--auth-namespaces: more than %d rules", POLICY_MAX_RULES);
        return CP_EINVAL;
    }
    cp_auth_policy *p = calloc(1, sizeof *p);
    if (!p || (nrules && !(p->rules = calloc(nrules, sizeof *p->rules)))) {
        free(p);
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    for (size_t i = 0; i < nrules; i++) {
        p->nrules++;
        int st = parse_rule(ns_rules[i] ? ns_rules[i] : "", &p->rules[i], err, errlen);
        if (st != CP_OK) {
            cp_auth_policy_free(p);
            return st;
        }
    }
    *out = p;
    return CP_OK;
}

static cp_role role_of_name(const char *g)
{
    if (!strcmp(g, "admin")) return CP_ROLE_ADMIN;
    if (!strcmp(g, "operator")) return CP_ROLE_OPERATOR;
    if (!strcmp(g, "viewer")) return CP_ROLE_VIEWER;
    return CP_ROLE_NONE;
}

/* 1 if the rule's NAME is the role or one of the identity's groups. */
static int rule_applies(const policy_rule *r, const cp_identity *id, cp_role role)
{
    if (role != CP_ROLE_NONE && !strcmp(r->name, cp_role_name(role))) return 1;
    for (size_t g = 0; g < id->ngroups && g < CP_AUTH_MAX_GROUPS; g++)
        if (!strcmp(r->name, id->groups[g])) return 1;
    return 0;
}

/* Adds ns to out's set unless there already or the set is full (kept unsorted here). */
static void add_ns(cp_principal *out, const char *ns)
{
    for (size_t i = 0; i < out->nns; i++)
        if (!strcmp(out->ns[i], ns)) return;
    if (out->nns < CP_AUTH_MAX_NS) snprintf(out->ns[out->nns++], sizeof out->ns[0], "%s", ns);
}

void cp_auth_policy_resolve(const cp_auth_policy *p, const cp_identity *id, cp_principal *out)
{
    snprintf(out->user, sizeof out->user, "%s", id->user);
    out->role = CP_ROLE_NONE;
    out->uploader = 0;
    out->nns = 0;
    for (size_t g = 0; g < id->ngroups && g < CP_AUTH_MAX_GROUPS; g++) {
        cp_role r = role_of_name(id->groups[g]);
        if (r > out->role) out->role = r;
    }
    out->all_namespaces = !p || p->nrules == 0;
    if (out->all_namespaces) return;
    for (size_t i = 0; i < p->nrules && !out->all_namespaces; i++) {
        const policy_rule *r = &p->rules[i];
        if (!rule_applies(r, id, out->role)) continue;
        if (r->all) out->all_namespaces = 1;
        for (size_t k = 0; k < r->nns; k++) add_ns(out, r->ns[k]);
    }
    if (out->all_namespaces) {
        out->nns = 0;
        return;
    }
    qsort(out->ns, out->nns, sizeof out->ns[0], ns_cmp);
}
