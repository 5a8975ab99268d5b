/* oidc_test.c -- `--auth oidc` against a real OpenID provider (issue 17 item 3).
 *
 * tests/oidc/provider.mjs (oidc-provider on loopback, with test endpoints that rotate its
 * key and forge tokens) is started by every test. Then:
 *  - verifier: http_oidc_start/bearer called directly (no HTTP server): a client-credentials
 *    token is accepted with its groups, every forged kind is refused with its reason, a key
 *    rotation at the provider is followed (the unknown kid refetches the JWKS), and a
 *    verified token is served from the cache;
 *  - server_bearer: `cloudprof serve --auth oidc --auth-namespaces team-a=profiler
 *    --auth-namespaces team-b=test-ns` with the two fixture captures loaded (namespaces
 *    profiler and test-ns): bearer tokens from the provider read the API (and see only
 *    their namespaces), the forged ones get 401, a token signed after a rotation works,
 *    /auth/login redirects to the provider with state, nonce and PKCE;
 *  - browser: tests/oidc/login.mjs drives Debian's chromium (playwright-core): alice logs
 *    in on the provider's page, sees only the namespace profiler, opens a call tree, logs
 *    out, and is asked to log in again.
 * Without node, oidc-provider, playwright-core or chromium the test is skipped (exit 77),
 * except under CI (CI set and not "false"/"0"), where it fails.
 */
#include "http/auth_oidc.h"
#include "http_util.h"
#include "proc_util.h"
#include "replay_util.h"
#include "server_util.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NODE_TIMEOUT_MS (5 * 60 * 1000)
/* client credentials of provider.mjs's cloudprof-cli (Basic cloudprof-cli:cli-secret-0123456789) */
#define CLI_BASIC "Authorization: Basic Y2xvdWRwcm9mLWNsaTpjbGktc2VjcmV0LTAxMjM0NTY3ODk=\r\n"
#define UI_SECRET "ui-secret-0123456789"
/* the windows of the two captures (at most 31 days each): parser.test.protocol (namespace
 * profiler) and agent-v2 (namespace test-ns) */
#define WIN_A "from=1690000000000&to=1690400000000"
#define WIN_B "from=1795000000000&to=1797000000000"

/* ---- the provider ---------------------------------------------------------------------------- */

typedef struct provider {
    pid_t pid;
    int in;                /* its stdin: closing it stops it */
    int port;
    char issuer[128];
} provider;

static provider prov;

static void provider_start(provider *p)
{
    int in[2], out[2];
    assert_int_equal(pipe(in), 0);
    assert_int_equal(pipe(out), 0);
    char script[1200];
    snprintf(script, sizeof script, "%s/tests/oidc/provider.mjs", CP_SOURCE_DIR);
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        execlp("node", "node", script, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    p->pid = pid;
    p->in = in[1];
    char line[512];
    size_t n = 0;
    int64_t deadline = cp_now_ms() + TEST_WAIT_MS;
    while (n < sizeof line - 1 && !memchr(line, '\n', n)) {
        struct pollfd pf = {out[0], POLLIN, 0};
        if (cp_now_ms() > deadline) fail_msg("provider.mjs did not print its port");
        if (poll(&pf, 1, 1000) <= 0) continue;
        ssize_t r = read(out[0], line + n, sizeof line - 1 - n);
        if (r <= 0) fail_msg("provider.mjs exited before listening");
        n += (size_t)r;
    }
    close(out[0]);
    line[n] = 0;
    json_error_t je;
    json_t *doc = json_loads(line, 0, &je);
    assert_non_null(doc);
    p->port = (int)json_integer_value(json_object_get(doc, "port"));
    snprintf(p->issuer, sizeof p->issuer, "%s", json_string_value(json_object_get(doc, "issuer")));
    json_decref(doc);
    assert_true(p->port > 0);
    printf("oidc_test: provider %s\n", p->issuer);
}

static void provider_stop(provider *p)
{
    if (!p->pid) return;
    close(p->in);
    int64_t deadline = cp_now_ms() + 10000;
    int status;
    while (waitpid(p->pid, &status, WNOHANG) == 0) {
        if (cp_now_ms() > deadline) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &status, 0);
            break;
        }
        usleep(20000);
    }
    p->pid = 0;
}

