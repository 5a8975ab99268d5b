/* convert_cli_test.c -- `cloudprof convert IN OUT` run as a process: conversions match the
 * fixtures byte for byte, the summary line counts messages, bad usage exits 2, bad input
 * exits 1 and never leaves OUT (or OUT.tmp) behind or clobbers an existing OUT. */
#include "testutil.h"
#include "server_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct run {
    int rc;
    char *out, *err; /* NUL-terminated; caller frees */
} run;

static run convert(const char *in, const char *out)
{
    cp_buf o, e;
    cp_buf_init(&o);
    cp_buf_init(&e);
    const char *argv[] = {"convert", in, out, NULL};
    run r = {.rc = cli_run(&o, &e, argv)};
    cp_buf_putc(&o, 0);
    cp_buf_putc(&e, 0);
    r.out = (char *)o.data;
    r.err = (char *)e.data;
    return r;
}

static void run_free(run *r)
{
    free(r->out);
    free(r->err);
}

static char *path_in(const char *dir, const char *name)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    assert_non_null(p);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

/* 1 if DIR/NAME exists. */
static int exists_in(const char *dir, const char *name)
{
    char *p = path_in(dir, name);
    struct stat sb;
    int yes = stat(p, &sb) == 0;
    free(p);
    return yes;
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void assert_same_file(const char *a, const char *b)
{
    cp_buf x, y;
    load_file(a, &x);
    load_file(b, &y);
    if (x.len != y.len || memcmp(x.data, y.data, x.len) != 0)
        fail_msg("%s (%zu bytes) differs from %s (%zu bytes)", a, x.len, b, y.len);
    cp_buf_free(&x);
    cp_buf_free(&y);
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void test_fixture_conversions(void **state)
{
    (void)state;
    char *dir = make_temp_dir("convert");
    char *bin = path_in(dir, "x.trcbin"), *xml = path_in(dir, "x.trcxml"), *back = path_in(dir, "back.trcbin");

    run r = convert(fixture_path("foreign/shop.trcxml"), bin);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.err, "convert: 146 messages, 0 unknown skipped"));
    assert_same_file(bin, fixture_path("foreign/shop.trcbin"));
    run_free(&r);

    r = convert(fixture_path("foreign/shop.trcbin"), xml);
    assert_int_equal(r.rc, 0);
    assert_same_file(xml, fixture_path("foreign/shop.trcxml"));
    run_free(&r);
    r = convert(xml, back);
    assert_int_equal(r.rc, 0);
    assert_same_file(back, fixture_path("foreign/shop.trcbin"));
    run_free(&r);

    /* shop-extras: unknown messages counted; .trcbin -> .trcxml -> .trcbin is the same as
     * the direct re-encoding (appended and unknown bytes are not kept either way) */
    char *direct = path_in(dir, "direct.trcbin");
    r = convert(fixture_path("foreign/shop-extras.trcbin"), direct);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.err, "convert: 177 messages, 2 unknown skipped"));
    run_free(&r);
    r = convert(fixture_path("foreign/shop-extras.trcbin"), xml);
    assert_int_equal(r.rc, 0);
    run_free(&r);
    r = convert(xml, back);
    assert_int_equal(r.rc, 0);
    run_free(&r);
    assert_same_file(back, direct);
    assert_false(exists_in(dir, "back.trcbin.tmp"));

    free(direct);
    free(bin);
    free(xml);
    free(back);
    remove_tree(dir);
    free(dir);
}

static void test_usage_and_bad_input(void **state)
{
    (void)state;
    char *dir = make_temp_dir("convert");
    char *out = path_in(dir, "out.trcxml"), *tmp = path_in(dir, "out.trcxml.tmp");

    cp_buf o;
    cp_buf_init(&o);
    const char *help[] = {"convert", "--help", NULL};
    assert_int_equal(cli_run(&o, NULL, help), 0);
    cp_buf_putc(&o, 0);
    assert_non_null(strstr((const char *)o.data, "usage: cloudprof convert IN OUT"));
    cp_buf_free(&o);
    const char *none[] = {"convert", NULL};
    assert_int_equal(cli_run(NULL, NULL, none), 2);

    /* extensions decide the forms; anything else is a usage error */
    char *json = path_in(dir, "out.json");
    run r = convert(fixture_path("foreign/shop.trcbin"), json);
    free(json);
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "must end in .trcbin or .trcxml"));
    run_free(&r);
    r = convert(fixture_path("foreign/orders.cbor"), out);
    assert_int_equal(r.rc, 2);
    run_free(&r);
    assert_false(exists(out));

    /* a missing input */
    char *missing = path_in(dir, "missing.trcbin");
    r = convert(missing, out);
    free(missing);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "cannot open"));
    run_free(&r);
    assert_false(exists(out));
    assert_false(exists(tmp));

    /* a corrupt input: the decoder's error, no OUT; an existing OUT stays as it was */
    cp_buf f;
    load_fixture("foreign/shop.trcbin", &f);
    f.data[26 + 2] = f.data[26 + 3] = f.data[26 + 4] = 0xFF; /* node's size: past the file's end */
    f.data[26 + 5] = 0x00;
    char *bad = path_in(dir, "bad.trcbin");
    write_bytes(bad, f.data, f.len);
    r = convert(bad, out);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "at offset 26"));
    run_free(&r);
    assert_false(exists(out));
    assert_false(exists(tmp));
    write_bytes(out, "old", 3);
    r = convert(bad, out);
    assert_int_equal(r.rc, 1);
    run_free(&r);
    cp_buf old;
    load_file(out, &old);
    assert_int_equal(old.len, 3);
    assert_memory_equal(old.data, "old", 3);
    cp_buf_free(&old);
    assert_false(exists(tmp));

    /* a value the output form cannot hold: a control character has no XML form */
    static const uint8_t ctl[] = {'0', 'T', 'B', 'F', 1, 0, 1, 1, 12, 0, 0, 0,
                                  0xEC, 0x03, 11, 0, 0, 0, 'a', 0x01, 0, 1, 0, 0, 0, 0, 0, 0, 0};
    write_bytes(bad, ctl, sizeof ctl);
    r = convert(bad, out);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "control character"));
    run_free(&r);
    assert_false(exists(tmp));

    free(bad);
    cp_buf_free(&f);
    free(out);
    free(tmp);
    remove_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_conversions),
        cmocka_unit_test(test_usage_and_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
