/* cold_list.c -- the cold-file listing (cp_reader_ops.cold_files), written once for both
 * catalogs over sqldb.h on the reader's own connection, inside its read transaction.
 *
 * First, per $name=value term of the search, the set of files having a value that
 * contains the term's value (from every inverted-index table whose param name equals the
 * term's, ASCII case-insensitively); then the completed files of the range in order
 * (start_time, namespace, duration_range, uuid, bytewise), minus those outside the
 * duration range and those a term rules out (reader_internal.h's rule). Every term query
 * runs before the first file is handed over, so a failure can still be retried.
 *
 * The two dialects differ only in ASCII folding (PostgreSQL's lower() would fold
 * non-ASCII letters by the database's locale), substring search and bytewise collation.
 */
#include "store/read/reader_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cold_list {
    const cp_rd_ctx *x;
    const cp_cold_query *q;
    int has_maxlen;
    int pg;
    cp_buf sql;
} cold_list;

static int cl_oom(cold_list *k) { return cp_rd_oom(k->x); }

static int cl_exec(cold_list *k, const char *sql, const cp_sql_val *p, size_t np, cp_sqldb_row_fn fn, void *ud,
                   const char *what)
{
    return cp_rd_exec(k->x, sql, p, np, fn, ud, what);
}

/* SQL text by the dialect: x folded to ASCII lower case. */
static const char *fold_open(const cold_list *k)
{
    return k->pg ? "translate(" : "lower(";
}

static const char *fold_close(const cold_list *k)
{
    return k->pg ? ", 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')" : ")";
}

/* ---- the term sets ---------------------------------------------------------------------------- */

typedef struct set_add {
    cold_list *k;
    cp_rd_strset *set;
} set_add;

/* Adds the first column (a file id) to the set. */
static int row_to_set(void *ud, const cp_sql_val *c, size_t n)
{
    set_add *a = ud;
    if (n < 1 || c[0].type != CP_SQL_TEXT) return CP_OK;
    return cp_rd_strset_add(a->set, c[0].p, c[0].n) == CP_OK ? CP_OK : cl_oom(a->k);
}

typedef struct slow_scan {
    cold_list *k;
    const char *param;
    size_t param_len, needle_len;
    cp_rd_strset slow; /* files whose values of the param must be scanned */
} slow_scan;

/* A file of the range that indexes the param and may hold a longer value that contains
 * the needle: it needs the substring scan. */
static int row_slow(void *ud, const cp_sql_val *c, size_t n)
{
    slow_scan *s = ud;
    const char *uuid = n >= 3 ? cp_sql_opt(&c[0]) : NULL, *names = n >= 3 ? cp_sql_opt(&c[1]) : NULL;
    if (!uuid || !names || !cp_rd_json_names_has(names, c[1].n, s->param, s->param_len)) return CP_OK;
    int64_t longest = cp_rd_json_maxlen(cp_sql_opt(&c[2]), s->param, s->param_len);
    if (longest >= 0 && (uint64_t)longest <= s->needle_len) return CP_OK; /* the exact lookup decided */
    return cp_rd_strset_add(&s->slow, uuid, c[0].n) == CP_OK ? CP_OK : cl_oom(s->k);
}

/* Adds to set the files of the range having a value in one inverted-index table that
 * contains the folded needle. A file whose longest value of the param is no longer than
 * the needle can only contain it as a whole value: those are found by an exact lookup of
 * the index's key; the others (values longer, or files from before the lengths were
 * kept) by a substring scan of their own values. */
static int term_table(cold_list *k, const char *table, const char *needle, size_t needle_len, const cp_cold_param *t,
                      cp_rd_strset *set)
{
    const cp_cold_query *q = k->q;
    set_add add = {k, set};
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT CAST(file_id AS text) FROM \"%s\" WHERE value = $1", table);
    cp_sql_val pv[3] = {cp_sql_textn(needle, needle_len)};
    int st = cl_exec(k, sql, pv, 1, row_to_set, &add, "inverted index");
    if (st != CP_OK) return st;
    cp_buf_reset(&k->sql);
    if (cp_buf_printf(&k->sql,
                      "SELECT CAST(uuid AS text), CAST(indexed_params AS text), %s FROM s3_files"
                      " WHERE file_type = 'calls' AND status = 'completed' AND start_time < $2 AND end_time > $1%s",
                      k->has_maxlen ? "CAST(indexed_maxlen AS text)" : "NULL",
                      q->ns ? " AND namespace = $3" : "") != CP_OK ||
        cp_buf_putc(&k->sql, 0) != CP_OK)
        return cl_oom(k);
    slow_scan s = {k, t->name, t->name_len, needle_len, {0}};
    cp_sql_val pf[3] = {cp_sql_i64(q->from_ms), cp_sql_i64(q->to_ms), cp_sql_text(q->ns)};
    st = cl_exec(k, (const char *)k->sql.data, pf, q->ns ? 3 : 2, row_slow, &s, "cold files");
    if (st == CP_OK && s.slow.n) {
        snprintf(sql, sizeof sql,
                 k->pg ? "SELECT file_id FROM \"%s\" WHERE file_id = $1 AND strpos(%sCAST(value AS text)%s, $2) > 0"
                         " LIMIT 1"
                       : "SELECT file_id FROM \"%s\" WHERE file_id = $1 AND instr(%svalue%s, $2) > 0 LIMIT 1",
                 table, fold_open(k), fold_close(k));
        for (size_t i = 0; st == CP_OK && i < s.slow.n; i++) {
            cp_sql_val py[2] = {cp_sql_text(s.slow.v[i]), cp_sql_textn(needle, needle_len)};
            st = cl_exec(k, sql, py, 2, row_to_set, &add, "inverted index");
        }
    }
    cp_rd_strset_free(&s.slow);
    return st;
}

