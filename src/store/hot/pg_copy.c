/* pg_copy.c -- text cleaning, the PGCOPY binary encoder and the window table DDL of the
 * PostgreSQL catalog (pg_internal.h). */
#include "store/catalog/pg_internal.h"

#include <stdio.h>

/* ---- UTF-8 -------------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s[0..n) (1..4), or 0 if it is not one (or a NUL). */
static size_t utf8_seq(const uint8_t *s, size_t n)
{
    uint8_t b = s[0];
    if (b == 0) return 0;
    if (b < 0x80) return 1;
    if (b < 0xC2 || b > 0xF4) return 0; /* continuation, overlong 2-byte, above U+10FFFF */
    size_t len = b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (b == 0xE0 && s[1] < 0xA0) return 0; /* overlong 3-byte */
    if (b == 0xED && s[1] >= 0xA0) return 0; /* surrogates */
    if (b == 0xF0 && s[1] < 0x90) return 0; /* overlong 4-byte */
    if (b == 0xF4 && s[1] >= 0x90) return 0; /* above U+10FFFF */
    return len;
}

int cp_pg_text_ok(const char *s, size_t n)
{
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0;
    while (i < n) {
        if (p[i] - 1u < 0x7Fu) { /* 0x01..0x7F: the common case */
            i++;
            continue;
        }
        size_t k = utf8_seq(p + i, n - i);
        if (!k) return 0;
        i += k;
    }
    return 1;
}

int cp_pg_text_clean(cp_buf *out, const char *s, size_t n)
{
    static const uint8_t fffd[3] = {0xEF, 0xBF, 0xBD};
    const uint8_t *p = (const uint8_t *)s;
    if (cp_buf_reserve(out, 3 * n) != CP_OK) return CP_ENOMEM;
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_seq(p + i, n - i);
        if (k) {
            memcpy(out->data + out->len, p + i, k);
            out->len += k;
            i += k;
        } else {
            memcpy(out->data + out->len, fffd, 3);
            out->len += 3;
            i++;
        }
    }
    return CP_OK;
}

/* ---- PGCOPY binary ------------------------------------------------------------------------ */

const uint8_t cp_pgcopy_header[CP_PGCOPY_HEADER_LEN] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xFF, '\r', '\n', 0,
                                                        0,   0,   0,   0,   0,   0,   0,    0};
const uint8_t cp_pgcopy_trailer[2] = {0xFF, 0xFF};

int cp_pgcopy_tuple(cp_buf *b, uint16_t nfields, size_t bytes)
{
    if (cp_buf_reserve(b, 2 + bytes) != CP_OK) return CP_ENOMEM;
    b->data[b->len] = (uint8_t)(nfields >> 8);
    b->data[b->len + 1] = (uint8_t)nfields;
    b->len += 2;
    return CP_OK;
}

void cp_pgcopy_i64(cp_buf *b, int64_t v)
{
    uint8_t *p = b->data + b->len;
    cp_put_be32(p, 8);
    cp_put_be64(p + 4, (uint64_t)v);
    b->len += 12;
}

void cp_pgcopy_i32(cp_buf *b, int32_t v)
{
    uint8_t *p = b->data + b->len;
    cp_put_be32(p, 4);
    cp_put_be32(p + 4, (uint32_t)v);
    b->len += 8;
}

void cp_pgcopy_null(cp_buf *b)
{
    cp_put_be32(b->data + b->len, 0xFFFFFFFFu);
    b->len += 4;
}

void cp_pgcopy_bytes(cp_buf *b, const void *p, size_t n)
{
    cp_put_be32(b->data + b->len, (uint32_t)n);
    if (n) memcpy(b->data + b->len + 4, p, n);
    b->len += 4 + n;
}

