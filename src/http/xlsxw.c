/* xlsxw.c -- streaming XLSX writer (cp_xlsxw.h): the package's fixed parts, then one
 * worksheet whose rows are formatted into a small buffer and handed to the zip writer's
 * deflate stream whenever it holds XLSXW_FLUSH bytes, so memory stays at zlib's state, the
 * zip writer's chunk and about one row, whatever the number of rows.
 */
#include "http/cp_xlsxw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XLSXW_FLUSH (64u << 10)        /* sheet XML handed to the zip writer at a time */

#define NS_MAIN "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
#define NS_REL "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
#define NS_PKG_REL "http://schemas.openxmlformats.org/package/2006/relationships"
#define XML_DECL "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"

struct cp_xlsxw {
    cp_zipw *zip;
    size_t ncols;
    uint32_t row;                      /* 1-based number of the current row; 0 before the first */
    unsigned col;                      /* 0-based column of the next cell */
    int in_row;
    cp_buf xml;                        /* sheet XML not yet given to the zip writer */
    cp_buf text;                       /* one cell's escaped text */
    uint64_t sheet_bytes;              /* sheet XML produced so far */
    int err;                           /* sticky */
};

/* ---- the package's fixed parts ------------------------------------------------------- */

static const char content_types[] =
    XML_DECL "<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">"
    "<Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/>"
    "<Default Extension=\"xml\" ContentType=\"application/xml\"/>"
    "<Override PartName=\"/xl/workbook.xml\" "
    "ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml\"/>"
    "<Override PartName=\"/xl/worksheets/sheet1.xml\" "
    "ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml\"/>"
    "<Override PartName=\"/xl/styles.xml\" "
    "ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml\"/>"
    "</Types>";

static const char root_rels[] =
    XML_DECL "<Relationships xmlns=\"" NS_PKG_REL "\">"
    "<Relationship Id=\"rId1\" Type=\"" NS_REL "/officeDocument\" Target=\"xl/workbook.xml\"/>"
    "</Relationships>";

static const char workbook_rels[] =
    XML_DECL "<Relationships xmlns=\"" NS_PKG_REL "\">"
    "<Relationship Id=\"rId1\" Type=\"" NS_REL "/worksheet\" Target=\"worksheets/sheet1.xml\"/>"
    "<Relationship Id=\"rId2\" Type=\"" NS_REL "/styles\" Target=\"styles.xml\"/>"
    "</Relationships>";

/* Fonts: regular, bold (headers), link blue underlined; cellXfs in cp_xlsx_style order.
 * numFmt 164 is the first id free for custom formats. */
static const char styles[] =
    XML_DECL "<styleSheet xmlns=\"" NS_MAIN "\">"
    "<numFmts count=\"1\"><numFmt numFmtId=\"164\" formatCode=\"yyyy-mm-dd hh:mm:ss.000\"/></numFmts>"
    "<fonts count=\"3\">"
    "<font><sz val=\"11\"/><name val=\"Calibri\"/><family val=\"2\"/></font>"
    "<font><b/><sz val=\"11\"/><name val=\"Calibri\"/><family val=\"2\"/></font>"
    "<font><u/><sz val=\"11\"/><color rgb=\"FF0563C1\"/><name val=\"Calibri\"/><family val=\"2\"/></font>"
    "</fonts>"
    "<fills count=\"2\"><fill><patternFill patternType=\"none\"/></fill>"
    "<fill><patternFill patternType=\"gray125\"/></fill></fills>"
    "<borders count=\"1\"><border><left/><right/><top/><bottom/><diagonal/></border></borders>"
    "<cellStyleXfs count=\"1\"><xf numFmtId=\"0\" fontId=\"0\" fillId=\"0\" borderId=\"0\"/></cellStyleXfs>"
    "<cellXfs count=\"4\">"
    "<xf numFmtId=\"0\" fontId=\"0\" fillId=\"0\" borderId=\"0\" xfId=\"0\"/>"
    "<xf numFmtId=\"0\" fontId=\"1\" fillId=\"0\" borderId=\"0\" xfId=\"0\" applyFont=\"1\"/>"
    "<xf numFmtId=\"164\" fontId=\"0\" fillId=\"0\" borderId=\"0\" xfId=\"0\" applyNumberFormat=\"1\"/>"
    "<xf numFmtId=\"0\" fontId=\"2\" fillId=\"0\" borderId=\"0\" xfId=\"0\" applyFont=\"1\"/>"
    "</cellXfs>"
    "<cellStyles count=\"1\"><cellStyle name=\"Normal\" xfId=\"0\" builtinId=\"0\"/></cellStyles>"
    "</styleSheet>";

