/* agent_tls_test.c -- agents over TLS (`serve --agent-tls-port`), issue 17 item 1.
 *
 * The certificates are made by the `openssl` command in a temporary directory when the
 * group starts: a test CA, two server certificates (for the SIGHUP reload), a client
 * certificate of namespace emulated-0 (CN, OU and a SPIFFE URI SAN), one of another
 * namespace, and a client certificate of a CA the server does not trust.
 *
 * What is checked:
 *   - the emulator over TLS, without and with mutual TLS (the plain port off): every call
 *     it saw acknowledged is in the stored calls files (decoded);
 *   - a client without a certificate, with an untrusted one, a plain-text client on the
 *     TLS port, a TLS client on the plain port (0xFF, close) and a silent client (the
 *     handshake deadline) are all refused while another agent streams without an error;
 *   - namespace pinning (cn, ou, san-uri): the certificate's namespace is accepted, another
 *     one gets 0xFF and nothing of it is stored;
 *   - SIGHUP: new connections see the new certificate, a live one streams on, and a
 *     broken file keeps the previous certificate;
 *   - the real agent's way (when a JDK is installed): a Java client that loads one PKCS#12
 *     keystore, made as README "Agent TLS" says, as key and trust store, with no host-name
 *     check, is accepted and identified; without the CA's trusted entry it is not.
 * Nothing waits for a time to pass except the handshake deadline (10 s); every wait is
 * for a condition, bounded generously. */
#include "server_util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "common/cp_fsutil.h"
#include "common/cp_tls.h"
#include "wire/cp_wire.h"

static char certs[1024]; /* the temporary directory with every PEM file */

static const char *pem(const char *name)
{
    static char paths[16][1200];
    static unsigned next;
    char *p = paths[next++ % 16];
    snprintf(p, sizeof paths[0], "%s/%s", certs, name);
    return p;
}

/* ---- certificates -------------------------------------------------------------------- */

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[sizeof cmd + sizeof certs + 64];
    snprintf(full, sizeof full, "cd '%s' && (%s) >>openssl.log 2>&1", certs, cmd);
    int st = system(full);
    if (st != 0) {
        char log[1200];
        snprintf(log, sizeof log, "%s/openssl.log", certs);
        cp_buf b;
        cp_buf_init(&b);
        cp_read_file(log, 1 << 20, &b);
        cp_buf_putc(&b, 0);
        fail_msg("'%s' failed (status %d): %s", cmd, st, (char *)b.data);
    }
}

#define EC "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"

/* A CA: NAME.pem, NAME.key. */
static void make_ca(const char *name, const char *cn)
{
    sh("openssl req -x509 " EC " -keyout %s.key -out %s.pem -days 3 -subj '/CN=%s' "
       "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign",
       name, name, cn);
}

/* A leaf signed by ca: NAME.pem, NAME.key; subj like /CN=x/OU=y; san may be NULL. */
static void make_leaf(const char *name, const char *ca, const char *subj, const char *san, const char *usage)
{
    sh("printf 'basicConstraints=CA:FALSE\\nextendedKeyUsage=%s\\n%s%s%s' > %s.ext", usage, san ? "subjectAltName=" : "",
       san ? san : "", san ? "\\n" : "", name);
    sh("openssl req -new " EC " -keyout %s.key -out %s.csr -subj '%s'", name, name, subj);
    sh("openssl x509 -req -in %s.csr -CA %s.pem -CAkey %s.key -CAcreateserial -out %s.pem -days 3 -extfile %s.ext",
       name, ca, ca, name, name);
}