void cp_pgcopy_text(cp_buf *b, const char *s, size_t n)
{
    if (!s) n = 0;
    if (cp_pg_text_ok(s, n)) {
        cp_pgcopy_bytes(b, s, n);
        return;
    }
    /* cleaned in place after the length word (the tuple's reservation covers 3n) */
    size_t at = b->len;
    b->len += 4;
    (void)cp_pg_text_clean(b, s, n); /* cannot fail: the space is reserved */
    cp_put_be32(b->data + at, (uint32_t)(b->len - at - 4));
}

/* Reads every pending result; returns the first failure's message in err. */
static int copy_finish(PGconn *conn, char *err, size_t errlen)
{
    int st = CP_OK;
    PGresult *r;
    while ((r = PQgetResult(conn)) != NULL) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK && st == CP_OK) {
            snprintf(err, errlen, "%s", PQresultErrorMessage(r));
            st = CP_EIO;
        }
        PQclear(r);
    }
    return st;
}

#define COPY_CHUNK (1u << 20)

int cp_pgcopy_send(PGconn *conn, const char *sql, const uint8_t *data, size_t len, char *err, size_t errlen)
{
    PGresult *r = PQexec(conn, sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        snprintf(err, errlen, "%s", PQresultErrorMessage(r));
        PQclear(r);
        (void)copy_finish(conn, err + strlen(err), errlen - strlen(err));
        return CP_EIO;
    }
    PQclear(r);
    int ok = PQputCopyData(conn, (const char *)cp_pgcopy_header, CP_PGCOPY_HEADER_LEN) == 1;
    for (size_t off = 0; ok && off < len; off += COPY_CHUNK) {
        size_t n = len - off < COPY_CHUNK ? len - off : COPY_CHUNK;
        ok = PQputCopyData(conn, (const char *)data + off, (int)n) == 1;
    }
    if (ok) ok = PQputCopyData(conn, (const char *)cp_pgcopy_trailer, 2) == 1;
    if (PQputCopyEnd(conn, ok ? NULL : "client failed to send COPY data") != 1) ok = 0;
    int st = copy_finish(conn, err, errlen);
    if (st == CP_OK && !ok) {
        snprintf(err, errlen, "%s", PQerrorMessage(conn));
        st = CP_EIO;
    }
    return st;
}

/* ---- window tables ------------------------------------------------------------------------ */

/* hot_schema.c's tables with PostgreSQL types: the same columns, names and indexes (see
 * its comment for why these indexes). id is bigint from the hot_ids sequence (not
 * SERIAL: several collectors write one table, each taking blocks of ids). The text
 * columns the API sorts on are COLLATE "C": byte order, as in SQLite, whatever the
 * database's default collation. */
int cp_pg_window_ddl(cp_buf *out, const char *s)
{
    return cp_buf_printf(
        out,
        "CREATE TABLE IF NOT EXISTS calls_%s ("
        " id bigint PRIMARY KEY,"
        " time bigint NOT NULL, cpu_time bigint NOT NULL, wait_time bigint NOT NULL,"
        " memory_used bigint NOT NULL, duration integer NOT NULL, non_blocking bigint NOT NULL,"
        " queue_wait_duration integer NOT NULL, suspend_duration integer NOT NULL, calls integer NOT NULL,"
        " transactions bigint NOT NULL, logs_generated integer NOT NULL, logs_written integer NOT NULL,"
        " file_read bigint NOT NULL, file_written bigint NOT NULL, net_read bigint NOT NULL,"
        " net_written bigint NOT NULL, namespace text COLLATE \"C\" NOT NULL,"
        " service_name text COLLATE \"C\" NOT NULL, pod_name text COLLATE \"C\" NOT NULL,"
        " restart_time bigint NOT NULL, method integer NOT NULL, params text NOT NULL,"
        " trace_file_index integer NOT NULL, buffer_offset integer NOT NULL, record_index integer NOT NULL,"
        " method_name text COLLATE \"C\" NOT NULL, thread text COLLATE \"C\" NOT NULL,"
        " error integer NOT NULL, pod_hash bigint NOT NULL, trace_reason text, trace bytea,"
        " has_sql integer NOT NULL DEFAULT 0);"
        "CREATE INDEX IF NOT EXISTS calls_%s_time ON calls_%s (time);"
        "CREATE INDEX IF NOT EXISTS calls_%s_duration ON calls_%s (duration, time DESC);"
        "CREATE INDEX IF NOT EXISTS calls_%s_pod ON calls_%s (pod_hash, time);",
        s, s, s, s, s, s, s);
}

