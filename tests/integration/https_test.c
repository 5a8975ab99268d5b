/* https_test.c -- issue 17, HTTPS on the HTTP port (libmicrohttpd with GnuTLS):
 *  - certificates made here with the openssl command (a test CA, the server's certificate
 *    for 127.0.0.1, a client certificate of the CA and one of another CA);
 *  - libcurl trusting the test CA reads the API; plain HTTP on the TLS port gets no answer;
 *  - with --http-tls-client-ca, uploads need a credential: a heap dump uploaded with the
 *    client certificate is taken (and downloads byte for byte), one without a credential
 *    or with the other CA's certificate is 401, the upload token still works;
 *  - a missing key file stops the server from starting with a clear message.
 */
#include "http_util.h"
#include "server_util.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define TOKEN "https-test-upload-token-0123456789abcdef"
#define HEAP "test-service.heap.hprof.zip"
#define UPLOAD_PATH "/diagnostic/shop/2023/12/19/06/17/34/orders-1/" HEAP

typedef struct env {
    test_server s;
    char *dir;
    char ca[1100], cert[1100], key[1100], ccert[1100], ckey[1100], ocert[1100], okey[1100], token[1100];
} env;

static void sh(const char *cmd)
{
    int rc = system(cmd);
    if (rc != 0) fail_msg("command failed (%d): %s", rc, cmd);
}

/* A CA, a server certificate for 127.0.0.1 and client certificates (ours and another CA's). */
static void make_certs(env *e)
{
    char cmd[8192];
    const char *d = e->dir;
    snprintf(cmd, sizeof cmd,
             "set -e; cd '%s'; exec >openssl.log 2>&1;"
             "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=cloudprof-test-ca -keyout ca.key -out ca.pem;"
             "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other-ca -keyout other-ca.key -out other-ca.pem;"
             "openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr;"
             "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nextendedKeyUsage=serverAuth\\n' > server.ext;"
             "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext -out server.pem;"
             "printf 'extendedKeyUsage=clientAuth\\n' > client.ext;"
             "openssl req -newkey rsa:2048 -nodes -subj /CN=diagtools -keyout client.key -out client.csr;"
             "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile client.ext -out client.pem;"
             "openssl req -newkey rsa:2048 -nodes -subj /CN=intruder -keyout other.key -out other.csr;"
             "openssl x509 -req -in other.csr -CA other-ca.pem -CAkey other-ca.key -CAcreateserial -days 2 -extfile client.ext -out other.pem;"
             "printf '%%s\\n' '" TOKEN "' > token",
             d);
    sh(cmd);
    snprintf(e->ca, sizeof e->ca, "%s/ca.pem", d);
    snprintf(e->cert, sizeof e->cert, "%s/server.pem", d);
    snprintf(e->key, sizeof e->key, "%s/server.key", d);
    snprintf(e->ccert, sizeof e->ccert, "%s/client.pem", d);
    snprintf(e->ckey, sizeof e->ckey, "%s/client.key", d);
    snprintf(e->ocert, sizeof e->ocert, "%s/other.pem", d);
    snprintf(e->okey, sizeof e->okey, "%s/other.key", d);
    snprintf(e->token, sizeof e->token, "%s/token", d);
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    return cp_buf_append(ud, p, size * n) == CP_OK ? size * n : 0;
}

/* An HTTPS request with libcurl trusting the test CA; cert/key = the client certificate
 * (NULL = none), auth = an Authorization header line or NULL. Returns the status, or -1
 * when the exchange failed (TLS or transport). */
static int https(env *e, const char *method, const char *path, const char *cert, const char *key, const char *auth,
                 const void *data, size_t n, cp_buf *body)
{
    CURL *c = curl_easy_init();
    assert_non_null(c);
    char url[512];
    snprintf(url, sizeof url, "https://127.0.0.1:%d%s", e->s.http_port, path);
    cp_buf tmp;
    cp_buf_init(&tmp);
    cp_buf *out = body ? body : &tmp;
    cp_buf_reset(out);
    struct curl_slist *h = NULL;
    if (auth) h = curl_slist_append(h, auth);
    h = curl_slist_append(h, "Content-Type: application/octet-stream");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CAINFO, e->ca);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)HTTP_UTIL_TIMEOUT_MS);
    if (cert) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, cert);
        curl_easy_setopt(c, CURLOPT_SSLKEY, key);
    }
    if (data) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, data);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
    }
    long status = -1;
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    cp_buf_free(&tmp);
    return rc == CURLE_OK ? (int)status : -1;
}

static void env_start(env *e, const char *tag, int client_ca)
{
    memset(e, 0, sizeof *e);
    e->dir = make_temp_dir(tag);
    make_certs(e);
    const char *args[] = {"--http-tls-cert", e->cert, "--http-tls-key", e->key, "--upload-token", e->token,
                          client_ca ? "--http-tls-client-ca" : NULL, e->ca, NULL};
    server_start(&e->s, tag, args);
}

static void env_free(env *e)
{
    server_destroy(&e->s);
    remove_tree(e->dir);
    free(e->dir);
}

