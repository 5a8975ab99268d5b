/* import.c -- `cloudprof import`: foreign traces (TPTP .trcbin / .trcxml, CBOR raw traces)
 * into cloudprof, either straight into a data directory's catalog (--data, --catalog) or
 * through a running server's POST /api/v1/import (--target). */
#include "cli/cli_internal.h"
#include "cli/cp_cli.h"
#include "query/cp_query.h"
#include "store/cp_importer.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_BYTES (256u << 10)
#define PROGRESS_MIN_BYTES (16u << 20) /* smaller files finish before a progress line helps */

static const char usage_text[] =
    "usage: cloudprof import [options] FILE...\n"
    "\n"
    "Imports foreign traces as calls: TPTP binary traces (.trcbin), their XML form (.trcxml)\n"
    "and CBOR raw traces. The format is detected from each file's first bytes. The calls\n"
    "appear in the API and the UI like an agent's (with the param import.format), are\n"
    "compacted the same way, and a file imported again is not duplicated. A malformed file\n"
    "keeps the calls completed before the error; the report says where it stopped.\n"
    "\n"
    "Where the calls go (one of):\n"
    "  --data DIR               a data directory (CLOUDPROF_DATA, default ./data); safe\n"
    "                           while `serve` runs on it\n"
    "  --catalog SPEC           a catalog: a SQLite file or postgres://... (CLOUDPROF_CATALOG)\n"
    "  --target URL             a running server, e.g. http://localhost:8080 (its POST\n"
    "                           /api/v1/import)\n"
    "What they are called (default: from the file, else tptp / cbor):\n"
    "  --namespace NS, --service NAME, --pod NAME\n"
    "  --format trcbin|trcxml|cbor   do not detect\n"
    "  --hot-window MIN         with --data/--catalog: the server's hot window length in\n"
    "                           minutes (CLOUDPROF_HOT_WINDOW, default 5)\n"
    "  --json                   one JSON report per file on stdout (else a line per file)\n"
    "  --quiet                  no progress line\n"
    "  --help                   this text\n"
    "\n"
    "Exit status: 0 all imported, 1 a file failed (the others are still imported), 2 usage.\n";

typedef struct import_opts {
    cp_cli_storage s;
    const char *target;
    const char *ns, *service, *pod;
    cp_import_format format;
    int64_t window_ms;
    int json, quiet;
    char **files;
    size_t nfiles;
} import_opts;

static int parse(import_opts *o, int argc, char **argv, char *why, size_t whylen)
{
    o->s.data_dir = getenv("CLOUDPROF_DATA") ? getenv("CLOUDPROF_DATA") : "./data";
    o->s.catalog = getenv("CLOUDPROF_CATALOG");
    o->window_ms = 300000;
    const char *hw = getenv("CLOUDPROF_HOT_WINDOW");
    uint64_t n;
    if (hw && *hw) {
        if (cp_parse_u64(hw, 60, &n) != CP_OK || n == 0 || 60 % n) {
            snprintf(why, whylen, "CLOUDPROF_HOT_WINDOW: '%s' is not a divisor of 60", hw);
            return CP_EINVAL;
        }
        o->window_ms = (int64_t)n * 60000;
    }
    o->files = calloc((size_t)argc, sizeof *o->files);
    if (!o->files) return CP_ENOMEM;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--quiet")) o->quiet = 1;
        else if (a[0] == '-' && a[1] == '-') {
            if (i + 1 >= argc) {
                snprintf(why, whylen, "%s needs a value", a);
                return CP_EINVAL;
            }
            const char *v = argv[++i];
            if (!strcmp(a, "--data")) o->s.data_dir = v;
            else if (!strcmp(a, "--catalog")) o->s.catalog = v;
            else if (!strcmp(a, "--target")) o->target = v;
            else if (!strcmp(a, "--namespace")) o->ns = v;
            else if (!strcmp(a, "--service")) o->service = v;
            else if (!strcmp(a, "--pod")) o->pod = v;
            else if (!strcmp(a, "--format")) {
                if ((o->format = cp_import_format_parse(v)) == CP_IMPORT_UNKNOWN) {
                    snprintf(why, whylen, "--format: '%s' is not trcbin, trcxml or cbor", v);
                    return CP_EINVAL;
                }
            } else if (!strcmp(a, "--hot-window")) {
                if (cp_parse_u64(v, 60, &n) != CP_OK || n == 0 || 60 % n) {
                    snprintf(why, whylen, "--hot-window: '%s' is not a divisor of 60 (minutes)", v);
                    return CP_EINVAL;
                }
                o->window_ms = (int64_t)n * 60000;
            } else {
                snprintf(why, whylen, "unknown option '%s'", a);
                return CP_EINVAL;
            }
        } else {
            o->files[o->nfiles++] = argv[i];
        }
    }
    if (!o->nfiles) {
        snprintf(why, whylen, "no file to import");
        return CP_EINVAL;
    }
    const char *names[] = {o->ns, o->service, o->pod};
    for (size_t k = 0; k < 3; k++)
        if (names[k] && (strlen(names[k]) == 0 || strlen(names[k]) > 1024)) {
            snprintf(why, whylen, "--namespace, --service and --pod must be 1 to 1024 bytes");
            return CP_EINVAL;
        }
    if (o->target && strncmp(o->target, "http://", 7) && strncmp(o->target, "https://", 8)) {
        snprintf(why, whylen, "--target must be an http:// or https:// URL");
        return CP_EINVAL;
    }
    return o->target ? CP_OK : cp_cli_storage_resolve(&o->s, why, whylen);
}

