/* auth_basic_test.c -- issue 17, `--auth basic` through the real server:
 *  - health stays open, the API wants a login (401 JSON + WWW-Authenticate: Basic);
 *  - bcrypt ($2b$, $2y$) and SHA-512 crypt ($6$) hashes made here with crypt_r; right
 *    password 200, wrong password, unknown user and malformed headers 401;
 *  - /api/v1/me and /api/v1/config's "auth"; viewer DELETE 403, operator DELETE passes
 *    the role check (404: no such dump);
 *  - the users and group files are re-read when they change (a new user gets in, a changed
 *    password stops working, a group change changes the role);
 *  - backoff: after repeated wrong passwords the attacked user gets 429 with Retry-After
 *    while another user (same address) keeps working; after the wait the right password
 *    gets in and resets the counter; many names tried from one address make the address
 *    back off.
 */
#include "http_util.h"
#include "server_util.h"

#include <crypt.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct env {
    test_server s;
    char *dir;
    char users[1100], groups[1100];
} env;

/* A crypt hash of password with the prefix's algorithm ("$2b$", "$2y$", "$6$"). */
static void make_hash(const char *prefix, const char *password, char *out, size_t outlen)
{
    char salt[CRYPT_GENSALT_OUTPUT_SIZE];
    unsigned long cost = prefix[1] == '2' ? 5 : 5000; /* cheap: the test does many logins */
    assert_non_null(crypt_gensalt_rn(prefix, cost, NULL, 0, salt, sizeof salt));
    struct crypt_data *cd = calloc(1, sizeof *cd);
    assert_non_null(cd);
    const char *h = crypt_r(password, salt, cd);
    assert_non_null(h);
    assert_true(!strncmp(h, prefix, strlen(prefix)));
    snprintf(out, outlen, "%s", h);
    free(cd);
}

static void write_atomic(const char *path, const char *text)
{
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rename(tmp, path), 0); /* a new inode: seen as a change at once */
}

static void write_users(env *e, const char *const *lines)
{
    char text[8192] = "";
    for (; *lines; lines++) {
        strncat(text, *lines, sizeof text - strlen(text) - 2);
        strcat(text, "\n");
    }
    write_atomic(e->users, text);
}

static void env_start(env *e, const char *tag, const char *const *users, const char *groups)
{
    e->dir = make_temp_dir(tag);
    snprintf(e->users, sizeof e->users, "%s/htpasswd", e->dir);
    snprintf(e->groups, sizeof e->groups, "%s/groups", e->dir);
    write_users(e, users);
    write_atomic(e->groups, groups);
    const char *args[] = {"--auth", "basic", "--auth-users", e->users, "--auth-groups", e->groups, NULL};
    server_start(&e->s, tag, args);
}

static void env_free(env *e)
{
    server_destroy(&e->s);
    remove_tree(e->dir);
    free(e->dir);
}

/* "Authorization: Basic base64(user:password)\r\n" */
static void basic_header(const char *user, const char *password, char *out, size_t outlen)
{
    char plain[512];
    int n = snprintf(plain, sizeof plain, "%s:%s", user, password);
    unsigned char b64[800];
    EVP_EncodeBlock(b64, (const unsigned char *)plain, n);
    snprintf(out, outlen, "Authorization: Basic %s\r\n", b64);
}

/* A request with a login (user NULL = none); returns the status. */
static int req(env *e, const char *method, const char *path, const char *user, const char *password, cp_buf *body,
               cp_buf *headers)
{
    char hdr[1024] = "";
    if (user) basic_header(user, password, hdr, sizeof hdr);
    int status = 0;
    assert_int_equal(http_request(e->s.http_port, method, path, user ? hdr : NULL, NULL, 0, &status, body, headers), 0);
    return status;
}

static int get_as(env *e, const char *path, const char *user, const char *password)
{
    return req(e, "GET", path, user, password, NULL, NULL);
}

static int get_raw_auth(env *e, const char *path, const char *auth_line)
{
    int status = 0;
    assert_int_equal(http_request(e->s.http_port, "GET", path, auth_line, NULL, 0, &status, NULL, NULL), 0);
    return status;
}

static void assert_code(const cp_buf *body, const char *want)
{
    json_t *j = json_loadb((const char *)body->data, body->len, 0, NULL);
    if (!j) fail_msg("not JSON: %.*s", (int)body->len, (const char *)body->data);
    const char *code = json_string_value(json_object_get(j, "code"));
    if (!code || strcmp(code, want)) fail_msg("code %s, want %s", code ? code : "(none)", want);
    json_decref(j);
}

/* GET /api/v1/me as user: the body parsed. */
static json_t *me(env *e, const char *user, const char *password)
{
    cp_buf body;
    cp_buf_init(&body);
    int st = req(e, "GET", "/api/v1/me", user, password, &body, NULL);
    if (st != 200) fail_msg("/me as %s: %d %.*s", user, st, (int)body.len, (const char *)body.data);
    json_t *j = json_loadb((const char *)body.data, body.len, 0, NULL);
    assert_non_null(j);
    cp_buf_free(&body);
    return j;
}

