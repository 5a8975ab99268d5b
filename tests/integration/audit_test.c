/* audit_test.c -- the audit log through the real server (issue 19 item 10, ui.md §10.8;
 * docs/API.md "GET /api/v1/audit"), under `--auth basic` with namespace rules:
 *  - an admin deletes a diagnostic file: an entry with the admin's name and role, action
 *    dump.delete, the id as target, the file's namespace and name; a DELETE of an unknown
 *    id is recorded with outcome 404 and no namespace;
 *  - a single download, the dumps zip, the CSV and XLSX exports, a TPTP export and an
 *    import of a foreign trace (POST /api/v1/import, with the calls it stored) each leave
 *    their entry; an export's entry ends with its rows, bytes and completeness; a HEAD
 *    leaves none;
 *  - a viewer and an operator get 403 on /audit; an admin limited to one namespace sees
 *    only that namespace's entries (none without a namespace); filters by action and user;
 *  - limit=1 pages walk every entry once, newest first, ending with next_cursor null;
 *  - the entries survive a restart (same ids);
 *  - no password, Authorization value or token appears in any /audit answer or in the
 *    server's log; /api/v1/config says features.audit;
 *  - with the log's table gone a deletion is refused (the file stays) while an export is
 *    served and logged as unrecorded.
 *
 * CP_TEST_BOTH_PAIRS: SQLite + directory, and PostgreSQL + S3 as audit_test@pg-s3.
 */
#include "auth_util.h"
#include "http_util.h"
#include "pair_util.h"
#include "server_util.h"

#include "store/sql/sqldb.h"

#include <crypt.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIR_PATH "2023/12/19/06/17/34"
#define DWIN "from=1702900000000&to=1703000000000" /* the uploaded dumps' directory time */
#define POD "orders-5cbcd847d-l2t7t_1719318147399"
#define TD "20231219T061734UTC.td.txt"
#define TD2 "20230804T164402.td.txt"
#define TOKEN "audit-test-upload-token-5f1e0c9a7b"

/* Passwords no answer or log line may ever show. */
static const char *const users[][2] = {
    {"root", "root-Secret-pw-7781"},     /* admin, every namespace */
    {"shopadm", "shopadm-Secret-pw-42"}, /* admin of namespace shop only */
    {"viv", "viv-Secret-pw-9"},          /* viewer */
    {"oscar", "oscar-Secret-pw-3"},      /* operator */
};
#define NUSERS (sizeof users / sizeof users[0])

typedef struct env {
    test_server s;
    char *dir, *catalog, *store;
    char users[1100], groups[1100], token[1100];
    const char *args[48];
} env;

static env E;

/* ---- setup ---------------------------------------------------------------------------------- */

static const char *password_of(const char *user)
{
    for (size_t i = 0; i < NUSERS; i++)
        if (!strcmp(users[i][0], user)) return users[i][1];
    fail_msg("no user %s", user);
    return NULL;
}

/* The base64 of "user:password" (what an Authorization: Basic header carries). */
static void basic_value(const char *user, char *out, size_t outlen)
{
    char plain[256];
    int n = snprintf(plain, sizeof plain, "%s:%s", user, password_of(user));
    unsigned char b64[400];
    EVP_EncodeBlock(b64, (const unsigned char *)plain, n);
    snprintf(out, outlen, "%s", (const char *)b64);
}

static int setup(void **state)
{
    (void)state;
    test_pair_require();
    test_pair_env();
    memset(&E, 0, sizeof E);
    E.dir = make_temp_dir("audit");
    E.catalog = test_catalog_spec(E.dir);
    E.store = test_store_url(E.dir);
    snprintf(E.users, sizeof E.users, "%s/htpasswd", E.dir);
    snprintf(E.groups, sizeof E.groups, "%s/groups", E.dir);
    snprintf(E.token, sizeof E.token, "%s/token", E.dir);
    cp_buf u;
    cp_buf_init(&u);
    for (size_t i = 0; i < NUSERS; i++) auth_hash_line(&u, users[i][0], users[i][1]);
    cp_buf_putc(&u, 0);
    auth_write_text(E.users, (const char *)u.data);
    cp_buf_free(&u);
    /* no rule names a role: root sees everything through its group, shopadm only shop */
    auth_write_text(E.groups, "admin: root shopadm\nviewer: viv\noperator: oscar\neverything: root viv oscar\n"
                         "team-shop: shopadm\n");
    auth_write_text(E.token, TOKEN "\n");
    size_t n = 0;
    for (const char *const *pf = test_pair_flags(E.catalog, E.store); *pf; pf++) E.args[n++] = *pf;
    const char *extra[] = {"--auth", "basic", "--auth-users", E.users, "--auth-groups", E.groups,
                           "--auth-namespaces", "everything=*", "--auth-namespaces", "team-shop=shop",
                           "--upload-token", E.token, NULL};
    for (const char *const *x = extra; *x; x++) E.args[n++] = *x;
    E.args[n] = NULL;
    server_start(&E.s, "audit", E.args);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (E.s.pid) server_stop(&E.s);
    server_destroy(&E.s);
    test_pair_free(E.dir, E.catalog, E.store);
    return 0;
}

