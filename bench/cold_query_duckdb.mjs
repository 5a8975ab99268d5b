#!/usr/bin/env node
// cold_query_duckdb.mjs -- the DuckDB side of bench_cold_query (bench/cold_query): the same
// questions over the same cold calls files (cp_cold.h schema), answered by DuckDB in the same
// run as by our reader. Uses @duckdb/node-api from tests/tools/node_modules
// (scripts/node-tools.sh installs it); nothing here is linked into cloudprof.
//
//   node bench/cold_query_duckdb.mjs --files LISTFILE --spec SPEC.json [--runs N] [--threads T]
//                                    [--tools DIR] [--columns all|narrow]
//
// LISTFILE: one absolute Parquet path per line (empty lines ignored). SPEC.json:
//   {"questions": [{"name": "...", "kind": "...", "from": MS, "to": MS, ...}, ...]}
//   name          id printed back (no whitespace)
//   kind          latest | slowest | stats | stats_chart | param | word
//   from, to      epoch ms: time >= from AND time < to
//   min_duration, max_duration   optional inclusive bounds on duration (ms)
//   limit         rows for latest / slowest / param / word (default 100)
//   param, value  kind param: a param whose name equals `param` (case-insensitively) has a
//                 value containing `value` (case-insensitively)
//   word          kind word: case-insensitive substring of method, pod_name, a param name not
//                 starting with '_', or a value of such a param
//   column_ms     kind stats_chart: width of a chart column
// Every question reads the files with read_parquet([...]) each time (no table is loaded).
// Row questions project every column of the API's Call object (never the trace blob), as
// our reader hands over whole calls; with --columns narrow only time, duration, namespace,
// pod_name, restart_time, trace_index. The SQL of each kind is in questionSql below.
//
// Timing (wall clock, process.hrtime.bigint, the SQL run plus reading its result into JS):
//   first   the first execution on a fresh in-memory DuckDB instance made for that question
//           (no DuckDB cache or metadata warm; the OS page cache is whatever the run left)
//   warm    the median of --runs (default 5) further executions on that same instance
//           (DuckDB's defaults: its external file cache keeps the bytes it read in memory)
// SET threads = --threads (default 1; 0 = DuckDB's default), SET TimeZone = 'UTC'. Time
// bounds are written as literals of the time column's own type (TIMESTAMP WITH TIME ZONE for
// isAdjustedToUTC files, as ours are), so DuckDB pushes them into the scan (row-group
// statistics).
//
// Output: exactly one line per question on stdout,
//   DUCK name=<name> first_ms=<x.xx> warm_ms=<x.xx> runs=<n> rows=<rows returned> check=<value>
// check: latest -> epoch ms of the last row; slowest -> <duration>:<epoch ms> of the last
// row; stats -> <count>:<sum duration>:<sum suspend>:<sum queue wait>:<sum transactions>;
// stats_chart -> <columns>:<sum of the columns' max duration>; param / word -> <rows>:<epoch
// ms of the last row, 0 when none>. Anything else (progress) goes to stderr. Exit status 1 on
// any error (or when a warm run's answer differs from the first).
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const KINDS = ['latest', 'slowest', 'stats', 'stats_chart', 'param', 'word']
const USAGE = 'usage: cold_query_duckdb.mjs --files LISTFILE --spec SPEC.json [--runs N] [--threads T] [--tools DIR] [--columns all|narrow]'
let NARROW = false

function parseArgs(argv) {
  const o = { runs: 5, threads: 1, columns: 'all', tools: path.join(here, '..', 'tests', 'tools') }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i], v = argv[i + 1]
    if (a === '--files' && v) o.files = argv[++i]
    else if (a === '--spec' && v) o.spec = argv[++i]
    else if (a === '--runs' && v) o.runs = Number(argv[++i])
    else if (a === '--threads' && v) o.threads = Number(argv[++i])
    else if (a === '--tools' && v) o.tools = argv[++i]
    else if (a === '--columns' && (v === 'all' || v === 'narrow')) o.columns = argv[++i]
    else throw new Error(`bad argument ${a}\n${USAGE}`)
  }
  if (!o.files || !o.spec) throw new Error(USAGE)
  if (!Number.isInteger(o.runs) || o.runs < 1) throw new Error('--runs must be an integer >= 1')
  if (!Number.isInteger(o.threads) || o.threads < 0) throw new Error('--threads must be an integer >= 0')
  return o
}

function loadDuck(tools) {
  const req = createRequire(path.join(tools, 'package.json'))
  try {
    return req('@duckdb/node-api')
  } catch (e) {
    throw new Error(`@duckdb/node-api not found under ${tools}/node_modules (run scripts/node-tools.sh): ${e.message}`)
  }
}

function readFiles(listFile) {
  const files = readFileSync(listFile, 'utf8').split('\n').map(s => s.trim()).filter(Boolean)
  if (!files.length) throw new Error(`${listFile}: no Parquet files listed`)
  for (const f of files) if (!path.isAbsolute(f)) throw new Error(`${listFile}: not an absolute path: ${f}`)
  return files
}