/* One whole part as a deflated entry. */
static int put_part(cp_zipw *z, const char *name, const char *text, size_t len, int64_t mtime_ms)
{
    int st = cp_zipw_begin(z, name, mtime_ms, 1);
    if (st == CP_OK) st = cp_zipw_data(z, text, len);
    if (st == CP_OK) st = cp_zipw_end(z);
    return st;
}

/* A sheet name Excel takes, and that needs no XML escaping here. */
static int sheet_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 1 || n > 31 || s[0] == '\'' || s[n - 1] == '\'') return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] > 0x7e || strchr("[]:*?/\\&<>\"", s[i])) return 0;
    return 1;
}

static int put_workbook(cp_zipw *z, const cp_xlsx_sheet *sh)
{
    cp_buf b;
    cp_buf_init(&b);
    int st = cp_buf_printf(&b,
                           XML_DECL "<workbook xmlns=\"" NS_MAIN "\" xmlns:r=\"" NS_REL "\">"
                                    "<sheets><sheet name=\"%s\" sheetId=\"1\" r:id=\"rId1\"/></sheets></workbook>",
                           sh->name);
    if (st == CP_OK) st = put_part(z, "xl/workbook.xml", (const char *)b.data, b.len, sh->mtime_ms);
    cp_buf_free(&b);
    return st;
}

/* The worksheet's start, up to <sheetData>: the frozen header pane and the widths. */
static int sheet_head(cp_xlsxw *w, const cp_xlsx_sheet *sh)
{
    cp_buf *b = &w->xml;
    int bad = cp_buf_puts(b, XML_DECL "<worksheet xmlns=\"" NS_MAIN "\" xmlns:r=\"" NS_REL "\">") != CP_OK;
    bad |= cp_buf_puts(b, "<sheetViews><sheetView workbookViewId=\"0\">") != CP_OK;
    if (sh->frozen_rows) {
        bad |= cp_buf_printf(b,
                             "<pane ySplit=\"%u\" topLeftCell=\"A%u\" activePane=\"bottomLeft\" state=\"frozen\"/>"
                             "<selection pane=\"bottomLeft\"/>",
                             sh->frozen_rows, sh->frozen_rows + 1) != CP_OK;
    }
    bad |= cp_buf_puts(b, "</sheetView></sheetViews><sheetFormatPr defaultRowHeight=\"15\"/>") != CP_OK;
    int cols = 0;
    for (size_t i = 0; i < sh->ncols; i++) {
        if (!(sh->widths && sh->widths[i] > 0)) continue;
        bad |= (!cols++ && cp_buf_puts(b, "<cols>") != CP_OK);
        bad |= cp_buf_printf(b, "<col min=\"%zu\" max=\"%zu\" width=\"%.2f\" customWidth=\"1\"/>", i + 1, i + 1,
                             sh->widths[i]) != CP_OK;
    }
    if (cols) bad |= cp_buf_puts(b, "</cols>") != CP_OK;
    bad |= cp_buf_puts(b, "<sheetData>") != CP_OK;
    return bad ? CP_ENOMEM : CP_OK;
}

int cp_xlsxw_new(cp_zipw_sink_fn sink, void *ud, const cp_xlsx_sheet *sh, cp_xlsxw **out)
{
    *out = NULL;
    if (!sh || !sheet_name_ok(sh->name) || sh->ncols < 1 || sh->ncols > CP_XLSX_MAX_COLS) return CP_EINVAL;
    cp_xlsxw *w = calloc(1, sizeof *w);
    if (!w) return CP_ENOMEM;
    w->ncols = sh->ncols;
    cp_buf_init(&w->xml);
    cp_buf_init(&w->text);
    int st = cp_zipw_new(sink, ud, &w->zip);
    if (st == CP_OK) {
        cp_zipw_classic(w->zip);
        /* level 1: a million rows (1.3 GB of XML) deflate in a third of level 6's time, which
         * decides whether an export fits its 25 s; the file is a quarter bigger */
        cp_zipw_level(w->zip, 1);
    }
    if (st == CP_OK) st = put_part(w->zip, "[Content_Types].xml", content_types, sizeof content_types - 1, sh->mtime_ms);
    if (st == CP_OK) st = put_part(w->zip, "_rels/.rels", root_rels, sizeof root_rels - 1, sh->mtime_ms);
    if (st == CP_OK) st = put_workbook(w->zip, sh);
    if (st == CP_OK)
        st = put_part(w->zip, "xl/_rels/workbook.xml.rels", workbook_rels, sizeof workbook_rels - 1, sh->mtime_ms);
    if (st == CP_OK) st = put_part(w->zip, "xl/styles.xml", styles, sizeof styles - 1, sh->mtime_ms);
    if (st == CP_OK) st = cp_zipw_begin(w->zip, "xl/worksheets/sheet1.xml", sh->mtime_ms, 1);
    if (st == CP_OK) st = sheet_head(w, sh);
    if (st != CP_OK) {
        cp_xlsxw_free(w);
        return st;
    }
    *out = w;
    return CP_OK;
}