static int teardown(void **state)
{
    provider_stop(&prov);
    return servers_teardown(state);
}

/* A request to the provider answering 200; the body (malloc'ed, NUL-terminated). */
static char *provider_call(const char *method, const char *path, const char *hdrs, const char *body)
{
    cp_buf b;
    cp_buf_init(&b);
    int st = 0;
    if (http_request(prov.port, method, path, hdrs, body, body ? strlen(body) : 0, &st, &b, NULL) != 0)
        fail_msg("provider %s %s: no answer", method, path);
    cp_buf_append(&b, "", 1);
    if (st != 200) fail_msg("provider %s %s: %d %s", method, path, st, (const char *)b.data);
    return (char *)b.data;
}

/* A forged or good token of /test/mint. */
static char *mint(const char *kind)
{
    char path[128];
    snprintf(path, sizeof path, "/test/mint?kind=%s", kind);
    return provider_call("GET", path, NULL, NULL);
}

/* A client-credentials access token of cloudprof-cli (a JWT for cloudprof-api). */
static char *cc_token(void)
{
    char *r = provider_call("POST", "/token", CLI_BASIC "Content-Type: application/x-www-form-urlencoded\r\n",
                            "grant_type=client_credentials&resource=urn%3Acloudprof%3Aapi");
    json_error_t je;
    json_t *doc = json_loads(r, 0, &je);
    const char *t = json_string_value(json_object_get(doc, "access_token"));
    if (!t) fail_msg("no access_token: %s", r);
    char *out = strdup(t);
    json_decref(doc);
    free(r);
    return out;
}

static void rotate(void)
{
    free(provider_call("POST", "/test/rotate", NULL, ""));
}

/* ---- the verifier, called directly ------------------------------------------------------------ */

static const char *const forged[][2] = {
    {"expired", "token expired"},       {"notyet", "token not valid yet"}, {"noexp", "no exp claim"},
    {"wrongaud", "wrong audience"},     {"wrongiss", "wrong issuer"},      {"otherkey", "bad signature"},
    {"none", "signature algorithm"},    {"hs256", "signature algorithm"},  {"tampered", "bad signature"},
};

