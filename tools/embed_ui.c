/* embed_ui.c -- build-time tool (CMake target cp_embed_ui): turns the web UI's dist
 * directory into a C file defining the asset table of src/http/cp_ui_assets.h.
 *
 * usage: cp_embed_ui DIST_DIR OUTPUT.c
 *
 * Every regular file under DIST_DIR becomes one entry, its path relative to DIST_DIR with
 * a leading '/'. The walk is bounded (a dist directory is a few files; anything bigger
 * is a mistake worth failing the build for): symlinks and dot-files are skipped, at most
 * MAX_DEPTH directory levels, MAX_FILES files and MAX_TOTAL bytes. Text types get a gzip
 * variant (zlib, level 9, mtime 0 so the output is reproducible) when it saves more than
 * 10 %. A missing DIST_DIR, or one without index.html, gives an empty table: the server
 * then says the UI was not built (src/http/ui.c).
 *
 * The output is written to OUTPUT.tmp and renamed, so a failed run leaves no half file.
 * Exit status 0, or 1 with a message on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <zlib.h>

#define MAX_DEPTH 8
#define MAX_FILES 1000
#define MAX_TOTAL ((uint64_t)64 << 20)
#define MAX_PATH 4096
#define BYTES_PER_LINE 20

typedef struct asset {
    char *path;               /* "/assets/x.js" */
    const char *type;
    int text;                 /* a type worth compressing */
    unsigned char *data;
    size_t len;
    unsigned char *gz;        /* NULL: not worth it */
    size_t gz_len;
    char etag[40];            /* "\"<16 hex fnv><8 hex crc>\"" */
} asset;

typedef struct walk {
    asset *a;
    size_t n;
    uint64_t total;
} walk;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("cp_embed_ui: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* ---- content types ------------------------------------------------------------------ */

static const struct {
    const char *ext, *type;
    int text;
} types[] = {
    {"html", "text/html; charset=utf-8", 1},
    {"js", "text/javascript; charset=utf-8", 1},
    {"mjs", "text/javascript; charset=utf-8", 1},
    {"css", "text/css; charset=utf-8", 1},
    {"svg", "image/svg+xml", 1},
    {"json", "application/json", 1},
    {"map", "application/json", 1},
    {"txt", "text/plain; charset=utf-8", 1},
    {"png", "image/png", 0},
    {"ico", "image/x-icon", 0},
    {"woff2", "font/woff2", 0},
};

/* Other files are served as bytes (X-Content-Type-Options: nosniff keeps browsers from
 * guessing), never compressed. */
static void type_of(const char *path, const char **type, int *text)
{
    const char *base = strrchr(path, '/');
    const char *dot = strrchr(base ? base : path, '.');
    *type = "application/octet-stream";
    *text = 0;
    if (!dot) return;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (!strcasecmp(dot + 1, types[i].ext)) {
            *type = types[i].type;
            *text = types[i].text;
            return;
        }
    }
}

/* ---- reading the tree ------------------------------------------------------------------ */

static unsigned char *read_file(const char *fs_path, size_t size)
{
    FILE *f = fopen(fs_path, "rb");
    if (!f) die("cannot open %s: %s", fs_path, strerror(errno));
    unsigned char *p = malloc(size ? size : 1);
    if (!p) die("out of memory reading %s", fs_path);
    if (size && fread(p, 1, size, f) != size) die("cannot read %s (changed while reading?)", fs_path);
    if (fgetc(f) != EOF) die("%s grew while reading", fs_path);
    fclose(f);
    return p;
}

static void add_file(walk *w, const char *fs_path, const char *rel, uint64_t size)
{
    if (w->n >= MAX_FILES) die("more than %d files under the dist directory", MAX_FILES);
    if (size > MAX_TOTAL - w->total)
        die("the dist directory holds more than %llu bytes", (unsigned long long)MAX_TOTAL);
    w->total += size;
    asset *a = &w->a[w->n++];
    memset(a, 0, sizeof *a);
    size_t rl = strlen(rel);
    a->path = malloc(rl + 2);
    if (!a->path) die("out of memory");
    a->path[0] = '/';
    memcpy(a->path + 1, rel, rl + 1);
    type_of(a->path, &a->type, &a->text);
    a->len = (size_t)size;
    a->data = read_file(fs_path, a->len);
}

/* Walks dir (fs path) whose path below the dist root is rel ("" at the root). */
static void walk_dir(walk *w, const char *dir, const char *rel, int depth)
{
    DIR *d = opendir(dir);
    if (!d) die("cannot open directory %s: %s", dir, strerror(errno));
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.') continue; /* ".", "..", and dot-files: never part of a build */
        char fs[MAX_PATH], sub[MAX_PATH];
        if ((size_t)snprintf(fs, sizeof fs, "%s/%s", dir, de->d_name) >= sizeof fs ||
            (size_t)snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", de->d_name) >= sizeof sub)
            die("path too long under %s", dir);
        struct stat st;
        if (lstat(fs, &st) != 0) die("cannot stat %s: %s", fs, strerror(errno));
        if (S_ISLNK(st.st_mode)) continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth + 1 > MAX_DEPTH) die("directories nested deeper than %d levels at %s", MAX_DEPTH, fs);
            walk_dir(w, fs, sub, depth + 1);
        } else if (S_ISREG(st.st_mode)) {
            add_file(w, fs, sub, (uint64_t)st.st_size);
        }
    }
    closedir(d);
}

/* ---- gzip and etag ---------------------------------------------------------------------- */

