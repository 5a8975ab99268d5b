/* xlsx_export_test.c -- GET /api/v1/calls.xlsx (docs/API.md), opened by a real spreadsheet
 * reader: exceljs (tests/tools/xlsxread.mjs), which prints the workbook's cells as JSON.
 *
 * Part 1 starts the real `cloudprof serve`, replays the parser.test.protocol capture and
 * downloads calls.csv and calls.xlsx with the same parameters (sorts on a number and on
 * text, a `q=` search that keeps some calls and one that drops them, an error filter):
 * the workbook must hold exactly the CSV's rows -- the header (bold, kept in view), the
 * same count and order, the same ids, numbers as numeric cells equal to the CSV's, Start
 * a date cell of the CSV's UTC time to the millisecond with the date-time format, the
 * same text -- behind a first column linking each call's tree page. Also the headers
 * (Content-Type, the attachment's file name), config's export_xlsx, and bad input (JSON
 * errors before any byte, 405 for other methods).
 *
 * Part 2 runs cp_http in-process on a fake reader whose calls carry what a spreadsheet
 * cannot take as it is (XML's special characters, control characters, CR, invalid UTF-8,
 * a literal _xHHHH_, white space at the ends, a text over Excel's 32 767 characters, an
 * empty thread): exceljs must read each back as cp_xlsx_text promises. More calls than
 * max_export_rows end with the CSV's "# truncated:" line as the last row; --public-url
 * makes the links' base; reader failures are JSON errors.
 *
 * Needs node and exceljs in tests/tools/node_modules (scripts/node-tools.sh installs both);
 * the checks that read a workbook skip without them.
 */
#include "server_util.h"
#include "replay_util.h"
#include "http_util.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http/cp_http.h"
#include "query/cp_query.h"
#include "store/cp_hot.h"

#define XLSX_TYPE "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
#define DATE_FORMAT "yyyy-mm-dd hh:mm:ss.000"
#define NCOLS 22 /* the CSV's columns; the workbook has a Link column before them */
#define TITLE_COL 19 /* the CSV's Title (ui.md §3.3), after Method and Thread */

/* ---- reading a workbook ------------------------------------------------------------------- */

static char g_tools[4096];

/* node and exceljs are there (else the test is skipped). */
static void need_reader(void)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/node_modules/exceljs/package.json", g_tools);
    if (!in_path("node") || access(p, R_OK) != 0) {
        print_message("node or %s is missing (run scripts/node-tools.sh): skipped\n", p);
        skip();
    }
}

/* The workbook as xlsxread.mjs prints it (json_decref it). */
static json_t *xlsx_read(const cp_buf *xlsx)
{
    char *dir = make_temp_dir("xlsx");
    char path[4200], cmd[9000];
    snprintf(path, sizeof path, "%s/calls.xlsx", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(xlsx->data, 1, xlsx->len, f), xlsx->len);
    fclose(f);
    snprintf(cmd, sizeof cmd, "node '%s/xlsxread.mjs' '%s'", g_tools, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    cp_buf out;
    cp_buf_init(&out);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, p)) > 0) cp_buf_append(&out, chunk, n);
    int status = pclose(p);
    remove_tree(dir);
    free(dir);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail_msg("xlsxread.mjs failed (status %d)", status);
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)out.data, out.len, 0, &jerr);
    if (!doc) fail_msg("xlsxread.mjs printed no JSON: %s", jerr.text);
    cp_buf_free(&out);
    return doc;
}

/* ---- CSV --------------------------------------------------------------------------------- */

/* The records of a CSV text (';', '"' quoting, LF ends; a quoted field may hold newlines) as
 * an array of arrays of strings. Strings are taken as they are (the export keeps a call's
 * bytes, which need not be UTF-8). */