static int group_setup(void **state)
{
    (void)state;
    if (!in_path("openssl")) {
        print_message("openssl not found: skipped\n");
        return -1;
    }
    char *dir = make_temp_dir("tls-certs");
    snprintf(certs, sizeof certs, "%s", dir);
    free(dir);
    make_ca("ca", "cloudprof test CA");
    make_ca("rogue-ca", "some other CA");
    make_leaf("srv1", "ca", "/CN=agent-port-one", "DNS:localhost,IP:127.0.0.1", "serverAuth");
    make_leaf("srv2", "ca", "/CN=agent-port-two", "DNS:localhost,IP:127.0.0.1", "serverAuth");
    make_leaf("ns0", "ca", "/CN=emulated-0/OU=emulated-0", "URI:spiffe://cluster.local/ns/emulated-0/sa/default",
              "clientAuth");
    make_leaf("ns9", "ca", "/CN=emulated-9/OU=emulated-9", "URI:spiffe://cluster.local/ns/emulated-9/sa/default",
              "clientAuth");
    make_leaf("rogue", "rogue-ca", "/CN=emulated-0/OU=emulated-0", NULL, "clientAuth");
    /* the files the server is given; the reload test replaces them */
    sh("cp srv1.pem cur.pem && cp srv1.key cur.key");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    if (certs[0]) remove_tree(certs);
    return 0;
}

/* ---- the emulator ---------------------------------------------------------------------- */

typedef struct emu {
    pid_t pid;
    char out[1200];
    json_t *sum;
    int status;
} emu;

/* Starts `cloudprof emulate --target 127.0.0.1:PORT --json --quiet ARGS...` in the
 * background, its stdout and stderr to a file. */
static void emu_start(emu *e, const test_server *s, int port, const char *const *args)
{
    static unsigned n;
    memset(e, 0, sizeof *e);
    snprintf(e->out, sizeof e->out, "%s/emulate-%u.out", s->root, n++);
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", port);
    const char *argv[48] = {"cloudprof", "emulate", "--target", target, "--json", "--quiet"};
    size_t k = 6;
    for (size_t i = 0; args[i]; i++) argv[k++] = args[i];
    argv[k] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(e->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(CLOUDPROF_BIN, (char *const *)argv);
        _exit(127);
    }
    e->pid = pid;
}

static int emu_running(emu *e)
{
    int st;
    if (e->pid && waitpid(e->pid, &st, WNOHANG) == e->pid) {
        e->pid = 0;
        e->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    return e->pid != 0;
}

static long long sum_int(const emu *e, const char *key)
{
    json_t *v = json_object_get(e->sum, key);
    if (!json_is_integer(v)) fail_msg("emulator summary: no integer '%s'", key);
    return (long long)json_integer_value(v);
}

/* Waits for the emulator's exit and parses its JSON summary (its last line that is one). */
static void emu_wait(emu *e, const test_server *s)
{
    int64_t deadline = test_now_ms() + CLI_TIMEOUT_MS;
    while (emu_running(e)) {
        if (test_now_ms() > deadline) {
            kill(e->pid, SIGKILL);
            server_fail(s, "the emulator did not end within %d ms", CLI_TIMEOUT_MS);
        }
        sleep_ms(20);
    }
    cp_buf b;
    cp_buf_init(&b);
    cp_read_file(e->out, 16 << 20, &b);
    cp_buf_putc(&b, 0);
    char *text = (char *)b.data, *line = NULL;
    for (char *p = strtok(text, "\n"); p; p = strtok(NULL, "\n"))
        if (p[0] == '{') line = p;
    json_error_t jerr;
    e->sum = line ? json_loads(line, 0, &jerr) : NULL;
    if (!e->sum) server_fail(s, "no JSON summary from the emulator (exit %d): %s", e->status, text);
    print_message("emulate (exit %d): %s\n", e->status, line);
    cp_buf_free(&b);
}

static void emu_free(emu *e)
{
    if (e->pid) {
        kill(e->pid, SIGKILL);
        waitpid(e->pid, NULL, 0);
    }
    json_decref(e->sum);
    e->sum = NULL;
}

/* Runs the emulator to its end. */
static void emu_run(emu *e, const test_server *s, int port, const char *const *args)
{
    emu_start(e, s, port, args);
    emu_wait(e, s);
}

/* A clean run: exit 0, no error, every call of every agent acknowledged. */
static void expect_clean(const emu *e, const test_server *s, long long calls)
{
    if (e->status != 0 || sum_int(e, "errors") || sum_int(e, "missing_acks") || sum_int(e, "reconnects"))
        server_fail(s, "the emulator had errors (exit %d)", e->status);
    if (calls >= 0) assert_int_equal(sum_int(e, "calls_sent"), calls);
    else assert_true(sum_int(e, "calls_sent") > 0);
}

/* A refused run: exit 1, errors, nothing acknowledged. */
static void expect_refused(const emu *e, const test_server *s)
{
    if (e->status != 1 || !sum_int(e, "errors") || sum_int(e, "calls_sent") || sum_int(e, "acks"))
        server_fail(s, "the emulator was not refused (exit %d)", e->status);
}

/* ---- what the server stored ------------------------------------------------------------ */

/* calls records over every stored calls file of the namespace (NULL = all), each file
 * decoding cleanly. */
static long long stored_calls(const test_server *s, const char *ns)
{
    raw_entry *e = NULL;
    size_t n = raw_list(s, &e);
    long long calls = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(e[i].stream, "calls") || (ns && strcmp(e[i].ns, ns))) continue;
        cp_buf b;
        cp_buf_init(&b);
        raw_fetch(s, e[i].ns, e[i].pod, "calls", e[i].index, &b);
        uint64_t records = 0;
        char why[256] = "";
        if (decode_file("calls", b.data, b.len, &records, why, sizeof why) != CP_OK)
            server_fail(s, "%s calls %d does not decode: %s", e[i].pod, e[i].index, why);
        calls += (long long)records;
        cp_buf_free(&b);
    }
    free(e);
    return calls;
}

