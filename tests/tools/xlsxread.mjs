#!/usr/bin/env node
// xlsxread.mjs -- reads an .xlsx with an independent reader (exceljs) and prints it as one
// JSON document, so the C tests (tests/integration/xlsx_export_test.c) can compare what
// cloudprof's calls.xlsx holds with its calls.csv. Installed by scripts/node-tools.sh.
//
//   node xlsxread.mjs FILE
//
// Output: {"sheets": [names], "frozen": {"x": n, "y": n} | null,
//          "rows": [[cell, ...], ...]}   the first sheet's rows, in order, from row 1 (a
//                                         row with no cell is []), each from column A;
// a cell is null (none), {"n": number}, {"s": "text"} (rich text joined),
// {"d": epoch_ms, "fmt": "number format"} for a date cell (exceljs turns a number with a
// date format into a Date: ms rounded, UTC), {"f": "formula", "r": cached result},
// and every cell of the header row also says {"bold": true} when its font is bold.
// Exit status 1 with a message on stderr on any error (a file exceljs cannot read).
import ExcelJS from 'exceljs'

function cellOf(cell, header) {
  const v = cell.value
  let out
  if (v === null || v === undefined) return null
  if (typeof v === 'number') out = { n: v }
  else if (typeof v === 'string') out = { s: v }
  else if (v instanceof Date) out = { d: v.getTime(), fmt: cell.numFmt ?? null }
  else if (typeof v === 'object' && 'formula' in v) out = { f: v.formula, r: v.result ?? null }
  else if (typeof v === 'object' && Array.isArray(v.richText)) out = { s: v.richText.map((t) => t.text).join('') }
  else throw new Error(`unexpected cell value at ${cell.address}: ${JSON.stringify(v)}`)
  if (header && cell.font && cell.font.bold) out.bold = true
  return out
}

async function main() {
  const file = process.argv[2]
  if (!file) throw new Error('usage: node xlsxread.mjs FILE')
  const wb = new ExcelJS.Workbook()
  await wb.xlsx.readFile(file)
  const ws = wb.worksheets[0]
  if (!ws) throw new Error('the workbook has no sheet')
  const rows = []
  ws.eachRow({ includeEmpty: true }, (row, number) => {
    const cells = []
    row.eachCell({ includeEmpty: true }, (cell, col) => {
      cells[col - 1] = cellOf(cell, number === 1)
    })
    for (let i = 0; i < cells.length; i++) if (cells[i] === undefined) cells[i] = null
    rows[number - 1] = cells
  })
  for (let i = 0; i < rows.length; i++) if (!rows[i]) rows[i] = []
  const view = (ws.views || [])[0]
  const frozen = view && view.state === 'frozen' ? { x: view.xSplit ?? 0, y: view.ySplit ?? 0 } : null
  process.stdout.write(JSON.stringify({ sheets: wb.worksheets.map((s) => s.name), frozen, rows }) + '\n')
}

main().catch((e) => {
  process.stderr.write(`xlsxread: ${e && e.stack ? e.stack : e}\n`)
  process.exit(1)
})