static json_t *csv_parse(const cp_buf *b)
{
    json_t *rows = json_array(), *row = json_array();
    cp_buf field;
    cp_buf_init(&field);
    int quoted = 0;
    for (size_t i = 0; i < b->len; i++) {
        char c = (char)b->data[i];
        if (quoted) {
            if (c == '"' && i + 1 < b->len && b->data[i + 1] == '"') cp_buf_putc(&field, '"'), i++;
            else if (c == '"') quoted = 0;
            else cp_buf_putc(&field, (uint8_t)c);
        } else if (c == '"') {
            quoted = 1;
        } else if (c == ';' || c == '\n') {
            json_array_append_new(row, json_stringn_nocheck(field.data ? (char *)field.data : "", field.len));
            cp_buf_reset(&field);
            if (c == '\n') {
                json_array_append_new(rows, row);
                row = json_array();
            }
        } else {
            cp_buf_putc(&field, (uint8_t)c);
        }
    }
    assert_int_equal(json_array_size(row), 0); /* the text ends with a line end */
    json_decref(row);
    cp_buf_free(&field);
    return rows;
}

/* ---- comparing ----------------------------------------------------------------------------- */

static const char *cell_str(const json_t *cell, const char *key)
{
    const json_t *v = json_object_get(cell, key);
    if (!json_is_string(v)) fail_msg("cell %s has no string '%s'", json_dumps(cell, 0), key);
    return json_string_value(v);
}

static void utc_text(int64_t ms, char out[96])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(out, 96, "%04d-%02d-%02d %02d:%02d:%02d.%03d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* What a text of the CSV reads back as from the workbook (the same, unless a test says). */
typedef const char *(*text_map_fn)(const char *csv_text);

/* The Link cell of a call: HYPERLINK to <base>/tree?call=<id>&ts=<start>, labelled "details". */
static void assert_link(const json_t *cell, const char *base, const char *id, int64_t ts)
{
    if (!base) { /* no usable base URL: the label alone */
        assert_string_equal(cell_str(cell, "s"), "details");
        return;
    }
    char want[1024];
    snprintf(want, sizeof want, "HYPERLINK(\"%s/tree?call=%s&ts=%lld\",\"details\")", base, id, (long long)ts);
    assert_string_equal(cell_str(cell, "f"), want);
    assert_string_equal(cell_str(cell, "r"), "details");
}

/* One call's row: cells[0] the link, then the CSV's 22 fields. */
static void assert_call_row(const json_t *csv, const json_t *cells, const char *base, text_map_fn map)
{
    assert_int_equal(json_array_size(csv), NCOLS);
    assert_int_equal(json_array_size(cells), 1 + NCOLS); /* the last column (Id) is never empty */
    const char *id = json_string_value(json_array_get(csv, NCOLS - 1));
    int64_t ts = strtoll(id, NULL, 10); /* an id starts with the call's start */
    assert_link(json_array_get(cells, 0), base, id, ts);
    /* Start: a date cell of the same instant, shown with milliseconds */
    const json_t *start = json_array_get(cells, 1);
    assert_int_equal(json_integer_value(json_object_get(start, "d")), ts);
    assert_string_equal(cell_str(start, "fmt"), DATE_FORMAT);
    char when[96];
    utc_text(ts, when);
    assert_string_equal(json_string_value(json_array_get(csv, 0)), when);
    /* Duration .. Net written: numbers */
    for (size_t j = 1; j <= 13; j++) {
        const json_t *n = json_object_get(json_array_get(cells, j + 1), "n");
        if (!json_is_number(n)) fail_msg("column %zu is not a number: %s", j + 1, json_dumps(json_array_get(cells, j + 1), 0));
        assert_true(json_number_value(n) == (double)strtoll(json_string_value(json_array_get(csv, j)), NULL, 10));
    }
    /* Namespace .. Id: text; an empty one is no cell */
    for (size_t j = 14; j < NCOLS; j++) {
        const char *want = json_string_value(json_array_get(csv, j));
        /* the fake reader's hard texts are whole fields; the Title is built from parts of
         * them (a method's last words), so the exact mapping does not apply to it */
        if (map && j == TITLE_COL) continue;
        if (map) want = map(want);
        const json_t *cell = json_array_get(cells, j + 1);
        if (!*want) {
            assert_true(json_is_null(cell));
            continue;
        }
        const char *got = cell_str(cell, "s");
        if (strcmp(got, want) != 0)
            fail_msg("column %zu: '%.200s' (%zu bytes), want '%.200s' (%zu bytes)", j + 1, got, strlen(got), want,
                     strlen(want));
    }
}

/* The workbook holds exactly the CSV's rows (see the file comment). Returns the data rows. */
static size_t assert_same_rows(const json_t *csv, const json_t *book, const char *base, text_map_fn map)
{
    const json_t *rows = json_object_get(book, "rows");
    assert_int_equal(json_array_size(rows), json_array_size(csv));
    assert_int_equal(json_array_size(json_object_get(book, "sheets")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(book, "frozen"), "y")), 1);
    /* the header: Link, then the CSV's, bold */
    const json_t *head = json_array_get(rows, 0), *csv_head = json_array_get(csv, 0);
    assert_int_equal(json_array_size(head), 1 + NCOLS);
    assert_int_equal(json_array_size(csv_head), NCOLS);
    for (size_t j = 0; j <= NCOLS; j++) {
        const json_t *cell = json_array_get(head, j);
        assert_string_equal(cell_str(cell, "s"), j ? json_string_value(json_array_get(csv_head, j - 1)) : "Link");
        assert_true(json_is_true(json_object_get(cell, "bold")));
    }
    size_t calls = 0;
    for (size_t i = 1; i < json_array_size(csv); i++) {
        const json_t *rec = json_array_get(csv, i), *cells = json_array_get(rows, i);
        const char *first = json_string_value(json_array_get(rec, 0));
        if (!strncmp(first, "# truncated:", 12)) { /* the CSV's last line is the sheet's last row */
            assert_int_equal(i, json_array_size(csv) - 1);
            char line[512] = ""; /* a comment line, not a record: its ';' split nothing */
            for (size_t j = 0; j < json_array_size(rec); j++)
                snprintf(line + strlen(line), sizeof line - strlen(line), "%s%s", j ? ";" : "",
                         json_string_value(json_array_get(rec, j)));
            assert_int_equal(json_array_size(cells), 1);
            assert_string_equal(cell_str(json_array_get(cells, 0), "s"), line);
            continue;
        }
        assert_call_row(rec, cells, base, map);
        calls++;
    }
    return calls;
}