/* ---- requests ------------------------------------------------------------------------------- */

/* A request as user (NULL = no login, "token" = the upload token); returns the status. */
static int req(const char *user, const char *method, const char *path, const char *ctype, const void *p, size_t n,
               cp_buf *body)
{
    char hdr[1024] = "", v[512];
    if (user && !strcmp(user, "token")) {
        snprintf(hdr, sizeof hdr, "Authorization: Bearer " TOKEN "\r\n");
    } else if (user) {
        basic_value(user, v, sizeof v);
        snprintf(hdr, sizeof hdr, "Authorization: Basic %s\r\n", v);
    }
    if (ctype) snprintf(hdr + strlen(hdr), sizeof hdr - strlen(hdr), "Content-Type: %s\r\n", ctype);
    int st = 0;
    assert_int_equal(http_request(E.s.http_port, method, path, hdr[0] ? hdr : NULL, p, n, &st, body, NULL), 0);
    return st;
}

static json_t *get_json(const char *user, const char *path, int want)
{
    cp_buf b;
    cp_buf_init(&b);
    int st = req(user, "GET", path, NULL, NULL, 0, &b);
    if (st != want)
        server_fail(&E.s, "GET %s as %s: %d (want %d): %.*s", path, user, st, want, (int)b.len, (char *)b.data);
    json_t *j = json_loadb((const char *)b.data, b.len, 0, NULL);
    if (!j) server_fail(&E.s, "GET %s: not JSON: %.*s", path, (int)b.len, (char *)b.data);
    cp_buf_free(&b);
    return j;
}

static const char *jstr(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }
static json_int_t jint(const json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

/* Uploads a fixture dump as root; returns its id (malloc'ed). */
static char *upload(const char *file, const char *ns)
{
    cp_buf f, body;
    cp_buf_init(&f);
    cp_buf_init(&body);
    char rel[256], path[512];
    snprintf(rel, sizeof rel, "dumps/%s", file);
    load_fixture(rel, &f);
    snprintf(path, sizeof path, "/diagnostic/%s/" DIR_PATH "/" POD "/%s", ns, file);
    int st = req("root", "PUT", path, "application/octet-stream", f.data, f.len, &body);
    if (st != 201) server_fail(&E.s, "upload %s: %d %.*s", path, st, (int)body.len, (char *)body.data);
    json_t *j = json_loadb((const char *)body.data, body.len, 0, NULL);
    assert_non_null(j);
    char *id = strdup(jstr(j, "id"));
    json_decref(j);
    cp_buf_free(&f);
    cp_buf_free(&body);
    return id;
}

/* Every audit entry root sees (one page), newest first. */
static json_t *audit_all(const char *user, const char *query)
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/audit?limit=1000%s%s", query ? "&" : "", query ? query : "");
    json_t *doc = get_json(user, path, 200);
    json_t *arr = json_incref(json_object_get(doc, "entries"));
    assert_true(json_is_array(arr));
    assert_true(json_is_null(json_object_get(doc, "next_cursor")));
    json_decref(doc);
    return arr;
}

/* The newest entry of an action (and target, when given); NULL if none. */
static json_t *find(json_t *entries, const char *action, const char *target)
{
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) if (!strcmp(jstr(e, "action"), action) &&
                                          (!target || !strcmp(jstr(e, "target"), target))) return e;
    return NULL;
}

static size_t count(json_t *entries, const char *action)
{
    size_t i, n = 0;
    json_t *e;
    json_array_foreach(entries, i, e) n += !strcmp(jstr(e, "action"), action);
    return n;
}

