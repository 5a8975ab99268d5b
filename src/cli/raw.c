/* raw.c -- `cloudprof raw`: list the raw log, or print one stored stream file exactly as
 * the agent sent it. Reads <data>/raw directly, so it works while the server runs or
 * after it died. */
#include "cli/cp_cli.h"
#include "common/cp_fsutil.h"
#include "store/cp_rawlog.h"
#include "streams/cp_streams.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: cloudprof raw [--data DIR] --pod POD --stream NAME --index N [--namespace NS] [--restart MS]\n"
    "       cloudprof raw [--data DIR] --list [--pod POD] [--namespace NS]\n"
    "\n"
    "Prints a stored stream file to stdout, byte-identical to the RCV_DATA payloads the\n"
    "agent sent for it up to its last whole record, or lists the stored files.\n"
    "\n"
    "  --data DIR        data directory (CLOUDPROF_DATA, default ./data)\n"
    "  --pod POD         pod name as the agent sent it\n"
    "  --namespace NS    needed only when the pod name exists in several namespaces\n"
    "  --restart MS      pod restart (connection) time in epoch ms; default: the latest\n"
    "  --stream NAME     trace, calls, xml, sql, dictionary, posDictionary, suspend,\n"
    "                    params, gc, td, top, heap\n"
    "  --index N         file index (rollingSequenceId + 1; the first file is 1)\n"
    "  --torn            also print, after the file, a torn tail the server cut off at a\n"
    "                    disconnect or a crash (kept in <file>.torn): every byte the agent\n"
    "                    sent, a partial record at the end included\n"
    "  --list            one line per stored file:\n"
    "                    namespace<TAB>pod<TAB>restart_ms<TAB>stream<TAB>index<TAB>bytes\n"
    "  --help            this text\n"
    "\n"
    "Exit status: 0 ok, 1 not found or read error, 2 bad usage.\n";

typedef struct raw_opts {
    const char *data, *pod, *ns, *stream;
    int64_t restart, index; /* -1 = not given */
    int list;
    int torn;   /* --torn: the cut-off tail too */
} raw_opts;

/* One stored file (copied out of the walk, whose strings are transient). */
typedef struct item {
    char *ns, *pod, *stream, *path;
    size_t ns_len, pod_len;
    int64_t restart, index;
    uint64_t bytes;
} item;

typedef struct items {
    const raw_opts *o;
    item *v;
    size_t n, cap;
} items;

static int parse_i64(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < 0) return CP_EINVAL;
    *out = v;
    return CP_OK;
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "cloudprof raw: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\n%s", usage_text);
    return 2;
}

/* Returns -1 to continue, else the exit status. */
static int parse_args(raw_opts *o, int argc, char **argv)
{
    o->data = getenv("CLOUDPROF_DATA");
    if (!o->data || !*o->data) o->data = "./data";
    o->restart = o->index = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (!strcmp(a, "--list")) {
            o->list = 1;
            continue;
        }
        if (!strcmp(a, "--torn")) {
            o->torn = 1;
            continue;
        }
        static const char *const valued[] = {"--data", "--pod", "--namespace", "--stream", "--index", "--restart"};
        int k = -1;
        const char *v = NULL;
        for (int j = 0; j < (int)CP_ARRAY_LEN(valued) && k < 0; j++) {
            size_t n = strlen(valued[j]);
            if (!strncmp(a, valued[j], n) && (a[n] == 0 || a[n] == '=')) {
                k = j;
                v = a[n] == '=' ? a + n + 1 : NULL;
            }
        }
        if (k < 0) return usage_error("unknown option '%s'", a);
        if (!v) {
            if (i + 1 >= argc) return usage_error("%s needs a value", valued[k]);
            v = argv[++i];
        }
        switch (k) {
        case 0: o->data = v; break;
        case 1: o->pod = v; break;
        case 2: o->ns = v; break;
        case 3: o->stream = v; break;
        case 4:
            if (parse_i64(v, &o->index) != CP_OK) return usage_error("--index: '%s' is not a file index", v);
            break;
        case 5:
            if (parse_i64(v, &o->restart) != CP_OK) return usage_error("--restart: '%s' is not epoch ms", v);
            break;
        }
    }
    if (o->list) return -1;
    if (!o->pod) return usage_error("%s", "--pod is required (or --list)");
    if (!o->stream) return usage_error("%s", "--stream is required");
    if (o->index < 0) return usage_error("%s", "--index is required");
    cp_stream_kind k = cp_stream_kind_parse(o->stream);
    if (k != CP_STREAM_UNKNOWN) o->stream = cp_stream_kind_name(k); /* "traces" -> "trace" */
    return -1;
}

static int name_eq(const char *arg, const char *name, size_t len) { return strlen(arg) == len && !memcmp(arg, name, len); }

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static int collect(void *ud, const cp_rawlog_entry *e)
{
    items *it = ud;
    const raw_opts *o = it->o;
    if (o->pod && !name_eq(o->pod, e->pod, e->pod_len)) return 0;
    if (o->ns && !name_eq(o->ns, e->ns, e->ns_len)) return 0;
    if (it->n == it->cap) {
        size_t cap = it->cap ? it->cap * 2 : 64;
        item *v = realloc(it->v, cap * sizeof *v);
        if (!v) return CP_ENOMEM;
        it->v = v;
        it->cap = cap;
    }
    item *x = &it->v[it->n];
    x->ns = dup_n(e->ns, e->ns_len);
    x->pod = dup_n(e->pod, e->pod_len);
    x->stream = strdup(e->stream);
    x->path = strdup(e->path);
    x->ns_len = e->ns_len;
    x->pod_len = e->pod_len;
    x->restart = e->restart_ms;
    x->index = e->file_index;
    x->bytes = e->bytes;
    if (!x->ns || !x->pod || !x->stream || !x->path) return CP_ENOMEM;
    it->n++;
    return 0;
}

