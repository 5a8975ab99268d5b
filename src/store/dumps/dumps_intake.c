/* dumps_intake.c -- receiving a diagnostic file (cp_dumps.h "intake"): the body goes to a
 * temporary file in tmp_dir (hashed as it comes); commit reads the extras, joins the pod
 * restart, and records the file:
 *   hot     one transaction upserts the row by path with the bytes in binary_data;
 *   object  the key goes into dump_pending (committed), the file is put into the object
 *           store, then one transaction upserts the row and drops the pending entry.
 * A replaced object's old key is entered in dump_pending by that transaction and deleted
 * after it, so a crash in between leaves it to the retention's sweep, never orphaned.
 * Whatever fails, the temp file goes, no row is written, and an object already put is
 * deleted. The temp file is not fsynced: it is never the durable copy (the row is, or
 * the stored object, which the store syncs). */
#include "store/dumps/dumps_internal.h"
#include "common/cp_fsutil.h"
#include "model/cp_dumptext.h"
#include "store/cp_cold.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define EXTRAS_MAX ((uint64_t)64 << 20) /* td / top / pprof bodies parsed for the extras */
#define INFO_MAX 1800                    /* extras JSON kept under cp_dump_meta.info's size */
#define JOIN_CANDIDATES 50
#define KEY_TRIES 8
#define ID_TRIES 8

struct cp_dump_upload {
    cp_dumps *d;
    cp_dump_path path;
    cp_dump_name name;
    uint64_t max_bytes, bytes;
    int fd;
    int failed;
    EVP_MD_CTX *md;
    char tmp[4200];
};

static void upload_free(cp_dump_upload *u)
{
    if (!u) return;
    if (u->fd >= 0) close(u->fd);
    if (u->tmp[0]) unlink(u->tmp);
    EVP_MD_CTX_free(u->md);
    free(u);
}

void cp_dumps_upload_abort(cp_dump_upload *u) { upload_free(u); }

uint64_t cp_dumps_upload_bytes(const cp_dump_upload *u) { return u->bytes; }