static size_t stored_pods(const test_server *s, const char *ns)
{
    raw_entry *e = NULL;
    size_t n = raw_list(s, &e), k = 0;
    for (size_t i = 0; i < n; i++) k += !strcmp(e[i].ns, ns);
    free(e);
    return k;
}

/* Waits until the server's log holds `text` (what only the server says). */
static void wait_log(const test_server *s, const char *text)
{
    int64_t deadline = test_now_ms() + SRV_TIMEOUT_MS;
    for (;;) {
        cp_buf b;
        cp_buf_init(&b);
        cp_read_file(s->log, 64 << 20, &b);
        cp_buf_putc(&b, 0);
        int found = strstr((const char *)b.data, text) != NULL;
        cp_buf_free(&b);
        if (found) return;
        if (test_now_ms() > deadline) server_fail(s, "the log never said '%s'", text);
        sleep_ms(20);
    }
}

/* ---- a blocking TLS client (the server's certificate, bad peers) ------------------------- */

/* Moves the session's records to the socket. */
static void tls_push(int fd, cp_tls *t)
{
    cp_buf b;
    cp_buf_init(&b);
    if (cp_tls_take(t, &b) != CP_OK) fail_msg("out of memory");
    if (b.len) conn_send(fd, b.data, b.len);
    cp_buf_free(&b);
}

/* Connects and completes the handshake; returns the fd and the session. */
static int tls_dial(int port, struct ssl_ctx_st *ctx, cp_tls **out)
{
    int fd = conn_open(port);
    cp_tls *t;
    if (cp_tls_new(ctx, 0, &t) != CP_OK) fail_msg("cp_tls_new");
    int64_t deadline = test_now_ms() + SRV_TIMEOUT_MS;
    for (;;) {
        int st = cp_tls_handshake(t);
        tls_push(fd, t);
        if (st == CP_OK) break;
        if (st != CP_AGAIN) fail_msg("TLS handshake: %s", cp_tls_errmsg(t));
        cp_buf in;
        cp_buf_init(&in);
        long n = conn_read_for(fd, &in, 1000);
        if (n < 0) fail_msg("the server closed during the handshake");
        if (n > 0) cp_tls_feed(t, in.data, in.len);
        cp_buf_free(&in);
        if (test_now_ms() > deadline) fail_msg("no TLS handshake within %d ms", SRV_TIMEOUT_MS);
    }
    *out = t;
    return fd;
}