static void test_verifier(void **state)
{
    (void)state;
    provider_start(&prov);
    char dir[] = "/tmp/cp-oidc-XXXXXX", secret[64];
    assert_non_null(mkdtemp(dir));
    snprintf(secret, sizeof secret, "%s/secret", dir);
    FILE *f = fopen(secret, "w");
    fputs(UI_SECRET "\n", f);
    fclose(f);

    cp_http_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.auth_mode = CP_AUTH_OIDC;
    cfg.oidc_issuer = prov.issuer;
    cfg.oidc_client_id = "cloudprof-ui";
    cfg.oidc_client_secret_file = secret;
    cfg.oidc_audience = "cloudprof-api";
    cfg.oidc_roles_claim = "groups";
    cp_http *h = calloc(1, sizeof *h);
    h->cfg = &cfg;
    char err[512];
    if (http_oidc_start(h, err, sizeof err) != 0) fail_msg("http_oidc_start: %s", err);

    cp_identity id;
    char why[200];
    char *tok = cc_token();
    if (http_oidc_bearer(h, tok, strlen(tok), &id, why, sizeof why) != 0) fail_msg("client credentials: %s", why);
    assert_string_equal(id.user, "cloudprof-cli"); /* sub: no preferred_username, no email */
    assert_int_equal(id.ngroups, 2);
    assert_string_equal(id.groups[0], "viewer");
    assert_string_equal(id.groups[1], "team-a");
    assert_true(id.expires_ms > cp_now_ms());
    /* the cache answers the same */
    memset(&id, 0, sizeof id);
    assert_int_equal(http_oidc_bearer(h, tok, strlen(tok), &id, why, sizeof why), 0);
    assert_string_equal(id.user, "cloudprof-cli");
    int64_t t0 = cp_now_ms();
    for (int i = 0; i < 20000; i++) assert_int_equal(http_oidc_bearer(h, tok, strlen(tok), &id, why, sizeof why), 0);
    printf("oidc_test: a cached token costs %.2f us (informative)\n", (double)(cp_now_ms() - t0) * 1000.0 / 20000);

    for (size_t i = 0; i < CP_ARRAY_LEN(forged); i++) {
        char *t = mint(forged[i][0]);
        why[0] = 0;
        int rc = http_oidc_bearer(h, t, strlen(t), &id, why, sizeof why);
        printf("oidc_test: %-9s -> %d (%s)\n", forged[i][0], rc, why);
        if (rc == 0) fail_msg("the %s token was accepted", forged[i][0]);
        if (!strstr(why, forged[i][1])) fail_msg("%s: reason \"%s\", want \"%s\"", forged[i][0], why, forged[i][1]);
        if (strstr(why, t)) fail_msg("the reason quotes the token");
        free(t);
    }
    const char *junk[] = {"", "abc", "a.b", "a.b.c.d.e", "eyJhbGciOiJSUzI1NiJ9.e30.", "a b.c.d"};
    for (size_t i = 0; i < CP_ARRAY_LEN(junk); i++)
        assert_int_equal(http_oidc_bearer(h, junk[i], strlen(junk[i]), &id, why, sizeof why), -1);

    /* rotation: a token of the new key verifies once its unknown kid refetched the JWKS
     * (at most one refetch per 10 s: the one at start may be more recent) */
    rotate();
    char *tok2 = cc_token();
    int64_t deadline = cp_now_ms() + TEST_WAIT_MS;
    while (http_oidc_bearer(h, tok2, strlen(tok2), &id, why, sizeof why) != 0) {
        if (strcmp(why, "signing key unknown")) fail_msg("after rotation: %s", why);
        if (cp_now_ms() > deadline) fail_msg("the rotated key was never fetched");
        usleep(500000);
    }
    assert_string_equal(id.user, "cloudprof-cli");
    /* the old key is still listed: its tokens still verify */
    assert_int_equal(http_oidc_bearer(h, tok, strlen(tok), &id, why, sizeof why), 0);
    free(tok2);
    free(tok);
    http_oidc_stop(h);
    free(h);

    /* discovery's issuer must match exactly */
    char other[200];
    snprintf(other, sizeof other, "%s/", prov.issuer);
    cfg.oidc_issuer = other;
    h = calloc(1, sizeof *h);
    h->cfg = &cfg;
    assert_int_equal(http_oidc_start(h, err, sizeof err), -1);
    assert_non_null(strstr(err, "issuer"));
    cfg.oidc_issuer = "http://example.com";
    assert_int_equal(http_oidc_start(h, err, sizeof err), -1);
    assert_non_null(strstr(err, "https"));
    free(h);
    unlink(secret);
    rmdir(dir);
    provider_stop(&prov);
}

/* ---- the server ------------------------------------------------------------------------------ */

static test_server srv;
static char secret_file[1200];

/* Starts the server without auth, loads both captures (namespaces profiler and test-ns),
 * and restarts it with --auth oidc. */
