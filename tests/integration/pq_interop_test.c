/* pq_interop_test.c -- Parquet interoperability (parquet.md §11): every file cloudprof's
 * writer produces is read back by two independent readers, DuckDB (the strict gate) and
 * hyparquet (pure JS), through tests/tools/pqread.mjs, and must give exactly the rows we
 * wrote; DuckDB's view of the schema, the chunk metadata (codec, encodings, statistics)
 * and SQL aggregates must match what the C side knows. The other way round, DuckDB
 * writes files (v1 and V2 pages, zstd / gzip / none) that cp_pq_reader must read.
 *
 * Needs node and tests/tools/node_modules (scripts/node-tools.sh installs both); without
 * them the suite prints why and exits 77 (skipped).
 *
 * Canonical rows (pqread.mjs): integers and timestamps (epoch ms) as decimal strings,
 * binary as lowercase hex, maps as [[key, value], ...] in file order. The expected rows
 * below are built in that form from the generated data, not from the writer's input rows,
 * so cp_cold_call_row (cp_call -> row) is checked too. */
#include "testutil.h"
#include "model/cp_model.h"
#include "parquet/cp_parquet.h"
#include "store/cp_cold.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_REPORT 12 /* mismatches printed per check */

static char g_tools[4096];   /* tests/tools */
static char *g_tmp;          /* this run's temporary directory */
static int g_checks_ok, g_checks_bad;
static char g_summary[16384];
static size_t g_summary_len;
static unsigned g_node_calls;
static double g_node_secs;

/* ---- reporting ------------------------------------------------------------------------ */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("pq_interop: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
}

/* One mismatch of the current check: printed (the first MAX_REPORT), counted. */
static void bad(size_t *nbad, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(size_t *nbad, const char *fmt, ...)
{
    if (*nbad < MAX_REPORT) {
        va_list ap;
        va_start(ap, fmt);
        fputs("pq_interop:   MISMATCH ", stdout);
        vprintf(fmt, ap);
        fputc('\n', stdout);
        va_end(ap);
        fflush(stdout);
    } else if (*nbad == MAX_REPORT) {
        say("  (further mismatches of this check not shown)");
    }
    (*nbad)++;
}

/* Closes a check: one line in the output and in the final summary. */
static size_t check_done(const char *name, size_t nbad, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static size_t check_done(const char *name, size_t nbad, const char *fmt, ...)
{
    char detail[512] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    char line[1024];
    if (nbad == 0)
        snprintf(line, sizeof line, "[ok]   %s: %s", name, detail);
    else
        snprintf(line, sizeof line, "[FAIL] %s: %zu mismatch(es); %s", name, nbad, detail);
    say("%s", line);
    if (nbad) g_checks_bad++;
    else g_checks_ok++;
    int n = snprintf(g_summary + g_summary_len, sizeof g_summary - g_summary_len, "  %s\n", line);
    if (n > 0 && (size_t)n < sizeof g_summary - g_summary_len) g_summary_len += (size_t)n;
    return nbad;
}

/* A json value as short text for messages (caller frees). */
static char *jtext(const json_t *v)
{
    if (!v) return strdup("<absent>");
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!s) return strdup("<?>");
    if (strlen(s) > 240) strcpy(s + 200, "...(truncated)");
    return s;
}

/* ---- canonical JSON values -------------------------------------------------------------- */

static json_t *js_i64(int64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%" PRId64, v);
    return json_string(b);
}

static json_t *js_u64(uint64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%" PRIu64, v);
    return json_string(b);
}

static json_t *js_hex(const uint8_t *p, size_t n)
{
    static const char hx[] = "0123456789abcdef";
    char *s = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = hx[p[i] >> 4];
        s[2 * i + 1] = hx[p[i] & 15];
    }
    s[2 * n] = 0;
    json_t *j = json_stringn(s, 2 * n);
    free(s);
    return j;
}

/* A UTF-8 string; text that is not valid UTF-8 becomes a marker that never matches. */
static json_t *js_str(const void *p, size_t n)
{
    json_t *j = json_stringn(n ? (const char *)p : "", n);
    return j ? j : json_string("<invalid UTF-8>");
}

/* ---- running pqread.mjs ------------------------------------------------------------------- */

/* pqread.mjs runs as one `node pqread.mjs serve` process for the whole suite (DuckDB loads
 * once): a request is a JSON array of arguments on a line, the answer
 * "PQREAD <status> <bytes>\n" and that many bytes of output. */
static pid_t g_node_pid = -1;
static int g_node_in = -1, g_node_out = -1;

static void node_stop(void)
{
    if (g_node_pid < 0) return;
    close(g_node_in);
    close(g_node_out);
    int status;
    while (waitpid(g_node_pid, &status, 0) < 0 && errno == EINTR) {
    }
    g_node_pid = -1;
    g_node_in = g_node_out = -1;
}

static void node_start(void)
{
    char script[4200];
    snprintf(script, sizeof script, "%s/pqread.mjs", g_tools);
    int to[2], from[2];
    assert_int_equal(pipe(to), 0);
    assert_int_equal(pipe(from), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]);
        close(to[1]);
        close(from[0]);
        close(from[1]);
        execlp("node", "node", script, "serve", (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    g_node_pid = pid;
    g_node_in = to[1];
    g_node_out = from[0];
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int read_all(int fd, cp_buf *out, size_t n)
{
    char tmp[1 << 16];
    while (n) {
        ssize_t k = read(fd, tmp, n < sizeof tmp ? n : sizeof tmp);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        if (cp_buf_append(out, tmp, (size_t)k) != CP_OK) return -1;
        n -= (size_t)k;
    }
    return 0;
}

/* `node pqread.mjs ARGS...`: the output appended to out; returns the exit status (0 ok),
 * -1 when node is not running or died (it is restarted on the next call). */
static int pqread(cp_buf *out, const char *const *args)
{
    if (g_node_pid < 0) node_start();
    json_t *a = json_array();
    for (size_t i = 0; args[i]; i++) json_array_append_new(a, json_string(args[i]));
    char *line = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    assert_non_null(line);
    uint64_t t0 = cp_mono_ns();
    int rc = -1;
    char hdr[64];
    size_t hl = 0;
    if (write_all(g_node_in, line, strlen(line)) == 0 && write_all(g_node_in, "\n", 1) == 0) {
        while (hl < sizeof hdr - 1) { /* the header line */
            ssize_t k = read(g_node_out, hdr + hl, 1);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) break;
            if (hdr[hl++] == '\n') break;
        }
        hdr[hl] = 0;
        int status;
        size_t len;
        if (sscanf(hdr, "PQREAD %d %zu", &status, &len) == 2 && read_all(g_node_out, out, len) == 0) rc = status;
    }
    free(line);
    if (rc < 0) {
        say("pqread.mjs serve stopped answering (header '%s'): restarting it", hdr);
        node_stop();
    }
    g_node_calls++;
    g_node_secs += (double)(cp_mono_ns() - t0) / 1e9;
    return rc;
}

/* Parses JSON Lines (the buffer is split in place). NULL entries for lines that fail. */
static json_t **parse_jsonl(cp_buf *b, size_t *n)
{
    cp_buf_putc(b, 0);
    char **lines;
    *n = split_lines((char *)b->data, b->len - 1, &lines);
    json_t **v = calloc(*n + 1, sizeof *v);
    for (size_t i = 0; i < *n; i++) {
        json_error_t je;
        v[i] = json_loads(lines[i], JSON_ALLOW_NUL, &je);
    }
    free(lines);
    return v;
}

static void free_rows(json_t **v, size_t n)
{
    if (!v) return;
    for (size_t i = 0; i < n; i++) json_decref(v[i]);
    free(v);
}

/* Compares parsed rows with the expected ones, column by column. */
static void compare_rows(const char *what, json_t **got, size_t ngot, json_t *const *exp, size_t nexp,
                         const char *const *names, size_t ncols, size_t *nbad)
{
    if (ngot != nexp) bad(nbad, "%s: %zu rows, expected %zu", what, ngot, nexp);
    size_t n = ngot < nexp ? ngot : nexp;
    for (size_t r = 0; r < n; r++) {
        if (!json_is_object(got[r])) {
            bad(nbad, "%s: row %zu is not a JSON object", what, r);
            continue;
        }
        if (json_object_size(got[r]) != ncols)
            bad(nbad, "%s: row %zu has %zu columns, expected %zu", what, r, json_object_size(got[r]), ncols);
        for (size_t c = 0; c < ncols; c++) {
            json_t *g = json_object_get(got[r], names[c]);
            json_t *e = json_object_get(exp[r], names[c]);
            if (g && e && json_equal(g, e)) continue;
            char *gs = jtext(g), *es = jtext(e);
            bad(nbad, "%s: row %zu column %s: expected %s, got %s", what, r, names[c], es, gs);
            free(gs);
            free(es);
        }
    }
}

/* The first line where two outputs differ, for the report. */
static void report_first_diff(const cp_buf *a, const cp_buf *b, size_t *nbad, const char *label)
{
    size_t i = 0, line = 0, start = 0;
    size_t n = a->len < b->len ? a->len : b->len;
    for (; i < n && a->data[i] == b->data[i]; i++)
        if (a->data[i] == '\n') {
            line++;
            start = i + 1;
        }
    char sa[201] = "", sb[201] = "";
    snprintf(sa, sizeof sa, "%.*s", (int)(a->len - start < 200 ? a->len - start : 200), (const char *)a->data + start);
    snprintf(sb, sizeof sb, "%.*s", (int)(b->len - start < 200 ? b->len - start : 200), (const char *)b->data + start);
    for (char *p = sa; *p; p++)
        if (*p == '\n') *p = 0;
    for (char *p = sb; *p; p++)
        if (*p == '\n') *p = 0;
    bad(nbad, "%s: duckdb and hyparquet output differ (%zu vs %zu bytes) from row %zu: duckdb %s | hyparquet %s",
        label, a->len, b->len, line, sa, sb);
}

/* The core check: both readers print byte-identical rows, equal to the expected ones. */
static size_t check_rows_both(const char *label, const char *path, json_t *const *exp, size_t nexp,
                              const char *const *names, size_t ncols)
{
    size_t nbad = 0;
    cp_buf d, h;
    cp_buf_init(&d);
    cp_buf_init(&h);
    int rd = pqread(&d, (const char *[]){"duckdb", "rows", path, NULL});
    int rh = pqread(&h, (const char *[]){"hyparquet", "rows", path, NULL});
    if (rd != 0) bad(&nbad, "%s: DuckDB could not read the file (exit %d, message above)", label, rd);
    if (rh != 0) bad(&nbad, "%s: hyparquet could not read the file (exit %d, message above)", label, rh);
    size_t bytes = d.len;
    int same = d.len == h.len && (d.len == 0 || memcmp(d.data, h.data, d.len) == 0);
    if (!same && rd == 0 && rh == 0) report_first_diff(&d, &h, &nbad, label);
    char what[256];
    if (rd == 0) {
        size_t n;
        json_t **rows = parse_jsonl(&d, &n);
        snprintf(what, sizeof what, "%s [duckdb]", label);
        compare_rows(what, rows, n, exp, nexp, names, ncols, &nbad);
        free_rows(rows, n);
    }
    if (rh == 0 && (!same || rd != 0)) {
        size_t n;
        json_t **rows = parse_jsonl(&h, &n);
        snprintf(what, sizeof what, "%s [hyparquet]", label);
        compare_rows(what, rows, n, exp, nexp, names, ncols, &nbad);
        free_rows(rows, n);
    }
    cp_buf_free(&d);
    cp_buf_free(&h);
    char name[256];
    snprintf(name, sizeof name, "%s: rows via duckdb + hyparquet", label);
    return check_done(name, nbad, "%zu rows x %zu columns equal to what was written, outputs %s (%zu bytes)", nexp,
                      ncols, same ? "byte-identical" : "DIFFERENT", bytes);
}

/* ---- files -------------------------------------------------------------------------------- */

static int file_sink(void *ud, const void *p, size_t n)
{
    return fwrite(p, 1, n, (FILE *)ud) == n ? 0 : CP_EIO;
}

static int file_pread(void *ud, void *dst, size_t n, uint64_t off)
{
    int fd = *(int *)ud;
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, (char *)dst + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return CP_EIO;
        got += (size_t)k;
    }
    return CP_OK;
}

static char *tmp_path(const char *name)
{
    char *p = malloc(strlen(g_tmp) + strlen(name) + 2);
    sprintf(p, "%s/%s", g_tmp, name);
    return p;
}

/* Row source for write_file: fills row[] for row i; returns CP_OK. */
typedef int (*row_fn)(void *ud, size_t i, cp_pq_value *row);