/* Reads exactly n plaintext bytes from the session. */
static void tls_read_exact(int fd, cp_tls *t, uint8_t *out, size_t n)
{
    size_t got = 0;
    int64_t deadline = test_now_ms() + SRV_TIMEOUT_MS;
    while (got < n) {
        long k = cp_tls_read(t, out + got, n - got);
        if (k > 0) {
            got += (size_t)k;
            continue;
        }
        if (k < 0) fail_msg("TLS read: %s", k == CP_TLS_CLOSED ? "closed" : cp_tls_errmsg(t));
        cp_buf in;
        cp_buf_init(&in);
        if (conn_read_for(fd, &in, 1000) < 0) fail_msg("EOF after %zu of %zu bytes", got, n);
        cp_tls_feed(t, in.data, in.len);
        cp_buf_free(&in);
        if (test_now_ms() > deadline) fail_msg("no reply within %d ms", SRV_TIMEOUT_MS);
    }
}

/* The subject CN of the certificate a new connection to port is shown. */
static void server_cn(int port, struct ssl_ctx_st *ctx, char *cn, size_t cnlen)
{
    cp_tls *t;
    int fd = tls_dial(port, ctx, &t);
    X509 *x = SSL_get1_peer_certificate(cp_tls_ssl(t));
    assert_non_null(x);
    cn[0] = 0;
    X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, (int)cnlen);
    X509_free(x);
    cp_tls_free(t);
    conn_close(fd);
}

static struct ssl_ctx_st *client_ctx(const char *cert, const char *key)
{
    struct ssl_ctx_st *ctx;
    char err[512];
    if (cp_tls_client_ctx(pem("ca.pem"), cert, key, &ctx, err, sizeof err) != CP_OK) fail_msg("client ctx: %s", err);
    return ctx;
}

/* ---- tests ------------------------------------------------------------------------------- */

#define AGENTS "2"
#define MAX_CALLS 300
#define STR_(x) #x
#define STR(x) STR_(x)

/* A fixed amount of work (emulate_test.c): the counts do not depend on the machine. */
#define FIXED_RUN "--agents", AGENTS, "--duration", "120", "--max-calls", STR(MAX_CALLS), "--calls-per-flush", "30", \
                  "--flush-interval", "50"