/* ---- progress -------------------------------------------------------------------------- */

typedef struct progress {
    int on;
    const char *file;
    uint64_t total;
    uint64_t last_ns;
} progress;

static void progress_show(progress *p, uint64_t done, uint64_t calls, int final)
{
    if (!p->on) return;
    uint64_t now = cp_mono_ns();
    if (!final && now - p->last_ns < 250000000ull) return;
    p->last_ns = now;
    fprintf(stderr, "\rimport: %s %3u%% (%" PRIu64 " of %" PRIu64 " MB, %" PRIu64 " calls)%s", p->file,
            p->total ? (unsigned)(done * 100 / p->total) : 100, done >> 20, p->total >> 20, calls, final ? "\n" : "");
    fflush(stderr);
}

/* ---- output ------------------------------------------------------------------------------ */

static void print_json(const char *file, const char *report, size_t len)
{
    cp_buf b;
    cp_buf_init(&b);
    cp_buf_puts(&b, "{\"file\":");
    cp_json_str(&b, file, strlen(file));
    if (len > 2 && report[0] == '{') {
        cp_buf_putc(&b, ',');
        cp_buf_append(&b, report + 1, len - 1);
    } else {
        cp_buf_puts(&b, ",\"report\":");
        cp_buf_append(&b, report, len);
        cp_buf_putc(&b, '}');
    }
    printf("%.*s\n", (int)b.len, (const char *)b.data);
    cp_buf_free(&b);
}

static void print_line(const char *file, const cp_import_report *r, uint64_t dup)
{
    if (r->error) {
        fprintf(stderr, "import: %s: stopped at byte %" PRIu64 ": %s (%" PRIu64 " calls kept)\n", file, r->stopped_at,
                r->error, r->calls);
        return;
    }
    printf("import: %s: %" PRIu64 " calls (%s, %" PRIu64 " threads, %" PRIu64 " methods, %" PRIu64 " events, %" PRIu64
           " skipped", file, r->calls, cp_import_format_name(r->format), r->threads, r->methods, r->events, r->skipped);
    if (dup) printf(", %" PRIu64 " already there", dup);
    if (r->incomplete) printf(", %" PRIu64 " incomplete", r->incomplete);
    if (r->too_large) printf(", %" PRIu64 " without a tree (too large)", r->too_large);
    printf(")");
    if (r->pod) printf(" into %s / %s / %s", r->ns, r->service, r->pod);
    printf("\n");
}

