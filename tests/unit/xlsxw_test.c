/* xlsxw_test.c -- the streaming XLSX writer (cp_xlsxw.h) behind GET /api/v1/calls.xlsx:
 *
 *  - cp_xlsx_text: XML escaping, characters XML 1.0 forbids and invalid UTF-8 replaced,
 *    a literal _xHHHH_ kept from Excel's decoding, the 32 767-unit cap counted in UTF-16,
 *    the white-space flag;
 *  - cp_xlsx_serial: Excel serial dates, exact to the millisecond after a print/parse
 *    round trip; cp_xlsx_col_name;
 *  - a whole workbook: a classic zip (no ZIP64 field, version 2.0) whose every part is
 *    well-formed XML (Python's zipfile and ElementTree, an independent reader) with the
 *    cells written, the row and column bounds, and a sink failure.
 * The calls.xlsx endpoint itself is read back by exceljs in xlsx_export_test. */
#include "testutil.h"

#include "http/cp_xlsxw.h"
#include "http/cp_zipout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int buf_sink(void *ud, const void *p, size_t n) { return cp_buf_append(ud, p, n); }

/* cp_xlsx_text of s as a NUL-terminated string (static buffer). */
static const char *esc(const char *s, size_t n, size_t max_units, unsigned *flags)
{
    static cp_buf b;
    cp_buf_reset(&b);
    assert_int_equal(cp_xlsx_text(&b, s, n, max_units, flags), CP_OK);
    cp_buf_putc(&b, 0);
    return (const char *)b.data;
}

static void expect_text(const char *in, const char *want, unsigned want_flags)
{
    unsigned flags = 99;
    const char *got = esc(in, strlen(in), CP_XLSX_MAX_CELL_UNITS, &flags);
    if (strcmp(got, want) != 0) fail_msg("text '%s': got '%s', want '%s'", in, got, want);
    if (flags != want_flags) fail_msg("text '%s': flags %u, want %u", in, flags, want_flags);
}

static void test_text(void **state)
{
    (void)state;
    expect_text("", "", 0);
    expect_text("plain text", "plain text", 0);
    expect_text("a&b<c>d\"e'f", "a&amp;b&lt;c&gt;d\"e'f", 0);
    expect_text("]]>", "]]&gt;", 0);
    /* TAB and LF are XML characters; CR would become LF in any XML parser */
    expect_text("a\tb\nc\r\nd", "a\tb\nc&#13;\nd", 0);
    /* C0 controls XML 1.0 forbids, U+FFFE and U+FFFF: U+FFFD */
    expect_text("a\x01z\x0B\x1F", "a\xEF\xBF\xBDz\xEF\xBF\xBD\xEF\xBF\xBD", CP_XLSX_REPLACED);
    expect_text("x\xEF\xBF\xBEy\xEF\xBF\xBF", "x\xEF\xBF\xBDy\xEF\xBF\xBD", CP_XLSX_REPLACED);
    /* invalid UTF-8: a lone continuation byte, an overlong form, a surrogate, a cut sequence */
    expect_text("a\x80" "b", "a\xEF\xBF\xBD" "b", CP_XLSX_REPLACED);
    expect_text("\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD", CP_XLSX_REPLACED);
    expect_text("\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", CP_XLSX_REPLACED);
    expect_text("ok\xE2\x82", "ok\xEF\xBF\xBD\xEF\xBF\xBD", CP_XLSX_REPLACED);
    /* a U+FFFD of the text itself is just a character; DEL and C1 controls are XML's */
    expect_text("\xEF\xBF\xBD\x7F\xC2\x85", "\xEF\xBF\xBD\x7F\xC2\x85", 0);
    /* non-ASCII kept as is */
    expect_text("Grüße 日本 \xF0\x9F\x98\x80", "Grüße 日本 \xF0\x9F\x98\x80", 0);
    /* Excel decodes _xHHHH_ in text: a literal one keeps its '_' as _x005F_ */
    expect_text("_x0041_", "_x005F_x0041_", 0);
    expect_text("a_x00aF_b_x12_c_X0041_", "a_x005F_x00aF_b_x12_c_X0041_", 0);
    expect_text("__x0041__", "__x005F_x0041__", 0);
    /* white space at either end: the cell needs xml:space="preserve" */
    expect_text(" lead", " lead", CP_XLSX_EDGE_SPACE);
    expect_text("trail\n", "trail\n", CP_XLSX_EDGE_SPACE);
    expect_text("\tboth\r", "\tboth&#13;", CP_XLSX_EDGE_SPACE);
    expect_text("in side", "in side", 0);
}