static void test_tls_and_mtls(void **state)
{
    (void)state;
    test_server s;
    /* TLS beside the plain port, no client certificates asked for */
    const char *tls_args[] = {"--agent-tls-port", "auto", "--tls-cert", pem("cur.pem"), "--tls-key", pem("cur.key"), NULL};
    server_start(&s, "tls", tls_args);
    assert_true(s.tls_port > 0 && s.port > 0 && s.tls_port != s.port);
    emu e;
    const char *run[] = {FIXED_RUN, "--tls", "--ca", pem("ca.pem"), NULL};
    emu_run(&e, &s, s.tls_port, run);
    expect_clean(&e, &s, 2 * MAX_CALLS);
    assert_true(sum_int(&e, "wire_bytes") > sum_int(&e, "bytes_sent")); /* records cost something */
    emu_free(&e);
    server_stop(&s);
    assert_int_equal(stored_calls(&s, NULL), 2 * MAX_CALLS);

    /* mutual TLS, TLS only: the plain port is off (agent_port=0 in the ready file) */
    const char *mtls_args[] = {"--agent-port", "0", "--agent-tls-port", "auto", "--tls-cert", pem("cur.pem"),
                               "--tls-key", pem("cur.key"), "--tls-client-ca", pem("ca.pem"), NULL};
    server_restart(&s, mtls_args);
    assert_int_equal(s.port, 0);
    assert_true(s.tls_port > 0);
    const char *mrun[] = {FIXED_RUN, "--tls", "--ca", pem("ca.pem"), "--cert", pem("ns0.pem"), "--key", pem("ns0.key"),
                          NULL};
    emu_run(&e, &s, s.tls_port, mrun);
    expect_clean(&e, &s, 2 * MAX_CALLS);
    emu_free(&e);
    /* without a certificate: refused at the handshake */
    const char *nocert[] = {"--agents", "1", "--duration", "1", "--reconnect-delay", "100", "--tls", "--ca",
                            pem("ca.pem"), NULL};
    emu_run(&e, &s, s.tls_port, nocert);
    expect_refused(&e, &s);
    emu_free(&e);
    wait_log(&s, "peer did not return a certificate");
    /* TLS 1.2 (older JVMs): a handshake command gets its version reply through the session */
    struct ssl_ctx_st *ctx12 = client_ctx(pem("ns0.pem"), pem("ns0.key"));
    assert_int_equal(SSL_CTX_set_max_proto_version(ctx12, TLS1_2_VERSION), 1);
    cp_tls *t;
    int fd = tls_dial(s.tls_port, ctx12, &t);
    assert_int_equal(SSL_version(cp_tls_ssl(t)), TLS1_2_VERSION);
    cp_buf hs;
    cp_buf_init(&hs);
    cp_wire_put_handshake(&hs, CP_PROTOCOL_V3, "tls12-pod_1", "tls12-service", "emulated-0");
    assert_int_equal(cp_tls_write(t, hs.data, hs.len), CP_OK);
    tls_push(fd, t);
    uint8_t reply[8];
    tls_read_exact(fd, t, reply, sizeof reply);
    assert_int_equal((int64_t)cp_be64(reply), CP_PROTOCOL_V2); /* the server's default answer */
    wait_log(&s, "pod emulated-0/tls12-pod_1 (service tls12-service) connected");
    cp_buf_free(&hs);
    cp_tls_free(t);
    conn_close(fd);
    cp_tls_ctx_free(ctx12);
    server_stop(&s);
    assert_int_equal(stored_calls(&s, NULL), 4 * MAX_CALLS);
    server_destroy(&s);
}

static void test_bad_peers_refused(void **state)
{
    (void)state;
    test_server s;
    const char *args[] = {"--agent-tls-port", "auto", "--tls-cert", pem("cur.pem"), "--tls-key", pem("cur.key"),
                          "--tls-client-ca", pem("ca.pem"), NULL};
    server_start(&s, "tls-bad", args);
    /* a silent client: it never says hello; the handshake deadline (10 s) closes it */
    int silent = conn_open(s.tls_port);
    /* the good agent streams through everything below (until --duration) */
    emu good;
    const char *run[] = {"--agents", "1", "--duration", "15", "--calls-per-sec", "200", "--flush-interval", "100",
                         "--tls", "--ca", pem("ca.pem"), "--cert", pem("ns0.pem"), "--key", pem("ns0.key"), NULL};
    emu_start(&good, &s, s.tls_port, run);
    wait_log(&s, "(service orders-service) connected");

    emu e;
    /* a certificate of a CA the server does not trust */
    const char *rogue[] = {"--agents", "1", "--duration", "1", "--reconnect-delay", "100", "--tls", "--ca",
                           pem("ca.pem"), "--cert", pem("rogue.pem"), "--key", pem("rogue.key"), NULL};
    emu_run(&e, &s, s.tls_port, rogue);
    expect_refused(&e, &s);
    emu_free(&e);
    wait_log(&s, "certificate verification failed");
    /* plain text on the TLS port */
    const char *plain[] = {"--agents", "1", "--duration", "1", "--reconnect-delay", "100", NULL};
    emu_run(&e, &s, s.tls_port, plain);
    expect_refused(&e, &s);
    emu_free(&e);
    wait_log(&s, "TLS handshake failed");
    /* ... and byte by byte: an agent handshake gets no version reply, only (maybe) an alert and a close */
    int fd = conn_open(s.tls_port);
    cp_buf hs, got;
    cp_buf_init(&hs);
    cp_buf_init(&got);
    cp_wire_put_handshake(&hs, CP_PROTOCOL_V3, "pod-1", "svc", "emulated-0");
    conn_send_buf(fd, &hs);
    conn_read_to_eof(fd, &got, SRV_TIMEOUT_MS);
    assert_true(got.len == 0 || got.data[0] == 0x15); /* a TLS alert record */
    conn_close(fd);
    /* TLS on the plain port: the ClientHello is not a command: 0xFF and a close */
    const char *tls_on_plain[] = {"--agents", "1", "--duration", "1", "--reconnect-delay", "100", "--tls", "--ca",
                                  pem("ca.pem"), "--cert", pem("ns0.pem"), "--key", pem("ns0.key"), NULL};
    emu_run(&e, &s, s.port, tls_on_plain);
    expect_refused(&e, &s);
    emu_free(&e);
    fd = conn_open(s.port);
    static const uint8_t hello[] = {0x16, 0x03, 0x01, 0x00, 0x2a, 0x01, 0x00, 0x00, 0x26, 0x03, 0x03};
    conn_send(fd, hello, sizeof hello);
    cp_buf_reset(&got);
    conn_read_to_eof(fd, &got, SRV_TIMEOUT_MS);
    assert_int_equal(got.len, 1);
    assert_int_equal(got.data[0], 0xFF);
    conn_close(fd);
    /* the silent one is cut at its deadline */
    conn_expect_eof(silent, SRV_TIMEOUT_MS);
    conn_close(silent);
    wait_log(&s, "TLS handshake not done within");

    if (!emu_running(&good)) print_message("note: the good agent ended before the bad peers were done\n");
    emu_wait(&good, &s);
    expect_clean(&good, &s, -1);
    long long sent = sum_int(&good, "calls_sent");
    emu_free(&good);
    server_stop(&s);
    assert_int_equal(stored_calls(&s, NULL), sent);
    cp_buf_free(&hs);
    cp_buf_free(&got);
    server_destroy(&s);
}

