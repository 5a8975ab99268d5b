/* auth_policy_test.c -- identities to principals (http/cp_auth.h, auth_policy.c): roles
 * from groups (the highest wins, none without one), namespaces from --auth-namespaces
 * (by role or group, union, '*', nothing when no rule matches, everything without rules),
 * sorted and distinct for the readers' sets, and bad rules refused with a message. */
#include "testutil.h"

#include "http/cp_auth.h"

#include <stdio.h>
#include <string.h>

static void ident(cp_identity *id, const char *user, const char *const *groups)
{
    memset(id, 0, sizeof *id);
    snprintf(id->user, sizeof id->user, "%s", user);
    for (; groups && *groups; groups++) snprintf(id->groups[id->ngroups++], sizeof id->groups[0], "%s", *groups);
}

static void test_roles(void **state)
{
    (void)state;
    cp_auth_policy *p = NULL;
    char err[256];
    assert_int_equal(cp_auth_policy_new(NULL, 0, &p, err, sizeof err), CP_OK);
    cp_identity id;
    cp_principal pr;
    const char *none[] = {"team-a", NULL}, *viewer[] = {"viewer", "team-a", NULL},
               *both[] = {"operator", "viewer", NULL}, *admin[] = {"viewer", "admin", "operator", NULL};
    ident(&id, "u", none);
    cp_auth_policy_resolve(p, &id, &pr);
    assert_int_equal(pr.role, CP_ROLE_NONE);
    assert_string_equal(pr.user, "u");
    assert_true(pr.all_namespaces); /* no rules: every namespace */
    assert_false(pr.uploader);
    ident(&id, "u", viewer);
    cp_auth_policy_resolve(p, &id, &pr);
    assert_int_equal(pr.role, CP_ROLE_VIEWER);
    assert_true(cp_principal_can(&pr, CP_ROLE_VIEWER));
    assert_false(cp_principal_can(&pr, CP_ROLE_OPERATOR));
    ident(&id, "u", both);
    cp_auth_policy_resolve(p, &id, &pr);
    assert_int_equal(pr.role, CP_ROLE_OPERATOR);
    ident(&id, "u", admin);
    cp_auth_policy_resolve(p, &id, &pr);
    assert_int_equal(pr.role, CP_ROLE_ADMIN);
    assert_string_equal(cp_role_name(pr.role), "admin");
    assert_true(cp_principal_sees(&pr, "anything"));
    cp_auth_policy_free(p);

    cp_principal_anyone(&pr);
    assert_int_equal(pr.role, CP_ROLE_ADMIN);
    assert_true(pr.all_namespaces);
    assert_string_equal(cp_auth_mode_name(CP_AUTH_NONE), "none");
    assert_string_equal(cp_auth_mode_name(CP_AUTH_BASIC), "basic");
    assert_string_equal(cp_auth_mode_name(CP_AUTH_OIDC), "oidc");
}

static void test_namespaces(void **state)
{
    (void)state;
    const char *rules[] = {"team-a=shop,billing", "viewer=public", "team-b=zeta,billing", "admin=*", "ops=x"};
    cp_auth_policy *p = NULL;
    char err[256];
    assert_int_equal(cp_auth_policy_new(rules, 5, &p, err, sizeof err), CP_OK);
    cp_identity id;
    cp_principal pr;
    /* by group and by role, union, sorted, distinct */
    const char *g1[] = {"viewer", "team-a", "team-b", NULL};
    ident(&id, "alice", g1);
    cp_auth_policy_resolve(p, &id, &pr);
    assert_false(pr.all_namespaces);
    assert_int_equal(pr.nns, 4);
    assert_string_equal(pr.ns[0], "billing");
    assert_string_equal(pr.ns[1], "public");
    assert_string_equal(pr.ns[2], "shop");
    assert_string_equal(pr.ns[3], "zeta");
    assert_true(cp_principal_sees(&pr, "shop"));
    assert_true(cp_principal_sees(&pr, "zeta"));
    assert_false(cp_principal_sees(&pr, "sho"));
    assert_false(cp_principal_sees(&pr, "other"));
    assert_false(cp_principal_sees(&pr, NULL));
    /* no rule matches: nothing */
    const char *g2[] = {"operator", "nobody", NULL};
    ident(&id, "bob", g2);
    cp_auth_policy_resolve(p, &id, &pr);
    assert_int_equal(pr.role, CP_ROLE_OPERATOR);
    assert_false(pr.all_namespaces);
    assert_int_equal(pr.nns, 0);
    assert_false(cp_principal_sees(&pr, "shop"));
    /* '*' */
    const char *g3[] = {"admin", NULL};
    ident(&id, "root", g3);
    cp_auth_policy_resolve(p, &id, &pr);
    assert_true(pr.all_namespaces);
    assert_true(cp_principal_sees(&pr, "whatever"));
    /* a user name is not a group */
    ident(&id, "ops", NULL);
    cp_auth_policy_resolve(p, &id, &pr);
    assert_int_equal(pr.nns, 0);
    cp_auth_policy_free(p);
}

static void test_bad_rules(void **state)
{
    (void)state;
    const char *bad[][1] = {{"noequals"}, {"=shop"}, {"team="}, {"team=a,,b"}, {"team=a,"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cp_auth_policy *p = (cp_auth_policy *)1;
        char err[256] = "";
        assert_int_equal(cp_auth_policy_new(bad[i], 1, &p, err, sizeof err), CP_EINVAL);
        assert_null(p);
        assert_non_null(strstr(err, "--auth-namespaces"));
    }
    char longname[300];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    char rule[400];
    snprintf(rule, sizeof rule, "team=%s", longname);
    const char *r[] = {rule};
    cp_auth_policy *p = NULL;
    char err[256];
    assert_int_equal(cp_auth_policy_new(r, 1, &p, err, sizeof err), CP_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roles),
        cmocka_unit_test(test_namespaces),
        cmocka_unit_test(test_bad_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