/* Waits (generous bound) until GET path as user answers want. */
static void wait_status(env *e, const char *path, const char *user, const char *password, int want)
{
    int64_t end = test_now_ms() + SRV_TIMEOUT_MS;
    int st;
    while ((st = get_as(e, path, user, password)) != want) {
        if (test_now_ms() > end) server_fail(&e->s, "GET %s as %s: %d, want %d", path, user, st, want);
        sleep_ms(200);
    }
}

static char h_alice[200], h_bob[200], h_carol[200];

static void make_users(void)
{
    if (h_alice[0]) return;
    make_hash("$2b$", "alice-pw", h_alice, sizeof h_alice);
    make_hash("$6$", "bob-pw", h_bob, sizeof h_bob);
    make_hash("$2y$", "carol-pw", h_carol, sizeof h_carol);
}

static void users_lines(const char *lines[4])
{
    static char a[256], b[256], c[256];
    snprintf(a, sizeof a, "alice:%s", h_alice);
    snprintf(b, sizeof b, "bob:%s", h_bob);
    snprintf(c, sizeof c, "carol:%s", h_carol);
    lines[0] = a;
    lines[1] = b;
    lines[2] = c;
    lines[3] = NULL;
}

#define GROUPS "# roles\nviewer: alice carol\noperator: bob\nteam-x: alice\n"

/* Every test's server: alice, bob and carol (one hash kind each) in the roles of GROUPS. */
static void env_start_users(env *e, const char *tag)
{
    make_users();
    const char *lines[4];
    users_lines(lines);
    memset(e, 0, sizeof *e);
    env_start(e, tag, lines, GROUPS);
}

static void test_login(void **state)
{
    (void)state;
    env e;
    env_start_users(&e, "auth-basic");
    const char *lines[4]; /* the users file, changed below */
    users_lines(lines);
    cp_buf body, headers;
    cp_buf_init(&body);
    cp_buf_init(&headers);

    /* open: health; closed: the API, with a JSON 401 and the Basic challenge */
    assert_int_equal(get_as(&e, "/api/v1/health", NULL, NULL), 200);
    assert_int_equal(get_as(&e, "/api/v1/diagnostic/agent/updates?forMD5=", NULL, NULL), 404); /* the agent's probe */
    assert_int_equal(req(&e, "GET", "/api/v1/services", NULL, NULL, &body, &headers), 401);
    assert_code(&body, "unauthenticated");
    char v[200];
    assert_true(http_header(&headers, "WWW-Authenticate", v, sizeof v));
    assert_non_null(strstr(v, "Basic realm=\"cloudprof\""));
    assert_int_equal(get_as(&e, "/api/v1/me", NULL, NULL), 401);
    assert_int_equal(get_as(&e, "/api/v1/calls", NULL, NULL), 401);
    /* the UI's files are not behind the login (the app then asks /api/v1/me) */
    assert_true(get_as(&e, "/", NULL, NULL) != 401);

    /* right passwords of each hash kind */
    assert_int_equal(get_as(&e, "/api/v1/services", "alice", "alice-pw"), 200);
    assert_int_equal(get_as(&e, "/api/v1/services", "bob", "bob-pw"), 200);
    assert_int_equal(get_as(&e, "/api/v1/services", "carol", "carol-pw"), 200);
    assert_int_equal(get_as(&e, "/api/v1/services", "alice", "alice-pw"), 200); /* the cached check */
    /* wrong password, unknown user, malformed headers */
    assert_int_equal(req(&e, "GET", "/api/v1/services", "alice", "bob-pw", &body, NULL), 401);
    assert_code(&body, "unauthenticated");
    assert_int_equal(get_as(&e, "/api/v1/services", "alice", ""), 401);
    assert_int_equal(get_as(&e, "/api/v1/services", "mallory", "alice-pw"), 401);
    assert_int_equal(get_raw_auth(&e, "/api/v1/services", "Authorization: Basic !!!!\r\n"), 401);
    assert_int_equal(get_raw_auth(&e, "/api/v1/services", "Authorization: Basic YWxpY2U=\r\n"), 401); /* no colon */
    assert_int_equal(get_raw_auth(&e, "/api/v1/services", "Authorization: Basic\r\n"), 401);
    assert_int_equal(get_raw_auth(&e, "/api/v1/services", "Authorization: Digest username=\"alice\"\r\n"), 401);
    assert_int_equal(get_raw_auth(&e, "/api/v1/services", "Authorization: Bearer abc\r\n"), 401);

    /* who am I */
    json_t *j = me(&e, "alice", "alice-pw");
    assert_string_equal(json_string_value(json_object_get(j, "user")), "alice");
    assert_string_equal(json_string_value(json_object_get(j, "role")), "viewer");
    assert_string_equal(json_string_value(json_object_get(j, "namespaces")), "*");
    assert_string_equal(json_string_value(json_object_get(j, "auth")), "basic");
    assert_true(json_is_null(json_object_get(j, "logout")));
    json_decref(j);
    j = me(&e, "bob", "bob-pw");
    assert_string_equal(json_string_value(json_object_get(j, "role")), "operator");
    json_decref(j);
    assert_int_equal(req(&e, "GET", "/api/v1/config", "carol", "carol-pw", &body, NULL), 200);
    j = json_loadb((const char *)body.data, body.len, 0, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "auth")), "basic");
    json_decref(j);

    /* roles: a viewer may not delete, an operator may (there is no such dump: 404) */
    assert_int_equal(req(&e, "DELETE", "/api/v1/dumps/12345", "alice", "alice-pw", &body, NULL), 403);
    assert_code(&body, "forbidden");
    assert_int_equal(req(&e, "DELETE", "/api/v1/dumps/12345", "bob", "bob-pw", &body, NULL), 404);

    /* the files change: dave appears, alice's password changes, carol leaves the viewers */
    char dave[200], alice2[200], l0[256], l3[256];
    make_hash("$6$", "dave-pw", dave, sizeof dave);
    make_hash("$2b$", "alice-new", alice2, sizeof alice2);
    snprintf(l0, sizeof l0, "alice:%s", alice2);
    snprintf(l3, sizeof l3, "dave:%s", dave);
    const char *changed[] = {l0, lines[1], lines[2], l3, NULL};
    write_users(&e, changed);
    write_atomic(e.groups, "viewer: alice dave\noperator: bob\n");
    sleep_ms(1500); /* the files are looked at once a second: fewer failed attempts below */
    wait_status(&e, "/api/v1/services", "dave", "dave-pw", 200);
    wait_status(&e, "/api/v1/services", "alice", "alice-new", 200);
    assert_int_equal(get_as(&e, "/api/v1/services", "alice", "alice-pw"), 401); /* the cache forgot it */
    wait_status(&e, "/api/v1/services", "carol", "carol-pw", 403);              /* no role any more */

    cp_buf_free(&body);
    cp_buf_free(&headers);
    env_free(&e);
}