static void server_oidc(const char *tag)
{
    /* agent-v2's capture was recorded without rotation (replay_test.c) */
    static const char *const v2_args[] = {"--rotation", "all=0:0", NULL};
    replay_capture a, b;
    replay_capture_parser_test(&a);
    replay_capture_agent_v2(&b);
    replay_opts o;
    memset(&o, 0, sizeof o);
    replay_result rr;
    char path[256];
    server_start(&srv, tag, v2_args);
    replay_run(srv.port, &b, &o, &rr);
    snprintf(path, sizeof path, "/api/v1/calls?" WIN_B "&namespace=%s&limit=1000", b.ns);
    json_decref(replay_wait_calls(&srv, path, replay_capture_calls(&b)));
    server_stop(&srv);
    server_restart(&srv, NULL);
    replay_run(srv.port, &a, &o, &rr);
    snprintf(path, sizeof path, "/api/v1/calls?" WIN_A "&namespace=%s&limit=1000", a.ns);
    json_decref(replay_wait_calls(&srv, path, replay_capture_calls(&a)));
    replay_capture_free(&a);
    replay_capture_free(&b);
    server_stop(&srv);

    snprintf(secret_file, sizeof secret_file, "%s/oidc-secret", srv.root);
    FILE *f = fopen(secret_file, "w");
    fputs(UI_SECRET "\n", f);
    fclose(f);
    const char *extra[] = {"--auth", "oidc", "--oidc-issuer", prov.issuer, "--oidc-client-id", "cloudprof-ui",
                           "--oidc-client-secret-file", secret_file, "--oidc-audience", "cloudprof-api",
                           "--oidc-roles-claim", "groups", "--auth-namespaces", "team-a=profiler",
                           "--auth-namespaces", "team-b=test-ns", NULL};
    server_restart(&srv, extra);
}

/* GET path with a bearer token (NULL = none): the status; the body in body (may be NULL). */
static int get_bearer(const char *path, const char *token, cp_buf *body, cp_buf *headers)
{
    char hdr[20000] = "";
    if (token) snprintf(hdr, sizeof hdr, "Authorization: Bearer %s\r\n", token);
    int st = 0;
    if (http_request(srv.http_port, "GET", path, token ? hdr : NULL, NULL, 0, &st, body, headers) != 0)
        server_fail(&srv, "GET %s: no answer", path);
    return st;
}

/* The namespaces /api/v1/services lists for token in both windows, as "a,b" (each once). */
static void namespaces_of(const char *token, char *out, size_t outlen)
{
    static const char *const paths[] = {"/api/v1/services?" WIN_A, "/api/v1/services?" WIN_B};
    out[0] = 0;
    for (size_t p = 0; p < CP_ARRAY_LEN(paths); p++) {
        cp_buf b;
        cp_buf_init(&b);
        int st = get_bearer(paths[p], token, &b, NULL);
        if (st != 200) server_fail(&srv, "%s: %d %.*s", paths[p], st, (int)b.len, (const char *)b.data);
        json_error_t je;
        json_t *doc = json_loadb((const char *)b.data, b.len, 0, &je), *ns;
        size_t i;
        json_array_foreach(json_object_get(doc, "namespaces"), i, ns) {
            const char *name = json_string_value(json_object_get(ns, "namespace"));
            char item[300];
            snprintf(item, sizeof item, ",%s,", name);
            char have[1100];
            snprintf(have, sizeof have, ",%s,", out);
            if (strstr(have, item)) continue; /* listed by both windows */
            size_t l = strlen(out);
            snprintf(out + l, outlen - l, "%s%s", l ? "," : "", name);
        }
        json_decref(doc);
        cp_buf_free(&b);
    }
}