/* GET path: 200 with the body and headers. */
static void get_ok(int port, const char *path, cp_buf *body, cp_buf *headers)
{
    int st;
    if (http_get(port, path, &st, body, headers) != 0) fail_msg("GET %s: no valid response", path);
    if (st != 200) fail_msg("GET %s: status %d: %.*s", path, st, (int)(body->len > 300 ? 300 : body->len), body->data);
}

/* Downloads /calls.csv?params and /calls.xlsx?params, checks the headers and that the
 * workbook holds the CSV's rows; returns the number of calls. */
static size_t export_both(int port, const char *params, int64_t from, int64_t to, const char *base, text_map_fn map)
{
    char path[4096], v[512], want[512];
    cp_buf csv, xlsx, h;
    cp_buf_init(&csv);
    cp_buf_init(&xlsx);
    cp_buf_init(&h);
    snprintf(path, sizeof path, "/api/v1/calls.csv?%s", params);
    get_ok(port, path, &csv, NULL);
    snprintf(path, sizeof path, "/api/v1/calls.xlsx?%s", params);
    get_ok(port, path, &xlsx, &h);
    assert_true(http_header(&h, "Content-Type", v, sizeof v));
    assert_string_equal(v, XLSX_TYPE);
    assert_true(http_header(&h, "Content-Disposition", v, sizeof v));
    snprintf(want, sizeof want, "attachment; filename=\"calls_%lld_%lld.xlsx\"", (long long)from, (long long)to);
    assert_string_equal(v, want);
    assert_true(http_header(&h, "Transfer-Encoding", v, sizeof v)); /* streamed */
    assert_string_equal(v, "chunked");
    assert_true(xlsx.len > 4 && !memcmp(xlsx.data, "PK\x03\x04", 4));
    json_t *rows = csv_parse(&csv), *book = xlsx_read(&xlsx);
    size_t n = assert_same_rows(rows, book, base, map);
    json_decref(rows);
    json_decref(book);
    cp_buf_free(&csv);
    cp_buf_free(&xlsx);
    cp_buf_free(&h);
    return n;
}