static void assert_who(const json_t *e, const char *user, const char *role)
{
    assert_string_equal(jstr(e, "user"), user);
    assert_string_equal(jstr(e, "role"), role);
    assert_string_equal(jstr(e, "remote"), "127.0.0.1");
    assert_true(jint(e, "time_ms") > 1700000000000LL);
    assert_non_null(jstr(e, "id"));
}

/* Waits (generously) until the newest entry of action has a detail field key: a streamed
 * export's entry gets its end once the server has freed the stream, just after the client
 * read its last byte. */
static json_t *wait_detail(const char *action, const char *key)
{
    int64_t end = test_now_ms() + SRV_TIMEOUT_MS;
    for (;;) {
        json_t *all = audit_all("root", NULL);
        json_t *e = find(all, action, NULL);
        if (e && json_object_get(json_object_get(e, "detail"), key)) {
            json_incref(e);
            json_decref(all);
            return e;
        }
        json_decref(all);
        if (test_now_ms() > end) server_fail(&E.s, "the %s entry never got its %s", action, key);
        sleep_ms(100);
    }
}

/* ---- the scenario --------------------------------------------------------------------------- */

typedef struct ran {
    char *del_id;         /* deleted by root */
    char *other_id;       /* a file of namespace other, deleted too */
    char *kept_id;        /* downloaded */
    json_int_t imported;  /* calls the import stored */
    json_int_t first_ms, last_ms;
    json_int_t csv_rows;
} ran;

/* Does every audited action once (and a few that must not be recorded). */
static void run_actions(ran *r)
{
    memset(r, 0, sizeof *r);
    r->del_id = upload(TD, "shop");
    r->kept_id = upload(TD2, "shop");
    r->other_id = upload(TD, "other");
    char path[512];
    cp_buf body;
    cp_buf_init(&body);

    /* deletions: two files, and an id that does not exist */
    snprintf(path, sizeof path, "/api/v1/dumps/%s", r->del_id);
    assert_int_equal(req("root", "DELETE", path, NULL, NULL, 0, NULL), 204);
    snprintf(path, sizeof path, "/api/v1/dumps/%s", r->other_id);
    assert_int_equal(req("root", "DELETE", path, NULL, NULL, 0, NULL), 204);
    assert_int_equal(req("root", "DELETE", "/api/v1/dumps/999999999", NULL, NULL, 0, NULL), 404);
    /* a viewer may not delete: refused before anything runs, not an audited action */
    snprintf(path, sizeof path, "/api/v1/dumps/%s", r->kept_id);
    assert_int_equal(req("viv", "DELETE", path, NULL, NULL, 0, NULL), 403);

    /* downloads: one file (and a HEAD, not recorded), the zip, its estimate (not recorded) */
    assert_int_equal(req("viv", "GET", path, NULL, NULL, 0, &body), 200);
    assert_int_equal(req("viv", "HEAD", path, NULL, NULL, 0, NULL), 200);
    assert_int_equal(req("root", "GET", "/api/v1/dumps/download?namespace=shop&" DWIN, NULL, NULL, 0, &body), 200);
    assert_true(body.len > 100 && !memcmp(body.data, "PK", 2));
    assert_int_equal(req("root", "GET", "/api/v1/dumps/download?namespace=shop&estimate=1&" DWIN, NULL, NULL, 0, NULL),
                     200);

    /* an import of a foreign trace, named, by the upload token */
    cp_buf f;
    cp_buf_init(&f);
    load_fixture("foreign/shop.trcbin", &f);
    int st = req("token", "POST", "/api/v1/import?namespace=shop&name=shop.trcbin", "application/octet-stream", f.data,
                 f.len, &body);
    if (st != 200) server_fail(&E.s, "import: %d %.*s", st, (int)body.len, (char *)body.data);
    json_t *rep = json_loadb((const char *)body.data, body.len, 0, NULL);
    assert_non_null(rep);
    r->imported = jint(rep, "calls");
    r->first_ms = jint(rep, "first_ms");
    r->last_ms = jint(rep, "last_ms");
    assert_true(r->imported > 0);
    json_decref(rep);
    cp_buf_free(&f);

    /* exports: CSV and XLSX of the imported calls, one call as TPTP */
    char win[128];
    snprintf(win, sizeof win, "from=%lld&to=%lld", (long long)r->first_ms, (long long)r->last_ms + 1);
    snprintf(path, sizeof path, "/api/v1/calls.csv?namespace=shop&%s", win);
    assert_int_equal(req("viv", "GET", path, NULL, NULL, 0, &body), 200);
    for (size_t i = 0; i < body.len; i++) r->csv_rows += body.data[i] == '\n';
    r->csv_rows--; /* the header */
    assert_true(r->csv_rows > 0);
    snprintf(path, sizeof path, "/api/v1/calls.xlsx?namespace=shop&%s", win);
    assert_int_equal(req("viv", "GET", path, NULL, NULL, 0, &body), 200);
    snprintf(path, sizeof path, "/api/v1/calls?namespace=shop&limit=1&%s", win);
    json_t *calls = get_json("viv", path, 200);
    const char *cid = jstr(json_array_get(json_object_get(calls, "calls"), 0), "id");
    assert_non_null(cid);
    snprintf(path, sizeof path, "/api/v1/calls/%s/export?format=trcxml", cid);
    assert_int_equal(req("viv", "GET", path, NULL, NULL, 0, &body), 200);
    json_decref(calls);
    cp_buf_free(&body);
}