static void test_server_bearer(void **state)
{
    (void)state;
    provider_start(&prov);
    server_oidc("oidc-bearer");
    cp_buf b, hd;
    cp_buf_init(&b);
    cp_buf_init(&hd);

    /* no token: 401 with a Bearer challenge */
    assert_int_equal(get_bearer("/api/v1/services?" WIN_A, NULL, &b, &hd), 401);
    char v[256];
    assert_true(http_header(&hd, "WWW-Authenticate", v, sizeof v));
    assert_non_null(strstr(v, "Bearer"));
    assert_int_equal(get_bearer("/api/v1/health", NULL, NULL, NULL), 200); /* open */

    /* a client-credentials token of groups viewer,team-a: the namespace profiler only */
    char *tok = cc_token(), ns[512];
    namespaces_of(tok, ns, sizeof ns);
    printf("oidc_test: cloudprof-cli (viewer, team-a) sees [%s]\n", ns);
    assert_string_equal(ns, "profiler");
    assert_int_equal(get_bearer("/api/v1/calls?" WIN_A "&namespace=profiler&limit=5", tok, &b, NULL), 200);
    /* a forged token of groups team-b: only test-ns */
    char *good_b = provider_call("GET", "/test/mint?kind=good&groups=viewer,team-b&sub=bob-cli", NULL, NULL);
    namespaces_of(good_b, ns, sizeof ns);
    assert_string_equal(ns, "test-ns");
    free(good_b);

    for (size_t i = 0; i < CP_ARRAY_LEN(forged); i++) {
        char *t = mint(forged[i][0]);
        int st = get_bearer("/api/v1/services?" WIN_A, t, &b, NULL);
        printf("oidc_test: %-9s -> %d %.*s\n", forged[i][0], st, (int)b.len, (const char *)b.data);
        if (st != 401) server_fail(&srv, "the %s token: %d, want 401", forged[i][0], st);
        free(t);
    }

    /* rotation: the provider signs with a new key; its tokens work once the kid is fetched */
    rotate();
    char *tok2 = cc_token();
    int64_t deadline = cp_now_ms() + TEST_WAIT_MS;
    int st;
    while ((st = get_bearer("/api/v1/services?" WIN_A, tok2, &b, NULL)) != 200) {
        if (st != 401 || cp_now_ms() > deadline)
            server_fail(&srv, "a token of the rotated key: %d %.*s", st, (int)b.len, (const char *)b.data);
        usleep(500000);
    }
    printf("oidc_test: a token of the rotated key is accepted\n");

    /* /auth/login: to the provider's authorization endpoint with state, nonce and PKCE */
    assert_int_equal(get_bearer("/auth/login?return=%2Fcalls%3Fx%3D1", NULL, &b, &hd), 302);
    char loc[2048];
    assert_true(http_header(&hd, "Location", loc, sizeof loc));
    printf("oidc_test: /auth/login -> %.60s...\n", loc);
    char want[300];
    snprintf(want, sizeof want, "%s/auth?", prov.issuer);
    assert_true(!strncmp(loc, want, strlen(want)));
    const char *parts[] = {"response_type=code", "client_id=cloudprof-ui", "&state=", "&nonce=",
                           "code_challenge_method=S256", "&code_challenge=", "scope=openid%20profile%20email"};
    for (size_t i = 0; i < CP_ARRAY_LEN(parts); i++)
        if (!strstr(loc, parts[i])) fail_msg("%s not in %s", parts[i], loc);
    char redir[200];
    snprintf(redir, sizeof redir, "redirect_uri=http%%3A%%2F%%2F127.0.0.1%%3A%d%%2Fauth%%2Fcallback", srv.http_port);
    if (!strstr(loc, redir)) fail_msg("%s not in %s", redir, loc);
    /* a callback without a login it started, and an unknown session cookie */
    assert_int_equal(get_bearer("/auth/callback?code=x&state=nope", NULL, &b, NULL), 400);
    int s2 = 0;
    assert_int_equal(http_request(srv.http_port, "GET", "/api/v1/services?" WIN_A,
                                  "Cookie: cp_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n", NULL, 0, &s2,
                                  &b, NULL),
                     0);
    assert_int_equal(s2, 401);

    /* nothing secret in the log: no token, not even the forged ones' signatures */
    server_stop(&srv);
    cp_buf log;
    cp_buf_init(&log);
    load_file(srv.log, &log);
    cp_buf_append(&log, "", 1);
    const char *sig = strrchr(tok, '.') + 1;
    if (strstr((const char *)log.data, sig) || strstr((const char *)log.data, strrchr(tok2, '.') + 1))
        server_fail(&srv, "a token is in the log");
    if (strstr((const char *)log.data, UI_SECRET)) server_fail(&srv, "the client secret is in the log");
    cp_buf_free(&log);

    free(tok);
    free(tok2);
    cp_buf_free(&b);
    cp_buf_free(&hd);
    server_destroy(&srv);
    provider_stop(&prov);
}