/* ---- into a catalog ------------------------------------------------------------------------ */

static int import_local(const import_opts *o, cp_catalog *cat, const char *file)
{
    FILE *f = fopen(file, "rb");
    if (!f) {
        fprintf(stderr, "import: %s: %s\n", file, strerror(errno));
        return 1;
    }
    struct stat sb;
    progress p = {.file = file};
    if (fstat(fileno(f), &sb) == 0) p.total = (uint64_t)sb.st_size;
    p.on = !o->quiet && isatty(2) && p.total >= PROGRESS_MIN_BYTES;
    uint8_t *buf = malloc(READ_BYTES);
    if (!buf) {
        fclose(f);
        fprintf(stderr, "import: out of memory\n");
        return 1;
    }
    size_t n = fread(buf, 1, READ_BYTES, f);
    cp_import_opts io;
    cp_import_opts_default(&io);
    io.format = o->format ? o->format : cp_import_detect(buf, n);
    io.ns = o->ns, io.service = o->service, io.pod = o->pod;
    io.now_ms = cp_now_ms();
    if (io.format == CP_IMPORT_UNKNOWN) {
        fprintf(stderr, "import: %s: not a .trcbin, .trcxml or CBOR raw trace (use --format to force one)\n", file);
        free(buf);
        fclose(f);
        return 1;
    }
    cp_importer *ip = cp_importer_new(cat, &io);
    int st = ip ? CP_OK : CP_ENOMEM;
    uint64_t done = 0;
    while (st == CP_OK && n > 0) {
        st = cp_importer_feed(ip, buf, n);
        done += n;
        cp_import_report r;
        cp_importer_report(ip, &r, NULL);
        progress_show(&p, done, r.calls, 0);
        if (st == CP_OK) n = fread(buf, 1, READ_BYTES, f);
    }
    int read_err = ferror(f);
    fclose(f);
    free(buf);
    if (!ip) {
        fprintf(stderr, "import: out of memory\n");
        return 1;
    }
    if (read_err) {
        cp_importer_abort(ip);
        fprintf(stderr, "import: %s: read error\n", file);
        cp_importer_free(ip);
        return 1;
    }
    st = st == CP_OK ? cp_importer_finish(ip) : cp_importer_abort(ip);
    cp_import_report r;
    uint64_t dup;
    cp_importer_report(ip, &r, &dup);
    progress_show(&p, done, r.calls, 1);
    if (o->json) {
        cp_buf b;
        cp_buf_init(&b);
        cp_importer_report_json(ip, &b);
        print_json(file, (const char *)b.data, b.len);
        cp_buf_free(&b);
    } else {
        print_line(file, &r, dup);
    }
    int failed = r.error != NULL || st != CP_OK;
    cp_importer_free(ip);
    return failed;
}

/* ---- through a server --------------------------------------------------------------------- */

typedef struct upload {
    FILE *f;
    progress p;
} upload;

static size_t read_cb(char *dst, size_t size, size_t n, void *ud)
{
    return fread(dst, 1, size * n, ((upload *)ud)->f);
}

static int xfer_cb(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal;
    progress_show(&((upload *)ud)->p, (uint64_t)ulnow, 0, 0);
    return 0;
}

static size_t write_cb(char *src, size_t size, size_t n, void *ud)
{
    cp_buf *b = ud;
    if (b->len + size * n > (1u << 20)) return 0; /* a report is small */
    return cp_buf_append(b, src, size * n) == CP_OK ? size * n : 0;
}

static int append_arg(cp_buf *url, CURL *c, const char *key, const char *v, int *first)
{
    if (!v) return CP_OK;
    char *e = curl_easy_escape(c, v, 0);
    if (!e) return CP_ENOMEM;
    int st = cp_buf_printf(url, "%s%s=%s", *first ? "?" : "&", key, e);
    *first = 0;
    curl_free(e);
    return st;
}