static void ran_free(ran *r)
{
    free(r->del_id);
    free(r->other_id);
    free(r->kept_id);
}

/* What root's log says about each action. */
static void check_entries(const ran *r)
{
    json_t *all = audit_all("root", NULL);
    /* deletions */
    json_t *e = find(all, "dump.delete", r->del_id);
    assert_non_null(e);
    assert_who(e, "root", "admin");
    assert_string_equal(jstr(e, "namespace"), "shop");
    assert_string_equal(jstr(e, "outcome"), "ok");
    const json_t *d = json_object_get(e, "detail");
    assert_string_equal(jstr(d, "name"), TD);
    assert_string_equal(jstr(d, "pod"), POD);
    assert_string_equal(jstr(d, "type"), "td");
    e = find(all, "dump.delete", r->other_id);
    assert_non_null(e);
    assert_string_equal(jstr(e, "namespace"), "other");
    e = find(all, "dump.delete", "999999999");
    assert_non_null(e);
    assert_string_equal(jstr(e, "outcome"), "404");
    assert_true(json_is_null(json_object_get(e, "namespace")));
    assert_int_equal(count(all, "dump.delete"), 3); /* the viewer's refused DELETE is not one */
    /* downloads: the GET, not the HEAD; the zip, not its estimate */
    assert_int_equal(count(all, "dump.download"), 1);
    e = find(all, "dump.download", r->kept_id);
    assert_non_null(e);
    assert_who(e, "viv", "viewer");
    assert_string_equal(jstr(e, "namespace"), "shop");
    assert_string_equal(jstr(json_object_get(e, "detail"), "name"), TD2);
    assert_int_equal(count(all, "dumps.download"), 1);
    e = find(all, "dumps.download", NULL);
    assert_who(e, "root", "admin");
    assert_string_equal(jstr(e, "namespace"), "shop");
    assert_non_null(strstr(jstr(e, "target"), "namespace=shop"));
    assert_int_equal(jint(json_object_get(e, "detail"), "files"), 1);
    /* the import */
    e = find(all, "import", NULL);
    assert_non_null(e);
    assert_who(e, "upload-token", "uploader");
    assert_string_equal(jstr(e, "namespace"), "shop");
    assert_string_equal(jstr(e, "outcome"), "ok");
    assert_non_null(strstr(jstr(e, "target"), "name=shop.trcbin"));
    d = json_object_get(e, "detail");
    assert_int_equal(jint(d, "calls"), r->imported);
    assert_string_equal(jstr(d, "format"), "trcbin");
    /* the exports */
    e = find(all, "calls.export_csv", NULL);
    assert_non_null(e);
    assert_who(e, "viv", "viewer");
    assert_string_equal(jstr(e, "namespace"), "shop");
    assert_non_null(strstr(jstr(e, "target"), "namespace=shop"));
    d = json_object_get(e, "detail");
    assert_int_equal(jint(d, "rows"), r->csv_rows);
    assert_true(json_is_true(json_object_get(d, "complete")));
    assert_true(jint(d, "bytes") > 0);
    assert_non_null(find(all, "calls.export_xlsx", NULL));
    e = find(all, "tree.export", NULL);
    assert_non_null(e);
    assert_string_equal(jstr(e, "namespace"), "shop");
    assert_int_equal(jint(json_object_get(e, "detail"), "calls"), 1);
    assert_string_equal(jstr(json_object_get(e, "detail"), "format"), "trcxml");
    json_decref(all);
}

