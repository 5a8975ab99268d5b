/* cp_xlsxw.h -- a streaming XLSX writer for exports (ui.md §3.11): one worksheet of
 * Office Open XML (ECMA-376) written row by row into a classic zip (cp_zipout.h), so a
 * workbook of a million rows never sits in memory.
 *
 * The package holds [Content_Types].xml, _rels/.rels, xl/workbook.xml,
 * xl/_rels/workbook.xml.rels, xl/styles.xml and xl/worksheets/sheet1.xml; the small parts
 * are written whole by cp_xlsxw_new, the sheet is one deflated entry streamed as rows come
 * (zip data descriptor). Strings are inline (t="inlineStr"), so no shared-strings table is
 * held; numbers are numeric cells; times are Excel serial dates (UTC) with a date-time
 * format; a link is a HYPERLINK formula with its label as the cached value (a <hyperlink>
 * element would need a relationship per link in a part written after the sheet, i.e. every
 * URL kept until the end).
 *
 * Pure code: the archive's bytes go to a sink callback in order. Written for Excel (the
 * package parts ECMA-376 requires, nothing else); read back by exceljs in the tests
 * (tests/tools/xlsxread.mjs) and by Python's zipfile and ElementTree (xlsxw_test).
 */
#ifndef CP_XLSXW_H
#define CP_XLSXW_H

#include "common/cp_common.h"
#include "http/cp_zipout.h"

#include <stddef.h>
#include <stdint.h>

#define CP_XLSX_MAX_ROWS 1048576u      /* rows of an Excel sheet */
#define CP_XLSX_MAX_COLS 64u           /* columns this writer takes (Excel: 16 384) */
#define CP_XLSX_MAX_CELL_UNITS 32767u  /* an Excel cell's text, in UTF-16 code units */
#define CP_XLSX_MAX_FORMULA_TEXT 255u  /* a string literal inside an Excel formula */

/* Cell styles (the cellXfs of styles.xml). */
typedef enum cp_xlsx_style {
    CP_XLSX_PLAIN = 0,
    CP_XLSX_BOLD = 1,       /* a header */
    CP_XLSX_DATE = 2,       /* yyyy-mm-dd hh:mm:ss.000 */
    CP_XLSX_LINK = 3,       /* blue, underlined */
    CP_XLSX_NSTYLES
} cp_xlsx_style;

typedef struct cp_xlsx_sheet {
    const char *name;       /* the sheet's tab: 1..31 characters, none of []:*?/\ */
    const double *widths;   /* ncols column widths in characters (0: Excel's default) */
    size_t ncols;           /* <= CP_XLSX_MAX_COLS */
    unsigned frozen_rows;   /* rows kept in view when scrolling (a header), 0 = none */
    int64_t mtime_ms;       /* the zip entries' time */
} cp_xlsx_sheet;

typedef struct cp_xlsxw cp_xlsxw;

/* Writes the package's small parts and the sheet's head. CP_OK, CP_EINVAL (a bad sheet
 * name or column count), CP_ENOMEM, or the sink's error. */
int cp_xlsxw_new(cp_zipw_sink_fn sink, void *ud, const cp_xlsx_sheet *sh, cp_xlsxw **out);
/* Starts the next row (ending the previous one). CP_ELIMIT past CP_XLSX_MAX_ROWS. */
int cp_xlsxw_row(cp_xlsxw *w);
/* Cells, left to right in the current row; CP_ELIMIT past the sheet's ncols. */
int cp_xlsxw_number(cp_xlsxw *w, int64_t v);
int cp_xlsxw_date(cp_xlsxw *w, int64_t epoch_ms);
/* Text as cp_xlsx_text makes it (n bytes of UTF-8, need not be valid). */
int cp_xlsxw_text(cp_xlsxw *w, const char *s, size_t n, cp_xlsx_style style);
/* A link labelled label to url (printable ASCII without '"'). A URL or label too long for
 * a formula's string literal gives the label as plain text. */
int cp_xlsxw_link(cp_xlsxw *w, const char *url, const char *label);
/* Ends the sheet and the archive. No call is valid after it but free. */
int cp_xlsxw_finish(cp_xlsxw *w);
/* The sheet's XML bytes so far (uncompressed): a classic zip entry must stay below 4 GiB. */
uint64_t cp_xlsxw_sheet_bytes(const cp_xlsxw *w);
void cp_xlsxw_free(cp_xlsxw *w);

/* ---- pure helpers (exposed for tests) ------------------------------------------------ */

/* What cp_xlsx_text did (bits of *flags). */
enum {
    CP_XLSX_EDGE_SPACE = 1, /* the text starts or ends with white space: the cell needs
                             * xml:space="preserve" or readers trim it */
    CP_XLSX_CUT = 2,        /* cut at max_units */
    CP_XLSX_REPLACED = 4,   /* invalid UTF-8 or characters XML 1.0 forbids became U+FFFD */
};
/* Appends s[0..n) as the text of an XML element, as Excel reads it back:
 * - &, <, > escaped; CR as &#13; (XML parsers turn a literal CR into LF);
 * - invalid UTF-8, and characters XML 1.0 forbids (C0 controls but TAB, LF, CR; U+FFFE,
 *   U+FFFF), become U+FFFD;
 * - a literal "_xHHHH_" gets its '_' written as _x005F_: Excel decodes _xHHHH_ in text
 *   (ECMA-376 ST_Xstring), which would change the text otherwise;
 * - at most max_units UTF-16 code units (Excel counts characters so), cut between
 *   characters.
 * CP_OK or CP_ENOMEM. */
int cp_xlsx_text(cp_buf *out, const char *s, size_t n, size_t max_units, unsigned *flags);
/* The Excel serial date (1900 date system, days since 1899-12-30) of a UTC instant. */
double cp_xlsx_serial(int64_t epoch_ms);
/* A column's letters ("A", "Z", "AA", ...), col 0-based (< 16 384). */
void cp_xlsx_col_name(unsigned col, char out[4]);

#endif