static int import_remote(const import_opts *o, const char *file)
{
    upload u = {.p = {.file = file}};
    u.f = fopen(file, "rb");
    if (!u.f) {
        fprintf(stderr, "import: %s: %s\n", file, strerror(errno));
        return 1;
    }
    struct stat sb;
    if (fstat(fileno(u.f), &sb) == 0) u.p.total = (uint64_t)sb.st_size;
    u.p.on = !o->quiet && isatty(2) && u.p.total >= PROGRESS_MIN_BYTES;
    CURL *c = curl_easy_init();
    cp_buf url, resp;
    cp_buf_init(&url);
    cp_buf_init(&resp);
    int first = 1, rc = 1;
    size_t tl = strlen(o->target);
    while (tl && o->target[tl - 1] == '/') tl--;
    if (!c || cp_buf_printf(&url, "%.*s/api/v1/import", (int)tl, o->target) != CP_OK ||
        append_arg(&url, c, "format", o->format ? cp_import_format_name(o->format) : NULL, &first) != CP_OK ||
        append_arg(&url, c, "namespace", o->ns, &first) != CP_OK ||
        append_arg(&url, c, "service", o->service, &first) != CP_OK ||
        append_arg(&url, c, "pod", o->pod, &first) != CP_OK || cp_buf_putc(&url, 0) != CP_OK) {
        fprintf(stderr, "import: out of memory\n");
        goto out;
    }
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/octet-stream");
    curl_easy_setopt(c, CURLOPT_URL, (const char *)url.data);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_cb);
    curl_easy_setopt(c, CURLOPT_READDATA, &u);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)u.p.total);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, xfer_cb);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &u);
    CURLcode cr = curl_easy_perform(c);
    curl_slist_free_all(hdr);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    progress_show(&u.p, u.p.total, 0, 1);
    if (cr != CURLE_OK) {
        fprintf(stderr, "import: %s: %s: %s\n", file, (const char *)url.data, curl_easy_strerror(cr));
        goto out;
    }
    rc = status == 200 ? 0 : 1;
    if (o->json || rc) {
        if (o->json) print_json(file, (const char *)resp.data, resp.len);
        else fprintf(stderr, "import: %s: HTTP %ld: %.*s\n", file, status, (int)resp.len, (const char *)resp.data);
    } else {
        printf("import: %s: %.*s\n", file, (int)resp.len, (const char *)resp.data);
    }
out:
    if (c) curl_easy_cleanup(c);
    cp_buf_free(&url);
    cp_buf_free(&resp);
    fclose(u.f);
    return rc;
}

int cp_cli_import(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            return 0;
        }
    import_opts o;
    memset(&o, 0, sizeof o);
    char why[512] = "";
    if (parse(&o, argc, argv, why, sizeof why) != CP_OK) {
        fprintf(stderr, "cloudprof import: %s\n\n%s", why[0] ? why : "out of memory", usage_text);
        free(o.files);
        return 2;
    }
    int failed = 0;
    if (o.target) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        for (size_t i = 0; i < o.nfiles; i++) failed |= import_remote(&o, o.files[i]);
        curl_global_cleanup();
    } else {
        cp_catalog *cat = NULL;
        char err[1024];
        if (!cp_catalog_is_postgres(o.s.catalog) && o.s.catalog == o.s.catalog_buf &&
            cp_mkdirs(o.s.data_dir, 0755) != CP_OK) {
            fprintf(stderr, "cloudprof import: cannot create %s: %s\n", o.s.data_dir, strerror(errno));
            free(o.files);
            return 1;
        }
        if (cp_cli_open_catalog_for(o.s.catalog, o.window_ms, NULL, 0, &cat, err, sizeof err) != CP_OK ||
            cp_catalog_set_bulk(cat) != CP_OK) {
            fprintf(stderr, "cloudprof import: %s\n", cat ? cp_catalog_errmsg(cat) : err);
            if (cat) cp_catalog_close(cat);
            free(o.files);
            return 1;
        }
        for (size_t i = 0; i < o.nfiles; i++) failed |= import_local(&o, cat, o.files[i]);
        cp_catalog_close(cat);
    }
    free(o.files);
    return failed ? 1 : 0;
}