/* Who may read the log, and what they see. */
static void check_access(void)
{
    json_t *j = get_json("viv", "/api/v1/audit", 403);
    assert_string_equal(jstr(j, "code"), "forbidden");
    json_decref(j);
    j = get_json("oscar", "/api/v1/audit?limit=1", 403);
    json_decref(j);
    assert_int_equal(req(NULL, "GET", "/api/v1/audit", NULL, NULL, 0, NULL), 401);
    assert_int_equal(req("token", "GET", "/api/v1/audit", NULL, NULL, 0, NULL), 403);
    /* the admin of shop: shop's entries only, never one without a namespace */
    json_t *mine = audit_all("shopadm", NULL), *e;
    size_t i;
    assert_true(json_array_size(mine) >= 5);
    json_array_foreach(mine, i, e) assert_string_equal(jstr(e, "namespace"), "shop");
    json_decref(mine);
    /* filters */
    json_t *dels = audit_all("root", "action=dump.delete");
    assert_int_equal(json_array_size(dels), 3);
    json_decref(dels);
    json_t *viv = audit_all("root", "user=viv");
    json_array_foreach(viv, i, e) assert_string_equal(jstr(e, "user"), "viv");
    assert_true(json_array_size(viv) >= 4);
    json_decref(viv);
    j = get_json("root", "/api/v1/audit?cursor=nope", 400);
    assert_string_equal(jstr(j, "code"), "bad_cursor");
    json_decref(j);
    j = get_json("root", "/api/v1/audit?bogus=1", 400);
    json_decref(j);
    j = get_json("root", "/api/v1/config", 200);
    assert_true(json_is_true(json_object_get(json_object_get(j, "features"), "audit")));
    json_decref(j);
}

/* limit=1 pages: every entry once, in the one-page order. */
static void check_paging(void)
{
    json_t *all = audit_all("root", NULL);
    size_t n = json_array_size(all), seen = 0;
    assert_int_equal(n, 9); /* 3 deletions, 2 downloads, an import, 3 exports */
    char cursor[128] = "";
    for (;;) {
        char path[256];
        snprintf(path, sizeof path, "/api/v1/audit?limit=1%s%s", cursor[0] ? "&cursor=" : "", cursor);
        json_t *page = get_json("root", path, 200);
        json_t *entries = json_object_get(page, "entries");
        assert_int_equal(json_array_size(entries), 1);
        assert_true(seen < n);
        assert_string_equal(jstr(json_array_get(entries, 0), "id"), jstr(json_array_get(all, seen), "id"));
        seen++;
        const char *next = jstr(page, "next_cursor");
        if (!next) {
            json_decref(page);
            break;
        }
        snprintf(cursor, sizeof cursor, "%s", next);
        json_decref(page);
    }
    assert_int_equal(seen, n);
    for (size_t i = 1; i < n; i++)
        assert_true(jint(json_array_get(all, i - 1), "time_ms") >= jint(json_array_get(all, i), "time_ms"));
    json_decref(all);
}

/* No credential in text: the passwords, the Basic values, the token. */
static void assert_no_secret(const char *what, const char *text, size_t len)
{
    char b64[512];
    for (size_t i = 0; i < NUSERS; i++) {
        basic_value(users[i][0], b64, sizeof b64);
        const char *needles[] = {users[i][1], b64};
        for (size_t k = 0; k < 2; k++)
            if (memmem(text, len, needles[k], strlen(needles[k]))) fail_msg("%s shows a secret (%s)", what, needles[k]);
    }
    if (memmem(text, len, TOKEN, strlen(TOKEN))) fail_msg("%s shows the upload token", what);
    if (memmem(text, len, "Basic ", 6) || memmem(text, len, "Bearer ", 7)) fail_msg("%s shows an Authorization", what);
}