int cp_dumps_upload_begin(cp_dumps *d, const cp_dump_path *path, uint64_t max_bytes, cp_dump_upload **out,
                          char *err, size_t errlen)
{
    *out = NULL;
    if (!path->ns[0] || !path->pod[0] || !path->file[0]) {
        snprintf(err, errlen, "namespace, pod and file name must not be empty");
        return CP_EINVAL;
    }
    cp_dump_upload *u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    u->fd = -1;
    u->d = d;
    u->path = *path;
    u->max_bytes = max_bytes;
    int st = cp_dump_name_classify(path->file, &u->name, err, errlen);
    if (st != CP_OK) {
        upload_free(u);
        return st;
    }
    u->md = EVP_MD_CTX_new();
    if (!u->md || EVP_DigestInit_ex(u->md, EVP_sha256(), NULL) != 1) {
        upload_free(u);
        snprintf(err, errlen, "sha256: cannot initialise");
        return CP_ENOMEM;
    }
    for (int tries = 0; u->fd < 0 && tries < 8; tries++) {
        uint8_t rnd[8];
        if (cp_random_bytes(rnd, sizeof rnd) != CP_OK) break;
        snprintf(u->tmp, sizeof u->tmp, "%s/dump-%02x%02x%02x%02x%02x%02x%02x%02x.part", d->tmp_dir, rnd[0], rnd[1],
                 rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
        u->fd = open(u->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (u->fd < 0 && errno != EEXIST) break;
    }
    if (u->fd < 0) {
        snprintf(err, errlen, "create a temporary file in %s: %s", d->tmp_dir, strerror(errno));
        u->tmp[0] = 0;
        upload_free(u);
        return CP_EIO;
    }
    *out = u;
    return CP_OK;
}

int cp_dumps_upload_write(cp_dump_upload *u, const void *p, size_t n)
{
    if (u->failed) return CP_EIO;
    if (u->max_bytes && (n > u->max_bytes || u->bytes > u->max_bytes - n)) return CP_ELIMIT;
    if (n == 0) return CP_OK;
    if (cp_write_all(u->fd, p, n) != CP_OK || EVP_DigestUpdate(u->md, p, n) != 1) {
        u->failed = 1;
        return CP_EIO;
    }
    u->bytes += n;
    return CP_OK;
}

/* ---- extras ---------------------------------------------------------------------------- */

typedef struct counts_ctx {
    cp_buf *b;
    size_t n;
} counts_ctx;

static void on_state(void *ud, const char *key, size_t count)
{
    counts_ctx *c = ud;
    if (!key[0] || c->b->len > INFO_MAX - 300) return; /* JVM threads have no state line */
    if (c->n++) cp_buf_putc(c->b, ',');
    size_t klen = strlen(key);
    cp_json_str(c->b, key, klen > 200 ? 200 : klen);
    cp_buf_printf(c->b, ":%zu", count);
}

/* {"threads":N,"states":{"RUNNABLE":19,...}}: the Java threads (the SMR list's length)
 * and their states; JVM-internal threads (no state line) are left out of both. */
static void info_td(const uint8_t *p, size_t n, cp_buf *info)
{
    cp_td *td = NULL;
    char e[256];
    if (cp_td_parse((const char *)p, n, &td, e, sizeof e) != CP_OK || !td) return;
    cp_buf_reset(info);
    cp_buf_printf(info, "{\"threads\":%zu,\"states\":{", td->java_threads ? td->java_threads : td->nthreads);
    counts_ctx c = {info, 0};
    cp_td_state_counts(td, on_state, &c);
    cp_buf_puts(info, "}}");
    cp_td_free(td);
}

/* {"threads":N,"states":{"S":70,"R":6}}: Threads: total (else the rows), rows per state letter. */
static void info_top(const uint8_t *p, size_t n, cp_buf *info)
{
    cp_top *top = NULL;
    char e[256];
    if (cp_top_parse((const char *)p, n, &top, e, sizeof e) != CP_OK || !top) return;
    static const char letters[] = "RSDTZI?";
    size_t per[sizeof letters] = {0};
    for (size_t i = 0; i < top->nrows; i++) {
        const char *at = strchr(letters, top->rows[i].state);
        per[at && top->rows[i].state ? (size_t)(at - letters) : sizeof letters - 2]++;
    }
    cp_buf_reset(info);
    cp_buf_printf(info, "{\"threads\":%lld,\"states\":{",
                  (long long)(top->threads_total >= 0 ? top->threads_total : (int64_t)top->nrows));
    size_t k = 0;
    for (size_t i = 0; i + 1 < sizeof letters; i++)
        if (per[i]) cp_buf_printf(info, "%s\"%c\":%zu", k++ ? "," : "", letters[i], per[i]);
    cp_buf_puts(info, "}}");
    cp_top_free(top);
}

/* {"samples":N,"sample_types":["alloc_objects/count",...]}; a name that did not say the
 * kind gets the one the sample types suggest. */
static void info_pprof(const uint8_t *p, size_t n, cp_dump_name *name, cp_buf *info)
{
    cp_pprof *pf = NULL;
    char e[256];
    if (cp_pprof_parse(p, n, 0, &pf, e, sizeof e) != CP_OK || !pf) return;
    const cp_pprof_info *pi = cp_pprof_get_info(pf);
    if (!name->pprof_from_name) name->kind = cp_pprof_guess_kind(pf);
    cp_buf_reset(info);
    cp_buf_printf(info, "{\"samples\":%llu,\"sample_types\":[", (unsigned long long)pi->samples);
    for (size_t i = 0; i < pi->nsample_types && info->len < INFO_MAX - 300; i++) {
        const char *t = pi->sample_types[i].type ? pi->sample_types[i].type : "";
        const char *u = pi->sample_types[i].unit ? pi->sample_types[i].unit : "";
        char tu[256];
        snprintf(tu, sizeof tu, "%.120s/%.120s", t, u);
        if (i) cp_buf_putc(info, ',');
        cp_json_str(info, tu, strlen(tu));
    }
    cp_buf_puts(info, "]}");
    cp_pprof_free(pf);
}

static int zip_pread(void *ud, void *dst, size_t n, uint64_t off)
{
    const cp_dump_upload *u = ud;
    long r = cp_pread_all(u->fd, dst, n, off);
    return r == (long)n ? CP_OK : CP_EIO;
}

/* {"entry":"java_pid1.hprof","entry_bytes":N} from the zip's central directory. */
static void info_heap(cp_dump_upload *u, cp_buf *info)
{
    cp_zip_info zi;
    char e[256];
    if (cp_zip_probe(zip_pread, u, u->bytes, &zi, e, sizeof e) != CP_OK || zi.entries == 0) return;
    cp_buf_reset(info);
    cp_buf_puts(info, "{\"entry\":");
    cp_json_str(info, zi.first_name, strnlen(zi.first_name, sizeof zi.first_name));
    cp_buf_printf(info, ",\"entry_bytes\":%llu}", (unsigned long long)zi.first_size);
}

/* ---- the pod join (dumps-http.md §5) ------------------------------------------------------ */

typedef struct join {
    int found;
    char pod[CP_DUMP_MAX_NAME + 1];
    char service[CP_DUMP_MAX_NAME + 1];
    int64_t restart_ms;
    int64_t start;      /* the chosen pod string's agent start (its suffix); 0 in exact mode */
    int64_t dir_ms;
    const char *prefix; /* bare-segment mode: candidates are prefix + digits */
} join;

static int digits_only(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

/* 1 when the segment ends in "_<digits>" (the agent's restart suffix). */
static int has_suffix(const char *pod)
{
    const char *us = strrchr(pod, '_');
    return us && digits_only(us + 1);
}

/* A candidate row (pod_name, restart_time, service_name). Bare-segment mode prefers the
 * pod string whose agent start (the "_<millis>" suffix: the agent starts before it
 * connects, and early dumps come in between) is the latest at or before the file's time;
 * among the restarts (connections) of one pod string, the latest that began at or before
 * the file, else the first one after it. */
static int on_restart(void *ud, const cp_sql_val *c, size_t n)
{
    join *j = ud;
    if (n < 3 || c[0].type != CP_SQL_TEXT) return 0;
    const char *name = cp_sql_str(&c[0]);
    int64_t start = 0, rt = cp_sql_int(&c[1], 0);
    if (j->prefix) {
        size_t pl = strlen(j->prefix);
        const char *digits = name + pl;
        if (strncmp(name, j->prefix, pl) != 0 || !digits_only(digits) || strlen(digits) > 13) return 0;
        start = strtoll(digits, NULL, 10);
        if (start > j->dir_ms) return 0; /* that agent had not started yet */
    }
    int better = !j->found;
    if (!better && start != j->start) better = start > j->start;
    else if (!better) {
        int cb = rt <= j->dir_ms, jb = j->restart_ms <= j->dir_ms;
        better = cb != jb ? cb : cb ? rt > j->restart_ms : rt < j->restart_ms;
    }
    if (!better) return 0;
    snprintf(j->pod, sizeof j->pod, "%s", name);
    snprintf(j->service, sizeof j->service, "%s", cp_sql_str(&c[2]));
    j->restart_ms = rt;
    j->start = start;
    j->found = 1;
    return 0;
}

/* Exact (namespace, pod) in pod_restarts, else for a bare segment (no "_<digits>") the
 * restart of "<segment>_<digits>" in the same namespace that covers the file's time. */
static int pod_join(cp_sqldb *db, const cp_dump_path *p, join *j, char *err, size_t errlen)
{
    memset(j, 0, sizeof *j);
    j->dir_ms = p->dir_ms;
    cp_sql_val v[] = {cp_sql_text(p->ns), cp_sql_text(p->pod)};
    int st = cp_sqldb_exec(db,
                           "SELECT pod_name, restart_time, service_name FROM pod_restarts"
                           " WHERE namespace = $1 AND pod_name = $2 ORDER BY restart_time DESC LIMIT 1000",
                           v, 2, on_restart, j, NULL);
    if (st < 0) return dumps_fail(err, errlen, st, "pod join", db);
    if (j->found || has_suffix(p->pod)) return CP_OK;
    char prefix[CP_DUMP_MAX_NAME + 2];
    snprintf(prefix, sizeof prefix, "%s_", p->pod);
    j->prefix = prefix;
    v[1] = cp_sql_text(prefix);
    st = cp_sqldb_exec(db,
                       "SELECT pod_name, restart_time, service_name FROM pod_restarts"
                       " WHERE namespace = $1 AND substr(pod_name, 1, length($2)) = $2"
                       " ORDER BY restart_time DESC LIMIT 1000",
                       v, 2, on_restart, j, NULL);
    j->prefix = NULL;
    return st < 0 ? dumps_fail(err, errlen, st, "pod join", db) : CP_OK;
}

/* ---- the row --------------------------------------------------------------------------- */

typedef struct rec {
    const cp_dump_path *p;
    const char *path;             /* the unique path string */
    char service[CP_DUMP_MAX_NAME + 1];
    const char *restart_pod;      /* NULL = none */
    int64_t restart_ms, received_ms;
    cp_dump_name name;
    uint64_t bytes;
    char sha[65];
    const char *info;
    const uint8_t *blob;          /* hot */
    const char *key;              /* object */
} rec;

typedef struct existing {
    int found;
    int64_t id, version;
    int deleted;
    int object;
    char key[CP_OSTORE_MAX_KEY + 1];
} existing;

static int on_existing(void *ud, const cp_sql_val *c, size_t n)
{
    existing *x = ud;
    if (n < 5) return 0;
    x->found = 1;
    x->id = cp_sql_int(&c[0], 0);
    x->version = cp_sql_int(&c[1], 1);
    x->deleted = !strcmp(cp_sql_str(&c[2]), "deleted");
    x->object = !strcmp(cp_sql_str(&c[3]), "object");
    snprintf(x->key, sizeof x->key, "%s", cp_sql_str(&c[4]));
    return 0;
}

static int find_existing(cp_sqldb *db, const char *path, existing *x)
{
    memset(x, 0, sizeof *x);
    cp_sql_val v[] = {cp_sql_text(path)};
    return cp_sqldb_exec(db,
                         "SELECT uuid, version, state, location, coalesce(object_key, '') FROM dumps WHERE path = $1",
                         v, 1, on_existing, x, NULL);
}

static int on_id(void *ud, const cp_sql_val *c, size_t n)
{
    if (n) *(int64_t *)ud = cp_sql_int(&c[0], 0);
    return 0;
}

static int on_meta(void *ud, const cp_sql_val *c, size_t n)
{
    if (n >= DUMPS_META_NCOLS) dumps_meta_of(c, ud);
    return 0;
}

/* A new row gets a random id ($20, random_id): ids are the API's handle on a file, and
 * sequential ones let anyone guess every file's. An id already taken (by another random
 * one, or by a row from before, when ids were the column's sequence) inserts nothing and
 * returns no row, and record() tries another. */
static const char insert_sql[] =
    "INSERT INTO dumps (uuid, created_time, namespace, service_name, pod_name, pod_type, restart_time, dump_type,"
    " bytes_size, info, binary_data, path, file_name, restart_pod, dir_time, capture_time, received_time,"
    " deleted_time, state, sha256, version, location, object_key, cold_row, gc_rotation, claim, claimed_by,"
    " claimed_at) VALUES ($20, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $1, $14, $15, NULL,"
    " 'complete', $16, 1, $17, $18, NULL, $19, NULL, NULL, NULL) ON CONFLICT (uuid) DO NOTHING RETURNING uuid";

/* 63 random bits, > 0 (ids are positive int64s, decimal strings in the API). 0 when the
 * system has no randomness to give. */
static int64_t random_id(void)
{
    for (int i = 0; i < 4; i++) {
        uint64_t v = 0;
        if (cp_random_bytes(&v, sizeof v) != CP_OK) return 0;
        v &= (uint64_t)INT64_MAX;
        if (v) return (int64_t)v;
    }
    return 0;
}

/* in place: same id, version + 1, any claim or cold copy forgotten */
static const char update_sql[] =
    "UPDATE dumps SET created_time = $1, namespace = $2, service_name = $3, pod_name = $4, pod_type = $5,"
    " restart_time = $6, dump_type = $7, bytes_size = $8, info = $9, binary_data = $10, path = $11,"
    " file_name = $12, restart_pod = $13, dir_time = $1, capture_time = $14, received_time = $15,"
    " deleted_time = NULL, state = 'complete', sha256 = $16, version = version + 1, location = $17,"
    " object_key = $18, cold_row = NULL, gc_rotation = $19, claim = NULL, claimed_by = NULL, claimed_at = NULL"
    " WHERE uuid = $20";

/* One transaction: the row by path (inserted, or replaced in place), the pending entry
 * of its new object dropped, the replaced object's key entered for deletion. old_key
 * gets that key ("" = none). */
static int record(cp_dumps *d, cp_sqldb *db, const rec *r, cp_dump_meta *out, int *created, char *old_key,
                  size_t old_cap, char *err, size_t errlen)
{
    old_key[0] = 0;
    int st = cp_sqldb_begin(db);
    if (st == CP_OK) st = cp_sqldb_lock(db, DUMPS_LOCK_PATH, dumps_path_lock_key(r->path));
    existing x;
    if (st == CP_OK) st = find_existing(db, r->path, &x);
    if (st != CP_OK) return dumps_fail(err, errlen, st, "record the file", db);
    if (r->key) {
        cp_sql_val v[] = {cp_sql_text(r->key), cp_sql_text(d->node)};
        int64_t n = 0;
        st = cp_sqldb_exec(db, "DELETE FROM dump_pending WHERE object_key = $1 AND node = $2", v, 2, NULL, NULL, &n);
        if (st != CP_OK) return dumps_fail(err, errlen, st, "record the file", db);
        if (n != 1) {
            snprintf(err, errlen, "record the file: object %s was swept as an orphan while it was being put", r->key);
            return CP_EIO;
        }
    }
    const char *kind = cp_dump_kind_name(r->name.kind);
    cp_sql_val v[20] = {
        cp_sql_i64(r->p->dir_ms),
        cp_sql_text(r->p->ns),
        cp_sql_text(r->service),
        cp_sql_text(r->p->pod),
        cp_sql_text(cp_dump_kind_is_pprof(r->name.kind) ? "go" : "java"),
        cp_sql_i64(r->restart_ms),
        cp_sql_text(kind ? kind : "other"),
        cp_sql_i64((int64_t)r->bytes),
        cp_sql_text(r->info),
        r->blob ? cp_sql_blob(r->blob, (size_t)r->bytes) : cp_sql_null(),
        cp_sql_text(r->path),
        cp_sql_text(r->p->file),
        cp_sql_text(r->restart_pod),
        r->name.stamp_ms >= 0 ? cp_sql_i64(r->name.stamp_ms) : cp_sql_null(),
        cp_sql_i64(r->received_ms),
        cp_sql_text(r->sha),
        cp_sql_text(r->key ? "object" : "hot"),
        cp_sql_text(r->key),
        cp_sql_i64(r->name.gc_rotation),
        cp_sql_i64(x.id),
    };
    int64_t id = x.id;
    if (x.found) {
        *created = x.deleted; /* a deleted file uploaded again is new to the client */
        st = cp_sqldb_exec(db, update_sql, v, 20, NULL, NULL, NULL);
        if (st == CP_OK && x.object && x.key[0] && (!r->key || strcmp(x.key, r->key) != 0)) {
            cp_sql_val pv[] = {cp_sql_text(x.key)};
            st = cp_sqldb_exec(db,
                               "INSERT INTO dump_pending (object_key, node, created_time) VALUES ($1, '"
                               DUMPS_PENDING_DELETE "', 0) ON CONFLICT (object_key) DO NOTHING",
                               pv, 1, NULL, NULL, NULL);
            snprintf(old_key, old_cap, "%s", x.key);
        }
    } else {
        *created = 1;
        id = 0;
        for (int tries = 0; st == CP_OK && !id && tries < ID_TRIES; tries++) {
            int64_t want = random_id();
            if (!want) {
                snprintf(err, errlen, "record the file: no random bytes for its id");
                return CP_EIO;
            }
            v[19] = cp_sql_i64(want);
            st = cp_sqldb_exec(db, insert_sql, v, 20, on_id, &id, NULL); /* id stays 0 when taken */
        }
        if (st == CP_OK && !id) { /* the caller rolls back */
            snprintf(err, errlen, "record the file: no free id after %d tries", ID_TRIES);
            return CP_EIO;
        }
    }
    if (st == CP_OK) {
        cp_sql_val iv[] = {cp_sql_i64(id)};
        out->id = 0;
        st = cp_sqldb_exec(db, "SELECT " DUMPS_META_COLS " FROM dumps WHERE uuid = $1", iv, 1, on_meta, out, NULL);
        if (st == CP_OK && out->id != id) {
            snprintf(err, errlen, "record the file: the row vanished");
            old_key[0] = 0;
            return CP_EIO;
        }
    }
    if (st == CP_OK) st = cp_sqldb_commit(db);
    if (st != CP_OK) {
        old_key[0] = 0;
        return dumps_fail(err, errlen, st, "record the file", db);
    }
    return CP_OK;
}

static int reserve_key_locked(cp_dumps *d, cp_sqldb *db, const cp_dump_path *p, const char *path, int64_t now_ms,
                              char *key, size_t cap, char *err, size_t errlen)
{
    existing x;
    int st = find_existing(db, path, &x);
    if (st != CP_OK) return dumps_fail(err, errlen, st, "object key", db);
    cp_buf b;
    cp_buf_init(&b);
    st = dumps_hour_prefix(p->dir_ms, &b);
    if (st == CP_OK) st = cp_cold_ns_component(p->ns, strlen(p->ns), &b);
    if (st == CP_OK) st = cp_buf_putc(&b, '/');
    if (st == CP_OK) st = cp_cold_ns_component(p->pod, strlen(p->pod), &b);
    if (st == CP_OK) st = cp_buf_putc(&b, '/');
    if (st == CP_OK) st = cp_cold_ns_component(p->file, strlen(p->file), &b);
    if (st == CP_OK && x.found) st = cp_buf_printf(&b, ".v%lld", (long long)(x.version + 1));
    if (st == CP_OK) st = cp_buf_putc(&b, 0);
    if (st != CP_OK || b.len + 20 > cap) {
        cp_buf_free(&b);
        snprintf(err, errlen, "object key: %s", st == CP_OK ? "too long" : "out of memory");
        return st == CP_OK ? CP_ELIMIT : st;
    }
    snprintf(key, cap, "%s", (const char *)b.data);
    cp_buf_free(&b);
    size_t base_len = strlen(key);
    for (int tries = 0; tries < KEY_TRIES; tries++) {
        if (tries) { /* taken: the same name in another minute of the hour, or a race */
            uint8_t rnd[4] = {0};
            cp_random_bytes(rnd, sizeof rnd);
            snprintf(key + base_len, cap - base_len, ".u%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3]);
        }
        if (!cp_ostore_key_ok(key)) {
            snprintf(err, errlen, "object key %s is not valid", key);
            return CP_EINVAL;
        }
        int64_t used = 0;
        cp_sql_val v[] = {cp_sql_text(key), cp_sql_text(d->node), cp_sql_i64(now_ms)};
        st = cp_sqldb_exec(db, "SELECT uuid FROM dumps WHERE object_key = $1 LIMIT 1", v, 1, on_id, &used, NULL);
        if (st == CP_OK && used) continue;
        int64_t n = 0;
        if (st == CP_OK)
            st = cp_sqldb_exec(db,
                               "INSERT INTO dump_pending (object_key, node, created_time) VALUES ($1, $2, $3)"
                               " ON CONFLICT (object_key) DO NOTHING",
                               v, 3, NULL, NULL, &n);
        if (st != CP_OK) return dumps_fail(err, errlen, st, "object key", db);
        if (n == 1) return CP_OK;
    }
    snprintf(err, errlen, "object key %s: no free name after %d tries", key, KEY_TRIES);
    return CP_EIO;
}

/* The object key for the upload: YYYY/MM/DD/HH/<ns>/<pod>/<name>, ".v<version>" for a
 * replacement (the old object stays readable until the switch), a random ".u<hex>"
 * when taken; entered in dump_pending (committed) before anything is put. Checked and
 * entered under the path's lock, like record(): otherwise a record of the same key can
 * commit between the check and the entry, and two uploads share one object (the second
 * put overwrites the first's bytes, and the first one's replacement deletes both). */
static int reserve_key(cp_dumps *d, cp_sqldb *db, const cp_dump_path *p, const char *path, int64_t now_ms,
                       char *key, size_t cap, char *err, size_t errlen)
{
    int st = cp_sqldb_begin(db);
    if (st == CP_OK) st = cp_sqldb_lock(db, DUMPS_LOCK_PATH, dumps_path_lock_key(path));
    if (st == CP_OK) st = reserve_key_locked(d, db, p, path, now_ms, key, cap, err, errlen);
    else dumps_fail(err, errlen, st, "object key", db);
    if (st == CP_OK) {
        st = cp_sqldb_commit(db);
        if (st != CP_OK) dumps_fail(err, errlen, st, "object key", db);
    }
    if (st != CP_OK) cp_sqldb_rollback(db);
    return st;
}

/* Drops an object put for a commit that then failed, and its pending entry. */
static void unput(cp_dumps *d, const char *key)
{
    char e[256];
    d->store->ops->del(d->store, key, e, sizeof e);
    cp_sqldb *db;
    if (dumps_conn_get(d, &db, e, sizeof e) != CP_OK) return; /* the sweep will */
    cp_sql_val v[] = {cp_sql_text(key), cp_sql_text(d->node)};
    cp_sqldb_exec(db, "DELETE FROM dump_pending WHERE object_key = $1 AND node = $2", v, 2, NULL, NULL, NULL);
    dumps_conn_put(d, db);
}

static int commit(cp_dump_upload *u, int64_t now_ms, cp_dump_meta *out, int *created, char *err, size_t errlen)
{
    cp_dumps *d = u->d;
    if (u->failed) {
        snprintf(err, errlen, "writing %s failed earlier", u->tmp);
        return CP_EIO;
    }
    if (u->bytes == 0) {
        snprintf(err, errlen, "empty file");
        return CP_EINVAL;
    }
    rec r;
    memset(&r, 0, sizeof r);
    r.p = &u->path;
    r.name = u->name;
    r.bytes = u->bytes;
    r.received_ms = now_ms;
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    if (EVP_DigestFinal_ex(u->md, md, &mdlen) != 1 || mdlen != 32) {
        snprintf(err, errlen, "sha256 failed");
        return CP_EIO;
    }
    for (unsigned i = 0; i < 32; i++) snprintf(r.sha + 2 * i, 3, "%02x", md[i]);

    int object = r.name.kind == CP_DUMP_HEAP || u->bytes > d->inline_max;
    int parse = r.name.kind == CP_DUMP_TD || r.name.kind == CP_DUMP_TOP || cp_dump_kind_is_pprof(r.name.kind);
    uint8_t *body = NULL;
    if (!object || (parse && u->bytes <= EXTRAS_MAX)) {
        body = malloc((size_t)u->bytes);
        if (!body) {
            snprintf(err, errlen, "out of memory");
            return CP_ENOMEM;
        }
        if (cp_pread_all(u->fd, body, (size_t)u->bytes, 0) != (long)u->bytes) {
            snprintf(err, errlen, "read back %s: %s", u->tmp, strerror(errno));
            free(body);
            return CP_EIO;
        }
    }
    cp_buf info, pathb;
    cp_buf_init(&info);
    cp_buf_init(&pathb);
    cp_buf_puts(&info, "{}");
    if (body && r.name.kind == CP_DUMP_TD) info_td(body, (size_t)u->bytes, &info);
    else if (body && r.name.kind == CP_DUMP_TOP) info_top(body, (size_t)u->bytes, &info);
    else if (body && cp_dump_kind_is_pprof(r.name.kind)) info_pprof(body, (size_t)u->bytes, &r.name, &info);
    else if (r.name.kind == CP_DUMP_HEAP) info_heap(u, &info);
    int st = cp_buf_putc(&info, 0);
    if (st == CP_OK && info.len > sizeof out->info) { /* cannot happen with INFO_MAX; never store a cut JSON */
        cp_buf_reset(&info);
        st = cp_buf_append(&info, "{}", 3);
    }
    if (st == CP_OK) st = dumps_path_string(&u->path, &pathb);
    if (st == CP_OK) st = cp_buf_putc(&pathb, 0);
    if (st != CP_OK) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    r.info = (const char *)info.data;
    r.path = (const char *)pathb.data;
    r.blob = object ? NULL : body;

    cp_sqldb *db = NULL;
    st = dumps_conn_get(d, &db, err, errlen);
    if (st != CP_OK) goto out;
    join j;
    st = pod_join(db, &u->path, &j, err, errlen);
    char base[CP_DUMP_MAX_NAME + 1];
    int64_t suffix_ms = 0;
    cp_dump_pod_split(u->path.pod, base, sizeof base, r.service, sizeof r.service, &suffix_ms);
    if (j.found) {
        snprintf(r.service, sizeof r.service, "%s", j.service);
        r.restart_pod = j.pod;
        r.restart_ms = j.restart_ms;
    } else {
        r.restart_ms = suffix_ms;
    }
    char key[CP_OSTORE_MAX_KEY + 1], old_key[CP_OSTORE_MAX_KEY + 1];
    old_key[0] = 0;
    if (st == CP_OK && object) {
        st = reserve_key(d, db, &u->path, r.path, now_ms, key, sizeof key, err, errlen);
        dumps_conn_put(d, db); /* not held while the object is put */
        db = NULL;
        if (st == CP_OK) {
            char e[512];
            /* a directory store takes the temp file as it is (renamed, not copied) */
            st = cp_ostore_put_file_move(d->store, key, u->tmp, e, sizeof e);
            if (st != CP_OK) {
                snprintf(err, errlen, "store %s: %s", key, e);
                unput(d, key);
                goto out;
            }
            r.key = key;
            st = dumps_conn_get(d, &db, err, errlen);
            if (st != CP_OK) {
                unput(d, key);
                goto out;
            }
        }
    }
    if (st == CP_OK) {
        st = record(d, db, &r, out, created, old_key, sizeof old_key, err, errlen);
        if (st != CP_OK) cp_sqldb_rollback(db);
    }
    dumps_conn_put(d, db);
    if (st != CP_OK && r.key) unput(d, r.key);
    if (st == CP_OK && old_key[0]) dumps_object_drop(d, old_key);
out:
    free(body);
    cp_buf_free(&info);
    cp_buf_free(&pathb);
    return st;
}

int cp_dumps_upload_commit(cp_dump_upload *u, int64_t now_ms, cp_dump_meta *out, int *created, char *err,
                           size_t errlen)
{
    *created = 0;
    int st = commit(u, now_ms, out, created, err, errlen);
    upload_free(u);
    return st;
}
