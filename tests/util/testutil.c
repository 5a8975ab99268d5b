/* testutil.c -- fixture access and small helpers for the tests. */
#include "testutil.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *fixture_path(const char *rel)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", CP_FIXTURES_DIR, rel);
    return path;
}

void load_file(const char *path, cp_buf *out)
{
    cp_buf_init(out);
    int st = cp_read_file(path, (size_t)1 << 30, out);
    if (st != CP_OK) fail_msg("cannot read %s: %s", path, cp_strstatus(st));
}

void load_fixture(const char *rel, cp_buf *out) { load_file(fixture_path(rel), out); }

size_t split_lines(char *text, size_t len, char ***lines)
{
    size_t n = 0, cap = 64;
    char **v = malloc(cap * sizeof *v);
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || text[i] == '\n') {
            if (i == len && start == len) break; /* no empty line after a final newline */
            if (n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
            if (i < len) text[i] = 0;
            v[n++] = text + start;
            start = i + 1;
        }
    }
    *lines = v;
    return n;
}

uint64_t test_rand(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

char *make_temp_dir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/cloudprof-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    char *p = mkdtemp(tmpl);
    if (!p) fail_msg("mkdtemp failed");
    return strdup(p);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void remove_tree(const char *path) { nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* ---- the Go-style maps of the expected fixture files ---------------------------------- */

/* Splits the expected map text "map[19:[a b] 41:[c]]" into "id:[...]" segments. */
static size_t go_map_segments(const char *s, char seg[][2048], size_t max)
{
    assert_true(strncmp(s, "map[", 4) == 0);
    const char *p = s + 4, *end = s + strlen(s) - 1; /* final ']' */
    size_t n = 0;
    while (p < end && n < max) {
        const char *q = p;
        /* the segment ends at "] " followed by "<digits>:[", or at the map's end */
        for (;;) {
            const char *close = strstr(q, "] ");
            if (!close || close >= end) {
                close = end - 1;
                q = close;
                break;
            }
            const char *d = close + 2;
            while (*d >= '0' && *d <= '9') d++;
            if (d > close + 2 && d[0] == ':' && d[1] == '[') {
                q = close;
                break;
            }
            q = close + 1;
        }
        size_t len = (size_t)(q + 1 - p);
        assert_true(len < 2048);
        memcpy(seg[n], p, len);
        seg[n][len] = 0;
        n++;
        p = q + 2;
    }
    return n;
}

void assert_go_map_equal(const char *mine, const char *expected)
{
    if (!strstr(expected, "test.org")) {
        assert_string_equal(mine, expected);
        return;
    }
    /* hand-anonymised row: same parameter ids, same values where not anonymised */
    static char a[64][2048], b[64][2048];
    size_t na = go_map_segments(mine, a, 64), nb = go_map_segments(expected, b, 64);
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; i++) {
        assert_int_equal(atoi(a[i]), atoi(b[i]));
        if (!strstr(b[i], "test.org")) assert_string_equal(a[i], b[i]);
    }
}

char *str16_dup(cp_str16 s)
{
    cp_buf b;
    cp_buf_init(&b);
    cp_str16_to_utf8(&b, s);
    cp_buf_putc(&b, 0);
    return (char *)b.data;
}

void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int64_t test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int test_quick(void)
{
    static int quick = -1;
    if (quick < 0) {
        const char *v = getenv("CP_TEST_QUICK");
#ifdef CP_TEST_SANITIZED
        quick = !(v && !strcmp(v, "0"));
#else
        quick = v && *v && strcmp(v, "0") != 0;
#endif
        if (quick) fprintf(stderr, "(quick run: fewer repetitions; CP_TEST_QUICK=0 for the full counts)\n");
    }
    return quick;
}

size_t test_scaled(size_t full, size_t quick) { return test_quick() ? quick : full; }

int in_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (!path) return 0;
    char *copy = strdup(path);
    int found = 0;
    for (char *dir = strtok(copy, ":"); dir && !found; dir = strtok(NULL, ":")) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", *dir ? dir : ".", prog);
        found = access(p, X_OK) == 0;
    }
    free(copy);
    return found;
}