/* ---- the sheet ------------------------------------------------------------------------- */

/* Hands the buffered sheet XML to the zip writer (always when force, else once it is big
 * enough to be worth a deflate call). */
static int drain(cp_xlsxw *w, int force)
{
    if (w->err) return w->err;
    if (!force && w->xml.len < XLSXW_FLUSH) return CP_OK;
    int st = cp_zipw_data(w->zip, w->xml.data, w->xml.len);
    if (st != CP_OK) return w->err = st;
    cp_buf_reset(&w->xml);
    return CP_OK;
}

/* Appends to the sheet XML, counting its bytes. */
static int emit(cp_xlsxw *w, const void *p, size_t n)
{
    if (cp_buf_append(&w->xml, p, n) != CP_OK) return w->err = CP_ENOMEM;
    w->sheet_bytes += n;
    return CP_OK;
}

static int emit_str(cp_xlsxw *w, const char *s) { return emit(w, s, strlen(s)); }

static int end_row(cp_xlsxw *w)
{
    if (!w->in_row) return CP_OK;
    w->in_row = 0;
    int st = emit_str(w, "</row>");
    return st == CP_OK ? drain(w, 0) : st;
}

int cp_xlsxw_row(cp_xlsxw *w)
{
    if (w->err) return w->err;
    int st = end_row(w);
    if (st != CP_OK) return st;
    if (w->row >= CP_XLSX_MAX_ROWS) return CP_ELIMIT;
    w->row++;
    w->col = 0;
    w->in_row = 1;
    char tag[32];
    int k = snprintf(tag, sizeof tag, "<row r=\"%u\">", (unsigned)w->row);
    return emit(w, tag, (size_t)k);
}

/* Decimal digits of v at p; returns their count. (Cells are most of a sheet: printf for
 * each of their numbers would be a large share of the export's time.) */
static size_t put_dec(char *p, uint64_t v)
{
    char tmp[20];
    size_t k = 0;
    do {
        tmp[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < k; i++) p[i] = tmp[k - 1 - i];
    return k;
}

static size_t put_str(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return n;
}

/* Opens the next cell: <c r="B7"[ t="type"][ s="style"]> (the caller writes the rest). */
static int cell_open(cp_xlsxw *w, const char *type, cp_xlsx_style style)
{
    if (w->err) return w->err;
    if (!w->in_row || w->col >= w->ncols) return CP_ELIMIT;
    char ref[4], tag[80];
    cp_xlsx_col_name(w->col++, ref);
    size_t k = put_str(tag, "<c r=\"");
    k += put_str(tag + k, ref);
    k += put_dec(tag + k, w->row);
    tag[k++] = '"';
    if (type) {
        k += put_str(tag + k, " t=\"");
        k += put_str(tag + k, type);
        tag[k++] = '"';
    }
    if (style != CP_XLSX_PLAIN) {
        k += put_str(tag + k, " s=\"");
        k += put_dec(tag + k, (uint64_t)style);
        tag[k++] = '"';
    }
    tag[k++] = '>';
    return emit(w, tag, k);
}

int cp_xlsxw_number(cp_xlsxw *w, int64_t v)
{
    int st = cell_open(w, NULL, CP_XLSX_PLAIN);
    if (st != CP_OK) return st;
    char val[48];
    size_t k = put_str(val, "<v>");
    if (v < 0) val[k++] = '-';
    k += put_dec(val + k, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
    k += put_str(val + k, "</v></c>");
    return emit(w, val, k);
}

int cp_xlsxw_date(cp_xlsxw *w, int64_t epoch_ms)
{
    int st = cell_open(w, NULL, CP_XLSX_DATE);
    if (st != CP_OK) return st;
    /* 17 significant digits: the double read back is the one written, within a
     * microsecond of the instant, so readers that round to milliseconds get it exactly */
    char val[64];
    int k = snprintf(val, sizeof val, "<v>%.17g</v></c>", cp_xlsx_serial(epoch_ms));
    return emit(w, val, (size_t)k);
}

int cp_xlsxw_text(cp_xlsxw *w, const char *s, size_t n, cp_xlsx_style style)
{
    if (w->err) return w->err;
    if (n == 0) { /* an empty cell is no cell (what Excel writes), the column still taken */
        if (!w->in_row || w->col >= w->ncols) return CP_ELIMIT;
        w->col++;
        return CP_OK;
    }
    cp_buf_reset(&w->text);
    unsigned flags = 0;
    if (cp_xlsx_text(&w->text, s, n, CP_XLSX_MAX_CELL_UNITS, &flags) != CP_OK) return w->err = CP_ENOMEM;
    int st = cell_open(w, "inlineStr", style);
    if (st == CP_OK) st = emit_str(w, flags & CP_XLSX_EDGE_SPACE ? "<is><t xml:space=\"preserve\">" : "<is><t>");
    if (st == CP_OK) st = emit(w, w->text.data, w->text.len);
    if (st == CP_OK) st = emit_str(w, "</t></is></c>");
    return st;
}

/* s can be a formula's string literal as it is: printable ASCII without '"' (which would
 * need doubling), within the limit of a literal. */
static int formula_literal_ok(const char *s)
{
    size_t n = strlen(s);
    if (n > CP_XLSX_MAX_FORMULA_TEXT) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] > 0x7e || s[i] == '"') return 0;
    return 1;
}