static void test_text_cap(void **state)
{
    (void)state;
    unsigned flags;
    assert_string_equal(esc("abcdef", 6, 3, &flags), "abc");
    assert_int_equal(flags, CP_XLSX_CUT);
    assert_string_equal(esc("abc", 3, 3, &flags), "abc");
    assert_int_equal(flags, 0);
    /* a character beyond U+FFFF is two UTF-16 units, and is never split */
    const char *emoji = "a\xF0\x9F\x98\x80" "b";
    assert_string_equal(esc(emoji, strlen(emoji), 3, &flags), "a\xF0\x9F\x98\x80");
    assert_int_equal(flags, CP_XLSX_CUT);
    assert_string_equal(esc(emoji, strlen(emoji), 2, &flags), "a");
    assert_int_equal(flags, CP_XLSX_CUT);
    /* escapes count as the one character they stand for */
    assert_string_equal(esc("&&&&", 4, 2, &flags), "&amp;&amp;");
    /* the white space the cut leaves at the end counts */
    assert_string_equal(esc("ab cd", 5, 3, &flags), "ab ");
    assert_int_equal(flags, CP_XLSX_CUT | CP_XLSX_EDGE_SPACE);
    /* Excel's limit: 40 000 'é' (2 bytes each) keep 32 767 of them */
    size_t n = 40000;
    char *big = malloc(2 * n);
    for (size_t i = 0; i < n; i++) big[2 * i] = (char)0xC3, big[2 * i + 1] = (char)0xA9;
    const char *got = esc(big, 2 * n, CP_XLSX_MAX_CELL_UNITS, &flags);
    assert_int_equal(strlen(got), 2 * (size_t)CP_XLSX_MAX_CELL_UNITS);
    assert_int_equal(flags, CP_XLSX_CUT);
    free(big);
}

/* The instant an Excel reader computes from the printed serial (exceljs: round((v - 25569)
 * * 86 400 000)). */
static int64_t serial_back(double serial)
{
    char text[64];
    snprintf(text, sizeof text, "%.17g", serial);
    return (int64_t)llround((strtod(text, NULL) - 25569.0) * 86400000.0);
}

static void test_serial(void **state)
{
    (void)state;
    assert_true(cp_xlsx_serial(0) == 25569.0);                 /* 1970-01-01 */
    assert_true(cp_xlsx_serial(86400000) == 25570.0);
    assert_true(cp_xlsx_serial(-86400000) == 25568.0);
    assert_true(cp_xlsx_serial(951782400000) == 36585.0);      /* 2000-02-29 */
    assert_true(cp_xlsx_serial(43200000) == 25569.5);          /* noon */
    assert_true(fabs(cp_xlsx_serial(1690201583767) - 45131.518330636573) < 1e-9); /* 2023-07-24 12:26:23.767 */
    uint64_t seed = 19;
    size_t n = test_scaled(200000, 20000);
    for (size_t i = 0; i < n; i++) {
        /* 1970 .. 2100, every millisecond equally likely */
        int64_t ms = (int64_t)(test_rand(&seed) % 4102444800000ull);
        if (serial_back(cp_xlsx_serial(ms)) != ms) fail_msg("%lld ms does not survive its serial", (long long)ms);
    }
    for (int64_t ms = 1690201583000; ms < 1690201584000; ms++) assert_int_equal(serial_back(cp_xlsx_serial(ms)), ms);
}

