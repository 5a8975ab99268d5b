#!/usr/bin/env node
// parquet_duckdb.mjs -- the DuckDB side of bench_parquet (bench/parquet.c): DuckDB writing
// the same rows as cloudprof's Parquet writer, timed in the same run. Uses @duckdb/node-api
// from tests/tools/node_modules (scripts/node-tools.sh installs it); nothing here is linked
// into cloudprof.
//
//   node bench/parquet_duckdb.mjs --in FILE --out-dir DIR [--runs N] [--threads LIST]
//                                 [--tools DIR] [--level L]
//
// 1. Loads FILE (the Parquet file our writer wrote) into an in-memory table t, in file
//    order (not timed: that is DuckDB's equivalent of our rows held in memory).
// 2. For each entry of --threads (comma list; 0 = DuckDB's default, RESET threads): SET
//    threads, then times `COPY t TO 'DIR/duck_t<1|default>.parquet' (FORMAT parquet,
//    COMPRESSION zstd)` --runs times (wall clock, process.hrtime). --level adds
//    COMPRESSION_LEVEL (default: DuckDB's own).
// 3. count(*) of FILE and of every DuckDB file, row groups, and the compressed and
//    uncompressed bytes and encodings of every leaf column of FILE and of the threads=1
//    file (parquet_metadata, summed over row groups).
//
// Output: one "DUCK <what> key=value ..." line per fact (parsed by bench_parquet), values
// without spaces; anything else is progress. Exit status 1 on any error.
import { createRequire } from 'node:module'
import { existsSync, statSync, unlinkSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))

function parseArgs(argv) {
  const o = { runs: 3, threads: ['1', '0'], tools: path.join(here, '..', 'tests', 'tools'), level: null }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i], v = argv[i + 1]
    if (a === '--in' && v) o.in = argv[++i]
    else if (a === '--out-dir' && v) o.outDir = argv[++i]
    else if (a === '--runs' && v) o.runs = Number(argv[++i])
    else if (a === '--threads' && v) o.threads = argv[++i].split(',')
    else if (a === '--tools' && v) o.tools = argv[++i]
    else if (a === '--level' && v) o.level = Number(argv[++i])
    else throw new Error(`bad argument ${a}`)
  }
  if (!o.in || !o.outDir || !(o.runs >= 1)) throw new Error('usage: parquet_duckdb.mjs --in FILE --out-dir DIR [--runs N] [--threads 1,0] [--tools DIR] [--level L]')
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

const sqlStr = s => "'" + String(s).replaceAll("'", "''") + "'"
const secs = (a, b) => Number(b - a) / 1e9

async function rows(con, sql) {
  const r = await con.runAndReadAll(sql)
  return r.getRows()
}

async function one(con, sql) {
  return (await rows(con, sql))[0][0]
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

// Leaf columns of a file: compressed / uncompressed bytes over all row groups, encodings.
async function columns(con, file, which) {
  const rs = await rows(con, `SELECT path_in_schema, sum(total_compressed_size)::BIGINT, sum(total_uncompressed_size)::BIGINT,
      string_agg(DISTINCT encodings, '|'), min(column_id) AS c
    FROM parquet_metadata(${sqlStr(file)}) GROUP BY path_in_schema ORDER BY c`)
  for (const [p, comp, unc, enc] of rs) {
    const name = String(p).split(',').map(s => s.trim()).filter(s => s !== 'list' && s !== 'element' && s !== 'key_value').join('.')
    const encs = [...new Set(String(enc).split(/[|,]/).map(s => s.trim()).filter(Boolean))].join(',')
    console.log(`DUCK col which=${which} path=${name} comp=${comp} unc=${unc} enc=${encs}`)
  }
  const rg = await one(con, `SELECT num_row_groups FROM parquet_file_metadata(${sqlStr(file)})`)
  console.log(`DUCK rowgroups which=${which} n=${rg}`)
}

async function main() {
  const o = parseArgs(process.argv.slice(2))
  const duck = loadDuck(o.tools)
  const db = await duck.DuckDBInstance.create(':memory:')
  const con = await db.connect()
  try {
    console.log(`DUCK version ${await one(con, 'SELECT version()')}`)
    const t0 = process.hrtime.bigint()
    await con.run(`CREATE TABLE t AS SELECT * FROM read_parquet(${sqlStr(o.in)})`)
    const n = await one(con, 'SELECT count(*) FROM t')
    console.log(`DUCK load rows=${n} s=${secs(t0, process.hrtime.bigint()).toFixed(3)}`)
    const outs = {}
    for (const th of o.threads) {
      if (th === '0') await con.run('RESET threads')
      else await con.run(`SET threads = ${Number(th)}`)
      const setting = await one(con, "SELECT current_setting('threads')")
      const label = th === '0' ? 'default' : th
      const out = path.join(o.outDir, `duck_t${label}.parquet`)
      const opts = `FORMAT parquet, COMPRESSION zstd${o.level != null ? `, COMPRESSION_LEVEL ${o.level}` : ''}`
      const times = []
      for (let r = 0; r < o.runs; r++) {
        if (existsSync(out)) unlinkSync(out)
        const a = process.hrtime.bigint()
        await con.run(`COPY t TO ${sqlStr(out)} (${opts})`)
        times.push(secs(a, process.hrtime.bigint()))
        process.stderr.write(`  duckdb threads=${setting} run ${r + 1}: ${times[r].toFixed(3)} s, ${statSync(out).size} bytes\n`)
      }
      outs[label] = out
      console.log(`DUCK run threads=${label} setting=${setting} bytes=${statSync(out).size} times=${times.map(t => t.toFixed(4)).join(',')}` +
        ` best=${Math.min(...times).toFixed(4)} median=${median(times).toFixed(4)}`)
    }
    await con.run('RESET threads')
    console.log(`DUCK count which=ours rows=${await one(con, `SELECT count(*) FROM read_parquet(${sqlStr(o.in)})`)}`)
    for (const [label, f] of Object.entries(outs))
      console.log(`DUCK count which=duck${label === '1' ? '1' : label} rows=${await one(con, `SELECT count(*) FROM read_parquet(${sqlStr(f)})`)}`)
    await columns(con, o.in, 'ours')
    const ref = outs['1'] ?? Object.values(outs)[0]
    if (ref) await columns(con, ref, 'duck')
  } finally {
    con.closeSync()
    db.closeSync()
  }
}

main().catch(e => {
  process.stderr.write(`parquet_duckdb: error: ${e && e.stack ? e.stack : e}\n`)
  process.exitCode = 1
})