static void items_free(items *it)
{
    for (size_t i = 0; i < it->n; i++) {
        free(it->v[i].ns);
        free(it->v[i].pod);
        free(it->v[i].stream);
        free(it->v[i].path);
    }
    free(it->v);
}

static int list(const items *it)
{
    printf("namespace\tpod\trestart_ms\tstream\tindex\tbytes\n");
    for (size_t i = 0; i < it->n; i++) {
        const item *x = &it->v[i];
        printf("%s\t%s\t%" PRId64 "\t%s\t%" PRId64 "\t%" PRIu64 "\n", x->ns, x->pod, x->restart, x->stream, x->index,
               x->bytes);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

static int copy_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "cloudprof raw: %s: %s\n", path, strerror(errno));
        return 1;
    }
    uint8_t buf[65536];
    int rc = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            fprintf(stderr, "cloudprof raw: %s: %s\n", path, strerror(errno));
            rc = 1;
            break;
        }
        if (n == 0) break;
        if (cp_write_all(STDOUT_FILENO, buf, (size_t)n) != CP_OK) {
            fprintf(stderr, "cloudprof raw: stdout: %s\n", strerror(errno));
            rc = 1;
            break;
        }
    }
    close(fd);
    return rc;
}

/* The stream file, and with_torn: a torn tail the server cut off after it (kept in
 * "<file>.torn", cp_rawlog_cut_tail) if there is one. */
static int copy_to_stdout(const char *path, int with_torn)
{
    int rc = copy_file(path);
    char torn[4200];
    if (rc == 0 && with_torn && (size_t)snprintf(torn, sizeof torn, "%s.torn", path) < sizeof torn &&
        access(torn, F_OK) == 0)
        rc = copy_file(torn);
    return rc;
}

/* Picks the namespace and restart, then the file; explains what exists when it fails. */
static int fetch(const raw_opts *o, const items *it)
{
    if (it->n == 0) {
        fprintf(stderr, "cloudprof raw: no pod '%s'%s%s in %s/raw\n", o->pod, o->ns ? " in namespace " : "",
                o->ns ? o->ns : "", o->data);
        return 1;
    }
    const item *first = &it->v[0];
    int64_t latest = -1;
    for (size_t i = 0; i < it->n; i++) {
        const item *x = &it->v[i];
        if (x->ns_len != first->ns_len || memcmp(x->ns, first->ns, x->ns_len)) {
            fprintf(stderr, "cloudprof raw: pod '%s' exists in several namespaces; pick one with --namespace:", o->pod);
            for (size_t j = 0; j < it->n; j++)
                if (j == 0 || strcmp(it->v[j].ns, it->v[j - 1].ns)) fprintf(stderr, " %s", it->v[j].ns);
            fprintf(stderr, "\n");
            return 1;
        }
        if (x->restart > latest) latest = x->restart;
    }
    int64_t restart = o->restart >= 0 ? o->restart : latest;
    int have_restart = 0;
    for (size_t i = 0; i < it->n; i++) {
        const item *x = &it->v[i];
        if (x->restart != restart) continue;
        have_restart = 1;
        if (!strcmp(x->stream, o->stream) && x->index == o->index) return copy_to_stdout(x->path, o->torn);
    }
    if (!have_restart) {
        fprintf(stderr, "cloudprof raw: pod '%s' has no restart %" PRId64 "; restarts:", o->pod, restart);
        for (size_t i = 0; i < it->n; i++)
            if (i == 0 || it->v[i].restart != it->v[i - 1].restart) fprintf(stderr, " %" PRId64, it->v[i].restart);
        fprintf(stderr, "\n");
        return 1;
    }
    fprintf(stderr, "cloudprof raw: pod '%s' restart %" PRId64 " has no %s file %" PRId64 "; it has:", o->pod, restart,
            o->stream, o->index);
    for (size_t i = 0; i < it->n; i++)
        if (it->v[i].restart == restart) fprintf(stderr, " %s/%" PRId64, it->v[i].stream, it->v[i].index);
    fprintf(stderr, "\n");
    return 1;
}

int cp_cli_raw(int argc, char **argv)
{
    raw_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_args(&o, argc, argv);
    if (rc >= 0) return rc;
    items it = {.o = &o};
    int st = cp_rawlog_walk(o.data, collect, &it);
    if (st == CP_ENOTFOUND && !o.list) {
        fprintf(stderr, "cloudprof raw: no raw log in %s (expected %s/raw)\n", o.data, o.data);
        rc = 1;
    } else if (st != CP_OK && st != CP_ENOTFOUND) {
        fprintf(stderr, "cloudprof raw: reading %s/raw: %s\n", o.data, cp_strstatus(st));
        rc = 1;
    } else {
        rc = o.list ? list(&it) : fetch(&o, &it);
    }
    items_free(&it);
    return rc;
}