typedef struct inv_tables {
    cold_list *k;
    char (*v)[CP_COLD_INV_NAME];
    size_t n, cap;
} inv_tables;

static int row_table(void *ud, const cp_sql_val *c, size_t n)
{
    inv_tables *t = ud;
    const char *name = n >= 1 ? cp_sql_opt(&c[0]) : NULL;
    if (!name || !cp_cold_inv_name_ok(name)) return CP_OK; /* not ours: never spliced into SQL */
    if (cp_grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v, 4) != CP_OK) return cl_oom(t->k);
    snprintf(t->v[t->n++], CP_COLD_INV_NAME, "%s", name);
    return CP_OK;
}

/* The set of files having a value that matches term t. */
static int term_set(cold_list *k, const cp_cold_param *t, cp_rd_strset *set)
{
    /* a name or value the database cannot take as text: the index proves nothing */
    cp_sqldb *db = k->x->db;
    if (!cp_sqldb_text_ok(db, t->name, t->name_len) || !cp_sqldb_text_ok(db, t->value, t->value_len)) {
        set->all = 1;
        return CP_OK;
    }
    cp_buf needle, name;
    cp_buf_init(&needle);
    cp_buf_init(&name);
    int st = cp_rd_fold_into(&needle, t->value, t->value_len) == CP_OK &&
                     cp_rd_fold_into(&name, t->name, t->name_len) == CP_OK
                 ? CP_OK
                 : cl_oom(k);
    inv_tables tables = {k, NULL, 0, 0};
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT table_name FROM inverted_indexes WHERE %sparam_name%s = $1 ORDER BY 1",
             fold_open(k), fold_close(k));
    cp_sql_val p[1] = {cp_sql_textn((const char *)name.data, name.len)};
    if (st == CP_OK) st = cl_exec(k, sql, p, 1, row_table, &tables, "inverted index tables");
    for (size_t i = 0; st == CP_OK && i < tables.n; i++)
        st = term_table(k, tables.v[i], (const char *)needle.data, needle.len, t, set);
    cp_rd_strset_seal(set);
    free(tables.v);
    cp_buf_free(&needle);
    cp_buf_free(&name);
    return st;
}

/* ---- the files -------------------------------------------------------------------------------- */

enum {
    F_UUID, F_KEY, F_URL, F_LOCAL, F_TYPE, F_DUMP, F_NS, F_RANGE, F_START, F_END, F_MIN, F_MAX, F_ROWS, F_SIZE,
    F_STATUS, F_SERVICES, F_INDEXED, F_CLAIM, F_MAXLEN, F_COUNT
};

typedef struct file_walk {
    cold_list *k;
    const cp_rd_strset *sets;
    int calls;
    size_t listed;
    size_t *skipped;
    cp_cold_file_fn fn;
    void *ud;
} file_walk;

