#!/usr/bin/env node
// pqread.mjs -- reads a Parquet file with an independent reader and prints it in one
// canonical form, so the C tests (tests/integration/pq_interop_test.c) can compare what
// cloudprof wrote with what DuckDB and hyparquet read. Installed by scripts/node-tools.sh.
//
//   node pqread.mjs duckdb rows FILE      one JSON object per row, in file order
//   node pqread.mjs hyparquet rows FILE   the same through hyparquet: byte-identical output
//   node pqread.mjs duckdb schema FILE    parquet_schema() rows, one JSON object per line
//   node pqread.mjs duckdb meta FILE      one JSON document: {"file": parquet_file_metadata,
//                                         "chunks": [parquet_metadata rows]}
//   node pqread.mjs duckdb sql FILE SQL [SQL...]
//                                         runs each statement (FILE registered as view f;
//                                         FILE "-" = no view) and prints its rows as JSON
//                                         lines; use COPY (...) TO '...' to write files
//   node pqread.mjs serve                 the commands above, one JSON array of arguments
//                                         per stdin line; answers "PQREAD <status> <bytes>\n"
//                                         and the output (one process for many commands)
//
// Canonical values: every column by name, in schema order; integers and timestamps as
// decimal strings of the integer (timestamps in epoch ms, floored), booleans, strings as
// JSON strings, binary as lowercase hex, lists as arrays, maps as arrays of [key, value]
// pairs in file order; null for null. Exit status 1 with a message on stderr on any error.
// Each reader is imported only when used (DuckDB's native library takes most of a start).
let duck = null
let hy = null

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))
function hex(bytes) {
  let s = ''
  for (let i = 0; i < bytes.length; i++) s += HEX[bytes[i]]
  return s
}

function floorDiv(a, b) {
  const q = a / b
  return (a % b !== 0n && (a < 0n) !== (b < 0n)) ? q - 1n : q
}

// ---- DuckDB values ----------------------------------------------------------------------

function duckCanon(v) {
  if (v === null || v === undefined) return null
  switch (typeof v) {
    case 'boolean': return v
    case 'string': return v
    case 'bigint': return v.toString()
    case 'number': return Number.isInteger(v) ? v.toFixed(0) : String(v)
  }
  if (v instanceof duck.DuckDBBlobValue) return hex(v.bytes)
  if (v instanceof duck.DuckDBTimestampTZValue || v instanceof duck.DuckDBTimestampValue)
    return floorDiv(v.micros, 1000n).toString()
  if (v instanceof duck.DuckDBTimestampMillisecondsValue) return v.millis.toString()
  if (v instanceof duck.DuckDBTimestampSecondsValue) return (v.seconds * 1000n).toString()
  if (v instanceof duck.DuckDBTimestampNanosecondsValue) return floorDiv(v.nanos, 1000000n).toString()
  if (v instanceof duck.DuckDBListValue || v instanceof duck.DuckDBArrayValue) return v.items.map(duckCanon)
  if (v instanceof duck.DuckDBMapValue) return v.entries.map(e => [duckCanon(e.key), duckCanon(e.value)])
  if (v instanceof duck.DuckDBStructValue) {
    const o = {}
    for (const [k, x] of Object.entries(v.entries)) o[k] = duckCanon(x)
    return o
  }
  return String(v)
}

function rowLine(names, values) {
  let s = '{'
  for (let i = 0; i < names.length; i++) {
    if (i) s += ','
    s += JSON.stringify(names[i]) + ':' + JSON.stringify(values[i])
  }
  return s + '}\n'
}

function sqlStr(s) {
  return "'" + s.replaceAll("'", "''") + "'"
}

// Runs fn(connection) on a fresh in-memory database, closed afterwards (serve runs many).
async function withDuck(fn) {
  duck ??= await import('@duckdb/node-api')
  const db = await duck.DuckDBInstance.create(':memory:')
  const con = await db.connect()
  try {
    return await fn(con)
  } finally {
    con.closeSync()
    db.closeSync()
  }
}

// Runs sql and appends its rows as JSON lines to out (an array of strings).
async function duckQueryLines(con, sql, out, skip = []) {
  const r = await con.runAndReadAll(sql)
  const names = r.columnNames()
  const keep = names.map((n, i) => skip.includes(n) ? -1 : i).filter(i => i >= 0)
  const keptNames = keep.map(i => names[i])
  for (const row of r.getRows()) out.push(rowLine(keptNames, keep.map(i => duckCanon(row[i]))))
}

async function duckObjects(con, sql) {
  const r = await con.runAndReadAll(sql)
  const names = r.columnNames()
  return r.getRows().map(row => {
    const o = {}
    names.forEach((n, i) => { o[n] = duckCanon(row[i]) })
    return o
  })
}

function duckRows(file) {
  return withDuck(async con => {
    const out = []
    // file_row_number makes the file order explicit; it is dropped from the output
    await duckQueryLines(con,
      `SELECT * FROM read_parquet(${sqlStr(file)}, file_row_number = true) ORDER BY file_row_number`,
      out, ['file_row_number'])
    return out
  })
}

function duckSchema(file) {
  return withDuck(async con => {
    const out = []
    await duckQueryLines(con, `SELECT name, type, repetition_type, converted_type, logical_type, num_children,
        scale, precision, field_id FROM parquet_schema(${sqlStr(file)})`, out)
    return out
  })
}