static void test_https_api(void **state)
{
    (void)state;
    env e;
    env_start(&e, "https-api", 0);
    cp_buf body;
    cp_buf_init(&body);
    assert_int_equal(https(&e, "GET", "/api/v1/health", NULL, NULL, NULL, NULL, 0, &body), 200);
    assert_int_equal(https(&e, "GET", "/api/v1/services", NULL, NULL, NULL, NULL, 0, &body), 200);
    json_t *j = json_loadb((const char *)body.data, body.len, 0, NULL);
    assert_non_null(json_object_get(j, "namespaces"));
    json_decref(j);
    assert_int_equal(https(&e, "GET", "/api/v1/config", NULL, NULL, NULL, NULL, 0, &body), 200);
    /* plain HTTP on the TLS port: no HTTP answer */
    int status = 0;
    int rc = http_request(e.s.http_port, "GET", "/api/v1/health", NULL, NULL, 0, &status, NULL, NULL);
    assert_true(rc != 0 || status != 200);
    /* an upload over HTTPS with the token (no client CA configured) */
    cp_buf heap;
    cp_buf_init(&heap);
    load_fixture("dumps/" HEAP, &heap);
    assert_int_equal(https(&e, "PUT", UPLOAD_PATH, NULL, NULL, "Authorization: Bearer " TOKEN, heap.data, heap.len, &body),
                     201);
    assert_int_equal(https(&e, "PUT", UPLOAD_PATH, NULL, NULL, NULL, heap.data, heap.len, &body), 401);
    cp_buf_free(&heap);
    cp_buf_free(&body);
    env_free(&e);
}

static void test_client_certificates(void **state)
{
    (void)state;
    env e;
    env_start(&e, "https-mtls", 1);
    cp_buf body, heap;
    cp_buf_init(&body);
    cp_buf_init(&heap);
    load_fixture("dumps/" HEAP, &heap);
    /* reads need no certificate (--auth none) */
    assert_int_equal(https(&e, "GET", "/api/v1/health", NULL, NULL, NULL, NULL, 0, &body), 200);
    assert_int_equal(https(&e, "GET", "/api/v1/dumps", NULL, NULL, NULL, NULL, 0, &body), 200);
    /* uploads do: none, another CA's certificate -> 401; ours -> 201 */
    assert_int_equal(https(&e, "PUT", UPLOAD_PATH, NULL, NULL, NULL, heap.data, heap.len, &body), 401);
    int st = https(&e, "PUT", UPLOAD_PATH, e.ocert, e.okey, NULL, heap.data, heap.len, &body);
    assert_true(st == 401 || st == -1); /* refused: by us, or by the TLS layer */
    assert_int_equal(https(&e, "PUT", UPLOAD_PATH, e.ccert, e.ckey, NULL, heap.data, heap.len, &body), 201);
    /* the stored file downloads byte for byte */
    assert_int_equal(https(&e, "GET", "/api/v1/dumps?namespace=shop&from=1702900000000&to=1703000000000", NULL, NULL,
                           NULL, NULL, 0, &body),
                     200);
    json_t *j = json_loadb((const char *)body.data, body.len, 0, NULL);
    json_t *d = json_array_get(json_object_get(j, "dumps"), 0);
    assert_non_null(d);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/dumps/%s", json_string_value(json_object_get(d, "id")));
    json_decref(j);
    assert_int_equal(https(&e, "GET", path, NULL, NULL, NULL, NULL, 0, &body), 200);
    assert_int_equal(body.len, heap.len);
    assert_memory_equal(body.data, heap.data, heap.len);
    /* the token works too */
    assert_int_equal(https(&e, "PUT", "/diagnostic/shop/2023/12/19/06/17/34/orders-2/" HEAP, NULL, NULL,
                           "Authorization: Bearer " TOKEN, heap.data, heap.len, &body),
                     201);
    cp_buf_free(&heap);
    cp_buf_free(&body);
    env_free(&e);
}

static void test_bad_files(void **state)
{
    (void)state;
    char *dir = make_temp_dir("https-bad");
    char cert[1100], key[1100];
    snprintf(cert, sizeof cert, "%s/none.pem", dir);
    snprintf(key, sizeof key, "%s/none.key", dir);
    const char *argv[] = {"serve", "--data", dir, "--http-host", "127.0.0.1", "--http-port", "0", "--agent-host",
                          "127.0.0.1", "--agent-port", "auto", "--http-tls-cert", cert, "--http-tls-key", key, NULL};
    cp_buf err;
    cp_buf_init(&err);
    int rc = cli_run(NULL, &err, argv);
    assert_int_not_equal(rc, 0);
    cp_buf_putc(&err, 0);
    if (!strstr((const char *)err.data, "--http-tls-cert")) fail_msg("unclear message: %s", (const char *)err.data);
    cp_buf_free(&err);
    remove_tree(dir);
    free(dir);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_https_api, servers_teardown),
        cmocka_unit_test_teardown(test_client_certificates, servers_teardown),
        cmocka_unit_test_teardown(test_bad_files, servers_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