// A spec question, checked, with its defaults.
function checkQuestion(q, i) {
  const where = `question ${i}${q && typeof q.name === 'string' ? ` (${q.name})` : ''}`
  if (!q || typeof q !== 'object') throw new Error(`${where}: not an object`)
  if (typeof q.name !== 'string' || !q.name || /\s/.test(q.name)) throw new Error(`${where}: "name" must be a non-empty string without whitespace`)
  if (!KINDS.includes(q.kind)) throw new Error(`${where}: "kind" must be one of ${KINDS.join(', ')}`)
  const int = (k, dflt, min) => {
    const v = q[k] ?? dflt
    if (v === undefined || v === null) return null
    if (!Number.isSafeInteger(v) || (min !== undefined && v < min)) throw new Error(`${where}: "${k}" must be an integer${min !== undefined ? ` >= ${min}` : ''}`)
    return v
  }
  const str = k => {
    if (typeof q[k] !== 'string') throw new Error(`${where}: "${k}" (string) is required for kind ${q.kind}`)
    return q[k]
  }
  const r = {
    name: q.name, kind: q.kind, from: int('from'), to: int('to'),
    minDuration: int('min_duration', null), maxDuration: int('max_duration', null), limit: int('limit', 100, 1),
  }
  if (r.from === null || r.to === null) throw new Error(`${where}: "from" and "to" (epoch ms) are required`)
  if (q.kind === 'param') { r.param = str('param'); r.value = str('value') }
  if (q.kind === 'word') r.word = str('word')
  if (q.kind === 'stats_chart') {
    r.columnMs = int('column_ms', undefined, 1)
    if (r.columnMs === null) throw new Error(`${where}: "column_ms" is required for kind stats_chart`)
  }
  return r
}

const sqlStr = s => "'" + String(s).replaceAll("'", "''") + "'"

// A literal of the time column's type for epoch ms: TIMESTAMPTZ for isAdjustedToUTC files
// (the column is compared to it as is, so the filter reaches the Parquet scan).
function timeLiteral(ms, timeType) {
  const iso = new Date(ms).toISOString()           // 2026-01-01T12:00:00.000Z
  if (/WITH TIME ZONE|TIMESTAMPTZ/i.test(timeType)) return `TIMESTAMPTZ '${iso}'`
  return `${timeType} '${iso.slice(0, -1)}'`       // naive timestamps hold UTC wall time
}

// The SQL of one question. Results always come back in the column order used by check().
function questionSql(q, files, timeType) {
  const src = `read_parquet([${files.map(sqlStr).join(', ')}])`
  const conds = [`time >= ${timeLiteral(q.from, timeType)}`, `time < ${timeLiteral(q.to, timeType)}`]
  if (q.minDuration !== null) conds.push(`duration >= ${q.minDuration}`)
  if (q.maxDuration !== null) conds.push(`duration <= ${q.maxDuration}`)
  // every column the API's Call object shows (all but the trace blob): the rows our reader
  // hands over are whole calls, so DuckDB materialises the same
  // (--columns narrow: only the key columns, DuckDB's best case)
  const rowCols = NARROW
    ? 'epoch_ms(time) AS time_ms, duration, namespace, pod_name, epoch_ms(restart_time) AS restart_ms, trace_index'
    : 'epoch_ms(time) AS time_ms, duration, namespace, pod_name, epoch_ms(restart_time) AS restart_ms,' +
      ' trace_index, cpu_time, wait_time, memory_used, non_blocking, queue_wait_duration, suspend_duration, calls,' +
      ' transactions, logs_generated, logs_written, file_read, file_written, net_read, net_written, service_name,' +
      ' method, params, thread, method_id, trace_reason'
  const rowsOrderedByTime = extra =>
    `SELECT ${rowCols} FROM ${src} WHERE ${[...conds, `(${extra})`].join(' AND ')} ORDER BY time DESC LIMIT ${q.limit}`
  switch (q.kind) {
    case 'latest':
      return `SELECT ${rowCols} FROM ${src} WHERE ${conds.join(' AND ')} ORDER BY time DESC LIMIT ${q.limit}`
    case 'slowest':
      return `SELECT ${rowCols} FROM ${src} WHERE ${conds.join(' AND ')} ORDER BY duration DESC, time DESC LIMIT ${q.limit}`
    case 'stats':
      return `SELECT count(*), coalesce(sum(duration), 0), coalesce(sum(suspend_duration), 0),
          coalesce(sum(queue_wait_duration), 0), coalesce(sum(transactions), 0)
        FROM ${src} WHERE ${conds.join(' AND ')}`
    case 'stats_chart':
      return `SELECT (epoch_ms(time) - ${q.from}) // ${q.columnMs} AS c, count(*) AS n, max(duration) AS max_duration
        FROM ${src} WHERE ${conds.join(' AND ')} GROUP BY c ORDER BY c`
    case 'param': {
      // map keys compare exactly (params['x'] is case-sensitive), so the entries are filtered
      const name = `lower(${sqlStr(q.param)})`, value = `lower(${sqlStr(q.value)})`
      return rowsOrderedByTime(`len(list_filter(map_entries(params), lambda e: lower(e.key) = ${name}
          AND len(list_filter(e.value, lambda v: contains(lower(v), ${value}))) > 0)) > 0`)
    }
    case 'word': {
      // contains() is a literal substring test: no LIKE escaping of % and _ in the word
      const w = `lower(${sqlStr(q.word)})`
      return rowsOrderedByTime(`contains(lower(method), ${w}) OR contains(lower(pod_name), ${w})
          OR len(list_filter(map_entries(params), lambda e: NOT starts_with(e.key, '_')
            AND (contains(lower(e.key), ${w}) OR len(list_filter(e.value, lambda v: contains(lower(v), ${w}))) > 0))) > 0`)
    }
  }
  throw new Error(`kind ${q.kind}`)
}