/* Expects a JSON error: status, code and (if param) the parameter. */
static void expect_error(int port, const char *method, const char *path, int status, const char *code,
                         const char *param)
{
    int st;
    cp_buf b, h;
    cp_buf_init(&b);
    cp_buf_init(&h);
    if (http_request(port, method, path, NULL, NULL, 0, &st, &b, &h) != 0) fail_msg("%s %s: no response", method, path);
    if (st != status) fail_msg("%s %s: status %d, want %d", method, path, st, status);
    char ct[128];
    assert_true(http_header(&h, "Content-Type", ct, sizeof ct));
    assert_string_equal(ct, "application/json; charset=utf-8");
    assert_false(http_header(&h, "Content-Disposition", ct, sizeof ct));
    json_t *doc = json_loadb((const char *)b.data, b.len, 0, NULL);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "code")), code);
    if (param) assert_string_equal(json_string_value(json_object_get(doc, "parameter")), param);
    json_decref(doc);
    cp_buf_free(&b);
    cp_buf_free(&h);
}

/* ======================================================================================
 * Part 1: the real server with the replayed capture
 * ====================================================================================== */

/* The capture's calls are from 2023-07-24; a window of a few days. */
#define FROM_MS 1690000000000LL
#define TO_MS 1690400000000LL
#define WINDOW "from=1690000000000&to=1690400000000"

static struct {
    test_server s;
    replay_capture cap;
    int port;
    char base[64];        /* the links' base: the Host the test client sends */
    size_t n;             /* every call of the window */
    char word[64];        /* a word of some calls' method, percent-encoded */
} env;