static void compress_asset(asset *a)
{
    if (!a->text || a->len == 0) return;
    z_stream z;
    memset(&z, 0, sizeof z);
    /* windowBits 15 + 16: a gzip header and trailer instead of zlib's */
    if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) die("deflateInit2 failed");
    uLong cap = deflateBound(&z, (uLong)a->len) + 32;
    unsigned char *out = malloc(cap);
    if (!out) die("out of memory compressing %s", a->path);
    z.next_in = a->data;
    z.avail_in = (uInt)a->len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) die("deflate failed for %s", a->path);
    size_t n = (size_t)z.total_out;
    deflateEnd(&z);
    if ((uint64_t)n * 10 < (uint64_t)a->len * 9) { /* saves more than 10 % */
        a->gz = out;
        a->gz_len = n;
    } else {
        free(out);
    }
}

static void etag_asset(asset *a)
{
    uint64_t h = 14695981039346656037ULL; /* FNV-1a 64 */
    for (size_t i = 0; i < a->len; i++) {
        h ^= a->data[i];
        h *= 1099511628211ULL;
    }
    unsigned long crc = crc32(0L, a->data, (uInt)a->len);
    snprintf(a->etag, sizeof a->etag, "\"%016llx%08lx\"", (unsigned long long)h, crc & 0xffffffffUL);
}

/* ---- output ---------------------------------------------------------------------------- */

/* A C string literal: printable ASCII as is, anything else octal ('?' too: trigraphs). */
static void put_cstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\' || *p == '?' || *p < 0x20 || *p >= 0x7f) fprintf(f, "\\%03o", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

static void put_bytes(FILE *f, const char *name, const unsigned char *p, size_t n)
{
    fprintf(f, "static const unsigned char %s[%zu] = {", name, n ? n : 1);
    if (!n) fputs("0", f);
    for (size_t i = 0; i < n; i++) {
        if (i % BYTES_PER_LINE == 0) fputc('\n', f);
        fprintf(f, "0x%02x,", p[i]);
    }
    fputs("\n};\n", f);
}

static int cmp_path(const void *x, const void *y)
{
    return strcmp(((const asset *)x)->path, ((const asset *)y)->path);
}

static void write_table(FILE *f, const char *dist, const walk *w)
{
    fprintf(f, "/* Generated by cp_embed_ui (tools/embed_ui.c) from ");
    for (const char *p = dist; *p; p++) fputc(*p == '*' && p[1] == '/' ? '_' : *p, f); /* no early comment end */
    fprintf(f, ": do not edit. %zu files. */\n#include \"http/cp_ui_assets.h\"\n\n", w->n);
    char name[32];
    for (size_t i = 0; i < w->n; i++) {
        snprintf(name, sizeof name, "d%zu", i);
        put_bytes(f, name, w->a[i].data, w->a[i].len);
        if (w->a[i].gz) {
            snprintf(name, sizeof name, "z%zu", i);
            put_bytes(f, name, w->a[i].gz, w->a[i].gz_len);
        }
    }
    fputs("\nconst cp_ui_asset cp_ui_assets[] = {\n", f);
    for (size_t i = 0; i < w->n; i++) {
        const asset *a = &w->a[i];
        fputs("    {", f);
        put_cstr(f, a->path);
        fputs(", ", f);
        put_cstr(f, a->type);
        fprintf(f, ", d%zu, %zu, ", i, a->len);
        if (a->gz) fprintf(f, "z%zu, %zu, ", i, a->gz_len);
        else fputs("NULL, 0, ", f);
        put_cstr(f, a->etag);
        fputs("},\n", f);
    }
    if (!w->n) fputs("    {NULL, NULL, NULL, 0, NULL, 0, NULL}, /* C has no empty arrays */\n", f);
    fprintf(f, "};\nconst size_t cp_ui_asset_count = %zu;\n", w->n);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: cp_embed_ui DIST_DIR OUTPUT.c\n");
        return 2;
    }
    const char *dist = argv[1], *out = argv[2];
    walk w = {0};
    w.a = calloc(MAX_FILES, sizeof *w.a);
    if (!w.a) die("out of memory");

    char index[MAX_PATH];
    struct stat st;
    snprintf(index, sizeof index, "%s/index.html", dist);
    if (stat(index, &st) == 0 && S_ISREG(st.st_mode)) {
        walk_dir(&w, dist, "", 0);
        qsort(w.a, w.n, sizeof *w.a, cmp_path);
        size_t gz = 0;
        for (size_t i = 0; i < w.n; i++) {
            compress_asset(&w.a[i]);
            etag_asset(&w.a[i]);
            gz += w.a[i].gz != NULL;
        }
        printf("cp_embed_ui: %zu files (%llu bytes, %zu with a gzip variant) from %s\n", w.n,
               (unsigned long long)w.total, gz, dist);
    } else {
        printf("cp_embed_ui: no %s: the web UI is not embedded (run scripts/ui-build.sh, then rebuild)\n", index);
    }

    char tmp[MAX_PATH];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", out) >= sizeof tmp) die("output path too long");
    FILE *f = fopen(tmp, "w");
    if (!f) die("cannot create %s: %s", tmp, strerror(errno));
    write_table(f, dist, &w);
    if (fflush(f) != 0 || ferror(f) || fclose(f) != 0) die("cannot write %s: %s", tmp, strerror(errno));
    if (rename(tmp, out) != 0) die("cannot rename %s to %s: %s", tmp, out, strerror(errno));

    for (size_t i = 0; i < w.n; i++) {
        free(w.a[i].path);
        free(w.a[i].data);
        free(w.a[i].gz);
    }
    free(w.a);
    return 0;
}