static void write_file(const char *path, const cp_pq_column *cols, size_t ncols, const cp_pq_writer_opts *opts,
                       size_t nrows, row_fn fn, void *ud)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    cp_pq_writer *w = NULL;
    char err[256] = "";
    int st = cp_pq_writer_new(cols, ncols, opts, file_sink, f, &w, err, sizeof err);
    if (st != CP_OK) fail_msg("cp_pq_writer_new(%s): %s: %s", path, cp_strstatus(st), err);
    cp_pq_value *row = calloc(ncols, sizeof *row);
    for (size_t i = 0; i < nrows; i++) {
        memset(row, 0, ncols * sizeof *row);
        st = fn(ud, i, row);
        if (st != CP_OK) fail_msg("%s: building row %zu: %s", path, i, cp_strstatus(st));
        st = cp_pq_writer_add(w, row);
        if (st != CP_OK) fail_msg("cp_pq_writer_add(%s) row %zu: %s: %s", path, i, cp_strstatus(st), cp_pq_writer_errmsg(w));
    }
    st = cp_pq_writer_finish(w);
    if (st != CP_OK) fail_msg("cp_pq_writer_finish(%s): %s: %s", path, cp_strstatus(st), cp_pq_writer_errmsg(w));
    assert_int_equal(cp_pq_writer_rows(w), nrows);
    cp_pq_writer_free(w);
    free(row);
    assert_int_equal(fclose(f), 0);
}

/* ---- our reader, in the canonical form ---------------------------------------------------- */

typedef struct cpread {
    int ok;                               /* the file opened */
    char err[256];
    size_t nrows, ncols, nrg;
    json_t **rows;
    cp_pq_column cols[CP_PQ_MAX_COLUMNS]; /* names strdup'ed */
    char *colerr[CP_PQ_MAX_COLUMNS];      /* first read error of a column */
} cpread;

static json_t *cp_value_json(const cp_pq_column *col, const cp_pq_column_data *d, size_t i)
{
    if (d->nulls && d->nulls[i]) return json_null();
    switch (col->type) {
    case CP_PQ_I32:
    case CP_PQ_I64:
    case CP_PQ_TS_MS: return js_i64(d->i[i]);
    case CP_PQ_U64: return js_u64((uint64_t)d->i[i]);
    case CP_PQ_BOOL: return json_boolean(d->i[i]);
    case CP_PQ_STRING: return js_str(d->b[i].p, d->b[i].len);
    case CP_PQ_BINARY: return js_hex(d->b[i].p, d->b[i].len);
    case CP_PQ_MAP_STR_LIST:
    case CP_PQ_MAP_STR_STR: {
        json_t *a = json_array();
        for (size_t k = d->map_off[i]; k < d->map_off[i + 1]; k++) {
            const cp_pq_map_entry *e = &d->map_entries[k];
            json_t *v;
            if (col->type == CP_PQ_MAP_STR_STR) {
                v = e->values && e->nvalues ? js_str(e->values[0].p, e->values[0].len) : json_null();
            } else if (!e->values && e->nvalues == 0) {
                v = json_null(); /* a null list */
            } else {
                v = json_array();
                for (size_t j = 0; j < e->nvalues; j++)
                    json_array_append_new(v, e->values[j].p ? js_str(e->values[j].p, e->values[j].len) : json_null());
            }
            json_array_append_new(a, json_pack("[oo]", js_str(e->key.p, e->key.len), v));
        }
        return a;
    }
    }
    return json_string("<unsupported column type>");
}

static void cpread_free(cpread *c)
{
    free_rows(c->rows, c->nrows);
    for (size_t i = 0; i < CP_PQ_MAX_COLUMNS; i++) {
        free(c->colerr[i]);
        free((char *)c->cols[i].name);
    }
    memset(c, 0, sizeof *c);
}

/* Reads a whole file with cp_pq_reader. A column that fails to decode gets the error
 * text in colerr and a marker string in its cells; the other columns go on. */
static void cpread_file(const char *path, cpread *out)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    cp_pq_reader *r = NULL;
    int st = cp_pq_reader_open(file_pread, &fd, (uint64_t)sb.st_size, &r, out->err, sizeof out->err);
    if (st != CP_OK) {
        if (!out->err[0]) snprintf(out->err, sizeof out->err, "%s", cp_strstatus(st));
        close(fd);
        return;
    }
    out->ok = 1;
    out->nrows = (size_t)cp_pq_reader_rows(r);
    out->ncols = cp_pq_reader_columns(r);
    out->nrg = cp_pq_reader_row_groups(r);
    assert_true(out->ncols <= CP_PQ_MAX_COLUMNS);
    for (size_t c = 0; c < out->ncols; c++) {
        out->cols[c] = *cp_pq_reader_column(r, c);
        out->cols[c].name = strdup(out->cols[c].name);
    }
    out->rows = calloc(out->nrows + 1, sizeof *out->rows);
    for (size_t i = 0; i < out->nrows; i++) out->rows[i] = json_object();
    size_t base = 0;
    for (size_t g = 0; g < out->nrg; g++) {
        size_t n = (size_t)cp_pq_reader_row_group_rows(r, g);
        if (base + n > out->nrows) {
            snprintf(out->err, sizeof out->err, "row group %zu: rows beyond the file's count", g);
            out->ok = 0;
            break;
        }
        for (size_t c = 0; c < out->ncols; c++) {
            const cp_pq_column *col = &out->cols[c];
            cp_pq_column_data d;
            memset(&d, 0, sizeof d);
            st = col->type ? cp_pq_reader_read(r, g, c, &d) : CP_EINVAL;
            if (st == CP_OK && d.nrows != n) st = CP_ECORRUPT;
            if (st != CP_OK) {
                if (!out->colerr[c]) {
                    char e[512];
                    snprintf(e, sizeof e, "row group %zu: %s: %s", g, cp_strstatus(st),
                             col->type ? cp_pq_reader_errmsg(r) : "type not recognised");
                    out->colerr[c] = strdup(e);
                }
                for (size_t i = 0; i < n; i++)
                    json_object_set_new(out->rows[base + i], col->name, json_string("<read error>"));
                continue;
            }
            for (size_t i = 0; i < n; i++) json_object_set_new(out->rows[base + i], col->name, cp_value_json(col, &d, i));
        }
        cp_pq_reader_reset_arena(r);
        base += n;
    }
    cp_pq_reader_free(r);
    close(fd);
}

/* Reads our own file back with cp_pq_reader: same rows as the expected ones. */
static size_t check_rows_cp(const char *label, const char *path, const cp_pq_column *schema, size_t ncols,
                            json_t *const *exp, size_t nexp, const char *const *names)
{
    size_t nbad = 0;
    cpread c;
    cpread_file(path, &c);
    if (!c.ok) {
        bad(&nbad, "%s: cp_pq_reader: %s", label, c.err);
    } else {
        if (c.ncols != ncols) bad(&nbad, "%s: cp_pq_reader sees %zu columns, expected %zu", label, c.ncols, ncols);
        for (size_t i = 0; i < ncols && i < c.ncols; i++)
            if (strcmp(c.cols[i].name, schema[i].name) != 0 || c.cols[i].type != schema[i].type)
                bad(&nbad, "%s: cp_pq_reader column %zu is %s type %d, expected %s type %d", label, i, c.cols[i].name,
                    (int)c.cols[i].type, schema[i].name, (int)schema[i].type);
        for (size_t i = 0; i < c.ncols; i++)
            if (c.colerr[i]) bad(&nbad, "%s: cp_pq_reader column %s: %s", label, c.cols[i].name, c.colerr[i]);
        char what[256];
        snprintf(what, sizeof what, "%s [cp_pq_reader]", label);
        compare_rows(what, c.rows, c.nrows, exp, nexp, names, ncols, &nbad);
    }
    char name[256];
    snprintf(name, sizeof name, "%s: rows via cp_pq_reader", label);
    size_t nrg = c.nrg;
    cpread_free(&c);
    return check_done(name, nbad, "%zu rows in %zu row group(s) read back", nexp, nrg);
}

/* ---- schema and metadata as DuckDB sees them ---------------------------------------------- */

