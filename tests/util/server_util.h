/* server_util.h -- helpers for the integration tests: run `cloudprof serve` as a child
 * process on a fresh data directory, talk to it over TCP like an agent, and inspect what
 * it stored (through `cloudprof raw`/`decode`, the raw tree and the SQLite catalog).
 *
 * Every helper fails the current cmocka test (fail_msg) when something it needs does not
 * happen within its timeout, so tests read as straight-line scripts. Servers that are
 * still running when a test ends (because an assertion failed half-way) are reported
 * with their log and killed by servers_teardown(), which every integration test should
 * use as its teardown. */
#ifndef CP_SERVER_UTIL_H
#define CP_SERVER_UTIL_H

#include "testutil.h"

#include <jansson.h>
#include <sys/types.h>

#define SRV_TIMEOUT_MS TEST_WAIT_MS /* default for every wait on the server (only a failure waits this long) */

/* ---- the server process ---------------------------------------------------------------- */

typedef struct test_server {
    pid_t pid;           /* 0 when not running */
    int port;            /* agent port read from the ready file */
    int http_port;       /* HTTP API port read from the ready file */
    int tls_port;        /* agent TLS port (agent_tls_port=), 0 without --agent-tls-port */
    char root[1024];     /* temporary directory holding everything below */
    char data[1100];     /* --data DIR */
    char ready[1100];    /* --ready-file FILE */
    char log[1100];      /* the server's stderr (appended across restarts) */
} test_server;

/* Starts `cloudprof serve --agent-host 127.0.0.1 --agent-port auto --http-host 127.0.0.1
 * --http-port 0 --data ROOT/data --ready-file ROOT/ready [extra...]` on a fresh temporary ROOT and waits (<= SRV_TIMEOUT_MS) for
 * the ready file. Compaction is off (--compact-every 0) unless extra says --compact-every. extra is a NULL-terminated argument list, or NULL. */
void server_start(test_server *s, const char *tag, const char *const *extra);
/* Starts the server again on the same data directory (after server_stop/server_kill). */
void server_restart(test_server *s, const char *const *extra);
/* Waits (generously: 120 s) until the recovery worker of a (re)started server has finished a
 * pass with nothing left (/api/v1/health's recovery object): before it, stream files of
 * the previous run may still be cut and their calls stored in the background. */
void server_wait_recovered(const test_server *s);
/* SIGTERM, then waits <= SRV_TIMEOUT_MS for the exit; fails the test unless the server exits with
 * status 0 in time (it is killed if it hangs). Returns the wait status. */
int server_stop(test_server *s);
/* A "Field:" of /proc/PID/status in kB (VmRSS, VmHWM, ...) of the running server; -1 if
 * it cannot be read. */