/* One pinned server per source of the namespace: ns0's certificate names emulated-0. */
static void pinning_case(const char *from)
{
    test_server s;
    const char *args[] = {"--agent-port", "0", "--agent-tls-port", "auto", "--tls-cert", pem("cur.pem"),
                          "--tls-key", pem("cur.key"), "--tls-client-ca", pem("ca.pem"), "--tls-namespace-from-cert",
                          from, NULL};
    server_start(&s, "tls-pin", args);
    emu e;
    /* the right namespace */
    const char *right[] = {FIXED_RUN, "--tls", "--ca", pem("ca.pem"), "--cert", pem("ns0.pem"), "--key", pem("ns0.key"),
                           NULL};
    emu_run(&e, &s, s.tls_port, right);
    expect_clean(&e, &s, 2 * MAX_CALLS);
    emu_free(&e);
    /* the agents of emulated-1 with the certificate of emulated-0: refused */
    const char *two[] = {"--agents", "2", "--namespaces", "2", "--duration", "3", "--reconnect-delay", "200",
                         "--tls", "--ca", pem("ca.pem"), "--cert", pem("ns0.pem"), "--key", pem("ns0.key"), NULL};
    emu_run(&e, &s, s.tls_port, two);
    assert_int_equal(e.status, 1);
    assert_true(sum_int(&e, "errors") > 0);
    long long sent = sum_int(&e, "calls_sent"); /* emulated-0's agent only */
    emu_free(&e);
    wait_log(&s, "namespace 'emulated-1' refused: its certificate allows only 'emulated-0'");
    /* a certificate of emulated-9 for emulated-0 */
    const char *other[] = {"--agents", "1", "--duration", "1", "--reconnect-delay", "200", "--tls", "--ca",
                           pem("ca.pem"), "--cert", pem("ns9.pem"), "--key", pem("ns9.key"), NULL};
    emu_run(&e, &s, s.tls_port, other);
    expect_refused(&e, &s);
    emu_free(&e);
    server_stop(&s);
    assert_int_equal(stored_pods(&s, "emulated-1"), 0);
    assert_int_equal(stored_calls(&s, "emulated-0"), 2 * MAX_CALLS + sent);
    server_destroy(&s);
}