static const char *jstr(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int streq_null(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

/* One expected parquet_schema() row. conv/logical: NULL = must be null; "?x|y" = null, x or y. */
typedef struct sch_row {
    const char *name, *type, *rep, *conv, *logical;
    int nchild;
} sch_row;

static int sch_match(const char *want, const char *got)
{
    if (want && want[0] == '?') {
        if (!got) return 1;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", want + 1);
        for (char *tok = strtok(buf, "|"); tok; tok = strtok(NULL, "|"))
            if (strcmp(tok, got) == 0) return 1;
        return 0;
    }
    return streq_null(want, got);
}

/* DuckDB 1.5 prints IntType's i8 bitWidth as a character: 64 is "@", 32 is " " */
#define INT_LOGICAL(bits, ch, sgn)                                                                                   \
    "?IntType(bitWidth=" bits ", isSigned=" sgn ")|IntType(bitWidth=" ch ", isSigned=" sgn ")"
#define TS_LOGICAL "TimestampType(isAdjustedToUTC=1, unit=TimeUnit(MILLIS=MilliSeconds(), MICROS=<null>, NANOS=<null>))"

/* The parquet_schema() rows a cloudprof schema must produce (§3). */
static size_t expected_schema(const cp_pq_column *cols, size_t ncols, sch_row *out)
{
    size_t n = 0;
    for (size_t i = 0; i < ncols; i++) {
        const cp_pq_column *c = &cols[i];
        const char *rep = c->optional ? "OPTIONAL" : "REQUIRED";
        switch (c->type) {
        case CP_PQ_I32:
            out[n++] = (sch_row){c->name, "INT32", rep, "?INT_32", INT_LOGICAL("32", " ", "1"), -1};
            break;
        case CP_PQ_I64:
            out[n++] = (sch_row){c->name, "INT64", rep, "?INT_64", INT_LOGICAL("64", "@", "1"), -1};
            break;
        case CP_PQ_U64:
            out[n++] = (sch_row){c->name, "INT64", rep, "UINT_64", INT_LOGICAL("64", "@", "0"), -1};
            break;
        case CP_PQ_TS_MS: out[n++] = (sch_row){c->name, "INT64", rep, "TIMESTAMP_MILLIS", TS_LOGICAL, -1}; break;
        case CP_PQ_BOOL: out[n++] = (sch_row){c->name, "BOOLEAN", rep, NULL, NULL, -1}; break;
        case CP_PQ_STRING: out[n++] = (sch_row){c->name, "BYTE_ARRAY", rep, "UTF8", "StringType()", -1}; break;
        case CP_PQ_BINARY: out[n++] = (sch_row){c->name, "BYTE_ARRAY", rep, NULL, NULL, -1}; break;
        case CP_PQ_MAP_STR_LIST:
            out[n++] = (sch_row){c->name, NULL, "OPTIONAL", "MAP", "MapType()", 1};
            out[n++] = (sch_row){"key_value", NULL, "REPEATED", NULL, NULL, 2};
            out[n++] = (sch_row){"key", "BYTE_ARRAY", "REQUIRED", "UTF8", "StringType()", -1};
            out[n++] = (sch_row){"value", NULL, "OPTIONAL", "LIST", "ListType()", 1};
            out[n++] = (sch_row){"list", NULL, "REPEATED", NULL, NULL, 1};
            out[n++] = (sch_row){"element", "BYTE_ARRAY", "OPTIONAL", "UTF8", "StringType()", -1};
            break;
        case CP_PQ_MAP_STR_STR:
            out[n++] = (sch_row){c->name, NULL, "OPTIONAL", "MAP", "MapType()", 1};
            out[n++] = (sch_row){"key_value", NULL, "REPEATED", NULL, NULL, 2};
            out[n++] = (sch_row){"key", "BYTE_ARRAY", "REQUIRED", "UTF8", "StringType()", -1};
            out[n++] = (sch_row){"value", "BYTE_ARRAY", "OPTIONAL", "UTF8", "StringType()", -1};
            break;
        }
    }
    return n;
}

/* `duckdb schema`: names, physical types, repetition, converted and logical types. */
static size_t check_schema(const char *label, const char *path, const cp_pq_column *cols, size_t ncols)
{
    size_t nbad = 0;
    sch_row *want = calloc(ncols * 6 + 1, sizeof *want);
    size_t nwant = expected_schema(cols, ncols, want);
    cp_buf out;
    cp_buf_init(&out);
    int rc = pqread(&out, (const char *[]){"duckdb", "schema", path, NULL});
    if (rc != 0) bad(&nbad, "%s: duckdb schema failed (exit %d)", label, rc);
    size_t n = 0;
    json_t **rows = rc == 0 ? parse_jsonl(&out, &n) : NULL;
    if (rc == 0 && n != nwant + 1) bad(&nbad, "%s: %zu schema elements, expected %zu", label, n, nwant + 1);
    if (n > 0) {
        const char *nc = jstr(rows[0], "num_children");
        char want_nc[16];
        snprintf(want_nc, sizeof want_nc, "%zu", ncols);
        if (!streq_null(nc, want_nc)) bad(&nbad, "%s: root num_children %s, expected %zu", label, nc ? nc : "null", ncols);
        if (jstr(rows[0], "type")) bad(&nbad, "%s: the root has a type (%s)", label, jstr(rows[0], "type"));
    }
    for (size_t i = 0; i < nwant && i + 1 < n; i++) {
        json_t *g = rows[i + 1];
        const sch_row *w = &want[i];
        const char *fields[][3] = {
            {"name", w->name, jstr(g, "name")},
            {"type", w->type, jstr(g, "type")},
            {"repetition_type", w->rep, jstr(g, "repetition_type")},
            {"converted_type", w->conv, jstr(g, "converted_type")},
            {"logical_type", w->logical, jstr(g, "logical_type")},
        };
        for (size_t f = 0; f < CP_ARRAY_LEN(fields); f++)
            if (!sch_match(fields[f][1], fields[f][2]))
                bad(&nbad, "%s: schema element %zu (%s) %s: expected %s, got %s", label, i + 1, w->name, fields[f][0],
                    fields[f][1] ? fields[f][1] : "null", fields[f][2] ? fields[f][2] : "null");
        char nc[16] = "";
        if (w->nchild >= 0) snprintf(nc, sizeof nc, "%d", w->nchild);
        const char *gnc = jstr(g, "num_children");
        if (!streq_null(w->nchild >= 0 ? nc : NULL, gnc))
            bad(&nbad, "%s: schema element %zu (%s) num_children: expected %s, got %s", label, i + 1, w->name,
                w->nchild >= 0 ? nc : "null", gnc ? gnc : "null");
    }
    free_rows(rows, n);
    cp_buf_free(&out);
    free(want);
    char name[256];
    snprintf(name, sizeof name, "%s: duckdb parquet_schema", label);
    return check_done(name, nbad, "%zu elements: names, physical/converted/logical types, repetition, children", nwant + 1);
}

/* Leaves of a schema in column order: the chunk index of parquet_metadata. */
typedef struct leaf {
    size_t col;
    int part;          /* maps: 0 = key, 1 = element/value */
} leaf;

static size_t leaves_of(const cp_pq_column *cols, size_t ncols, leaf *out)
{
    size_t n = 0;
    for (size_t c = 0; c < ncols; c++) {
        out[n++] = (leaf){c, 0};
        if (cols[c].type == CP_PQ_MAP_STR_LIST || cols[c].type == CP_PQ_MAP_STR_STR) out[n++] = (leaf){c, 1};
    }
    return n;
}

/* What the C side knows about one chunk (filled by the caller per row group and leaf). */
typedef struct chunk_want {
    int has_minmax;         /* compare stats_min_value / stats_max_value as text */
    char min[160], max[160];
    int64_t null_count;     /* -1: do not check */
    int64_t num_values;     /* -1: do not check */
} chunk_want;

typedef void (*chunk_want_fn)(void *ud, size_t rg, const leaf *lf, chunk_want *w);

/* `duckdb meta`: file rows and row groups, created_by, codec, dictionary encodings,
 * num_values and statistics of every chunk. */
static size_t check_meta(const char *label, const char *path, const cp_pq_column *cols, size_t ncols, size_t nrows,
                         const size_t *rg_rows, size_t nrg, const char *codec, int check_dict, chunk_want_fn fn,
                         void *ud)
{
    size_t nbad = 0;
    cp_buf out;
    cp_buf_init(&out);
    int rc = pqread(&out, (const char *[]){"duckdb", "meta", path, NULL});
    json_error_t je;
    json_t *doc = rc == 0 ? json_loadb((const char *)out.data, out.len, 0, &je) : NULL;
    if (!doc) bad(&nbad, "%s: duckdb meta failed (exit %d)", label, rc);
    leaf lv[CP_PQ_MAX_COLUMNS * 2];
    size_t nleaves = leaves_of(cols, ncols, lv);
    size_t nchunks = 0, ndict = 0;
    if (doc) {
        json_t *f = json_object_get(doc, "file");
        char want[32];
        snprintf(want, sizeof want, "%zu", nrows);
        if (!streq_null(jstr(f, "num_rows"), want))
            bad(&nbad, "%s: num_rows %s, expected %s", label, jstr(f, "num_rows"), want);
        snprintf(want, sizeof want, "%zu", nrg);
        if (!streq_null(jstr(f, "num_row_groups"), want))
            bad(&nbad, "%s: num_row_groups %s, expected %s", label, jstr(f, "num_row_groups"), want);
        const char *cb = jstr(f, "created_by");
        if (!cb || strncmp(cb, "cloudprof", 9) != 0) bad(&nbad, "%s: created_by %s", label, cb ? cb : "null");
        json_t *chunks = json_object_get(doc, "chunks");
        nchunks = json_array_size(chunks);
        if (nchunks != nrg * nleaves)
            bad(&nbad, "%s: %zu column chunks, expected %zu row groups x %zu leaves", label, nchunks, nrg, nleaves);
        for (size_t k = 0; k < nchunks && k < nrg * nleaves; k++) {
            json_t *ch = json_array_get(chunks, k);
            size_t rg = k / nleaves;
            const leaf *lf = &lv[k % nleaves];
            const cp_pq_column *col = &cols[lf->col];
            char where[200];
            snprintf(where, sizeof where, "%s: row group %zu column %s%s", label, rg, col->name,
                     (col->type == CP_PQ_MAP_STR_LIST || col->type == CP_PQ_MAP_STR_STR)
                         ? (lf->part ? " (value leaf)" : " (key leaf)")
                         : "");
            const char *path_in = jstr(ch, "path_in_schema");
            if (!path_in || strncmp(path_in, col->name, strlen(col->name)) != 0)
                bad(&nbad, "%s: path_in_schema %s", where, path_in ? path_in : "null");
            snprintf(want, sizeof want, "%zu", rg_rows[rg]);
            if (!streq_null(jstr(ch, "row_group_num_rows"), want))
                bad(&nbad, "%s: row_group_num_rows %s, expected %s", where, jstr(ch, "row_group_num_rows"), want);
            if (!streq_null(jstr(ch, "compression"), codec))
                bad(&nbad, "%s: compression %s, expected %s", where, jstr(ch, "compression"), codec);
            const char *enc = jstr(ch, "encodings");
            int is_dict = enc && (strstr(enc, "RLE_DICTIONARY") || strstr(enc, "PLAIN_DICTIONARY"));
            int wants_dict = col->dict && !(col->type == CP_PQ_MAP_STR_LIST || col->type == CP_PQ_MAP_STR_STR);
            ndict += is_dict != 0;
            if (check_dict && wants_dict && !is_dict)
                bad(&nbad, "%s: encodings '%s' lack the dictionary the column asks for", where, enc ? enc : "null");
            if (!col->dict && is_dict)
                bad(&nbad, "%s: encodings '%s': dictionary on a column that did not ask for one", where, enc);
            chunk_want w = {.null_count = -1, .num_values = -1};
            if (fn) fn(ud, rg, lf, &w);
            if (w.num_values >= 0) {
                snprintf(want, sizeof want, "%" PRId64, w.num_values);
                if (!streq_null(jstr(ch, "num_values"), want))
                    bad(&nbad, "%s: num_values %s, expected %s", where, jstr(ch, "num_values"), want);
            }
            if (w.null_count >= 0) {
                snprintf(want, sizeof want, "%" PRId64, w.null_count);
                if (!streq_null(jstr(ch, "stats_null_count"), want))
                    bad(&nbad, "%s: stats_null_count %s, expected %s", where, jstr(ch, "stats_null_count"), want);
            }
            if (w.has_minmax) {
                if (!streq_null(jstr(ch, "stats_min_value"), w.min))
                    bad(&nbad, "%s: stats_min_value %s, expected %s", where, jstr(ch, "stats_min_value"), w.min);
                if (!streq_null(jstr(ch, "stats_max_value"), w.max))
                    bad(&nbad, "%s: stats_max_value %s, expected %s", where, jstr(ch, "stats_max_value"), w.max);
            }
        }
        json_decref(doc);
    }
    cp_buf_free(&out);
    char name[256];
    snprintf(name, sizeof name, "%s: duckdb parquet_metadata", label);
    return check_done(name, nbad,
                      "num_rows %zu, %zu row group(s), %zu chunks: codec %s, %zu dictionary-encoded, row counts, "
                      "num_values, statistics",
                      nrows, nrg, nchunks, codec, ndict);
}

/* Runs SQL statements on the file (view f) in one node call; rows of all statements. */
static json_t **duck_sql(const char *path, const char *const *stmts, size_t *n, int *rc)
{
    const char *args[32] = {"duckdb", "sql", path};
    size_t k = 3;
    for (size_t i = 0; stmts[i]; i++) args[k++] = stmts[i];
    args[k] = NULL;
    cp_buf out;
    cp_buf_init(&out);
    *rc = pqread(&out, args);
    json_t **rows = NULL;
    *n = 0;
    if (*rc == 0) rows = parse_jsonl(&out, n);
    cp_buf_free(&out);
    return rows;
}

/* ---- the calls data set --------------------------------------------------------------------- */

typedef struct gpod {
    const char *ns, *service, *pod;
    int64_t restart;
} gpod;

static const gpod g_pods[] = {
    {"prod", "orders", "orders-7d9f-abc12", 1735600000000LL},
    {"prod", "orders", "orders-7d9f-xyz99", 1735600500123LL},
    {"staging-ü", "billing ✓", "billing-0", 0},
    {"日本語", "サービス", "pod-日本-1", -31536000000LL},
    {"ns \"q\"", "svc\\back", "pod \"quoted\" \\ 1", 1735000000000LL},
    {"prod", "gateway", "gateway-😀", 1735690000000LL},
    {"kube-system", "dns", "coredns-1", 1},
};
#define NPODS CP_ARRAY_LEN(g_pods)

static const char *const g_methods[] = {
    "com.example.OrderService.placeOrder(Lcom/example/Order;)V",
    "void com.ex.Ünïcødé.çall()",
    "方法.调用()",
    "emoji😀.run()",
    "back\\slash\"quote\".m()",
    "tab\there",
    "ctl\001char",
    "",
};

static const char *const g_threads[] = {"main", "Thread «α»", "worker\n2", "", "pool-1-thread-1"};

static const char *const g_pnames[] = {
    "42", "7", "a", "b.c", "call.red", "empty", "quote\"name", "back\\slash", "ctl\001x",
    "ünï", "日本", "x", "zz", "😀", "__proto__", "constructor", "",
};

static const char *const g_pvalues[] = {
    "", "with \"quotes\"", "back\\slash\\", "nl\nline\r\n", "ctl\001\037end",
    "ünïcødé ✓", "中文值", "😀😁", "tab\tsep", "/", "{\"json\":[1,2]}",
};

typedef struct gparam {
    const char *name;
    size_t nvals;
    char *vals[5];
} gparam;

typedef struct gcall {
    cp_call c;
    size_t pod;
    char *method, *thread, *params_json;
    uint8_t *trace;
    gparam params[6];
    size_t nparams;
} gcall;

static gcall *g_calls;
static size_t g_ncalls;
static json_t **g_calls_exp;      /* expected canonical rows */
static const char *g_calls_names[CP_COLD_C_COUNT];
static const char *g_dumps_names[CP_COLD_D_COUNT];

static char *rand_text(uint64_t *s)
{
    uint64_t r = test_rand(s);
    if (r % 3 == 0) {
        size_t n = 50 + (size_t)(test_rand(s) % 250);
        char *t = malloc(n + 1);
        for (size_t i = 0; i < n; i++) t[i] = (char)(' ' + test_rand(s) % 95);
        t[n] = 0;
        return t;
    }
    if (r % 3 == 1) {
        char b[32];
        snprintf(b, sizeof b, "v%" PRIu64, test_rand(s) % 100000);
        return strdup(b);
    }
    return strdup(g_pvalues[test_rand(s) % CP_ARRAY_LEN(g_pvalues)]);
}

static int cmp_pname(const void *a, const void *b)
{
    return strcmp(((const gparam *)a)->name, ((const gparam *)b)->name);
}

static int cmp_pod(const void *a, const void *b)
{
    return strcmp(g_pods[*(const size_t *)a].pod, g_pods[*(const size_t *)b].pod);
}

static int64_t pick_i64(uint64_t *s)
{
    uint64_t r = test_rand(s) % 100;
    if (r < 3) return INT64_MIN;
    if (r < 6) return INT64_MAX;
    if (r < 8) return 0;
    if (r < 10) return -1;
    return (int64_t)(test_rand(s) % (1ull << 48)) - (int64_t)(1ull << 47);
}

static int32_t pick_i32(uint64_t *s)
{
    uint64_t r = test_rand(s) % 100;
    if (r < 2) return INT32_MIN;
    if (r < 4) return INT32_MAX;
    if (r < 6) return -(int32_t)(test_rand(s) % 100000);
    return (int32_t)(test_rand(s) % 1000000);
}

static int64_t pick_u64(uint64_t *s)
{
    uint64_t r = test_rand(s) % 100;
    if (r < 3) return INT64_MAX;
    if (r < 6) return 0;
    return (int64_t)(test_rand(s) % (1ull << 40));
}

static json_t *calls_expected(const gcall *g)
{
    const cp_call *c = &g->c;
    json_t *o = json_object();
    json_t *v[CP_COLD_C_COUNT];
    v[CP_COLD_C_TIME] = js_i64(c->ts_ms);
    v[CP_COLD_C_CPU] = js_i64(c->cpu_time);
    v[CP_COLD_C_WAIT] = js_i64(c->wait_time);
    v[CP_COLD_C_MEMORY] = js_i64(c->memory_used);
    v[CP_COLD_C_DURATION] = js_i64(c->duration_ms);
    v[CP_COLD_C_NONBLOCKING] = js_i64(c->non_blocking);
    v[CP_COLD_C_QUEUE] = js_i64(c->queue_wait_ms);
    v[CP_COLD_C_SUSPEND] = js_i64(c->suspend_ms);
    v[CP_COLD_C_CALLS] = js_i64(c->calls);
    v[CP_COLD_C_TRANSACTIONS] = js_u64((uint64_t)c->transactions);
    v[CP_COLD_C_LOGS_GENERATED] = js_i64(c->logs_generated);
    v[CP_COLD_C_LOGS_WRITTEN] = js_i64(c->logs_written);
    v[CP_COLD_C_FILE_READ] = js_u64((uint64_t)c->file_read);
    v[CP_COLD_C_FILE_WRITTEN] = js_u64((uint64_t)c->file_written);
    v[CP_COLD_C_NET_READ] = js_u64((uint64_t)c->net_read);
    v[CP_COLD_C_NET_WRITTEN] = js_u64((uint64_t)c->net_written);
    v[CP_COLD_C_NAMESPACE] = js_str(c->ns, c->ns_len);
    v[CP_COLD_C_SERVICE] = js_str(c->service, c->service_len);
    v[CP_COLD_C_POD] = js_str(c->pod, c->pod_len);
    v[CP_COLD_C_RESTART] = js_i64(c->restart_ms);
    v[CP_COLD_C_METHOD] = js_str(c->method, c->method_len);
    json_t *params = json_array();
    for (size_t i = 0; i < g->nparams; i++) {
        json_t *vals = json_array();
        for (size_t j = 0; j < g->params[i].nvals; j++)
            json_array_append_new(vals, js_str(g->params[i].vals[j], strlen(g->params[i].vals[j])));
        json_array_append_new(params, json_pack("[so]", g->params[i].name, vals));
    }
    v[CP_COLD_C_PARAMS] = params;
    char idx[64];
    snprintf(idx, sizeof idx, "%d_%d_%d", (int)c->trace_file_index, (int)c->buffer_offset, (int)c->record_index);
    v[CP_COLD_C_TRACE_INDEX] = json_string(idx);
    v[CP_COLD_C_TRACE] = c->trace ? js_hex(c->trace, c->trace_len) : json_null();
    v[CP_COLD_C_THREAD] = js_str(c->thread, c->thread_len);
    v[CP_COLD_C_METHOD_ID] = js_i64(c->method_id);
    v[CP_COLD_C_TRACE_REASON] = c->trace_reason ? json_string(c->trace_reason) : json_null();
    v[CP_COLD_C_HAS_SQL] = json_boolean(c->sql);
    for (size_t i = 0; i < CP_COLD_C_COUNT; i++) json_object_set_new(o, cp_cold_calls_schema[i].name, v[i]);
    return o;
}

static void gen_params(gcall *g, uint64_t *s)
{
    cp_buf pj;
    cp_buf_init(&pj);
    g->nparams = 0;
    if (test_rand(s) % 10 != 0) {
        size_t want = 1 + (size_t)(test_rand(s) % 5);
        for (size_t tries = 0; g->nparams < want && tries < 20; tries++) {
            const char *name = g_pnames[test_rand(s) % CP_ARRAY_LEN(g_pnames)];
            int dup = 0;
            for (size_t i = 0; i < g->nparams; i++) dup |= strcmp(g->params[i].name, name) == 0;
            if (dup) continue;
            gparam *p = &g->params[g->nparams++];
            p->name = name;
            p->nvals = strcmp(name, "x") == 0 || test_rand(s) % 10 == 0 ? 0 : 1 + (size_t)(test_rand(s) % 4);
            for (size_t j = 0; j < p->nvals; j++) p->vals[j] = rand_text(s);
        }
        qsort(g->params, g->nparams, sizeof g->params[0], cmp_pname);
    }
    cp_buf_putc(&pj, '{');
    for (size_t i = 0; i < g->nparams; i++) {
        if (i) cp_buf_putc(&pj, ',');
        cp_json_str(&pj, g->params[i].name, strlen(g->params[i].name));
        cp_buf_puts(&pj, ":[");
        for (size_t j = 0; j < g->params[i].nvals; j++) {
            if (j) cp_buf_putc(&pj, ',');
            cp_json_str(&pj, g->params[i].vals[j], strlen(g->params[i].vals[j]));
        }
        cp_buf_putc(&pj, ']');
    }
    cp_buf_putc(&pj, '}');
    g->params_json = malloc(pj.len + 1);
    memcpy(g->params_json, pj.data, pj.len);
    g->params_json[pj.len] = 0;
    g->c.params_json = g->params_json;
    g->c.params_json_len = pj.len;
    cp_buf_free(&pj);
}

/* ~3000 calls over NPODS pods, sorted by pod then time. */
static void gen_calls(size_t n)
{
    uint64_t s = 0xC0FFEE1234ull;
    size_t order[NPODS];
    for (size_t i = 0; i < NPODS; i++) order[i] = i;
    qsort(order, NPODS, sizeof order[0], cmp_pod);
    g_calls = calloc(n, sizeof *g_calls);
    g_ncalls = n;
    size_t k = 0;
    for (size_t pi = 0; pi < NPODS; pi++) {
        const gpod *p = &g_pods[order[pi]];
        size_t share = pi + 1 == NPODS ? n - k : n / NPODS + (size_t)(test_rand(&s) % 200) - 100;
        int64_t ts = 1735689600000LL + (int64_t)(test_rand(&s) % 100000);
        for (size_t j = 0; j < share; j++, k++) {
            gcall *g = &g_calls[k];
            cp_call *c = &g->c;
            g->pod = order[pi];
            ts += (int64_t)(test_rand(&s) % 5000);
            c->ts_ms = ts;
            uint64_t r = test_rand(&s) % 100;
            if (r < 2) c->duration_ms = INT32_MAX;
            else if (r < 4) c->duration_ms = -(int32_t)(test_rand(&s) % 1000);
            else if (r < 5) c->duration_ms = INT32_MIN;
            else c->duration_ms = (int32_t)(test_rand(&s) % 100000);
            c->cpu_time = pick_i64(&s);
            c->wait_time = pick_i64(&s);
            c->memory_used = pick_i64(&s);
            c->non_blocking = pick_i64(&s);
            c->queue_wait_ms = pick_i32(&s);
            c->suspend_ms = pick_i32(&s);
            c->calls = pick_i32(&s);
            c->transactions = pick_u64(&s);
            c->logs_generated = pick_i32(&s);
            c->logs_written = pick_i32(&s);
            c->file_read = pick_u64(&s);
            c->file_written = pick_u64(&s);
            c->net_read = pick_u64(&s);
            c->net_written = pick_u64(&s);
            c->ns = p->ns;
            c->ns_len = strlen(p->ns);
            c->service = p->service;
            c->service_len = strlen(p->service);
            c->pod = p->pod;
            c->pod_len = strlen(p->pod);
            c->restart_ms = p->restart;
            c->method_id = pick_i32(&s);
            if (test_rand(&s) % 3 == 0) {
                g->method = strdup(g_methods[test_rand(&s) % CP_ARRAY_LEN(g_methods)]);
            } else {
                char b[96];
                snprintf(b, sizeof b, "com.example.gen.Class%u.method%u()", (unsigned)(test_rand(&s) % 60),
                         (unsigned)(test_rand(&s) % 7));
                g->method = strdup(b);
            }
            c->method = g->method;
            c->method_len = strlen(g->method);
            if (test_rand(&s) % 2) {
                g->thread = strdup(g_threads[test_rand(&s) % CP_ARRAY_LEN(g_threads)]);
            } else {
                char b[48];
                snprintf(b, sizeof b, "pool-%u-thread-%u", (unsigned)(test_rand(&s) % 4), (unsigned)(test_rand(&s) % 30));
                g->thread = strdup(b);
            }
            c->thread = g->thread;
            c->thread_len = strlen(g->thread);
            gen_params(g, &s);
            c->trace_file_index = (int32_t)(test_rand(&s) % 50);
            c->buffer_offset = test_rand(&s) % 20 == 0 ? -1 : (int32_t)(test_rand(&s) % 1000000);
            c->record_index = (int32_t)(test_rand(&s) % 100000);
            r = test_rand(&s) % 100;
            if (r < 15) {
                c->trace = NULL;
                c->trace_reason = CP_TRACE_INCOMPLETE;
            } else {
                size_t len = r < 20 ? 0 : r < 90 ? 1 + (size_t)(test_rand(&s) % 300) : (size_t)(test_rand(&s) % 5001);
                g->trace = malloc(len ? len : 1);
                for (size_t b = 0; b < len; b++) g->trace[b] = (uint8_t)test_rand(&s);
                c->trace = g->trace;
                c->trace_len = len;
                c->trace_reason = NULL;
                c->sql = c->record_index % 4 == 0; /* no draw: the other columns stay as they were */
            }
        }
    }
    g_calls_exp = calloc(n, sizeof *g_calls_exp);
    for (size_t i = 0; i < n; i++) g_calls_exp[i] = calls_expected(&g_calls[i]);
}

static void free_calls(void)
{
    for (size_t i = 0; i < g_ncalls; i++) {
        gcall *g = &g_calls[i];
        free(g->method);
        free(g->thread);
        free(g->params_json);
        free(g->trace);
        for (size_t p = 0; p < g->nparams; p++)
            for (size_t j = 0; j < g->params[p].nvals; j++) free(g->params[p].vals[j]);
        json_decref(g_calls_exp[i]);
    }
    free(g_calls);
    free(g_calls_exp);
    g_calls = NULL;
    g_calls_exp = NULL;
    g_ncalls = 0;
}

typedef struct calls_src {
    const gcall *calls;
    cp_cold_rowbuf *rb;
} calls_src;

static int calls_row(void *ud, size_t i, cp_pq_value *row)
{
    calls_src *cs = ud;
    return cp_cold_call_row(cs->rb, &cs->calls[i].c, row);
}

static void write_calls(const char *path, const gcall *calls, size_t n, const cp_pq_writer_opts *opts)
{
    calls_src cs = {calls, NULL};
    assert_int_equal(cp_cold_rowbuf_new(&cs.rb), CP_OK);
    write_file(path, cp_cold_calls_schema, CP_COLD_C_COUNT, opts, n, calls_row, &cs);
    cp_cold_rowbuf_free(cs.rb);
}

/* Integer value of a call's integer column. */
static int64_t call_int(const cp_call *c, size_t col)
{
    switch (col) {
    case CP_COLD_C_TIME: return c->ts_ms;
    case CP_COLD_C_CPU: return c->cpu_time;
    case CP_COLD_C_WAIT: return c->wait_time;
    case CP_COLD_C_MEMORY: return c->memory_used;
    case CP_COLD_C_DURATION: return c->duration_ms;
    case CP_COLD_C_NONBLOCKING: return c->non_blocking;
    case CP_COLD_C_QUEUE: return c->queue_wait_ms;
    case CP_COLD_C_SUSPEND: return c->suspend_ms;
    case CP_COLD_C_CALLS: return c->calls;
    case CP_COLD_C_TRANSACTIONS: return c->transactions;
    case CP_COLD_C_LOGS_GENERATED: return c->logs_generated;
    case CP_COLD_C_LOGS_WRITTEN: return c->logs_written;
    case CP_COLD_C_FILE_READ: return c->file_read;
    case CP_COLD_C_FILE_WRITTEN: return c->file_written;
    case CP_COLD_C_NET_READ: return c->net_read;
    case CP_COLD_C_NET_WRITTEN: return c->net_written;
    case CP_COLD_C_RESTART: return c->restart_ms;
    case CP_COLD_C_METHOD_ID: return c->method_id;
    case CP_COLD_C_HAS_SQL: return c->sql;
    }
    return 0;
}

static cp_pq_bytes call_str(const cp_call *c, size_t col)
{
    switch (col) {
    case CP_COLD_C_NAMESPACE: return (cp_pq_bytes){(const uint8_t *)c->ns, c->ns_len};
    case CP_COLD_C_SERVICE: return (cp_pq_bytes){(const uint8_t *)c->service, c->service_len};
    case CP_COLD_C_POD: return (cp_pq_bytes){(const uint8_t *)c->pod, c->pod_len};
    case CP_COLD_C_METHOD: return (cp_pq_bytes){(const uint8_t *)c->method, c->method_len};
    case CP_COLD_C_THREAD: return (cp_pq_bytes){(const uint8_t *)c->thread, c->thread_len};
    }
    return (cp_pq_bytes){NULL, 0};
}

static int bytes_cmp(cp_pq_bytes a, cp_pq_bytes b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int r = n ? memcmp(a.p, b.p, n) : 0;
    return r ? r : (a.len > b.len) - (a.len < b.len);
}

typedef struct calls_meta_ud {
    const gcall *calls;
    const size_t *rg_start;   /* first row of each row group, and the end */
} calls_meta_ud;

/* Per chunk: min/max of the integer and plain string columns (not timestamps: checked in
 * SQL), null counts, and the map leaves' level counts. */
static void calls_chunk_want(void *ud, size_t rg, const leaf *lf, chunk_want *w)
{
    const calls_meta_ud *m = ud;
    size_t a = m->rg_start[rg], b = m->rg_start[rg + 1];
    const cp_pq_column *col = &cp_cold_calls_schema[lf->col];
    w->null_count = 0;
    switch (col->type) {
    case CP_PQ_I32:
    case CP_PQ_I64:
    case CP_PQ_U64: {
        int64_t mn = INT64_MAX, mx = INT64_MIN;
        for (size_t i = a; i < b; i++) {
            int64_t v = call_int(&m->calls[i].c, lf->col);
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
        w->has_minmax = b > a;
        snprintf(w->min, sizeof w->min, "%" PRId64, mn);
        snprintf(w->max, sizeof w->max, "%" PRId64, mx);
        break;
    }
    case CP_PQ_STRING:
        if (lf->col == CP_COLD_C_TRACE_REASON) {
            w->null_count = 0;
            for (size_t i = a; i < b; i++) w->null_count += m->calls[i].c.trace_reason == NULL;
            break;
        }
        if (lf->col == CP_COLD_C_TRACE_INDEX) break;
        {
            cp_pq_bytes mn = call_str(&m->calls[a].c, lf->col), mx = mn;
            for (size_t i = a; i < b; i++) {
                cp_pq_bytes v = call_str(&m->calls[i].c, lf->col);
                if (bytes_cmp(v, mn) < 0) mn = v;
                if (bytes_cmp(v, mx) > 0) mx = v;
            }
            /* long values may legitimately be truncated in stats: compare the short ones */
            if (mn.len < sizeof w->min && mx.len < sizeof w->max && !memchr(mn.p, 0, mn.len)) {
                w->has_minmax = b > a;
                snprintf(w->min, sizeof w->min, "%.*s", (int)mn.len, (const char *)mn.p);
                snprintf(w->max, sizeof w->max, "%.*s", (int)mx.len, (const char *)mx.p);
            }
        }
        break;
    case CP_PQ_BINARY:
        for (size_t i = a; i < b; i++) w->null_count += m->calls[i].c.trace == NULL;
        break;
    case CP_PQ_MAP_STR_LIST: {
        /* §6.3: key leaf one entry per key (one for an empty map); element leaf one per
         * element (one for an empty list, one for an empty map). null_count = entries
         * below max_def. */
        int64_t nv = 0, nulls = 0;
        for (size_t i = a; i < b; i++) {
            const gcall *g = &m->calls[i];
            if (!g->nparams) {
                nv++;
                nulls++;
                continue;
            }
            if (lf->part == 0) {
                nv += (int64_t)g->nparams;
            } else {
                for (size_t p = 0; p < g->nparams; p++) {
                    nv += g->params[p].nvals ? (int64_t)g->params[p].nvals : 1;
                    nulls += g->params[p].nvals == 0;
                }
            }
        }
        w->num_values = nv;
        w->null_count = nulls;
        break;
    }
    default: break;
    }
}

static size_t check_calls_meta(const char *label, const char *path, size_t rg_rows_each, const char *codec,
                               int check_dict)
{
    size_t nrg = rg_rows_each ? (g_ncalls + rg_rows_each - 1) / rg_rows_each : 1;
    size_t *rg_rows = calloc(nrg + 1, sizeof *rg_rows), *rg_start = calloc(nrg + 2, sizeof *rg_start);
    for (size_t g = 0; g < nrg; g++) {
        rg_start[g] = g * (rg_rows_each ? rg_rows_each : g_ncalls);
        rg_rows[g] = rg_rows_each && (g + 1) * rg_rows_each < g_ncalls ? rg_rows_each : g_ncalls - rg_start[g];
    }
    rg_start[nrg] = g_ncalls;
    calls_meta_ud ud = {g_calls, rg_start};
    size_t nbad = check_meta(label, path, cp_cold_calls_schema, CP_COLD_C_COUNT, g_ncalls, rg_rows, nrg, codec,
                             check_dict, calls_chunk_want, &ud);

    /* timestamp statistics, an aggregate, DuckDB's types and a pruned query, in one call */
    size_t tbad = 0;
    char q_stats[1024], q_filter[512];
    snprintf(q_stats, sizeof q_stats,
             "SELECT row_group_id, path_in_schema, epoch_ms(stats_min_value::TIMESTAMPTZ) AS min_ms, "
             "epoch_ms(stats_max_value::TIMESTAMPTZ) AS max_ms FROM parquet_metadata('%s') "
             "WHERE path_in_schema IN ('time', 'restart_time') ORDER BY row_group_id, column_id",
             path);
    /* one pod, a time window inside it: DuckDB prunes row groups with the statistics */
    const gcall *mid = &g_calls[g_ncalls / 2];
    size_t pod = mid->pod;
    int64_t t0 = mid->c.ts_ms - 20000, t1 = mid->c.ts_ms + 20000;
    int64_t want_filter = 0;
    for (size_t i = 0; i < g_ncalls; i++)
        want_filter += g_calls[i].pod == pod && g_calls[i].c.ts_ms >= t0 && g_calls[i].c.ts_ms <= t1;
    cp_buf esc;
    cp_buf_init(&esc);
    for (const char *p = g_pods[pod].pod; *p; p++) {
        if (*p == '\'') cp_buf_putc(&esc, '\'');
        cp_buf_putc(&esc, (uint8_t)*p);
    }
    cp_buf_putc(&esc, 0);
    snprintf(q_filter, sizeof q_filter,
             "SELECT count(*) AS n FROM f WHERE pod_name = '%s' AND time BETWEEN epoch_ms(%" PRId64
             "::BIGINT) AND epoch_ms(%" PRId64 "::BIGINT)",
             (const char *)esc.data, t0, t1);
    cp_buf_free(&esc);
    const char *stmts[] = {
        "SELECT count(*) AS n, sum(duration) AS sum_duration, sum(cardinality(params)) AS sum_card, "
        "count(trace) AS n_trace, sum(len(flatten(map_values(params)))) AS n_values, "
        "sum(octet_length(trace)) AS trace_bytes, sum(epoch_ms(time)) AS sum_time, "
        "count(DISTINCT pod_name) AS pods, count(trace_reason) AS n_reason FROM f",
        "SELECT typeof(\"time\") AS t_time, typeof(duration) AS t_duration, typeof(cpu_time) AS t_cpu, "
        "typeof(transactions) AS t_transactions, typeof(namespace) AS t_namespace, typeof(params) AS t_params, "
        "typeof(trace) AS t_trace, typeof(restart_time) AS t_restart FROM f LIMIT 1",
        q_stats,
        q_filter,
        NULL,
    };
    size_t n = 0;
    int rc;
    json_t **rows = duck_sql(path, stmts, &n, &rc);
    if (rc != 0) bad(&tbad, "%s: duckdb sql failed (exit %d)", label, rc);
    size_t nts = 2 * nrg;
    if (rc == 0 && n != 2 + nts + 1)
        bad(&tbad, "%s: %zu SQL result rows, expected %zu", label, n, 2 + nts + 1);
    if (rc == 0 && n == 2 + nts + 1) {
        /* the aggregate against C-side totals */
        int64_t sum_dur = 0, card = 0, ntrace = 0, nvals = 0, tbytes = 0, sum_time = 0, nreason = 0;
        for (size_t i = 0; i < g_ncalls; i++) {
            const gcall *g = &g_calls[i];
            sum_dur += g->c.duration_ms;
            card += (int64_t)g->nparams;
            for (size_t p = 0; p < g->nparams; p++) nvals += (int64_t)g->params[p].nvals;
            ntrace += g->c.trace != NULL;
            tbytes += g->c.trace ? (int64_t)g->c.trace_len : 0;
            sum_time += g->c.ts_ms;
            nreason += g->c.trace_reason != NULL;
        }
        struct {
            const char *k;
            int64_t v;
        } agg[] = {{"n", (int64_t)g_ncalls}, {"sum_duration", sum_dur}, {"sum_card", card}, {"n_trace", ntrace},
                   {"n_values", nvals},      {"trace_bytes", tbytes},   {"sum_time", sum_time}, {"pods", (int64_t)NPODS},
                   {"n_reason", nreason}};
        for (size_t i = 0; i < CP_ARRAY_LEN(agg); i++) {
            char want[32];
            snprintf(want, sizeof want, "%" PRId64, agg[i].v);
            const char *got = jstr(rows[0], agg[i].k);
            if (!streq_null(got, want)) bad(&tbad, "%s: aggregate %s = %s, expected %s", label, agg[i].k, got, want);
        }
        /* DuckDB's types */
        const char *types[][2] = {{"t_time", "TIMESTAMP WITH TIME ZONE"},  {"t_duration", "INTEGER"},
                                  {"t_cpu", "BIGINT"},                      {"t_transactions", "UBIGINT"},
                                  {"t_namespace", "VARCHAR"},               {"t_params", "MAP(VARCHAR, VARCHAR[])"},
                                  {"t_trace", "BLOB"},                      {"t_restart", "TIMESTAMP WITH TIME ZONE"}};
        for (size_t i = 0; i < CP_ARRAY_LEN(types); i++)
            if (!streq_null(jstr(rows[1], types[i][0]), types[i][1]))
                bad(&tbad, "%s: DuckDB type %s = %s, expected %s", label, types[i][0], jstr(rows[1], types[i][0]),
                    types[i][1]);
        /* timestamp statistics per row group */
        for (size_t g = 0; g < nrg; g++) {
            for (int which = 0; which < 2; which++) {
                json_t *r = rows[2 + 2 * g + (size_t)which];
                size_t col = which ? CP_COLD_C_RESTART : CP_COLD_C_TIME;
                int64_t mn = INT64_MAX, mx = INT64_MIN;
                for (size_t i = rg_start[g]; i < rg_start[g + 1]; i++) {
                    int64_t v = call_int(&g_calls[i].c, col);
                    mn = v < mn ? v : mn;
                    mx = v > mx ? v : mx;
                }
                char wmn[32], wmx[32];
                snprintf(wmn, sizeof wmn, "%" PRId64, mn);
                snprintf(wmx, sizeof wmx, "%" PRId64, mx);
                if (!streq_null(jstr(r, "path_in_schema"), cp_cold_calls_schema[col].name) ||
                    !streq_null(jstr(r, "min_ms"), wmn) || !streq_null(jstr(r, "max_ms"), wmx))
                    bad(&tbad, "%s: row group %zu %s statistics min/max %s/%s (epoch ms), expected %s/%s", label, g,
                        cp_cold_calls_schema[col].name, jstr(r, "min_ms"), jstr(r, "max_ms"), wmn, wmx);
            }
        }
        char want[32];
        snprintf(want, sizeof want, "%" PRId64, want_filter);
        if (!streq_null(jstr(rows[2 + nts], "n"), want))
            bad(&tbad, "%s: pod + time filter counted %s rows, expected %s", label, jstr(rows[2 + nts], "n"), want);
    }
    free_rows(rows, n);
    char name[256];
    snprintf(name, sizeof name, "%s: duckdb SQL", label);
    nbad += check_done(name, tbad,
                       "aggregate (count, sum(duration), sum(cardinality(params)), count(trace), values, trace bytes, "
                       "sum(time)) = C totals; DuckDB types; time/restart_time stats of %zu row group(s); "
                       "pod+time filter %" PRId64 " rows",
                       nrg, want_filter);
    free(rg_rows);
    free(rg_start);
    return nbad;
}

/* cp_pq_reader_stats on our own file: what the cold tier prunes row groups with. */
static size_t check_cp_stats_calls(const char *label, const char *path, size_t rg_rows_each)
{
    size_t nbad = 0, nchecked = 0;
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    cp_pq_reader *r = NULL;
    char err[256] = "";
    int st = cp_pq_reader_open(file_pread, &fd, (uint64_t)sb.st_size, &r, err, sizeof err);
    if (st != CP_OK) bad(&nbad, "%s: cp_pq_reader_open: %s", label, err);
    static const size_t cols[] = {CP_COLD_C_TIME,      CP_COLD_C_DURATION, CP_COLD_C_CPU,   CP_COLD_C_TRANSACTIONS,
                                  CP_COLD_C_RESTART,   CP_COLD_C_NAMESPACE, CP_COLD_C_POD, CP_COLD_C_METHOD_ID,
                                  CP_COLD_C_TRACE};
    size_t nrg = r ? cp_pq_reader_row_groups(r) : 0;
    for (size_t g = 0; g < nrg; g++) {
        size_t a = g * rg_rows_each, b = a + (size_t)cp_pq_reader_row_group_rows(r, g);
        if (b > g_ncalls) {
            bad(&nbad, "%s: row group %zu ends past the rows written", label, g);
            break;
        }
        for (size_t k = 0; k < CP_ARRAY_LEN(cols); k++) {
            size_t col = cols[k];
            const char *name = cp_cold_calls_schema[col].name;
            int idx = cp_pq_reader_find(r, name);
            cp_pq_stats ps;
            memset(&ps, 0, sizeof ps);
            st = idx < 0 ? CP_ENOTFOUND : cp_pq_reader_stats(r, g, (size_t)idx, &ps);
            if (st != CP_OK) {
                bad(&nbad, "%s: row group %zu column %s: no statistics (%s)", label, g, name, cp_strstatus(st));
                continue;
            }
            nchecked++;
            if (col == CP_COLD_C_TRACE) {
                int64_t nulls = 0;
                for (size_t i = a; i < b; i++) nulls += g_calls[i].c.trace == NULL;
                if (ps.null_count != nulls)
                    bad(&nbad, "%s: row group %zu trace null_count %" PRId64 ", expected %" PRId64, label, g,
                        ps.null_count, nulls);
                continue;
            }
            if (ps.null_count != 0 && ps.null_count != -1)
                bad(&nbad, "%s: row group %zu column %s null_count %" PRId64 ", expected 0", label, g, name,
                    ps.null_count);
            if (!ps.has_minmax) {
                bad(&nbad, "%s: row group %zu column %s: no min/max", label, g, name);
                continue;
            }
            if (cp_cold_calls_schema[col].type == CP_PQ_STRING) {
                cp_pq_bytes mn = call_str(&g_calls[a].c, col), mx = mn;
                for (size_t i = a; i < b; i++) {
                    cp_pq_bytes v = call_str(&g_calls[i].c, col);
                    if (bytes_cmp(v, mn) < 0) mn = v;
                    if (bytes_cmp(v, mx) > 0) mx = v;
                }
                if (bytes_cmp(mn, (cp_pq_bytes){ps.min_b, ps.min_len}) != 0 ||
                    bytes_cmp(mx, (cp_pq_bytes){ps.max_b, ps.max_len}) != 0)
                    bad(&nbad, "%s: row group %zu column %s min/max '%.*s'/'%.*s', expected '%.*s'/'%.*s'", label, g,
                        name, (int)ps.min_len, (const char *)ps.min_b, (int)ps.max_len, (const char *)ps.max_b,
                        (int)mn.len, (const char *)mn.p, (int)mx.len, (const char *)mx.p);
                continue;
            }
            int64_t mn = INT64_MAX, mx = INT64_MIN;
            for (size_t i = a; i < b; i++) {
                int64_t v = call_int(&g_calls[i].c, col);
                mn = v < mn ? v : mn;
                mx = v > mx ? v : mx;
            }
            if (ps.min_i != mn || ps.max_i != mx)
                bad(&nbad, "%s: row group %zu column %s min/max %" PRId64 "/%" PRId64 ", expected %" PRId64 "/%" PRId64,
                    label, g, name, ps.min_i, ps.max_i, mn, mx);
        }
    }
    if (r) cp_pq_reader_free(r);
    close(fd);
    char name[256];
    snprintf(name, sizeof name, "%s: cp_pq_reader_stats", label);
    return check_done(name, nbad, "%zu chunk statistics of %zu row group(s) (ints, timestamps, strings, null counts)",
                      nchecked, nrg);
}

/* ---- tests: calls ----------------------------------------------------------------------------- */

static void test_calls_small_groups(void **state)
{
    (void)state;
    char *path = tmp_path("calls-rg500.parquet");
    cp_pq_writer_opts o = {.row_group_rows = 500, .page_rows = 128};
    write_calls(path, g_calls, g_ncalls, &o);
    size_t nbad = 0;
    const char *label = "calls (row groups of 500, pages of 128, zstd)";
    nbad += check_rows_both(label, path, g_calls_exp, g_ncalls, g_calls_names, CP_COLD_C_COUNT);
    nbad += check_schema(label, path, cp_cold_calls_schema, CP_COLD_C_COUNT);
    nbad += check_calls_meta(label, path, 500, "ZSTD", 1);
    nbad += check_rows_cp(label, path, cp_cold_calls_schema, CP_COLD_C_COUNT, g_calls_exp, g_ncalls, g_calls_names);
    nbad += check_cp_stats_calls(label, path, 500);
    free(path);
    assert_int_equal(nbad, 0);
}

static void test_calls_defaults(void **state)
{
    (void)state;
    char *path = tmp_path("calls-default.parquet");
    write_calls(path, g_calls, g_ncalls, NULL);
    size_t nbad = 0;
    const char *label = "calls (default options)";
    nbad += check_rows_both(label, path, g_calls_exp, g_ncalls, g_calls_names, CP_COLD_C_COUNT);
    nbad += check_calls_meta(label, path, 0, "ZSTD", 1);
    free(path);
    assert_int_equal(nbad, 0);
}

static void test_calls_plain_fallback(void **state)
{
    (void)state;
    char *path = tmp_path("calls-uncompressed.parquet");
    cp_pq_writer_opts o = {.row_group_rows = 1000, .page_rows = 100, .zstd_level = -1, .dict_max_bytes = 256};
    write_calls(path, g_calls, g_ncalls, &o);
    size_t nbad = 0;
    const char *label = "calls (uncompressed, 256-byte dictionaries fall back to PLAIN)";
    nbad += check_rows_both(label, path, g_calls_exp, g_ncalls, g_calls_names, CP_COLD_C_COUNT);
    nbad += check_calls_meta(label, path, 1000, "UNCOMPRESSED", 0);
    free(path);
    assert_int_equal(nbad, 0);
}

/* ---- dumps ------------------------------------------------------------------------------------ */

typedef struct gdump {
    char *rel;
    cp_buf data;
    const char *dump_type, *pod_type, *ns;
    int64_t time;
    int params_kind;          /* 0 null map, 1 empty map, 2 entries */
    char size_text[32];
    cp_pq_map_entry ent[5];
    cp_pq_bytes vals[5];
} gdump;

static gdump *g_dumps;
static size_t g_ndumps, g_capdumps;

static int collect_dump(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag != FTW_F) return 0;
    if (g_ndumps == g_capdumps) g_dumps = realloc(g_dumps, (g_capdumps = g_capdumps * 2 + 8) * sizeof *g_dumps);
    gdump *d = &g_dumps[g_ndumps++];
    memset(d, 0, sizeof *d);
    d->rel = strdup(path);
    return 0;
}

static int cmp_dump(const void *a, const void *b) { return strcmp(((const gdump *)a)->rel, ((const gdump *)b)->rel); }

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* dump_type from the file name, as the agent names its dumps. */
static const char *dump_type_of(const char *name)
{
    if (strstr(name, ".td.")) return "td";
    if (strstr(name, ".top.")) return "top";
    if (strstr(name, ".gc.")) return "gc";
    if (strstr(name, ".hprof")) return "heap";
    if (ends_with(name, ".pprof")) {
        if (strstr(name, "alloc")) return "alloc";
        if (strstr(name, "goroutine")) return "goroutine";
        if (strstr(name, "heap")) return "heap";
        return "profile";
    }
    return "other";
}

static cp_pq_bytes sb_(const char *s) { return (cp_pq_bytes){(const uint8_t *)s, strlen(s)}; }

static void dump_row_values(gdump *d, cp_pq_value *row)
{
    row[CP_COLD_D_TIME].i = d->time;
    row[CP_COLD_D_NAMESPACE].b = sb_(d->ns);
    row[CP_COLD_D_SERVICE].b = sb_("svc-ü ✓");
    row[CP_COLD_D_POD].b = sb_("pod-\"1\"");
    row[CP_COLD_D_RESTART].i = 1735600000000LL;
    row[CP_COLD_D_POD_TYPE].b = sb_(d->pod_type);
    row[CP_COLD_D_DUMP_TYPE].b = sb_(d->dump_type);
    row[CP_COLD_D_BYTES].i = (int64_t)d->data.len;
    if (d->params_kind == 0) {
        row[CP_COLD_D_PARAMS].null = 1;
    } else if (d->params_kind == 2) {
        /* not sorted, on purpose: the file keeps the order given; one null value */
        snprintf(d->size_text, sizeof d->size_text, "%zu", d->data.len);
        const char *keys[] = {"size", "file", "nul", "42", "ünï"};
        d->vals[0] = sb_(d->size_text);
        d->vals[1] = sb_(d->rel);
        d->vals[3] = sb_("answer \"quoted\"");
        d->vals[4] = sb_("✓");
        for (size_t k = 0; k < 5; k++)
            d->ent[k] = (cp_pq_map_entry){sb_(keys[k]), k == 2 ? NULL : &d->vals[k], k == 2 ? 0 : 1};
        row[CP_COLD_D_PARAMS].map = d->ent;
        row[CP_COLD_D_PARAMS].nmap = 5;
    }
    row[CP_COLD_D_BINARY].b = (cp_pq_bytes){d->data.data, d->data.len};
}

static json_t *dump_expected(gdump *d)
{
    json_t *o = json_object();
    cp_pq_value row[CP_COLD_D_COUNT];
    memset(row, 0, sizeof row);
    dump_row_values(d, row);
    json_object_set_new(o, "time", js_i64(d->time));
    json_object_set_new(o, "namespace", json_string(d->ns));
    json_object_set_new(o, "service_name", json_string("svc-ü ✓"));
    json_object_set_new(o, "pod_name", json_string("pod-\"1\""));
    json_object_set_new(o, "restart_time", js_i64(1735600000000LL));
    json_object_set_new(o, "pod_type", json_string(d->pod_type));
    json_object_set_new(o, "dump_type", json_string(d->dump_type));
    json_object_set_new(o, "bytes_size", js_i64((int64_t)d->data.len));
    if (d->params_kind == 0) {
        json_object_set_new(o, "params", json_null());
    } else {
        json_t *a = json_array();
        for (size_t k = 0; k < row[CP_COLD_D_PARAMS].nmap; k++) {
            const cp_pq_map_entry *e = &row[CP_COLD_D_PARAMS].map[k];
            json_array_append_new(a, json_pack("[oo]", js_str(e->key.p, e->key.len),
                                               e->values ? js_str(e->values[0].p, e->values[0].len) : json_null()));
        }
        json_object_set_new(o, "params", a);
    }
    json_object_set_new(o, "binary_data", js_hex(d->data.data, d->data.len));
    return o;
}

static int dumps_row(void *ud, size_t i, cp_pq_value *row)
{
    dump_row_values(&((gdump *)ud)[i], row);
    return CP_OK;
}

static void test_dumps(void **state)
{
    (void)state;
    g_ndumps = 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/dumps", CP_FIXTURES_DIR);
    assert_int_equal(nftw(dir, collect_dump, 16, FTW_PHYS), 0);
    assert_true(g_ndumps > 0);
    qsort(g_dumps, g_ndumps, sizeof *g_dumps, cmp_dump);
    json_t **exp = calloc(g_ndumps, sizeof *exp);
    size_t total = 0;
    for (size_t i = 0; i < g_ndumps; i++) {
        gdump *d = &g_dumps[i];
        load_file(d->rel, &d->data);
        total += d->data.len;
        char *rel = strdup(d->rel + strlen(dir) + 1);
        free(d->rel);
        d->rel = rel;
        d->dump_type = dump_type_of(rel);
        d->pod_type = ends_with(rel, ".pprof") ? "go" : "java";
        d->ns = i % 2 ? "日本語" : "prod";
        d->time = 1735689600000LL + (int64_t)i * 60000;
        d->params_kind = i == 0 ? 0 : i == 1 ? 1 : 2;
        exp[i] = dump_expected(d);
    }
    char *path = tmp_path("dumps.parquet");
    cp_pq_writer_opts o = {.row_group_rows = 4, .page_rows = 2};
    write_file(path, cp_cold_dumps_schema, CP_COLD_D_COUNT, &o, g_ndumps, dumps_row, g_dumps);
    size_t nbad = 0;
    char label[128];
    snprintf(label, sizeof label, "dumps (%zu fixture files, %zu bytes)", g_ndumps, total);
    nbad += check_rows_both(label, path, exp, g_ndumps, g_dumps_names, CP_COLD_D_COUNT);
    nbad += check_schema(label, path, cp_cold_dumps_schema, CP_COLD_D_COUNT);
    nbad += check_rows_cp(label, path, cp_cold_dumps_schema, CP_COLD_D_COUNT, exp, g_ndumps, g_dumps_names);
    for (size_t i = 0; i < g_ndumps; i++) {
        json_decref(exp[i]);
        free(g_dumps[i].rel);
        cp_buf_free(&g_dumps[i].data);
    }
    free(exp);
    free(g_dumps);
    g_dumps = NULL;
    g_capdumps = g_ndumps = 0;
    free(path);
    assert_int_equal(nbad, 0);
}

/* ---- reverse direction: DuckDB writes, cp_pq_reader reads -------------------------------------- */

#define DUCK_ROWS 5000
#define DUCK_ROWS_TEXT "5000"

/* The SELECT every DuckDB-written file comes from; duck_expected() computes the same. */
static const char DUCK_SELECT[] =
    "SELECT i::INTEGER AS id, "
    "CASE WHEN i % 7 = 3 THEN NULL WHEN i = 1 THEN 2147483647 WHEN i = 2 THEN -2147483648 "
    "ELSE i * 37 - 50000 END::INTEGER AS i32, "
    "CASE WHEN i % 11 = 5 THEN NULL WHEN i = 1 THEN 9223372036854775807 "
    "WHEN i = 2 THEN (-9223372036854775807)::BIGINT - 1 "
    "ELSE i * 1000000007 * (1 - 2 * (i % 2)) END::BIGINT AS i64, "
    "CASE WHEN i % 13 = 6 THEN NULL WHEN i = 3 THEN epoch_ms(-1234567) "
    "ELSE epoch_ms(1735689600000 + i * 1000003) END::TIMESTAMP_MS AS ts_ms, "
    "make_timestamptz(1735689600000000 + i * 1000003) AS ts_us, "
    "CASE WHEN i % 5 = 0 THEN NULL WHEN i % 5 = 1 THEN '' "
    "ELSE 'row ' || i || ' é😀 \"q\" \\' END AS s, "
    "'cat' || (i % 13) || '✓' AS c, "
    "CASE WHEN i % 6 = 1 THEN NULL "
    "ELSE '\\x00\\xFF'::BLOB || encode(repeat(chr((65 + i % 26)::INTEGER), (i % 50)::INTEGER)) END AS b, "
    "CASE WHEN i % 10 = 9 THEN NULL ELSE i % 3 = 0 END AS flag, "
    "CASE WHEN i % 9 = 4 THEN NULL WHEN i % 9 = 5 THEN MAP([]::VARCHAR[], []::VARCHAR[][]) "
    "ELSE MAP(['k' || (i % 3), 'empty', 'nul'], [['v' || i, NULL, ''], []::VARCHAR[], NULL::VARCHAR[]]) END AS m, "
    "CASE WHEN i % 4 = 0 THEN NULL ELSE MAP(['a', 'b'], ['x' || i, NULL::VARCHAR]) END AS ms "
    "FROM range(" DUCK_ROWS_TEXT ") t(i) ORDER BY i";

static const char *const g_duck_names[] = {"id", "i32", "i64", "ts_ms", "ts_us", "s", "c", "b", "flag", "m", "ms"};
#define DUCK_NCOLS CP_ARRAY_LEN(g_duck_names)

/* The integer columns of DUCK_SELECT for row i (id, i32, i64); *null set for NULL. */
static int64_t duck_int(size_t col, int64_t i, int *null)
{
    *null = 0;
    switch (col) {
    case 0: return i;
    case 1:
        *null = i % 7 == 3;
        return i == 1 ? INT32_MAX : i == 2 ? INT32_MIN : i * 37 - 50000;
    default:
        *null = i % 11 == 5;
        return i == 1 ? INT64_MAX : i == 2 ? INT64_MIN : i * 1000000007LL * (1 - 2 * (i % 2));
    }
}

/* Expected row i; ts_us as epoch ms (set per reader type by the caller). */
static json_t *duck_expected(int64_t i)
{
    json_t *o = json_object();
    char b[160];
    for (size_t c = 0; c < 3; c++) {
        int null;
        int64_t v = duck_int(c, i, &null);
        json_object_set_new(o, g_duck_names[c], null ? json_null() : js_i64(v));
    }
    json_object_set_new(o, "ts_ms", i % 13 == 6 ? json_null()
                                    : i == 3    ? js_i64(-1234567)
                                                : js_i64(1735689600000LL + i * 1000003));
    json_object_set_new(o, "ts_us", js_i64(1735689600000000LL + i * 1000003));
    if (i % 5 == 0) {
        json_object_set_new(o, "s", json_null());
    } else if (i % 5 == 1) {
        json_object_set_new(o, "s", json_string(""));
    } else {
        snprintf(b, sizeof b, "row %" PRId64 " é😀 \"q\" \\", i);
        json_object_set_new(o, "s", json_string(b));
    }
    snprintf(b, sizeof b, "cat%" PRId64 "✓", i % 13);
    json_object_set_new(o, "c", json_string(b));
    if (i % 6 == 1) {
        json_object_set_new(o, "b", json_null());
    } else {
        uint8_t raw[64] = {0x00, 0xFF};
        size_t n = (size_t)(i % 50);
        memset(raw + 2, 'A' + (int)(i % 26), n);
        json_object_set_new(o, "b", js_hex(raw, n + 2));
    }
    json_object_set_new(o, "flag", i % 10 == 9 ? json_null() : json_boolean(i % 3 == 0));
    if (i % 9 == 4) {
        json_object_set_new(o, "m", json_null());
    } else if (i % 9 == 5) {
        json_object_set_new(o, "m", json_array());
    } else {
        char k[16], v[32];
        snprintf(k, sizeof k, "k%" PRId64, i % 3);
        snprintf(v, sizeof v, "v%" PRId64, i);
        json_object_set_new(o, "m", json_pack("[[s[sns]][s[]][sn]]", k, v, "", "empty", "nul"));
    }
    if (i % 4 == 0) {
        json_object_set_new(o, "ms", json_null());
    } else {
        snprintf(b, sizeof b, "x%" PRId64, i);
        json_object_set_new(o, "ms", json_pack("[[ss][sn]]", "a", b, "b"));
    }
    return o;
}

typedef struct duck_variant {
    const char *name, *options;
} duck_variant;

static const duck_variant g_variants[] = {
    {"v1-zstd", "COMPRESSION zstd, ROW_GROUP_SIZE 2048"},
    {"v2-zstd", "COMPRESSION zstd, PARQUET_VERSION V2, ROW_GROUP_SIZE 2048"},
    {"v1-gzip", "COMPRESSION gzip"},
    {"v1-none", "COMPRESSION uncompressed, ROW_GROUP_SIZE 1000"},
};
#define NVARIANTS CP_ARRAY_LEN(g_variants)

/* cp_pq_reader_stats on a DuckDB-written file: integer min/max/null counts, and the
 * dictionary string column's byte-wise min/max, per row group. */
static size_t check_cp_stats_duck(const char *label, const char *path)
{
    size_t nbad = 0, nchecked = 0;
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    cp_pq_reader *r = NULL;
    char err[256] = "";
    int st = cp_pq_reader_open(file_pread, &fd, (uint64_t)sb.st_size, &r, err, sizeof err);
    if (st != CP_OK) bad(&nbad, "%s: cp_pq_reader_open: %s", label, err);
    size_t nrg = r ? cp_pq_reader_row_groups(r) : 0, base = 0;
    for (size_t g = 0; g < nrg; g++) {
        size_t n = (size_t)cp_pq_reader_row_group_rows(r, g);
        for (size_t c = 0; c < 4; c++) {
            const char *name = c < 3 ? g_duck_names[c] : "c";
            int idx = cp_pq_reader_find(r, name);
            cp_pq_stats ps;
            memset(&ps, 0, sizeof ps);
            st = idx < 0 ? CP_ENOTFOUND : cp_pq_reader_stats(r, g, (size_t)idx, &ps);
            if (st != CP_OK) {
                bad(&nbad, "%s: row group %zu column %s: no statistics (%s)", label, g, name, cp_strstatus(st));
                continue;
            }
            nchecked++;
            if (c == 3) {
                char mn[32] = "", mx[32] = "", v[32];
                for (size_t i = base; i < base + n; i++) {
                    snprintf(v, sizeof v, "cat%zu✓", i % 13);
                    if (!mn[0] || strcmp(v, mn) < 0) strcpy(mn, v);
                    if (!mx[0] || strcmp(v, mx) > 0) strcpy(mx, v);
                }
                if (!ps.has_minmax || bytes_cmp(sb_(mn), (cp_pq_bytes){ps.min_b, ps.min_len}) != 0 ||
                    bytes_cmp(sb_(mx), (cp_pq_bytes){ps.max_b, ps.max_len}) != 0)
                    bad(&nbad, "%s: row group %zu column c min/max '%.*s'/'%.*s', expected '%s'/'%s'", label, g,
                        (int)ps.min_len, ps.min_b ? (const char *)ps.min_b : "", (int)ps.max_len,
                        ps.max_b ? (const char *)ps.max_b : "", mn, mx);
                continue;
            }
            int64_t mn = INT64_MAX, mx = INT64_MIN, nulls = 0;
            for (size_t i = base; i < base + n; i++) {
                int null;
                int64_t v = duck_int(c, (int64_t)i, &null);
                nulls += null;
                if (null) continue;
                mn = v < mn ? v : mn;
                mx = v > mx ? v : mx;
            }
            if (ps.null_count != nulls)
                bad(&nbad, "%s: row group %zu column %s null_count %" PRId64 ", expected %" PRId64, label, g, name,
                    ps.null_count, nulls);
            if (!ps.has_minmax || ps.min_i != mn || ps.max_i != mx)
                bad(&nbad, "%s: row group %zu column %s min/max %" PRId64 "/%" PRId64 " (has %d), expected %" PRId64
                    "/%" PRId64, label, g, name, ps.min_i, ps.max_i, ps.has_minmax, mn, mx);
        }
        base += n;
    }
    if (r) cp_pq_reader_free(r);
    close(fd);
    char name[256];
    snprintf(name, sizeof name, "%s: cp_pq_reader_stats", label);
    return check_done(name, nbad, "%zu chunk statistics of %zu row group(s) (id, i32, i64, c)", nchecked, nrg);
}

static void test_duckdb_written(void **state)
{
    (void)state;
    char *paths[NVARIANTS];
    char *stmts[2 * NVARIANTS + 1];
    for (size_t v = 0; v < NVARIANTS; v++) {
        char name[64];
        snprintf(name, sizeof name, "duckdb-%s.parquet", g_variants[v].name);
        paths[v] = tmp_path(name);
        size_t len = strlen(DUCK_SELECT) + strlen(paths[v]) + 512;
        stmts[v] = malloc(len);
        snprintf(stmts[v], len, "COPY (%s) TO '%s' (FORMAT parquet, %s)", DUCK_SELECT, paths[v], g_variants[v].options);
        stmts[NVARIANTS + v] = malloc(len);
        snprintf(stmts[NVARIANTS + v], len,
                 "SELECT '%s' AS variant, column_id, path_in_schema, encodings, compression FROM parquet_metadata('%s') "
                 "WHERE row_group_id = 0 ORDER BY column_id",
                 g_variants[v].name, paths[v]);
    }
    stmts[2 * NVARIANTS] = NULL;
    size_t nmeta = 0;
    int rc;
    json_t **meta = duck_sql("-", (const char *const *)stmts, &nmeta, &rc);
    assert_int_equal(rc, 0);
    for (size_t v = 0; v < 2 * NVARIANTS; v++) free(stmts[v]);

    json_t **exp = calloc(DUCK_ROWS, sizeof *exp);
    for (size_t i = 0; i < DUCK_ROWS; i++) exp[i] = duck_expected((int64_t)i);
    static const cp_pq_type want_type[] = {CP_PQ_I32, CP_PQ_I32,    CP_PQ_I64,  0, 0, CP_PQ_STRING, CP_PQ_STRING,
                                           CP_PQ_BINARY, CP_PQ_BOOL, CP_PQ_MAP_STR_LIST, CP_PQ_MAP_STR_STR};
    size_t nbad_all = 0;
    for (size_t v = 0; v < NVARIANTS; v++) {
        size_t nbad = 0;
        char label[160];
        snprintf(label, sizeof label, "DuckDB-written %s", g_variants[v].name);
        /* encodings DuckDB chose, per leaf (row group 0) */
        char encs[1024] = "";
        size_t el = 0;
        for (size_t k = 0; k < nmeta; k++) {
            if (!streq_null(jstr(meta[k], "variant"), g_variants[v].name)) continue;
            int w = snprintf(encs + el, sizeof encs - el, "%s%s=%s", el ? "; " : "", jstr(meta[k], "path_in_schema"),
                             jstr(meta[k], "encodings"));
            if (w > 0 && (size_t)w < sizeof encs - el) el += (size_t)w;
        }
        say("%s: DuckDB encodings (row group 0): %s", label, encs);
        cpread c;
        cpread_file(paths[v], &c);
        size_t unsupported = 0;
        if (!c.ok) {
            bad(&nbad, "%s: cp_pq_reader_open: %s", label, c.err);
        } else {
            if (c.ncols != DUCK_NCOLS) bad(&nbad, "%s: %zu columns, expected %zu", label, c.ncols, DUCK_NCOLS);
            if (c.nrows != DUCK_ROWS) bad(&nbad, "%s: %zu rows, expected %d", label, c.nrows, DUCK_ROWS);
            json_t **exp_v = calloc(DUCK_ROWS, sizeof *exp_v);
            for (size_t i = 0; i < DUCK_ROWS; i++) exp_v[i] = json_deep_copy(exp[i]);
            const char *names[DUCK_NCOLS];
            size_t ncmp = 0;
            for (size_t k = 0; k < c.ncols && k < DUCK_NCOLS; k++) {
                const cp_pq_column *col = &c.cols[k];
                if (strcmp(col->name, g_duck_names[k]) != 0)
                    bad(&nbad, "%s: column %zu is %s, expected %s", label, k, col->name, g_duck_names[k]);
                /* the timestamps: TIMESTAMP_MILLIS (not UTC) and TIMESTAMP_MICROS (UTC) */
                if (k == 3 || k == 4) {
                    int ok_type = col->type == CP_PQ_TS_MS || col->type == CP_PQ_I64 || col->type == 0;
                    if (!ok_type) bad(&nbad, "%s: column %s recognised as type %d", label, col->name, (int)col->type);
                    const char *what_ts = k == 3 ? "TIMESTAMP_MILLIS, isAdjustedToUTC=0" : "TIMESTAMP_MICROS, UTC";
                    if (col->type == 0) {
                        say("%s: column %s (%s) not recognised by cp_pq_reader (type 0): not compared", label,
                            col->name, what_ts);
                        continue;
                    }
                    say("%s: column %s (%s) read as %s", label, col->name, what_ts,
                        col->type == CP_PQ_TS_MS ? "TS_MS (epoch ms)" : "I64 (raw)");
                    if (k == 4 && col->type == CP_PQ_I64) /* raw micros */
                        for (size_t i = 0; i < DUCK_ROWS; i++)
                            json_object_set_new(exp_v[i], "ts_us", js_i64(1735689600000000LL + (int64_t)i * 1000003));
                    else if (k == 4) /* converted to ms (floor) */
                        for (size_t i = 0; i < DUCK_ROWS; i++)
                            json_object_set_new(exp_v[i], "ts_us",
                                                js_i64((1735689600000000LL + (int64_t)i * 1000003) / 1000));
                } else if (col->type != want_type[k]) {
                    bad(&nbad, "%s: column %s type %d, expected %d", label, col->name, (int)col->type, (int)want_type[k]);
                }
                if (c.colerr[k]) {
                    /* DELTA_LENGTH_BYTE_ARRAY / DELTA_BYTE_ARRAY / BYTE_STREAM_SPLIT are not
                     * promised by cp_parquet.h: a clean error is acceptable, a wrong value not */
                    const char *enc = NULL;
                    for (size_t m = 0; m < nmeta; m++)
                        if (streq_null(jstr(meta[m], "variant"), g_variants[v].name) &&
                            strncmp(jstr(meta[m], "path_in_schema") ? jstr(meta[m], "path_in_schema") : "", col->name,
                                    strlen(col->name)) == 0)
                            enc = jstr(meta[m], "encodings");
                    if (enc && (strstr(enc, "DELTA_LENGTH_BYTE_ARRAY") || strstr(enc, "DELTA_BYTE_ARRAY") ||
                                strstr(enc, "BYTE_STREAM_SPLIT"))) {
                        say("%s: column %s (%s) not readable: %s (encoding not promised by cp_parquet.h)", label,
                            col->name, enc, c.colerr[k]);
                        unsupported++;
                        continue;
                    }
                    bad(&nbad, "%s: column %s (%s): %s", label, col->name, enc ? enc : "?", c.colerr[k]);
                    continue;
                }
                names[ncmp++] = g_duck_names[k];
            }
            char what[200];
            snprintf(what, sizeof what, "%s [cp_pq_reader]", label);
            /* compare only the readable columns: rebuild rows restricted to names[] */
            json_t **got_v = calloc(c.nrows + 1, sizeof *got_v);
            for (size_t i = 0; i < c.nrows; i++) {
                got_v[i] = json_object();
                for (size_t k = 0; k < ncmp; k++)
                    json_object_set(got_v[i], names[k], json_object_get(c.rows[i], names[k]));
            }
            compare_rows(what, got_v, c.nrows, exp_v, DUCK_ROWS, names, ncmp, &nbad);
            free_rows(got_v, c.nrows);
            free_rows(exp_v, DUCK_ROWS);
            char name[200];
            snprintf(name, sizeof name, "%s: rows via cp_pq_reader", label);
            nbad_all += check_done(name, nbad, "%zu rows, %zu row group(s), %zu of %zu columns compared%s", c.nrows,
                                   c.nrg, ncmp, DUCK_NCOLS, unsupported ? " (others: unsupported encodings)" : "");
            nbad = 0;
        }
        if (nbad) nbad_all += check_done(label, nbad, "file not read");
        if (c.ok) nbad_all += check_cp_stats_duck(label, paths[v]);
        cpread_free(&c);
        free(paths[v]);
    }
    free_rows(meta, nmeta);
    free_rows(exp, DUCK_ROWS);
    assert_int_equal(nbad_all, 0);
}

/* ---- edge cases ----------------------------------------------------------------------------- */

static void test_edge_zero_rows(void **state)
{
    (void)state;
    char *path = tmp_path("calls-empty.parquet");
    write_calls(path, NULL, 0, NULL);
    size_t nbad = 0;
    const char *label = "edge: zero rows";
    nbad += check_rows_both(label, path, NULL, 0, g_calls_names, CP_COLD_C_COUNT);
    nbad += check_schema(label, path, cp_cold_calls_schema, CP_COLD_C_COUNT);
    nbad += check_meta(label, path, cp_cold_calls_schema, CP_COLD_C_COUNT, 0, NULL, 0, "ZSTD", 0, NULL, NULL);
    nbad += check_rows_cp(label, path, cp_cold_calls_schema, CP_COLD_C_COUNT, NULL, 0, g_calls_names);
    free(path);
    assert_int_equal(nbad, 0);
}

static void test_edge_single_row(void **state)
{
    (void)state;
    gcall g;
    memset(&g, 0, sizeof g);
    cp_call *c = &g.c;
    c->ts_ms = 1;
    c->duration_ms = INT32_MIN;
    c->cpu_time = INT64_MIN;
    c->wait_time = INT64_MAX;
    c->memory_used = -1;
    c->queue_wait_ms = INT32_MAX;
    c->transactions = INT64_MAX;
    c->file_read = INT64_MAX;
    c->ns = c->service = c->pod = c->method = c->thread = "";
    c->restart_ms = -1;
    c->params_json = "{}";
    c->params_json_len = 2;
    c->trace_reason = CP_TRACE_INCOMPLETE;
    c->trace_file_index = c->buffer_offset = c->record_index = -2147483647;
    json_t *exp = calls_expected(&g);
    char *path = tmp_path("calls-one.parquet");
    write_calls(path, &g, 1, NULL);
    size_t nbad = 0;
    const char *label = "edge: single row (empty strings, extremes, {} params, null trace)";
    nbad += check_rows_both(label, path, &exp, 1, g_calls_names, CP_COLD_C_COUNT);
    nbad += check_rows_cp(label, path, cp_cold_calls_schema, CP_COLD_C_COUNT, &exp, 1, g_calls_names);
    json_decref(exp);
    free(path);
    assert_int_equal(nbad, 0);
}

#define SAME_ROWS 1000
static const char SAME_VALUE[] = "the same value ✓ \"q\" \\ \x01";
static const cp_pq_column g_same_schema[] = {
    {"same", CP_PQ_STRING, 0, 1},
    {"same_plain", CP_PQ_STRING, 1, 0},
    {"n", CP_PQ_I32, 0, 0},
};
static const char *const g_same_names[] = {"same", "same_plain", "n"};

static int same_row(void *ud, size_t i, cp_pq_value *row)
{
    (void)ud;
    row[0].b = sb_(SAME_VALUE);
    row[1].b = sb_(SAME_VALUE);
    row[2].i = 7;
    return CP_OK;
}

static void same_chunk_want(void *ud, size_t rg, const leaf *lf, chunk_want *w)
{
    (void)ud;
    (void)rg;
    w->null_count = 0;
    w->has_minmax = 1;
    snprintf(w->min, sizeof w->min, "%s", lf->col == 2 ? "7" : SAME_VALUE);
    snprintf(w->max, sizeof w->max, "%s", lf->col == 2 ? "7" : SAME_VALUE);
}

static void test_edge_same_strings(void **state)
{
    (void)state;
    char *path = tmp_path("same-strings.parquet");
    cp_pq_writer_opts o = {.row_group_rows = 400, .page_rows = 128};
    write_file(path, g_same_schema, 3, &o, SAME_ROWS, same_row, NULL);
    json_t **exp = calloc(SAME_ROWS, sizeof *exp);
    for (size_t i = 0; i < SAME_ROWS; i++) exp[i] = json_pack("{ssssss}", "same", SAME_VALUE, "same_plain", SAME_VALUE, "n", "7");
    size_t nbad = 0;
    const char *label = "edge: one string value in every row";
    nbad += check_rows_both(label, path, exp, SAME_ROWS, g_same_names, 3);
    size_t rg_rows[] = {400, 400, 200};
    nbad += check_meta(label, path, g_same_schema, 3, SAME_ROWS, rg_rows, 3, "ZSTD", 1, same_chunk_want, NULL);
    nbad += check_rows_cp(label, path, g_same_schema, 3, exp, SAME_ROWS, g_same_names);
    free_rows(exp, SAME_ROWS);
    free(path);
    assert_int_equal(nbad, 0);
}

static void test_edge_1mib_binary(void **state)
{
    (void)state;
    gdump d[2];
    memset(d, 0, sizeof d);
    uint64_t s = 77;
    for (size_t k = 0; k < 2; k++) {
        size_t n = k == 0 ? (size_t)1 << 20 : 3;
        cp_buf_init(&d[k].data);
        assert_int_equal(cp_buf_reserve(&d[k].data, n), CP_OK);
        for (size_t i = 0; i < n; i++) d[k].data.data[i] = (uint8_t)test_rand(&s);
        d[k].data.len = n;
        d[k].rel = strdup(k == 0 ? "big.hprof" : "small.td.txt");
        d[k].dump_type = k == 0 ? "heap" : "td";
        d[k].pod_type = "java";
        d[k].ns = "prod";
        d[k].time = 1735689600000LL + (int64_t)k;
        d[k].params_kind = 2;
    }
    json_t *exp[2] = {dump_expected(&d[0]), dump_expected(&d[1])};
    char *path = tmp_path("dump-1mib.parquet");
    write_file(path, cp_cold_dumps_schema, CP_COLD_D_COUNT, NULL, 2, dumps_row, d);
    size_t nbad = 0;
    const char *label = "edge: 1 MiB binary value";
    nbad += check_rows_both(label, path, exp, 2, g_dumps_names, CP_COLD_D_COUNT);
    nbad += check_rows_cp(label, path, cp_cold_dumps_schema, CP_COLD_D_COUNT, exp, 2, g_dumps_names);
    for (size_t k = 0; k < 2; k++) {
        json_decref(exp[k]);
        free(d[k].rel);
        cp_buf_free(&d[k].data);
    }
    free(path);
    assert_int_equal(nbad, 0);
}

/* ---- setup ------------------------------------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    g_tmp = make_temp_dir("pq-interop");
    for (size_t i = 0; i < CP_COLD_C_COUNT; i++) g_calls_names[i] = cp_cold_calls_schema[i].name;
    for (size_t i = 0; i < CP_COLD_D_COUNT; i++) g_dumps_names[i] = cp_cold_dumps_schema[i].name;
    gen_calls(3000);
    size_t traces = 0, noparams = 0;
    for (size_t i = 0; i < g_ncalls; i++) {
        traces += g_calls[i].c.trace != NULL;
        noparams += g_calls[i].nparams == 0;
    }
    say("generated %zu calls over %zu pods (%zu with a trace, %zu without params), files in %s", g_ncalls, NPODS,
        traces, noparams, g_tmp);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    free_calls();
    const char *keep = getenv("CP_KEEP_TMP");
    if (keep && *keep) say("kept %s (CP_KEEP_TMP)", g_tmp);
    else remove_tree(g_tmp);
    free(g_tmp);
    node_stop();
    printf("pq_interop: checks run (%d ok, %d failed; %u node calls, %.1f s in node):\n%s", g_checks_ok,
           g_checks_bad, g_node_calls, g_node_secs, g_summary);
    fflush(stdout);
    return 0;
}

int main(void)
{
    snprintf(g_tools, sizeof g_tools, "%s/tests/tools", CP_SOURCE_DIR);
    const char *need[] = {"node_modules/@duckdb/node-api", "node_modules/hyparquet", "node_modules/hyparquet-compressors",
                          "pqread.mjs"};
    if (!in_path("node")) {
        printf("pq_interop_test: SKIP: node is not on PATH (scripts/node-tools.sh installs it)\n");
        return 77;
    }
    for (size_t i = 0; i < CP_ARRAY_LEN(need); i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", g_tools, need[i]);
        if (access(p, R_OK) != 0) {
            printf("pq_interop_test: SKIP: %s is missing (run scripts/node-tools.sh)\n", p);
            return 77;
        }
    }
    signal(SIGPIPE, SIG_IGN); /* a dead node must not kill the suite */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_small_groups),
        cmocka_unit_test(test_calls_defaults),
        cmocka_unit_test(test_calls_plain_fallback),
        cmocka_unit_test(test_dumps),
        cmocka_unit_test(test_duckdb_written),
        cmocka_unit_test(test_edge_zero_rows),
        cmocka_unit_test(test_edge_single_row),
        cmocka_unit_test(test_edge_same_strings),
        cmocka_unit_test(test_edge_1mib_binary),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