int cp_xlsxw_link(cp_xlsxw *w, const char *url, const char *label)
{
    if (!formula_literal_ok(url) || !formula_literal_ok(label))
        return cp_xlsxw_text(w, label, strlen(label), CP_XLSX_PLAIN);
    int st = cell_open(w, "str", CP_XLSX_LINK);
    if (st != CP_OK) return st;
    unsigned flags;
    cp_buf_reset(&w->text);
    /* the formula and its cached value: readers that do not calculate show the label */
    int bad = cp_buf_puts(&w->text, "<f>HYPERLINK(\"") != CP_OK;
    bad |= cp_xlsx_text(&w->text, url, strlen(url), CP_XLSX_MAX_FORMULA_TEXT, &flags) != CP_OK;
    bad |= cp_buf_puts(&w->text, "\",\"") != CP_OK;
    bad |= cp_xlsx_text(&w->text, label, strlen(label), CP_XLSX_MAX_FORMULA_TEXT, &flags) != CP_OK;
    bad |= cp_buf_puts(&w->text, "\")</f><v>") != CP_OK;
    bad |= cp_xlsx_text(&w->text, label, strlen(label), CP_XLSX_MAX_FORMULA_TEXT, &flags) != CP_OK;
    bad |= cp_buf_puts(&w->text, "</v></c>") != CP_OK;
    if (bad) return w->err = CP_ENOMEM;
    return emit(w, w->text.data, w->text.len);
}

int cp_xlsxw_finish(cp_xlsxw *w)
{
    int st = end_row(w);
    if (st == CP_OK) st = emit_str(w, "</sheetData></worksheet>");
    if (st == CP_OK) st = drain(w, 1);
    if (st == CP_OK) st = cp_zipw_end(w->zip);
    if (st == CP_OK) st = cp_zipw_finish(w->zip);
    if (st != CP_OK) w->err = st;
    return st;
}

uint64_t cp_xlsxw_sheet_bytes(const cp_xlsxw *w) { return w->sheet_bytes; }

void cp_xlsxw_free(cp_xlsxw *w)
{
    if (!w) return;
    cp_zipw_free(w->zip);
    cp_buf_free(&w->xml);
    cp_buf_free(&w->text);
    free(w);
}

/* ---- pure helpers ------------------------------------------------------------------------ */

/* Characters XML 1.0 allows (§2.2 Char). */
static int xml_char_ok(uint32_t cp)
{
    return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFFFD) ||
           (cp >= 0x10000 && cp <= 0x10FFFF);
}