static void test_col_names(void **state)
{
    (void)state;
    static const struct {
        unsigned col;
        const char *name;
    } cases[] = {{0, "A"}, {1, "B"}, {25, "Z"}, {26, "AA"}, {51, "AZ"}, {52, "BA"}, {701, "ZZ"}, {702, "AAA"},
                 {16383, "XFD"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[4];
        cp_xlsx_col_name(cases[i].col, out);
        assert_string_equal(out, cases[i].name);
    }
}

/* ---- a whole workbook ------------------------------------------------------------------------ */

static const double widths[4] = {8, 23, 0, 40};

static void new_sheet(cp_buf *z, cp_xlsxw **w, size_t ncols)
{
    cp_xlsx_sheet sh = {.name = "Calls", .widths = widths, .ncols = ncols, .frozen_rows = 1,
                        .mtime_ms = 1690201583767};
    assert_int_equal(cp_xlsxw_new(buf_sink, z, &sh, w), CP_OK);
}

/* Runs python3 over the workbook at path with a script that reads every part (stdin). */
static void python_check(const char *dir, const char *path, const char *script)
{
    char spath[4200], cmd[9000];
    snprintf(spath, sizeof spath, "%s/check.py", dir);
    FILE *f = fopen(spath, "w");
    assert_non_null(f);
    fputs(script, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "python3 '%s' '%s'", spath, path);
    if (system(cmd) != 0) fail_msg("the workbook check failed (%s)", cmd);
}

static const char check_py[] =
    "import sys, zipfile, xml.etree.ElementTree as ET\n"
    "z = zipfile.ZipFile(sys.argv[1])\n"
    "assert z.testzip() is None\n"
    "names = z.namelist()\n"
    "assert names == ['[Content_Types].xml', '_rels/.rels', 'xl/workbook.xml', 'xl/_rels/workbook.xml.rels',\n"
    "                 'xl/styles.xml', 'xl/worksheets/sheet1.xml'], names\n"
    "for i in z.infolist():\n"
    "    assert i.extract_version == 20, (i.filename, i.extract_version)   # classic: no ZIP64\n"
    "    assert i.flag_bits & 8 and i.compress_type == zipfile.ZIP_DEFLATED\n"
    "    assert b'\\x01\\x00' not in i.extra[0:2]\n"
    "    ET.fromstring(z.read(i))                                         # well-formed\n"
    "M = '{http://schemas.openxmlformats.org/spreadsheetml/2006/main}'\n"
    "wb = ET.fromstring(z.read('xl/workbook.xml'))\n"
    "assert [s.get('name') for s in wb.iter(M + 'sheet')] == ['Calls']\n"
    "st = ET.fromstring(z.read('xl/styles.xml'))\n"
    "assert [n.get('formatCode') for n in st.iter(M + 'numFmt')] == ['yyyy-mm-dd hh:mm:ss.000']\n"
    "ws = ET.fromstring(z.read('xl/worksheets/sheet1.xml'))\n"
    "pane = ws.find(f'{M}sheetViews/{M}sheetView/{M}pane')\n"
    "assert pane.get('state') == 'frozen' and pane.get('ySplit') == '1'\n"
    "assert [(c.get('min'), c.get('width')) for c in ws.iter(M + 'col')] == [('1', '8.00'), ('2', '23.00'), ('4', "
    "'40.00')]\n"
    "rows = []\n"
    "for r in ws.iter(M + 'row'):\n"
    "    cells = []\n"
    "    for c in r.iter(M + 'c'):\n"
    "        t = c.get('t')\n"
    "        if t == 'inlineStr': v = ('s', c.find(f'{M}is/{M}t').text, c.get('s'))\n"
    "        elif t == 'str': v = ('f', c.find(M + 'f').text, c.find(M + 'v').text, c.get('s'))\n"
    "        else: v = ('n', c.find(M + 'v').text, c.get('s'))\n"
    "        cells.append((c.get('r'), v))\n"
    "    rows.append((r.get('r'), cells))\n"
    "want = [\n"
    "  ('1', [('A1', ('s', 'Link', '1')), ('B1', ('s', 'Start (UTC)', '1')), ('C1', ('s', 'N', '1')),\n"
    "         ('D1', ('s', 'Text', '1'))]),\n"
    "  ('2', [('A2', ('f', 'HYPERLINK(\"http://h:1/tree?call=x-1&ts=5\",\"details\")', 'details', '3')),\n"
    "         ('B2', ('n', '45131.518330636573', '2')), ('C2', ('n', '-42', None)),\n"
    "         ('D2', ('s', ' <a&b>\\r\\n\\ufffd_x005F_x0041_ ', None))]),\n"
    "  ('3', [('A3', ('s', 'details', None)), ('C3', ('n', '9007199254740993', None))]),\n"
    "]\n"
    "assert rows == want, rows\n"
    "t = ws.find(f'{M}sheetData/{M}row/{M}c[@r=\"D2\"]/{M}is/{M}t')\n"
    "assert t.get('{http://www.w3.org/XML/1998/namespace}space') == 'preserve'\n";

static void test_workbook(void **state)
{
    (void)state;
    if (!in_path("python3")) {
        print_message("python3 not found: the workbook check is skipped\n");
        skip();
    }
    cp_buf z;
    cp_buf_init(&z);
    cp_xlsxw *w;
    new_sheet(&z, &w, 4);
    assert_int_equal(cp_xlsxw_row(w), CP_OK);
    const char *head[] = {"Link", "Start (UTC)", "N", "Text"};
    for (int i = 0; i < 4; i++) assert_int_equal(cp_xlsxw_text(w, head[i], strlen(head[i]), CP_XLSX_BOLD), CP_OK);
    assert_int_equal(cp_xlsxw_row(w), CP_OK);
    assert_int_equal(cp_xlsxw_link(w, "http://h:1/tree?call=x-1&ts=5", "details"), CP_OK);
    assert_int_equal(cp_xlsxw_date(w, 1690201583767), CP_OK);
    assert_int_equal(cp_xlsxw_number(w, -42), CP_OK);
    const char nasty[] = " <a&b>\r\n\x02_x0041_ ";
    assert_int_equal(cp_xlsxw_text(w, nasty, strlen(nasty), CP_XLSX_PLAIN), CP_OK);
    assert_int_equal(cp_xlsxw_number(w, 1), CP_ELIMIT); /* a fifth cell in four columns */
    assert_int_equal(cp_xlsxw_row(w), CP_OK);
    /* a URL a formula cannot hold (a quote, or over 255 characters): the label alone */
    char longurl[300];
    memset(longurl, 'u', sizeof longurl - 1);
    longurl[sizeof longurl - 1] = 0;
    assert_int_equal(cp_xlsxw_link(w, longurl, "details"), CP_OK);
    assert_int_equal(cp_xlsxw_text(w, "", 0, CP_XLSX_PLAIN), CP_OK); /* no cell, the column taken */
    assert_int_equal(cp_xlsxw_number(w, 9007199254740993ll), CP_OK);
    assert_int_equal(cp_xlsxw_finish(w), CP_OK);
    assert_true(cp_xlsxw_sheet_bytes(w) > 400);
    cp_xlsxw_free(w);

    char *dir = make_temp_dir("xlsxw");
    char path[4200];
    snprintf(path, sizeof path, "%s/calls.xlsx", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(z.data, 1, z.len, f), z.len);
    fclose(f);
    python_check(dir, path, check_py);
    remove_tree(dir);
    free(dir);
    cp_buf_free(&z);
}

static int discard_sink(void *ud, const void *p, size_t n)
{
    (void)p;
    *(uint64_t *)ud += n;
    return 0;
}

/* Excel's 1 048 576 rows: one more is refused; the archive still ends well. */
static void test_row_limit(void **state)
{
    (void)state;
    uint64_t bytes = 0;
    cp_xlsxw *w;
    cp_xlsx_sheet sh = {.name = "Calls", .ncols = 1};
    assert_int_equal(cp_xlsxw_new(discard_sink, &bytes, &sh, &w), CP_OK);
    for (uint32_t i = 0; i < CP_XLSX_MAX_ROWS; i++) {
        assert_int_equal(cp_xlsxw_row(w), CP_OK);
        assert_int_equal(cp_xlsxw_number(w, i), CP_OK);
    }
    assert_int_equal(cp_xlsxw_row(w), CP_ELIMIT);
    assert_int_equal(cp_xlsxw_finish(w), CP_OK);
    cp_xlsxw_free(w);
    assert_true(bytes > 1000);
}

static int failing_sink(void *ud, const void *p, size_t n)
{
    (void)p;
    size_t *left = ud;
    if (n > *left) return CP_EIO;
    *left -= n;
    return 0;
}

static void test_bad_input_and_sink_errors(void **state)
{
    (void)state;
    cp_xlsxw *w;
    size_t left = 1 << 30;
    const char *bad_names[] = {"", "a/b", "x[1]", "'quoted'", "a:b", "0123456789012345678901234567890123", "a&b"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        cp_xlsx_sheet sh = {.name = bad_names[i], .ncols = 1};
        assert_int_equal(cp_xlsxw_new(failing_sink, &left, &sh, &w), CP_EINVAL);
        assert_null(w);
    }
    cp_xlsx_sheet none = {.name = "Calls", .ncols = 0}, many = {.name = "Calls", .ncols = CP_XLSX_MAX_COLS + 1};
    assert_int_equal(cp_xlsxw_new(failing_sink, &left, &none, &w), CP_EINVAL);
    assert_int_equal(cp_xlsxw_new(failing_sink, &left, &many, &w), CP_EINVAL);
    /* a cell before any row */
    cp_xlsx_sheet sh = {.name = "Calls", .ncols = 2};
    assert_int_equal(cp_xlsxw_new(failing_sink, &left, &sh, &w), CP_OK);
    assert_int_equal(cp_xlsxw_number(w, 1), CP_ELIMIT);
    cp_xlsxw_free(w);
    /* the sink fails while the parts are written, then while rows stream */
    left = 100;
    assert_int_equal(cp_xlsxw_new(failing_sink, &left, &sh, &w), CP_EIO);
    assert_null(w);
    left = 8000;
    assert_int_equal(cp_xlsxw_new(failing_sink, &left, &sh, &w), CP_OK);
    uint64_t seed = 3;
    int st = CP_OK;
    char text[512];
    for (int i = 0; i < 100000 && st == CP_OK; i++) {
        for (size_t k = 0; k < sizeof text; k++) text[k] = (char)('a' + test_rand(&seed) % 26);
        st = cp_xlsxw_row(w);
        if (st == CP_OK) st = cp_xlsxw_text(w, text, sizeof text, CP_XLSX_PLAIN);
    }
    assert_int_equal(st, CP_EIO);
    assert_int_equal(cp_xlsxw_finish(w), CP_EIO); /* sticky */
    cp_xlsxw_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_text_cap),
        cmocka_unit_test(test_serial),
        cmocka_unit_test(test_col_names),
        cmocka_unit_test(test_workbook),
        cmocka_unit_test(test_row_limit),
        cmocka_unit_test(test_bad_input_and_sink_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