static void test_namespace_pinning(void **state)
{
    (void)state;
    pinning_case("cn");
    pinning_case("ou");
    pinning_case("san-uri");
}

static void test_sighup_reload(void **state)
{
    (void)state;
    sh("cp srv1.pem cur.pem && cp srv1.key cur.key");
    test_server s;
    const char *args[] = {"--agent-tls-port", "auto", "--tls-cert", pem("cur.pem"), "--tls-key", pem("cur.key"),
                          "--tls-client-ca", pem("ca.pem"), NULL};
    server_start(&s, "tls-hup", args);
    struct ssl_ctx_st *ctx = client_ctx(pem("ns0.pem"), pem("ns0.key"));
    char cn[256];
    server_cn(s.tls_port, ctx, cn, sizeof cn);
    assert_string_equal(cn, "agent-port-one");

    emu live;
    const char *run[] = {"--agents", "2", "--duration", "8", "--calls-per-sec", "200", "--flush-interval", "100",
                         "--tls", "--ca", pem("ca.pem"), "--cert", pem("ns0.pem"), "--key", pem("ns0.key"), NULL};
    emu_start(&live, &s, s.tls_port, run);
    wait_log(&s, "(service orders-service) connected");

    sh("cp srv2.pem cur.pem.new && cp srv2.key cur.key.new && mv cur.pem.new cur.pem && mv cur.key.new cur.key");
    kill(s.pid, SIGHUP);
    wait_log(&s, "agent TLS certificates reloaded (CN=agent-port-two");
    server_cn(s.tls_port, ctx, cn, sizeof cn);
    assert_string_equal(cn, "agent-port-two");

    /* a broken file: logged, the last good certificate stays */
    sh("echo 'not a certificate' > cur.pem");
    kill(s.pid, SIGHUP);
    wait_log(&s, "agent TLS certificates not reloaded, keeping the old ones");
    server_cn(s.tls_port, ctx, cn, sizeof cn);
    assert_string_equal(cn, "agent-port-two");
    sh("cp srv1.pem cur.pem && cp srv1.key cur.key");

    if (!emu_running(&live)) print_message("note: the live agents ended before the reloads were done\n");
    emu_wait(&live, &s); /* the connections made before the reloads streamed to the end */
    expect_clean(&live, &s, -1);
    long long sent = sum_int(&live, "calls_sent");
    emu_free(&live);
    cp_tls_ctx_free(ctx);
    server_stop(&s);
    assert_int_equal(stored_calls(&s, NULL), sent);
    server_destroy(&s);
}

/* ---- the agent's PKCS#12 keystore, with a JDK ------------------------------------------ */

/* What the profiler agent does (README "Agent TLS"): one PKCS#12 keystore from
 * TLS_KEYSTORE_PATH / TLS_KEYSTORE_PWD as key material and trust store, no host-name
 * check; it sends a 0x14 handshake and prints the 8-byte reply. */
static const char java_agent[] =
    "import java.io.*;\n"
    "import java.security.KeyStore;\n"
    "import javax.net.ssl.*;\n"
    "public class AgentTls {\n"
    "    public static void main(String[] a) throws Exception {\n"
    "        String path = System.getenv(\"TLS_KEYSTORE_PATH\"), pwd = System.getenv(\"TLS_KEYSTORE_PWD\");\n"
    "        KeyStore ks = KeyStore.getInstance(\"PKCS12\");\n"
    "        try (InputStream in = new FileInputStream(path)) { ks.load(in, pwd.toCharArray()); }\n"
    "        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());\n"
    "        kmf.init(ks, pwd.toCharArray());\n"
    "        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());\n"
    "        tmf.init(ks);\n"
    "        SSLContext ctx = SSLContext.getInstance(\"TLS\");\n"
    "        ctx.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);\n"
    "        try (SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket(a[0], Integer.parseInt(a[1]))) {\n"
    "            s.startHandshake();\n"
    "            DataOutputStream out = new DataOutputStream(s.getOutputStream());\n"
    "            out.writeByte(0x14);\n"
    "            out.writeLong(100705);\n"
    "            for (String f : new String[] {\"java-pod_1\", \"java-service\", a[2]}) {\n"
    "                byte[] b = f.getBytes(\"UTF-8\");\n"
    "                out.writeInt(b.length);\n"
    "                out.write(b);\n"
    "            }\n"
    "            out.flush();\n"
    "            long v = new DataInputStream(s.getInputStream()).readLong();\n"
    "            System.out.println(\"reply \" + v + \" \" + s.getSession().getProtocol());\n"
    "        }\n"
    "    }\n"
    "}\n";