static int real_setup(void **state)
{
    (void)state;
    server_start(&env.s, "xlsx", NULL);
    env.port = env.s.http_port;
    snprintf(env.base, sizeof env.base, "http://127.0.0.1:%d", env.port);
    replay_capture_parser_test(&env.cap);
    replay_result rr;
    replay_opts o;
    memset(&o, 0, sizeof o);
    replay_run(env.s.port, &env.cap, &o, &rr);
    json_t *doc = replay_wait_calls(&env.s, "/api/v1/calls?" WINDOW "&limit=1000", replay_capture_calls(&env.cap));
    json_t *calls = json_object_get(doc, "calls");
    env.n = json_array_size(calls);
    /* a search word: the start of the slowest call's method name (after its class) */
    json_t *slow = NULL, *c;
    size_t i;
    json_array_foreach(calls, i, c) {
        if (!slow || json_integer_value(json_object_get(c, "duration_ms")) >
                         json_integer_value(json_object_get(slow, "duration_ms")))
            slow = c;
    }
    const char *m = json_string_value(json_object_get(slow, "method"));
    const char *paren = strchr(m, '('), *dot = m;
    for (const char *p = m; p < (paren ? paren : m + strlen(m)); p++)
        if (*p == '.') dot = p + 1;
    size_t k = 0;
    for (const char *p = dot; *p && k < 8 && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')); p++)
        env.word[k++] = *p;
    env.word[k] = 0;
    json_decref(doc);
    return 0;
}

static int real_teardown(void **state)
{
    replay_capture_free(&env.cap);
    if (env.s.pid) server_stop(&env.s);
    server_destroy(&env.s);
    return servers_teardown(state);
}

static size_t calls_count(const char *params)
{
    char path[4096];
    snprintf(path, sizeof path, "/api/v1/calls?%s&limit=1000", params);
    json_t *doc = http_get_json(env.port, path, 200);
    size_t n = json_array_size(json_object_get(doc, "calls"));
    json_decref(doc);
    return n;
}

/* Every call, sorted by a number and by text: the workbook equals the CSV. */
static void test_same_rows_as_csv(void **state)
{
    (void)state;
    need_reader();
    assert_true(env.n > 10);
    assert_int_equal(export_both(env.port, WINDOW "&sort=-duration_ms", FROM_MS, TO_MS, env.base, NULL), env.n);
    assert_int_equal(export_both(env.port, WINDOW "&sort=%2Bmethod", FROM_MS, TO_MS, env.base, NULL), env.n);
    assert_int_equal(export_both(env.port, WINDOW, FROM_MS, TO_MS, env.base, NULL), env.n); /* default: newest first */
}

/* A q= search (required and excluded word) with a sort, and the error filter. */
static void test_search_and_sort(void **state)
{
    (void)state;
    need_reader();
    assert_true(strlen(env.word) >= 3);
    char params[512];
    snprintf(params, sizeof params, WINDOW "&q=%%2B%s&sort=-memory_used", env.word);
    size_t with = export_both(env.port, params, FROM_MS, TO_MS, env.base, NULL);
    assert_int_equal(with, calls_count(params));
    snprintf(params, sizeof params, WINDOW "&q=-%s&sort=thread", env.word);
    size_t without = export_both(env.port, params, FROM_MS, TO_MS, env.base, NULL);
    assert_int_equal(without, calls_count(params));
    print_message("q=+%s: %zu calls, q=-%s: %zu, of %zu\n", env.word, with, env.word, without, env.n);
    assert_true(with >= 1 && with < env.n);
    assert_int_equal(with + without, env.n);
    assert_int_equal(export_both(env.port, WINDOW "&error=true&hide_system=true", FROM_MS, TO_MS, env.base, NULL),
                     calls_count(WINDOW "&error=true&hide_system=true"));
    /* a window without calls: the header alone */
    assert_int_equal(export_both(env.port, "from=1000&to=2000", 1000, 2000, env.base, NULL), 0);
}

static void test_errors_and_config(void **state)
{
    (void)state;
    int p = env.port;
    json_t *cfg = http_get_json(p, "/api/v1/config", 200);
    assert_true(json_is_true(json_object_get(json_object_get(cfg, "features"), "export_xlsx")));
    assert_true(json_is_true(json_object_get(json_object_get(cfg, "features"), "export_csv")));
    json_decref(cfg);
    expect_error(p, "GET", "/api/v1/calls.xlsx?from=abc&to=1690400000000", 400, "bad_parameter", "from");
    expect_error(p, "GET", "/api/v1/calls.xlsx?from=5&to=1", 400, "bad_range", "from");
    expect_error(p, "GET", "/api/v1/calls.xlsx?" WINDOW "&sort=nope", 400, "bad_parameter", "sort");
    expect_error(p, "GET", "/api/v1/calls.xlsx?" WINDOW "&limit=5", 400, "unknown_parameter", "limit");
    expect_error(p, "GET", "/api/v1/calls.xlsx?" WINDOW "&q=%22unterminated", 400, "bad_parameter", "q");
    expect_error(p, "GET", "/api/v1/calls.xlsx?" WINDOW "&from=1690000000000", 400, "duplicate_parameter", "from");
    expect_error(p, "POST", "/api/v1/calls.xlsx?" WINDOW, 405, "method_not_allowed", NULL);
    expect_error(p, "DELETE", "/api/v1/calls.xlsx?" WINDOW, 405, "method_not_allowed", NULL);
    expect_error(p, "GET", "/api/v1/calls.xlsx/x", 404, "not_found", NULL);
}

/* ======================================================================================
 * Part 2: in-process server on a fake reader
 * ====================================================================================== */

#define FAKE_N 12
#define FAKE_BASE_MS 1700000000000LL
#define FAKE_WINDOW "from=1700000000000&to=1700000100000"
#define FAKE_FROM 1700000000000LL
#define FAKE_TO 1700000100000LL
#define LONG_TEXT 40000 /* over Excel's 32 767 characters in a cell */

/* Method names a spreadsheet cannot take as they are, and what exceljs reads back. */
static const struct {
    const char *raw, *read;
} nasty[] = {
    {" lead & <tag> \"q\" 'a' ]]> trail ", " lead & <tag> \"q\" 'a' ]]> trail "},
    {"ctl\x01\x08\x0B\x0C\x1F" "end", "ctl\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "end"},
    {"tab\tcr\r\nlf\n", "tab\tcr\r\nlf\n"},
    /* exceljs does not decode ST_Xstring's _xHHHH_ (Excel and LibreOffice do, giving the
     * original text back): it shows the escape of the literal '_' */
    {"_x0041_ literal", "_x005F_x0041_ literal"},
    {"bad \xFF\xFE utf8 \xC3", "bad \xEF\xBF\xBD\xEF\xBF\xBD utf8 \xEF\xBF\xBD"},
    {"emoji \xF0\x9F\x98\x80 \xE6\x97\xA5\xE6\x9C\xAC \xEF\xBF\xBE", "emoji \xF0\x9F\x98\x80 \xE6\x97\xA5\xE6\x9C\xAC \xEF\xBF\xBD"},
};
#define NNASTY (sizeof nasty / sizeof nasty[0])

typedef struct fake_db {
    cp_call calls[FAKE_N];
    char method[FAKE_N][64];
    char params[FAKE_N][64];
    char *long_params;       /* {"k":["aaa..."]}, LONG_TEXT bytes */
    int fail_open, fail_search;
} fake_db;

typedef struct fake_reader {
    cp_reader base;
    fake_db *db;
} fake_reader;

static fake_db g_db;

static void fake_fill(fake_db *db)
{
    memset(db, 0, sizeof *db);
    db->long_params = malloc(LONG_TEXT + 1);
    memset(db->long_params, 'a', LONG_TEXT);
    memcpy(db->long_params, "{\"k\":[\"", 7);
    memcpy(db->long_params + LONG_TEXT - 3, "\"]}", 3);
    db->long_params[LONG_TEXT] = 0;
    for (int i = 0; i < FAKE_N; i++) {
        cp_call *c = &db->calls[i];
        if ((size_t)i < NNASTY) snprintf(db->method[i], sizeof db->method[i], "%s", nasty[i].raw);
        else snprintf(db->method[i], sizeof db->method[i], "void com.acme.Svc.op%d()", i);
        snprintf(db->params[i], sizeof db->params[i], "{\"k\":[\"v;%d\"]}", i);
        c->ts_ms = FAKE_BASE_MS + i * 1000 + 7;
        c->duration_ms = (i * 37) % 500;
        c->cpu_time = 1000000000000LL + i; /* beyond 32 bits */
        c->memory_used = -i;               /* never negative in life; a number all the same */
        c->calls = i;
        c->ns = "ns1", c->ns_len = 3;
        c->service = "svc", c->service_len = 3;
        c->pod = "pod-a", c->pod_len = 5;
        c->restart_ms = FAKE_BASE_MS - 5000;
        c->method = db->method[i], c->method_len = strlen(db->method[i]);
        c->thread = i == 8 ? "" : "main", c->thread_len = i == 8 ? 0 : 4;
        c->params_json = i == 9 ? db->long_params : db->params[i];
        c->params_json_len = strlen(c->params_json);
        c->trace_file_index = 1;
        c->buffer_offset = i;
    }
}

/* Newest first (the default sort), after the keyset, at most limit; nothing else filtered. */
static int fake_search(cp_reader *r, const cp_call_filter *f, cp_call_fn fn, void *ud, cp_search_stats *st)
{
    fake_db *db = ((fake_reader *)r)->db;
    memset(st, 0, sizeof *st);
    if (db->fail_search) return CP_EIO;
    size_t n = 0;
    for (int i = FAKE_N - 1; i >= 0; i--) {
        const cp_call *c = &db->calls[i];
        st->scanned++;
        if (c->ts_ms < f->from_ms || c->ts_ms >= f->to_ms) continue;
        if (f->after && c->ts_ms >= f->after->ref.ts_ms) continue;
        if (n == f->limit) {
            st->more = 1;
            break;
        }
        n++;
        int rc = fn(ud, c);
        if (rc) return rc;
    }
    return CP_OK;
}

static const char *fake_errmsg(const cp_reader *r) { return "fake failure"; }
static void fake_close(cp_reader *r) { free(r); }
static const cp_reader_ops fake_ops = {.search = fake_search, .errmsg = fake_errmsg, .close = fake_close};

static int fake_open(void *ud, cp_reader **out, char *err, size_t errlen)
{
    fake_db *db = ud;
    if (db->fail_open) {
        snprintf(err, errlen, "fake: cannot open");
        return CP_EIO;
    }
    fake_reader *r = calloc(1, sizeof *r);
    if (!r) return CP_ENOMEM;
    r->base.ops = &fake_ops;
    r->db = db;
    *out = &r->base;
    return CP_OK;
}

typedef struct fake_env {
    cp_http_config cfg;
    cp_http *http;
    int port;
} fake_env;

static void fake_start(fake_env *e, uint64_t max_rows, const char *public_url)
{
    fake_fill(&g_db);
    cp_http_config_default(&e->cfg);
    e->cfg.host = "127.0.0.1";
    e->cfg.port = 0;
    e->cfg.threads = 2;
    e->cfg.open_reader = fake_open;
    e->cfg.open_reader_ud = &g_db;
    e->cfg.version = "test";
    e->cfg.max_export_rows = max_rows;
    e->cfg.public_url = public_url;
    char err[256];
    if (cp_http_start(&e->cfg, &e->http, err, sizeof err) != CP_OK) fail_msg("cp_http_start: %s", err);
    e->port = cp_http_port(e->http);
}

static void fake_stop(fake_env *e)
{
    cp_http_stop(e->http);
    free(g_db.long_params);
}

/* The text exceljs reads back for a text of the fake's calls. */
static const char *fake_read_text(const char *csv_text)
{
    static char cut[LONG_TEXT + 1];
    for (size_t i = 0; i < NNASTY; i++)
        if (!strcmp(csv_text, nasty[i].raw)) return nasty[i].read;
    if (strlen(csv_text) > 32767) { /* ASCII: a character a byte */
        memcpy(cut, csv_text, 32767);
        cut[32767] = 0;
        return cut;
    }
    return csv_text;
}

/* Every hard text read back as promised; the long params cut at 32 767 characters. */
static void test_fake_texts(void **state)
{
    (void)state;
    need_reader();
    fake_env e;
    fake_start(&e, 0, NULL);
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", e.port);
    assert_int_equal(export_both(e.port, FAKE_WINDOW, FAKE_FROM, FAKE_TO, base, fake_read_text), FAKE_N);
    fake_stop(&e);
}

/* Cut short at max_export_rows: the CSV's last line is the sheet's last row; the links take
 * --public-url as their base. */
static void test_fake_truncated_and_public_url(void **state)
{
    (void)state;
    need_reader();
    fake_env e;
    fake_start(&e, 7, "https://cloudprof.example/profiler/");
    cp_buf csv;
    cp_buf_init(&csv);
    get_ok(e.port, "/api/v1/calls.csv?" FAKE_WINDOW, &csv, NULL);
    cp_buf_putc(&csv, 0);
    assert_non_null(strstr((char *)csv.data, "\n# truncated: the row limit was reached after 7 rows; narrow the "
                                             "filters to export the rest\n"));
    cp_buf_free(&csv);
    /* 7 calls, then the note: export_both compares the rows and the last one */
    assert_int_equal(export_both(e.port, FAKE_WINDOW, FAKE_FROM, FAKE_TO, "https://cloudprof.example/profiler",
                                 fake_read_text),
                     7);
    fake_stop(&e);
}

/* A catalog that fails before the first byte: the usual JSON errors. */
static void test_fake_reader_failures(void **state)
{
    (void)state;
    fake_env e;
    fake_start(&e, 0, NULL);
    g_db.fail_open = 1;
    expect_error(e.port, "GET", "/api/v1/calls.xlsx?" FAKE_WINDOW, 503, "unavailable", NULL);
    g_db.fail_open = 0;
    g_db.fail_search = 1;
    expect_error(e.port, "GET", "/api/v1/calls.xlsx?" FAKE_WINDOW, 500, "reader_error", NULL);
    g_db.fail_search = 0;
    fake_stop(&e);
}

int main(void)
{
    snprintf(g_tools, sizeof g_tools, "%s/tests/tools", CP_SOURCE_DIR);
    const struct CMUnitTest fake[] = {
        cmocka_unit_test(test_fake_texts),
        cmocka_unit_test(test_fake_truncated_and_public_url),
        cmocka_unit_test(test_fake_reader_failures),
    };
    const struct CMUnitTest real[] = {
        cmocka_unit_test(test_same_rows_as_csv),
        cmocka_unit_test(test_search_and_sort),
        cmocka_unit_test(test_errors_and_config),
    };
    int failed = cmocka_run_group_tests_name("xlsx_fake_reader", fake, NULL, NULL);
    failed += cmocka_run_group_tests_name("xlsx_live_server", real, real_setup, real_teardown);
    return failed;
}