const char cp_pg_calls_columns[] =
    "id, time, cpu_time, wait_time, memory_used, duration, non_blocking, queue_wait_duration, suspend_duration,"
    " calls, transactions, logs_generated, logs_written, file_read, file_written, net_read, net_written,"
    " namespace, service_name, pod_name, restart_time, method, params, trace_file_index, buffer_offset,"
    " record_index, method_name, thread, error, pod_hash, trace_reason, trace, has_sql";

int cp_pg_call_tuple(cp_buf *calls, const cp_call *c, int64_t id)
{
    const char *params = c->params_json ? c->params_json : "{}";
    size_t params_len = c->params_json ? c->params_json_len : 2;
    size_t reason_len = c->trace_reason ? strlen(c->trace_reason) : 0;
    size_t text = c->ns_len + c->service_len + c->pod_len + params_len + c->method_len + c->thread_len + reason_len;
    if (c->trace && c->trace_len > INT32_MAX) return CP_ELIMIT;
    size_t need = 33 * 4 + 16 * 8 + 13 * 4 + 3 * text + (c->trace ? c->trace_len : 0);
    if (cp_pgcopy_tuple(calls, CP_PG_CALLS_FIELDS, need) != CP_OK) return CP_ENOMEM;
    int64_t pod_hash = (int64_t)cp_pod_hash(c->ns, c->ns_len, c->pod, c->pod_len);
    cp_pgcopy_i64(calls, id);
    cp_pgcopy_i64(calls, c->ts_ms);
    cp_pgcopy_i64(calls, c->cpu_time);
    cp_pgcopy_i64(calls, c->wait_time);
    cp_pgcopy_i64(calls, c->memory_used);
    cp_pgcopy_i32(calls, c->duration_ms);
    cp_pgcopy_i64(calls, c->non_blocking);
    cp_pgcopy_i32(calls, c->queue_wait_ms);
    cp_pgcopy_i32(calls, c->suspend_ms);
    cp_pgcopy_i32(calls, c->calls);
    cp_pgcopy_i64(calls, c->transactions);
    cp_pgcopy_i32(calls, c->logs_generated);
    cp_pgcopy_i32(calls, c->logs_written);
    cp_pgcopy_i64(calls, c->file_read);
    cp_pgcopy_i64(calls, c->file_written);
    cp_pgcopy_i64(calls, c->net_read);
    cp_pgcopy_i64(calls, c->net_written);
    cp_pgcopy_text(calls, c->ns, c->ns_len);
    cp_pgcopy_text(calls, c->service, c->service_len);
    cp_pgcopy_text(calls, c->pod, c->pod_len);
    cp_pgcopy_i64(calls, c->restart_ms);
    cp_pgcopy_i32(calls, c->method_id);
    cp_pgcopy_text(calls, params, params_len);
    cp_pgcopy_i32(calls, c->trace_file_index);
    cp_pgcopy_i32(calls, c->buffer_offset);
    cp_pgcopy_i32(calls, c->record_index);
    cp_pgcopy_text(calls, c->method, c->method_len);
    cp_pgcopy_text(calls, c->thread, c->thread_len);
    cp_pgcopy_i32(calls, c->error ? 1 : 0);
    cp_pgcopy_i64(calls, pod_hash);
    if (c->trace_reason) cp_pgcopy_text(calls, c->trace_reason, reason_len);
    else cp_pgcopy_null(calls);
    if (c->trace) cp_pgcopy_bytes(calls, c->trace, c->trace_len);
    else cp_pgcopy_null(calls);
    cp_pgcopy_i32(calls, c->sql ? 1 : 0);
    return CP_OK;
}