/* Runs `java AgentTls.java 127.0.0.1 PORT NS` with the keystore; returns its exit status,
 * its output in out. */
static int run_java(int port, const char *keystore, const char *ns, cp_buf *out)
{
    char portstr[16], log[1200];
    snprintf(portstr, sizeof portstr, "%d", port);
    snprintf(log, sizeof log, "%s/java.out", certs);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (chdir(certs) != 0) _exit(126);
        setenv("TLS_KEYSTORE_PATH", keystore, 1);
        setenv("TLS_KEYSTORE_PWD", "changeit", 1);
        execlp("java", "java", "AgentTls.java", "127.0.0.1", portstr, ns, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    int64_t deadline = test_now_ms() + CLI_TIMEOUT_MS;
    while (waitpid(pid, &st, WNOHANG) != pid) {
        if (test_now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            fail_msg("java did not end within %d ms", CLI_TIMEOUT_MS);
        }
        sleep_ms(50);
    }
    cp_buf_reset(out);
    cp_read_file(log, 1 << 20, out);
    cp_buf_putc(out, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_java_keystore(void **state)
{
    (void)state;
    if (!in_path("java") || !in_path("keytool")) {
        print_message("no JDK (java, keytool): skipped\n");
        skip();
    }
    /* README "Agent TLS": the key entry with the CA in its chain, then the CA as a trusted entry */
    sh("openssl pkcs12 -export -name agent -inkey ns0.key -in ns0.pem -certfile ca.pem -passout pass:changeit "
       "-out chain-only.p12 && cp chain-only.p12 agent.p12");
    sh("keytool -importcert -noprompt -storetype PKCS12 -keystore agent.p12 -storepass changeit -alias cloudprof-ca "
       "-file ca.pem");
    FILE *f = fopen(pem("AgentTls.java"), "w");
    assert_non_null(f);
    fputs(java_agent, f);
    fclose(f);
    test_server s;
    const char *args[] = {"--agent-port", "0", "--agent-tls-port", "auto", "--tls-cert", pem("cur.pem"),
                          "--tls-key", pem("cur.key"), "--tls-client-ca", pem("ca.pem"), "--tls-namespace-from-cert",
                          "cn", NULL};
    server_start(&s, "tls-java", args);
    cp_buf out;
    cp_buf_init(&out);
    int st = run_java(s.tls_port, pem("agent.p12"), "emulated-0", &out);
    print_message("java: %s", (char *)out.data);
    if (st != 0 || !strstr((char *)out.data, "reply 100605"))
        server_fail(&s, "the Java agent was not accepted (exit %d): %s", st, (char *)out.data);
    wait_log(&s, "pod emulated-0/java-pod_1 (service java-service) connected");
    /* the CA only inside the key entry's chain: the JDK does not trust the server */
    st = run_java(s.tls_port, pem("chain-only.p12"), "emulated-0", &out);
    assert_int_not_equal(st, 0);
    assert_non_null(strstr((char *)out.data, "SSLHandshakeException"));
    cp_buf_free(&out);
    server_stop(&s);
    server_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_tls_and_mtls, servers_teardown),
        cmocka_unit_test_teardown(test_bad_peers_refused, servers_teardown),
        cmocka_unit_test_teardown(test_namespace_pinning, servers_teardown),
        cmocka_unit_test_teardown(test_sighup_reload, servers_teardown),
        cmocka_unit_test_teardown(test_java_keystore, servers_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