long server_status_kb(const test_server *s, const char *field);
/* SIGKILL and reap: simulates a crash. */
void server_kill(test_server *s);
/* Kills the server if it is still running and removes its temporary directory. */
void server_destroy(test_server *s);
/* Copies the server's log to stdout (used when a test fails). */
void server_print_log(const test_server *s);
/* Fails the test with a message after printing the log of s. */
void server_fail(const test_server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cmocka teardown: prints the log of, kills and removes every server the test left
 * behind (only happens when the test failed). */
int servers_teardown(void **state);

/* ---- one TCP connection ----------------------------------------------------------------- */

/* Connects to 127.0.0.1:port (TCP_NODELAY). */
int conn_open(int port);
void conn_close(int fd);
/* Writes all n bytes (blocking; fails the test on error). */
void conn_send(int fd, const void *p, size_t n);
void conn_send_buf(int fd, const cp_buf *b);
/* Reads exactly n bytes within timeout_ms; fails the test on EOF, error or timeout. */
void conn_read_exact(int fd, void *p, size_t n, int timeout_ms);
/* Reads until EOF within timeout_ms, appending everything to out; a connection reset
 * counts as EOF. Fails the test on timeout. */
void conn_read_to_eof(int fd, cp_buf *out, int timeout_ms);
/* Expects the peer to close without sending anything more. */
void conn_expect_eof(int fd, int timeout_ms);
/* Waits up to timeout_ms for readable bytes; returns how many arrived (0 = none; the
 * bytes are appended to out; -1 = EOF). Does not fail the test. */
long conn_read_for(int fd, cp_buf *out, int timeout_ms);

/* ---- agent commands on a connection ------------------------------------------------------ */

/* Sends a 0x14 handshake and returns the 8-byte reply as an int64. */
int64_t agent_handshake(int fd, int64_t version, const char *pod, const char *service, const char *ns);
/* Sends a 0x15 INIT and reads the 36-byte reply; fails unless the handle is non-null. */
void agent_init(int fd, const char *stream, int32_t seq, int32_t reset, uint8_t reply[36]);
/* Sends p[0..n) as RCV_DATA payloads of at most chunk (<= 1024) bytes, then one 0x11, and
 * reads the acks: all must be 0x00. Returns the number of acks (payloads + 1). */
size_t agent_send_stream(int fd, const uint8_t handle[16], const uint8_t *p, size_t n, size_t chunk);
/* Appends RCV_DATA commands (payloads of at most chunk bytes) to b; returns their count. */
size_t agent_put_data(cp_buf *b, const uint8_t handle[16], const uint8_t *p, size_t n, size_t chunk);

/* ---- the cloudprof CLI -------------------------------------------------------------------- */

/* Runs CLOUDPROF_BIN with argv (NULL-terminated, without argv[0]); stdout goes to out,
 * stderr to err (either may be NULL to discard). Returns the exit status (128+signal if
 * killed). Fails the test if it runs for more than CLI_TIMEOUT_MS (a hang guard). */
#define CLI_TIMEOUT_MS 180000
int cli_run(cp_buf *out, cp_buf *err, const char *const *argv);
/* `cloudprof emulate --target 127.0.0.1:PORT --json --quiet [extra...]` against s (extra
 * NULL-terminated); fails the test unless it exits 0. Returns its summary, the last line
 * of its stdout, parsed (json_decref it). */
json_t *cli_emulate(const test_server *s, const char *const *extra);
/* `cloudprof emulate` in the background, for tests that watch the server while it runs:
 * emulate_start spawns `cloudprof emulate --target 127.0.0.1:PORT --json --quiet [extra...]`
 * (extra NULL-terminated) with its stdout and stderr in files under s->root; the child is
 * killed if the test process dies. */
typedef struct bg_emulator {
    pid_t pid;      /* 0 once reaped */
    int status;     /* exit status once reaped (128+signal if killed) */
    char out[1200]; /* its stdout: the JSON summary is the last line */
    char err[1200]; /* its stderr */
} bg_emulator;
void emulate_start(bg_emulator *e, const test_server *s, const char *const *extra);
/* 1 once the emulator has exited (reaped; e->status set), 0 while it runs. */
int emulate_done(bg_emulator *e);
/* Waits <= timeout_ms for the exit (kills it and fails the test after), then returns its
 * summary parsed (json_decref it); fails the test if there is none. Does not judge the
 * exit status: the caller asserts on e->status. */
json_t *emulate_finish(bg_emulator *e, const test_server *s, int timeout_ms);
/* `cloudprof raw --data DIR --namespace NS --pod POD --stream NAME --index N` -> out. */
void raw_fetch(const test_server *s, const char *ns, const char *pod, const char *stream, int index, cp_buf *out);
/* The same with a torn tail the server cut off (cloudprof raw --torn): every byte the
 * agent sent for the file. */
void raw_fetch_sent(const test_server *s, const char *ns, const char *pod, const char *stream, int index, cp_buf *out);
/* /api/v1/calls/stats's total for [from, to). */
long long api_calls_total(const test_server *s, int64_t from, int64_t to);

typedef struct raw_entry {
    char ns[256];
    char pod[256];
    char restart[32];
    char stream[64];
    int index;
    long long bytes;
} raw_entry;

/* `cloudprof raw --data DIR --list`, parsed (header line skipped). Returns the count;
 * *entries is malloc'ed. */
size_t raw_list(const test_server *s, raw_entry **entries);
/* Every calls record in the raw log: each stored calls file decoded (whole records only,
 * as decode_file counts them), summed. */
long long raw_calls_total(const test_server *s);
/* The raw log checked: every stored file of a decoded stream decodes whole (else the test
 * fails); stored[k] (if not NULL) = bytes of stream raw_stream_names[k], files plus the torn
 * tails cut off beside them. Returns the calls records. */
#define RAW_STREAMS 8
extern const char *const raw_stream_names[RAW_STREAMS];
long long raw_check(const test_server *s, long long stored[RAW_STREAMS]);
/* Number of list entries of one pod. */
size_t raw_count_pod(const raw_entry *e, size_t n, const char *pod);

/* Path of a stored stream file in the raw tree (names escaped as the server does). */
void raw_tree_path(const test_server *s, const char *ns, const char *pod, const char *restart, const char *stream,
                   int index, char *out, size_t outlen);

/* ---- checking stored bytes ----------------------------------------------------------------- */

/* Decodes a whole stream file with cp_dec. Returns cp_dec_finish()'s status (CP_OK: the
 * file decodes cleanly and ends on a record boundary) and the number of records as
 * `cloudprof decode` prints them (for a trace: events); the error text goes to why (may
 * be NULL). */
int decode_file(const char *stream, const uint8_t *p, size_t n, uint64_t *records, char *why, size_t whylen);
/* Writes bytes to ROOT/name and runs `cloudprof decode KIND FILE`; returns the exit
 * status and the number of output lines. */
int cli_decode(const test_server *s, const char *kind, const uint8_t *p, size_t n, size_t *lines);
/* Asserts a == b with a readable message (first difference). */
void assert_bytes_equal(const char *what, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* ---- the catalog --------------------------------------------------------------------------- */

/* SELECT count(*) with one text parameter (bound to ?1) on DIR/catalog.db, read-only. */
long long catalog_count(const test_server *s, const char *sql, const char *arg);
/* Every word of a dictionary stream file is in the catalog for pod at its id (0-based
 * arrival position); returns the number of words checked. (For a pod with one restart.) */
size_t catalog_check_dictionary(const test_server *s, const char *pod, const uint8_t *p, size_t n);
/* Every record of a params stream file is in the catalog for pod with the same flags,
 * order and signature; returns the number of records checked. */
size_t catalog_check_params(const test_server *s, const char *pod, const uint8_t *p, size_t n);

#endif