/* ---- the browser ----------------------------------------------------------------------------- */

static void test_browser(void **state)
{
    (void)state;
    provider_start(&prov);
    server_oidc("oidc-browser");
    int st = 0;
    cp_buf body;
    cp_buf_init(&body);
    assert_int_equal(http_get(srv.http_port, "/", &st, &body, NULL), 0);
    cp_buf_free(&body);
    if (st == 503 && !under_ci()) {
        printf("oidc_test: browser part skipped: cloudprof was built without the web UI\n");
        server_stop(&srv);
        server_destroy(&srv);
        provider_stop(&prov);
        skip();
    }
    char artifacts[1200];
    snprintf(artifacts, sizeof artifacts, "%s/oidc-artifacts", CP_BUILD_DIR);
    if (mkdir(artifacts, 0755) != 0 && errno != EEXIST) fail_msg("mkdir %s: %s", artifacts, strerror(errno));
    char e_base[64], e_iss[200], e_art[1300], e_path[1200];
    snprintf(e_base, sizeof e_base, "CP_UI_BASE=http://127.0.0.1:%d", srv.http_port);
    snprintf(e_iss, sizeof e_iss, "CP_OIDC_ISSUER=%s", prov.issuer);
    snprintf(e_art, sizeof e_art, "CP_UI_ARTIFACTS=%s", artifacts);
    snprintf(e_path, sizeof e_path, "NODE_PATH=%s/tests/tools/node_modules", CP_SOURCE_DIR);
    const char *extra[] = {e_base, e_iss, e_art, e_path, "CP_UI_FROM=1690000000000", "CP_UI_TO=1690400000000",
                           "CP_UI_NS=profiler", "CP_UI_OTHER_NS=test-ns", NULL};
    char script[1200];
    snprintf(script, sizeof script, "%s/tests/oidc/login.mjs", CP_SOURCE_DIR);
    const char *argv[] = {"node", script, NULL};
    cp_buf out;
    cp_buf_init(&out);
    int rc = run_with_env(argv, extra, &out, NODE_TIMEOUT_MS);
    printf("oidc_test: login.mjs exited %d\n", rc);
    if (rc != 0) server_fail(&srv, "login.mjs failed (exit %d)", rc);
    if (!memmem(out.data, out.len, "login: ok", 9)) server_fail(&srv, "login.mjs exited 0 without 'login: ok'");
    cp_buf_free(&out);
    server_stop(&srv);
    server_destroy(&srv);
    provider_stop(&prov);
}

int main(void)
{
    char op[1200];
    snprintf(op, sizeof op, "%s/tests/tools/node_modules/oidc-provider", CP_SOURCE_DIR);
    const char *missing = browser_tools_missing();
    if (!missing && access(op, R_OK) != 0)
        missing = "tests/tools/node_modules/oidc-provider is missing (run scripts/node-tools.sh)";
    require_tools("oidc_test", "the OIDC test", missing);
    signal(SIGPIPE, SIG_IGN);
    const char *only = getenv("CP_OIDC_ONLY"); /* e.g. test_browser, while working on one part */
    if (only && *only) cmocka_set_test_filter(only);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_verifier, teardown),
        cmocka_unit_test_teardown(test_server_bearer, teardown),
        cmocka_unit_test_teardown(test_browser, teardown),
    };
    return cmocka_run_group_tests_name("oidc", tests, NULL, NULL);
}