static int is_space(uint32_t cp) { return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r'; }

/* A byte that stands for itself in element text ('_' may start an _xHHHH_ to escape). */
static int plain_ascii(uint8_t c) { return c >= 0x20 && c < 0x7F && c != '&' && c != '<' && c != '>' && c != '_'; }

static int is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* s[i] starts "_xHHHH_" (the escape Excel decodes in text). */
static int xstring_escape_at(const char *s, size_t n, size_t i)
{
    return n - i >= 7 && s[i] == '_' && s[i + 1] == 'x' && is_hex(s[i + 2]) && is_hex(s[i + 3]) &&
           is_hex(s[i + 4]) && is_hex(s[i + 5]) && s[i + 6] == '_';
}

/* The character at p[0..left): its code point and length; U+FFFD (and 1 byte for a byte
 * that starts no valid sequence) with *replaced set for what XML 1.0 cannot carry. */
static uint32_t next_char(const uint8_t *p, size_t left, size_t *len, int *replaced)
{
    uint32_t cp = p[0];
    *len = cp_utf8_seq(p, left);
    *replaced = *len == 0;
    if (*replaced) {
        *len = 1;
    } else if (*len > 1) {
        cp = p[0] & (0xFFu >> (*len + 1));
        for (size_t k = 1; k < *len; k++) cp = cp << 6 | (p[k] & 0x3F);
    }
    if (*replaced || !xml_char_ok(cp)) {
        *replaced = 1;
        cp = 0xFFFD;
    }
    return cp;
}

/* Appends one character of s (at i) as element text. */
static int put_char(cp_buf *out, const char *s, size_t n, size_t i, uint32_t cp, size_t len, int replaced)
{
    switch (cp) {
    case '&': return cp_buf_puts(out, "&amp;");
    case '<': return cp_buf_puts(out, "&lt;");
    case '>': return cp_buf_puts(out, "&gt;");
    case '\r': return cp_buf_puts(out, "&#13;");
    case '_': return cp_buf_puts(out, xstring_escape_at(s, n, i) ? "_x005F_" : "_");
    default: return replaced ? cp_buf_append(out, "\xEF\xBF\xBD", 3) : cp_buf_append(out, s + i, len);
    }
}

int cp_xlsx_text(cp_buf *out, const char *s, size_t n, size_t max_units, unsigned *flags)
{
    size_t units = 0;
    uint32_t last = 0;
    int bad = 0;
    *flags = 0;
    for (size_t i = 0; i < n && !bad;) {
        /* most text is printable ASCII needing no escape: copied a run at a time */
        size_t j = i, room = max_units - units;
        while (j < n && j - i < room && plain_ascii((uint8_t)s[j])) j++;
        if (j > i) {
            if (i == 0 && s[0] == ' ') *flags |= CP_XLSX_EDGE_SPACE;
            bad = cp_buf_append(out, s + i, j - i) != CP_OK;
            units += j - i;
            last = (uint8_t)s[j - 1];
            i = j;
            continue;
        }
        size_t len;
        int replaced;
        uint32_t cp = next_char((const uint8_t *)s + i, n - i, &len, &replaced);
        size_t u = cp >= 0x10000 ? 2 : 1; /* UTF-16 units, as Excel counts */
        if (units + u > max_units) {
            *flags |= CP_XLSX_CUT;
            break;
        }
        if (replaced) *flags |= CP_XLSX_REPLACED;
        if (i == 0 && is_space(cp)) *flags |= CP_XLSX_EDGE_SPACE;
        units += u;
        last = cp;
        bad = put_char(out, s, n, i, cp, len, replaced) != CP_OK;
        i += len;
    }
    if (is_space(last)) *flags |= CP_XLSX_EDGE_SPACE;
    return bad ? CP_ENOMEM : CP_OK;
}

double cp_xlsx_serial(int64_t epoch_ms)
{
    /* whole days and the rest apart: the fraction keeps full precision */
    const int64_t day = 86400000;
    int64_t days = epoch_ms / day - (epoch_ms % day < 0);
    int64_t rest = epoch_ms - days * day;
    return 25569.0 + (double)days + (double)rest / (double)day; /* 25569: 1970-01-01 */
}

void cp_xlsx_col_name(unsigned col, char out[4])
{
    char tmp[4];
    size_t k = 0;
    col++; /* bijective base 26: A..Z, AA.. */
    while (col && k < 3) {
        col--;
        tmp[k++] = (char)('A' + col % 26);
        col /= 26;
    }
    for (size_t i = 0; i < k; i++) out[i] = tmp[k - 1 - i];
    out[k] = 0;
}