function duckMeta(file) {
  return withDuck(async con => {
    const f = sqlStr(file)
    const [fileMeta] = await duckObjects(con,
      `SELECT num_rows, num_row_groups, created_by, format_version FROM parquet_file_metadata(${f})`)
    const chunks = await duckObjects(con, `SELECT row_group_id, row_group_num_rows, column_id, path_in_schema, type,
        num_values, compression, encodings, stats_min_value, stats_max_value, stats_null_count, stats_min, stats_max,
        data_page_offset, dictionary_page_offset, total_compressed_size, total_uncompressed_size
      FROM parquet_metadata(${f}) ORDER BY row_group_id, column_id`)
    return [JSON.stringify({ file: fileMeta, chunks }) + '\n']
  })
}

function duckSql(file, stmts) {
  return withDuck(async con => {
    if (file !== '-') await con.run(`CREATE VIEW f AS SELECT * FROM read_parquet(${sqlStr(file)})`)
    const out = []
    for (const s of stmts) await duckQueryLines(con, s, out)
    return out
  })
}

// ---- hyparquet values --------------------------------------------------------------------

// Strings come back with a one-character prefix, so that map keys that look like array
// indices ("42") keep their file order as object properties (JS orders integer-like
// keys first); the prefix is removed when printing.
const parsers = {
  stringFromBytes: b => (b === undefined || b === null) ? b : '\u0000' + new TextDecoder().decode(b),
  timestampFromMilliseconds: v => ({ ms: BigInt(v) }),
  timestampFromMicroseconds: v => ({ ms: floorDiv(BigInt(v), 1000n) }),
  timestampFromNanoseconds: v => ({ ms: floorDiv(BigInt(v), 1000000n) }),
}

function hyCanon(v, node) {
  if (v === null || v === undefined) return null
  const el = node.element
  const ct = el.converted_type
  if (ct === 'MAP' || ct === 'MAP_KEY_VALUE' || el.logical_type?.type === 'MAP') {
    const kv = node.children[0]
    return Object.entries(v).map(([k, x]) => [hyCanon(k, kv.children[0]), hyCanon(x, kv.children[1])])
  }
  if (ct === 'LIST' || el.logical_type?.type === 'LIST') {
    let sub = node.children[0]
    if (sub.children.length === 1) sub = sub.children[0]
    return Array.from(v, x => hyCanon(x, sub))
  }
  if (node.children.length) {
    const o = {}
    for (const c of node.children) o[c.element.name] = hyCanon(v[c.element.name], c)
    return o
  }
  switch (typeof v) {
    case 'boolean': return v
    case 'string': return v.startsWith('\u0000') ? v.slice(1) : v
    case 'bigint': return v.toString()
    case 'number': return Number.isInteger(v) ? v.toFixed(0) : String(v)
  }
  if (v instanceof Uint8Array) return hex(v)
  if (typeof v === 'object' && typeof v.ms === 'bigint') return v.ms.toString()
  return String(v)
}

async function hyRows(file) {
  hy ??= { ...await import('hyparquet'), ...await import('hyparquet-compressors') }
  const { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema, compressors } = hy
  const buf = await asyncBufferFromFile(file)
  const metadata = await parquetMetadataAsync(buf)
  const tree = parquetSchema(metadata)
  const rows = await parquetReadObjects({ file: buf, metadata, compressors, utf8: false, parsers })
  const names = tree.children.map(c => c.element.name)
  const out = []
  for (const row of rows) out.push(rowLine(names, tree.children.map(c => hyCanon(row[c.element.name], c))))
  return out
}

// ---- main --------------------------------------------------------------------------------

function usage() {
  throw new UsageError('usage: node pqread.mjs <duckdb|hyparquet> rows FILE\n' +
    '       node pqread.mjs duckdb <schema|meta> FILE\n' +
    '       node pqread.mjs duckdb sql FILE|- "SELECT ... FROM f" [...]\n' +
    '       node pqread.mjs serve')
}

class UsageError extends Error {}

// One command: its output lines.
async function run(argv) {
  const [reader, cmd, file, ...rest] = argv
  if (!reader || !cmd || !file) usage()
  if (reader === 'hyparquet' && cmd === 'rows') return hyRows(file)
  if (reader === 'duckdb' && cmd === 'rows') return duckRows(file)
  if (reader === 'duckdb' && cmd === 'schema') return duckSchema(file)
  if (reader === 'duckdb' && cmd === 'meta') return duckMeta(file)
  if (reader === 'duckdb' && cmd === 'sql' && rest.length) return duckSql(file, rest)
  usage()
}

function write(s) {
  return new Promise((resolve, reject) => process.stdout.write(s, e => e ? reject(e) : resolve()))
}

function errText(e) {
  return e instanceof UsageError ? e.message : (e && e.stack ? e.stack : String(e))
}

// `serve`: many commands in one process (DuckDB loads once; the C test uses this).
// Each stdin line is a JSON array of arguments; each answer is the line
// "PQREAD <exit status> <byte length>" and then exactly that many bytes of output.
async function serve() {
  const { createInterface } = await import('node:readline')
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (!line.trim()) continue
    let code = 0
    let out = ''
    try {
      out = (await run(JSON.parse(line))).join('')
    } catch (e) {
      process.stderr.write(`pqread: ${errText(e)}\n`)
      code = 1
      out = ''
    }
    await write(`PQREAD ${code} ${Buffer.byteLength(out)}\n` + out)
  }
}

async function main(argv) {
  if (argv[0] === 'serve' && argv.length === 1) return serve()
  const out = await run(argv)
  // one write of everything, then a normal exit (stdout drains before node ends)
  await write(out.join(''))
}

main(process.argv.slice(2)).catch(e => {
  process.stderr.write(`pqread: ${errText(e)}\n`)
  process.exitCode = e instanceof UsageError ? 2 : 1
})