// rows returned and the check value of a result.
function check(q, rs) {
  const last = rs.length ? rs[rs.length - 1] : null
  switch (q.kind) {
    case 'latest':
      return { rows: rs.length, check: last ? String(last[0]) : '0' }
    case 'slowest':
      return { rows: rs.length, check: last ? `${last[1]}:${last[0]}` : '0:0' }
    case 'stats':
      return { rows: rs.length, check: rs[0].map(v => String(v ?? 0)).join(':') }
    case 'stats_chart': {
      let sum = 0n
      for (const r of rs) sum += BigInt(r[2] ?? 0)
      return { rows: rs.length, check: `${rs.length}:${sum}` }
    }
    case 'param':
    case 'word':
      return { rows: rs.length, check: `${rs.length}:${last ? last[0] : 0}` }
  }
  throw new Error(`kind ${q.kind}`)
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

async function open(duck, threads) {
  const db = await duck.DuckDBInstance.create(':memory:')
  const con = await db.connect()
  await con.run(threads === 0 ? 'RESET threads' : `SET threads = ${threads}`)
  await con.run("SET TimeZone = 'UTC'")
  return { db, con, close() { con.closeSync(); db.closeSync() } }
}

async function timed(con, sql) {
  const a = process.hrtime.bigint()
  const rs = (await con.runAndReadAll(sql)).getRows()
  return { ms: Number(process.hrtime.bigint() - a) / 1e6, rs }
}

async function main() {
  const o = parseArgs(process.argv.slice(2))
  NARROW = o.columns === 'narrow'
  const files = readFiles(o.files)
  let spec
  try {
    spec = JSON.parse(readFileSync(o.spec, 'utf8'))
  } catch (e) {
    throw new Error(`${o.spec}: ${e.message}`)
  }
  if (!spec || !Array.isArray(spec.questions) || !spec.questions.length) throw new Error(`${o.spec}: no "questions" array`)
  const questions = spec.questions.map(checkQuestion)
  const duck = loadDuck(o.tools)

  // The time column's type, on an instance of its own (the timed ones start fresh).
  let timeType
  {
    const s = await open(duck, o.threads)
    try {
      let r
      try {
        r = (await s.con.runAndReadAll(`SELECT column_type FROM (DESCRIBE SELECT time FROM read_parquet(${sqlStr(files[0])}))`)).getRows()
      } catch (e) {
        throw new Error(`${files[0]}: cannot read the type of its time column: ${e.message}`)
      }
      if (!r.length) throw new Error(`${files[0]}: no time column`)
      timeType = String(r[0][0])
      const v = (await s.con.runAndReadAll(`SELECT version(), current_setting('threads'), current_setting('enable_external_file_cache'),
          current_setting('parquet_metadata_cache')`)).getRows()[0]
      process.stderr.write(`duckdb ${v[0]}: threads=${v[1]} external_file_cache=${v[2]} parquet_metadata_cache=${v[3]}; ` +
        `${files.length} files, time is ${timeType}, ${questions.length} questions, ${o.runs} warm runs each\n`)
    } finally {
      s.close()
    }
  }

  for (const q of questions) {
    const sql = questionSql(q, files, timeType)
    const s = await open(duck, o.threads)
    try {
      let first
      try {
        first = await timed(s.con, sql)
      } catch (e) {
        throw new Error(`question ${q.name}: ${e.message}\nSQL: ${sql}`)
      }
      const res = check(q, first.rs)
      const warm = []
      for (let r = 0; r < o.runs; r++) {
        const t = await timed(s.con, sql)
        const c = check(q, t.rs)
        if (c.rows !== res.rows || c.check !== res.check)
          throw new Error(`question ${q.name}: warm run ${r + 1} answered rows=${c.rows} check=${c.check}, the first rows=${res.rows} check=${res.check}`)
        warm.push(t.ms)
      }
      process.stderr.write(`  ${q.name} (${q.kind}): first ${first.ms.toFixed(2)} ms, warm ${warm.map(t => t.toFixed(2)).join(' ')} ms\n`)
      console.log(`DUCK name=${q.name} first_ms=${first.ms.toFixed(2)} warm_ms=${median(warm).toFixed(2)} runs=${o.runs} rows=${res.rows} check=${res.check}`)
    } finally {
      s.close()
    }
  }
}

main().catch(e => {
  process.stderr.write(`cold_query_duckdb: error: ${e && e.message ? e.message : e}\n`)
  process.exitCode = 1
})
