/* testutil.c -- fixture access and small helpers for the tests. */
#include "testutil.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