static void check_secrets(void)
{
    cp_buf body;
    cp_buf_init(&body);
    assert_int_equal(req("root", "GET", "/api/v1/audit?limit=1000", NULL, NULL, 0, &body), 200);
    assert_no_secret("the audit log", (const char *)body.data, body.len);
    assert_int_equal(req("shopadm", "GET", "/api/v1/audit?limit=1000", NULL, NULL, 0, &body), 200);
    assert_no_secret("the audit log", (const char *)body.data, body.len);
    cp_buf_free(&body); /* load_file starts a new buffer */
    load_file(E.s.log, &body);
    assert_no_secret("the server log", (const char *)body.data, body.len);
    cp_buf_free(&body);
}

static void test_audit(void **state)
{
    (void)state;
    ran r;
    run_actions(&r);
    json_t *csv = wait_detail("calls.export_csv", "rows"); /* the exports' ends are in */
    json_decref(csv);
    json_decref(wait_detail("calls.export_xlsx", "rows"));
    check_entries(&r);
    check_access();
    check_paging();
    check_secrets();

    /* durable: the same entries after a restart */
    json_t *before = audit_all("root", NULL);
    server_stop(&E.s);
    server_restart(&E.s, E.args);
    json_t *after = audit_all("root", NULL);
    assert_int_equal(json_array_size(after), json_array_size(before));
    for (size_t i = 0; i < json_array_size(before); i++) {
        json_t *a = json_array_get(before, i), *b = json_array_get(after, i);
        assert_string_equal(jstr(a, "id"), jstr(b, "id"));
        assert_string_equal(jstr(a, "action"), jstr(b, "action"));
        assert_string_equal(jstr(a, "target"), jstr(b, "target"));
        assert_int_equal(jint(a, "time_ms"), jint(b, "time_ms"));
    }
    json_decref(before);
    json_decref(after);
    check_entries(&r);
    check_secrets();
    ran_free(&r);
}

/* Runs one statement on the server's catalog, beside it. */
static void catalog_exec(const char *sql)
{
    cp_sqldb *db = NULL;
    char err[512];
    if (cp_sqldb_open(E.catalog, &db, err, sizeof err) != CP_OK) fail_msg("catalog: %s", err);
    if (cp_sqldb_exec(db, sql, NULL, 0, NULL, NULL, NULL) != CP_OK) fail_msg("%s: %s", sql, cp_sqldb_errmsg(db));
    cp_sqldb_close(db);
}

/* With the log's table gone: a deletion is refused (500, the file stays: never deleted
 * unrecorded), an export is served and the log says what went unrecorded; with the table
 * back, both are recorded again. */
static void test_audit_unavailable(void **state)
{
    (void)state;
    char *id = upload(TD, "shop");
    char path[256];
    snprintf(path, sizeof path, "/api/v1/dumps/%s", id);
    catalog_exec("ALTER TABLE audit_log RENAME TO audit_log_away");
    assert_int_equal(req("root", "DELETE", path, NULL, NULL, 0, NULL), 500);
    assert_int_equal(req("root", "GET", path, NULL, NULL, 0, NULL), 200); /* still there */
    assert_int_equal(req("root", "GET", "/api/v1/calls.csv?from=1702900000000&to=1703000000000", NULL, NULL, 0, NULL),
                     200);
    cp_buf log;
    cp_buf_init(&log);
    int64_t end = test_now_ms() + SRV_TIMEOUT_MS;
    for (;;) { /* the warning of the export's entry (the deletion's failure is its 500) */
        cp_buf_free(&log); /* load_file starts a new buffer */
        load_file(E.s.log, &log);
        if (memmem(log.data, log.len, "audit: calls.export_csv by root", 31)) break;
        if (test_now_ms() > end) server_fail(&E.s, "no warning for the unrecorded export");
        sleep_ms(100);
    }
    cp_buf_free(&log);
    json_t *j = get_json("root", "/api/v1/audit", 500);
    json_decref(j);
    catalog_exec("ALTER TABLE audit_log_away RENAME TO audit_log");
    assert_int_equal(req("root", "DELETE", path, NULL, NULL, 0, NULL), 204);
    json_t *all = audit_all("root", "action=dump.delete");
    json_t *e = find(all, "dump.delete", id);
    assert_non_null(e);
    assert_string_equal(jstr(e, "outcome"), "ok");
    json_decref(all);
    free(id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_audit), cmocka_unit_test(test_audit_unavailable)};
    return cmocka_run_group_tests_name(test_pair_name(), tests, setup, teardown);
}