static void test_backoff(void **state)
{
    (void)state;
    env e;
    env_start_users(&e, "auth-backoff");
    cp_buf body, headers;
    cp_buf_init(&body);
    cp_buf_init(&headers);
    /* wrong passwords for alice until the server backs off (at most a few dozen) */
    int st = 0, tries = 0;
    while ((st = req(&e, "GET", "/api/v1/services", "alice", "guess", &body, &headers)) == 401 && tries < 30) tries++;
    if (st != 429) server_fail(&e.s, "no 429 after %d wrong passwords (last %d)", tries, st);
    assert_true(tries >= 3); /* a few mistakes are free */
    assert_code(&body, "too_many_attempts");
    char v[32];
    assert_true(http_header(&headers, "Retry-After", v, sizeof v));
    int wait_s = atoi(v);
    assert_true(wait_s >= 1 && wait_s <= 60);
    /* even the right password waits: the attempt is not checked */
    assert_int_equal(get_as(&e, "/api/v1/services", "alice", "alice-pw"), 429);
    /* another user from the same address is not affected */
    assert_int_equal(get_as(&e, "/api/v1/services", "bob", "bob-pw"), 200);
    assert_int_equal(get_as(&e, "/api/v1/services", "carol", "carol-pw"), 200);
    /* health stays open */
    assert_int_equal(get_as(&e, "/api/v1/health", NULL, NULL), 200);
    /* after the wait, the right password gets in and resets alice's counter */
    wait_status(&e, "/api/v1/services", "alice", "alice-pw", 200);
    assert_int_equal(get_as(&e, "/api/v1/services", "alice", "guess"), 401);
    assert_int_equal(get_as(&e, "/api/v1/services", "alice", "alice-pw"), 200);
    cp_buf_free(&body);
    cp_buf_free(&headers);
    env_free(&e);
}

/* Many user names tried from one address: the address backs off (even for a name it did
 * not try yet); after the wait a right password gets in. */
static void test_backoff_address(void **state)
{
    (void)state;
    env e;
    env_start_users(&e, "auth-backoff-ip");
    cp_buf body, headers;
    cp_buf_init(&body);
    cp_buf_init(&headers);
    int st = 0, tries = 0;
    char user[32];
    for (; tries < 100; tries++) { /* each name fails twice at most: no user backs off */
        snprintf(user, sizeof user, "spray%d", tries / 2);
        if ((st = req(&e, "GET", "/api/v1/services", user, "guess", &body, &headers)) != 401) break;
    }
    if (st != 429) server_fail(&e.s, "no 429 after %d failures from one address (last %d)", tries, st);
    assert_true(tries >= 10);
    char v[32];
    assert_true(http_header(&headers, "Retry-After", v, sizeof v));
    assert_int_equal(get_as(&e, "/api/v1/services", "fresh-name", "x"), 429);
    assert_int_equal(get_as(&e, "/api/v1/health", NULL, NULL), 200);
    wait_status(&e, "/api/v1/services", "bob", "bob-pw", 200);
    cp_buf_free(&body);
    cp_buf_free(&headers);
    env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_login, servers_teardown),
        cmocka_unit_test_teardown(test_backoff, servers_teardown),
        cmocka_unit_test_teardown(test_backoff_address, servers_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