static int row_file(void *ud, const cp_sql_val *c, size_t n)
{
    file_walk *w = ud;
    if (n < F_COUNT) return CP_OK;
    if (++w->listed > CP_RD_MAX_COLD_FILES) {
        snprintf(w->k->x->err, w->k->x->errlen, "more than %d cold files in the range", CP_RD_MAX_COLD_FILES);
        return CP_ELIMIT;
    }
    cp_cold_file f = {
        .uuid = cp_sql_opt(&c[F_UUID]),
        .key = cp_sql_opt(&c[F_KEY]),
        .url = cp_sql_opt(&c[F_URL]),
        .local_path = cp_sql_opt(&c[F_LOCAL]),
        .file_type = cp_sql_opt(&c[F_TYPE]),
        .dump_type = cp_sql_opt(&c[F_DUMP]),
        .ns = cp_sql_opt(&c[F_NS]),
        .duration_range = (int32_t)cp_sql_int(&c[F_RANGE], 0),
        .start_ms = cp_sql_int(&c[F_START], 0),
        .end_ms = cp_sql_int(&c[F_END], 0),
        .min_ts = cp_sql_int(&c[F_MIN], 0),
        .max_ts = cp_sql_int(&c[F_MAX], 0),
        .rows = cp_sql_int(&c[F_ROWS], 0),
        .size = cp_sql_int(&c[F_SIZE], 0),
        .status = cp_sql_opt(&c[F_STATUS]),
        .services = cp_sql_opt(&c[F_SERVICES]),
        .indexed_params = cp_sql_opt(&c[F_INDEXED]),
        .claim = cp_sql_opt(&c[F_CLAIM]),
        .indexed_maxlen = cp_sql_opt(&c[F_MAXLEN]),
    };
    if (!f.uuid) return CP_OK;
    const cp_cold_query *q = w->k->q;
    if (w->calls && !cp_rd_cold_range_overlaps(f.duration_range, q->min_duration_ms, q->max_duration_ms)) return CP_OK;
    if (w->calls && cp_rd_cold_pruned(q, w->sets, &f)) {
        (*w->skipped)++;
        return CP_OK;
    }
    cp_rd_emit(w->k->x);
    return w->fn(w->ud, &f);
}

static int list_files(cold_list *k, const cp_rd_strset *sets, cp_cold_file_fn fn, void *ud, size_t *skipped)
{
    const cp_cold_query *q = k->q;
    const char *bytewise = cp_sqldb_bytewise(k->x->db);
    cp_buf_reset(&k->sql);
    if (cp_buf_printf(&k->sql,
                      "SELECT CAST(uuid AS text), object_key, remote_storage_path, local_file_path,"
                      " CAST(file_type AS text), CAST(dump_type AS text), namespace, duration_range, start_time,"
                      " end_time, min_time, max_time, rows_count, file_size, CAST(status AS text),"
                      " CAST(services AS text), CAST(indexed_params AS text), claim, %s"
                      " FROM s3_files WHERE file_type = $4 AND status = 'completed'"
                      " AND start_time < $2 AND end_time > $1%s"
                      " ORDER BY start_time, namespace%s, duration_range, CAST(uuid AS text)%s LIMIT $3",
                      k->has_maxlen ? "CAST(indexed_maxlen AS text)" : "NULL", q->ns ? " AND namespace = $5" : "",
                      bytewise, bytewise) != CP_OK ||
        cp_buf_putc(&k->sql, 0) != CP_OK)
        return cl_oom(k);
    int calls = !q->file_type || !strcmp(q->file_type, "calls");
    cp_sql_val p[5] = {cp_sql_i64(q->from_ms), cp_sql_i64(q->to_ms), cp_sql_i64((int64_t)CP_RD_MAX_COLD_FILES + 1),
                       cp_sql_text(calls ? "calls" : q->file_type), cp_sql_text(q->ns)};
    file_walk w = {k, sets, calls, 0, skipped, fn, ud};
    return cl_exec(k, (const char *)k->sql.data, p, q->ns ? 5 : 4, row_file, &w, "cold files");
}

int cp_rd_cold_list(const cp_rd_ctx *x, const cp_cold_query *q, int has_maxlen, cp_cold_file_fn fn, void *ud,
                    size_t *skipped)
{
    *skipped = 0;
    if (q->from_ms >= q->to_ms || q->min_duration_ms > q->max_duration_ms) return CP_OK;
    if (q->ns && !cp_sqldb_text_ok(x->db, q->ns, strlen(q->ns))) return CP_OK; /* no file has that namespace */
    cold_list k = {x, q, has_maxlen, cp_sqldb_is_pg(x->db), {0}};
    cp_buf_init(&k.sql);
    cp_rd_strset *sets = q->nparams ? calloc(q->nparams, sizeof *sets) : NULL;
    int st = q->nparams && !sets ? cl_oom(&k) : CP_OK;
    int calls = !q->file_type || !strcmp(q->file_type, "calls");
    for (size_t i = 0; calls && st == CP_OK && i < q->nparams; i++) st = term_set(&k, &q->params[i], &sets[i]);
    if (st == CP_OK) st = list_files(&k, sets, fn, ud, skipped);
    for (size_t i = 0; sets && i < q->nparams; i++) cp_rd_strset_free(&sets[i]);
    free(sets);
    cp_buf_free(&k.sql);
    return st;
}
