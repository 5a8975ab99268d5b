/* query_test.c -- the query layer (cp_query.h): duration filter (ui.md §3.4, every row of
 * its table), search syntax (ui.md §3.5, every row of the four-call test table, plus
 * escapes, "_"-params, limits), params JSON, sort names, call ids, cursors, FNV-1a. */
#include "testutil.h"

#include "model/cp_model.h"
#include "query/cp_query.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- duration ------------------------------------------------------------------------ */

static void expect_duration(const char *text, int64_t min, int64_t max)
{
    cp_duration_filter f = {-1, -1};
    char err[128] = "untouched";
    int st = cp_duration_parse(text, strlen(text), &f, err, sizeof err);
    if (st != CP_OK) fail_msg("\"%s\": %d (%s)", text, st, err);
    if (f.min_ms != min || f.max_ms != max)
        fail_msg("\"%s\": [%" PRId64 ", %" PRId64 "], expected [%" PRId64 ", %" PRId64 "]", text, f.min_ms, f.max_ms, min,
                 max);
    assert_string_equal(err, "");
}

static void expect_duration_invalid(const char *text, size_t n)
{
    cp_duration_filter f = {7, 9};
    char err[128] = "";
    int st = cp_duration_parse(text, n, &f, err, sizeof err);
    if (st != CP_EINVAL) fail_msg("\"%.*s\" accepted: [%" PRId64 ", %" PRId64 "]", (int)n, text, f.min_ms, f.max_ms);
    assert_true(err[0] != '\0');
}

#define INVALID(s) expect_duration_invalid((s), strlen(s))

static void test_duration_spec_table(void **state)
{
    (void)state;
    expect_duration("500ms", 500, INT64_MAX);
    expect_duration(">500ms", 500, INT64_MAX);
    expect_duration(">=500ms", 500, INT64_MAX);
    expect_duration("3", 3000, INT64_MAX);
    expect_duration("3s", 3000, INT64_MAX);
    expect_duration("1.5", 1500, INT64_MAX);
    expect_duration("<100ms", 0, 100);
    expect_duration("<=100ms", 0, 100);
    expect_duration("=250ms", 250, 250);
    expect_duration("100ms..2s", 100, 2000);
    expect_duration("100ms...2s", 100, 2000);
    expect_duration("2s..100ms", 100, 2000);
    INVALID("abc");
    INVALID(">");
    INVALID("1..");
    INVALID("5m");
    /* empty = no filter (the "All" chip) */
    expect_duration("", 0, INT64_MAX);
    expect_duration("   ", 0, INT64_MAX);
    cp_duration_filter f;
    assert_int_equal(cp_duration_parse(NULL, 0, &f, NULL, 0), CP_OK);
    assert_true(f.min_ms == 0 && f.max_ms == INT64_MAX);
}

static void test_duration_spaces_and_rounding(void **state)
{
    (void)state;
    /* spaces anywhere are ignored, even inside numbers and units */
    expect_duration(" > = 1 . 5 s ", 1500, INT64_MAX);
    expect_duration("1 0 0 m s", 100, INT64_MAX);
    expect_duration("5 5", 55000, INT64_MAX);
    expect_duration("\t<\n2\r", 0, 2000);
    expect_duration("1 .. 2", 1000, 2000);
    expect_duration("1....2", 1000, 2000);
    expect_duration("0", 0, INT64_MAX);
    expect_duration("007ms", 7, INT64_MAX);
    /* whole ms, half up */
    expect_duration("0.0005s", 1, INT64_MAX);
    expect_duration("0.0004999s", 0, INT64_MAX);
    expect_duration("0.0015", 2, INT64_MAX);
    expect_duration("1.4ms", 1, INT64_MAX);
    expect_duration("1.5ms", 2, INT64_MAX);
    expect_duration("0.9999s", 1000, INT64_MAX);
    expect_duration("2.25", 2250, INT64_MAX);
    expect_duration("=0.0005", 1, 1);
    expect_duration("1.00000000000000000000000000001", 1000, INT64_MAX);
    /* the largest amount: one below the "no bound" value */
    expect_duration("<9223372036854775806ms", 0, INT64_MAX - 1);
    expect_duration("9223372036854775.806", INT64_MAX - 1, INT64_MAX);
}

static void test_duration_invalid(void **state)
{
    (void)state;
    static const char *bad[] = {
        "-5", "<-5", "5msx", "5s5", "1.5.5", ".5", "5.", "5.ms", "1..2..3", ">1..2", "=1..2", "<", "=", ">=",
        "..2", "1..x", "5 ms s", "5sms", "5MS", "1,5", "1e3", "0x10", "+5", "5 m", "ms", "s", "1.-5",
        /* overflow: never wraps, never reaches the "no bound" value */
        "99999999999999999999", "9223372036854775807ms", "9223372036854775808ms", "9223372036854775806.5ms",
        "9223372036854776", "9223372036854775.807", "1..99999999999999999999999",
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(bad); i++) INVALID(bad[i]);
    expect_duration_invalid("5\0", 2); /* a NUL byte is junk, not an end */
    expect_duration_invalid("5ms\0ms", 6);
    /* err may be omitted */
    cp_duration_filter f;
    assert_int_equal(cp_duration_parse("abc", 3, &f, NULL, 0), CP_EINVAL);
    char tiny[4];
    assert_int_equal(cp_duration_parse("abc", 3, &f, tiny, sizeof tiny), CP_EINVAL);
    assert_int_equal(strlen(tiny), 3);
}

/* ---- search: the four-call dataset of ui.md §3.5 ---------------------------------------- */

typedef struct kv { const char *name, *value; } kv;

/* Params JSON as cp_call.params_json: names sorted (the table lists them sorted already),
 * a name's values grouped, strings written with cp_json_str. */
static char *params_json(const kv *p, size_t n)
{
    cp_buf b;
    cp_buf_init(&b);
    cp_buf_putc(&b, '{');
    for (size_t i = 0; i < n; i++) {
        int same = i > 0 && strcmp(p[i].name, p[i - 1].name) == 0;
        if (same) {
            cp_buf_putc(&b, ',');
        } else {
            if (i) cp_buf_puts(&b, "],");
            cp_json_str(&b, p[i].name, strlen(p[i].name));
            cp_buf_puts(&b, ":[");
        }
        cp_json_str(&b, p[i].value, strlen(p[i].value));
    }
    cp_buf_puts(&b, n ? "]}" : "}");
    cp_buf_putc(&b, 0);
    return (char *)b.data;
}

typedef struct dcall {
    const char *method, *pod;
    kv params[4];
    size_t nparams;
} dcall;

static const dcall dataset[4] = {
    {"void com.acme.OrderController.create()",
     "orders-7d9f-abcde_1700000000000",
     {{"nc.user", "sysadm"}, {"web.method", "POST"}, {"web.url", "http://x/api/orders"}},
     3},
    {"void com.acme.OrderController.list()",
     "orders-7d9f-fghij_1700000000000",
     {{"nc.user", "administrator"}, {"web.method", "GET"}, {"web.url", "http://x/api/orders?page=2"}},
     3},
    {"void com.acme.HealthController.live()",
     "orders-7d9f-abcde_1700000000000",
     {{"web.method", "GET"}, {"web.url", "http://x/health/live"}},
     2},
    {"void com.acme.Jobs.run()", "billing-5c6d-klmno_1700000000000", {{"job.name", "test page rebuild"}, {"nc.user", "sysadm"}}, 2},
};

typedef struct views {
    cp_call_view v[4];
    char *json[4];
} views;

static void views_build(views *vs)
{
    for (int i = 0; i < 4; i++) {
        vs->json[i] = params_json(dataset[i].params, dataset[i].nparams);
        vs->v[i] = (cp_call_view){dataset[i].method, strlen(dataset[i].method), dataset[i].pod, strlen(dataset[i].pod),
                                  vs->json[i], strlen(vs->json[i])};
    }
}

static void views_free(views *vs)
{
    for (int i = 0; i < 4; i++) free(vs->json[i]);
}

static cp_search *parse_ok(const char *text)
{
    cp_search *q = NULL;
    char err[128];
    int st = cp_search_parse(text, strlen(text), &q, err, sizeof err);
    if (st != CP_OK) fail_msg("search \"%s\": %d (%s)", text, st, err);
    assert_non_null(q);
    return q;
}

/* The calls of the dataset a query matches, as letters ("ABD"). */
static void expect_matches(const views *vs, const char *text, const char *want)
{
    cp_search *q = parse_ok(text);
    char got[5] = "";
    size_t n = 0;
    for (int i = 0; i < 4; i++)
        if (cp_search_match(q, &vs->v[i])) got[n++] = (char)('A' + i);
    got[n] = '\0';
    cp_search_free(q);
    if (strcmp(got, want) != 0) fail_msg("search \"%s\" matched \"%s\", expected \"%s\"", text, got, want);
}

static void test_search_spec_table(void **state)
{
    (void)state;
    views vs;
    views_build(&vs);
    expect_matches(&vs, "sysadm", "AD");
    expect_matches(&vs, "sysadm administrator", "ABD");
    expect_matches(&vs, "+abcde sysadm administrator", "A");
    expect_matches(&vs, "+get -health", "B");
    expect_matches(&vs, "'test page'", "D");
    expect_matches(&vs, "\"test page\"", "D");
    expect_matches(&vs, "$nc.user=sysadm", "AD");
    expect_matches(&vs, "+$web.method=get -$web.url=health", "B");
    expect_matches(&vs, "-orders", "D");
    expect_matches(&vs, "$method=health", "C");
    expect_matches(&vs, "admin", "B");
    expect_matches(&vs, "+$node.name=billing", "D");
    expect_matches(&vs, "", "ABCD");
    views_free(&vs);
}

static void test_search_syntax(void **state)
{
    (void)state;
    views vs;
    views_build(&vs);
    /* case-insensitive on both sides, names too */
    expect_matches(&vs, "SYSADM", "AD");
    expect_matches(&vs, "$NC.User=SysAdm", "AD");
    expect_matches(&vs, "$METHOD=HEALTH", "C");
    expect_matches(&vs, "$Node.Name=BILLING", "D");
    /* the third quote, quotes after $name=, signs before phrases */
    expect_matches(&vs, "`test page`", "D");
    expect_matches(&vs, "$job.name=\"page rebuild\"", "D");
    expect_matches(&vs, "$job.name='test page'", "D");
    expect_matches(&vs, "$method=`Jobs.run`", "D");
    expect_matches(&vs, "-\"test page\"", "ABC");
    expect_matches(&vs, "+'test page' -sysadm", "");
    /* substring, never equality; words hit method, pod, param names and values */
    expect_matches(&vs, "controller", "ABC");
    expect_matches(&vs, "klmno", "D");
    expect_matches(&vs, "job.name", "D");
    expect_matches(&vs, "web.", "ABC");
    expect_matches(&vs, "page=2", "B");
    expect_matches(&vs, "$web.url=page", "B");
    /* $name=value looks at that param only */
    expect_matches(&vs, "$web.url=sysadm", "");
    expect_matches(&vs, "$nc.use=sysadm", "");
    expect_matches(&vs, "$method=orders", "");      /* pod, not method */
    expect_matches(&vs, "$node.name=controller", "");
    /* an empty value: "has a value of that param" */
    expect_matches(&vs, "$nc.user=", "ABD");
    /* "$name" without '=' is a word; a lone sign is a word too */
    expect_matches(&vs, "$nc.user", "");
    expect_matches(&vs, "- +", "ABCD");               /* "-" is in every pod name */
    expect_matches(&vs, "+ sysadm", "AD");            /* "+" matches nothing, sysadm AD */
    /* a phrase ends at its closing quote; the next term may follow directly */
    expect_matches(&vs, "'jobs'orders", "ABCD");
    expect_matches(&vs, "+'jobs'+sysadm", "D");
    /* only excluded terms: everything else */
    expect_matches(&vs, "-sysadm -administrator", "C");
    /* required only */
    expect_matches(&vs, "+get +administrator", "B");
    /* optional ones OR'ed, then filtered by required */
    expect_matches(&vs, "live create +abcde", "AC");
    /* white space of any kind separates */
    expect_matches(&vs, "\tsysadm\n\radministrator  ", "ABD");
    views_free(&vs);
}

static void test_search_empty_and_limits(void **state)
{
    (void)state;
    views vs;
    views_build(&vs);
    cp_search *q = parse_ok("  \t ");
    assert_true(cp_search_is_empty(q));
    for (int i = 0; i < 4; i++) assert_true(cp_search_match(q, &vs.v[i]));
    cp_search_free(q);
    q = NULL;
    assert_int_equal(cp_search_parse(NULL, 0, &q, NULL, 0), CP_OK);
    assert_true(cp_search_is_empty(q));
    cp_search_free(q);
    q = parse_ok("x");
    assert_false(cp_search_is_empty(q));
    cp_search_free(q);
    cp_search_free(NULL);

    static const char *bad[] = {"\"abc", "'abc", "`abc", "+\"abc", "$=x", "+$=x", "$='x'", "$a=\"x", "sysadm 'x"};
    for (size_t i = 0; i < CP_ARRAY_LEN(bad); i++) {
        char err[128] = "";
        q = (cp_search *)&q; /* must be reset to NULL on failure */
        if (cp_search_parse(bad[i], strlen(bad[i]), &q, err, sizeof err) != CP_EINVAL) fail_msg("accepted: %s", bad[i]);
        assert_null(q);
        assert_true(err[0] != '\0');
    }
    /* terms: 64 fine, 65 refused */
    char text[CP_SEARCH_MAX_TERMS * 2 + 8];
    size_t n = 0;
    for (int i = 0; i < CP_SEARCH_MAX_TERMS; i++) n += (size_t)snprintf(text + n, sizeof text - n, "%c ", 'a' + i % 26);
    q = parse_ok(text);
    cp_search_free(q);
    snprintf(text + n, sizeof text - n, "z");
    assert_int_equal(cp_search_parse(text, strlen(text), &q, NULL, 0), CP_EINVAL);
    /* text: 1000 characters fine (also as 2-byte UTF-8), 1001 refused */
    char big[4 * CP_SEARCH_MAX_TEXT + 8];
    memset(big, 'x', CP_SEARCH_MAX_TEXT + 1); /* the 1001st byte too: the limit test reads it */
    q = NULL;
    assert_int_equal(cp_search_parse(big, CP_SEARCH_MAX_TEXT, &q, NULL, 0), CP_OK);
    cp_search_free(q);
    assert_int_equal(cp_search_parse(big, CP_SEARCH_MAX_TEXT + 1, &q, NULL, 0), CP_EINVAL);
    for (int i = 0; i < CP_SEARCH_MAX_TEXT; i++) memcpy(big + 2 * i, "\xC3\xA9", 2);
    assert_int_equal(cp_search_parse(big, 2 * CP_SEARCH_MAX_TEXT, &q, NULL, 0), CP_OK);
    cp_search_free(q);
    memcpy(big + 2 * CP_SEARCH_MAX_TEXT, "\xC3\xA9", 2);
    assert_int_equal(cp_search_parse(big, 2 * CP_SEARCH_MAX_TEXT + 2, &q, NULL, 0), CP_EINVAL);
    views_free(&vs);
}

static int match1(const char *query, const char *method, const char *pod, const char *json)
{
    cp_search *q = parse_ok(query);
    cp_call_view v = {method, strlen(method), pod, strlen(pod), json, json ? strlen(json) : 0};
    int m = cp_search_match(q, &v);
    cp_search_free(q);
    return m;
}

static void test_search_params_details(void **state)
{
    (void)state;
    /* "_"-params: invisible to unnamed atoms, names and values; reachable by name */
    const char *hidden = "{\"_token\":[\"s3cret\"],\"user\":[\"bob\"]}";
    assert_false(match1("s3cret", "m", "p", hidden));
    assert_false(match1("_token", "m", "p", hidden));
    assert_false(match1("token", "m", "p", hidden));
    assert_true(match1("$_token=s3cret", "m", "p", hidden));
    assert_true(match1("$_TOKEN=S3CRET", "m", "p", hidden));
    assert_true(match1("bob", "m", "p", hidden));
    /* ... but the method and pod still match unnamed atoms */
    assert_true(match1("token", "getToken", "p", hidden));
    /* a hidden name written with an escape is still hidden */
    assert_false(match1("s3cret", "m", "p", "{\"\\u005ftoken\":[\"s3cret\"]}"));

    /* JSON escapes are matched unescaped */
    const char *esc = "{\"msg\":[\"say \\\"hi\\\"\\n\\\\o/\",\"caf\\u00e9 \\ud83d\\ude00\"],\"we\\u0062.x\":[\"v\"]}";
    assert_true(match1("'say \"hi\"'", "m", "p", esc));
    assert_true(match1("\\o/", "m", "p", esc));
    assert_true(match1("$msg=\"hi\"", "m", "p", esc));
    assert_true(match1("caf\xC3\xA9", "m", "p", esc));
    assert_true(match1("\xF0\x9F\x98\x80", "m", "p", esc));
    assert_true(match1("$web.x=v", "m", "p", esc));
    assert_true(match1("web.x", "m", "p", esc));
    assert_false(match1("u00e9", "m", "p", esc));     /* the escape text itself is not content */
    assert_false(match1("hi\"\\n", "m", "p", esc));
    assert_false(match1("$msg=web", "m", "p", esc));
    /* a raw-text hit that spans JSON syntax is not a match */
    assert_false(match1("user\":[\"b", "m", "p", hidden));
    assert_false(match1("$user=bob\"]", "m", "p", hidden));
    assert_false(match1("s3cret\"],\"user", "m", "p", hidden));
    assert_false(match1("user\"", "m", "p", hidden));

    /* ASCII folding only: non-ASCII letters compare exactly */
    assert_true(match1("CAF\xC3\xA9", "m", "p", esc));
    assert_false(match1("caf\xC3\x89", "m", "p", esc)); /* É vs é */
    assert_true(match1("\xC3\x89T\xC3\x89", "\xC3\x89t\xC3\x89", "p", NULL));

    /* JSON white space, several values per name, empty lists */
    const char *spaced = " { \"a\" : [ \"x1\" , \"x2\" ] , \"b\" : [ ] , \"c\" : [ \"x3\" ] } ";
    assert_true(match1("$a=x2", "m", "p", spaced));
    assert_true(match1("$c=x3", "m", "p", spaced));
    assert_false(match1("$b=", "m", "p", spaced));
    assert_true(match1("$a=", "m", "p", spaced));
    assert_true(match1("b", "m", "p", spaced));  /* the name of an empty list */

    /* no params at all */
    assert_false(match1("x", "m", "p", NULL));
    assert_false(match1("x", "m", "p", "{}"));
    assert_true(match1("-x", "m", "p", NULL));

    /* malformed JSON: no crash; params before the break still count */
    const char *broken[] = {"{\"a\":[\"hit\"", "{\"a\":[\"hit\",", "{\"a\":[\"hit\"]", "{\"a\":[\"hit\"],\"b\"",
                            "{\"a\":[\"hit\"],\"b\":[\"unterminated"};
    for (size_t i = 0; i < CP_ARRAY_LEN(broken); i++) {
        assert_true(match1("hit", "m", "p", broken[i]));
        assert_false(match1("zzz", "m", "p", broken[i]));
    }
    const char *junk[] = {"", "[", "{", "{\"", "{\"a\\", "{\"a\":", "{\"a\":[", "{\"a\":[\"\\", "{\"a\":[\"\\u12",
                          "nonsense", "{a:[b]}", "{\"a\":\"b\"}"};
    for (size_t i = 0; i < CP_ARRAY_LEN(junk); i++) assert_false(match1("$a=b", "m", "p", junk[i]));
}

/* Values longer than the unescaping window (search.c unescapes escaped strings in windows
 * of 8 KiB): a needle across the first cut is found. */
#define SEARCH_WINDOW_GUESS 8192
static void test_search_long_escaped_values(void **state)
{
    (void)state;
    const size_t len = 20000;
    char *raw = malloc(len + 1);
    cp_buf json;
    cp_buf_init(&json);
    const char *needle = "NeedleX";
    for (size_t off = 8170; off < 8200; off++) {
        memset(raw, 'a', len);
        raw[0] = '"'; /* forces the escaped path (\" in JSON) */
        raw[off % 3 + 1] = '\n';
        memcpy(raw + off, needle, strlen(needle));
        raw[len] = '\0';
        cp_buf_reset(&json);
        cp_buf_puts(&json, "{\"k\":[");
        cp_json_str(&json, raw, len);
        cp_buf_puts(&json, "]}");
        cp_buf_putc(&json, 0);
        const char *j = (const char *)json.data;
        assert_true(match1("needlex", "m", "p", j));
        assert_true(match1("$k=needlex", "m", "p", j));
        assert_true(match1("'aNeedleXaa'", "m", "p", j));
        assert_false(match1("needlexx", "m", "p", j));
        assert_false(match1("aneedlexb", "m", "p", j));
    }
    /* the longest needle (1000 characters with its quotes, 4-byte UTF-8) across a cut */
    for (size_t i = 0; i < len; i += 4) memcpy(raw + i, (char[]){'\xF0', '\x9F', '\x98', (char)(0x80 + (i * 7 + i / 256) % 64)}, 4);
    memcpy(raw, "\\aaa", 4); /* a backslash: the escaped path */
    const size_t from = 4804, nchars = 998;
    char *q = malloc(4 * nchars + 3);
    q[0] = '\'';
    memcpy(q + 1, raw + from, 4 * nchars);
    q[4 * nchars + 1] = '\'';
    q[4 * nchars + 2] = '\0';
    cp_buf_reset(&json);
    cp_buf_puts(&json, "{\"k\":[");
    cp_json_str(&json, raw, len);
    cp_buf_puts(&json, "]}");
    cp_buf_putc(&json, 0);
    assert_true(from < SEARCH_WINDOW_GUESS && from + 4 * nchars > SEARCH_WINDOW_GUESS);
    assert_true(match1(q, "m", "p", (const char *)json.data));
    memcpy(q + 1 + 4 * (nchars - 1), "Z'\0", 3); /* its last character replaced: no match */
    assert_false(match1(q, "m", "p", (const char *)json.data));
    free(q);
    free(raw);
    cp_buf_free(&json);
}

typedef struct req { char names[8][64]; char vals[8][64]; size_t n; } req;

static void on_req(void *ud, const char *name, size_t nlen, const char *val, size_t vlen)
{
    req *r = ud;
    assert_true(r->n < 8);
    snprintf(r->names[r->n], 64, "%.*s", (int)nlen, name);
    snprintf(r->vals[r->n], 64, "%.*s", (int)vlen, val);
    r->n++;
}

static size_t required_of(const char *text, req *r)
{
    memset(r, 0, sizeof *r);
    cp_search *q = parse_ok(text);
    size_t n = cp_search_required_params(q, on_req, r);
    assert_int_equal(cp_search_required_params(q, NULL, NULL), n);
    cp_search_free(q);
    assert_int_equal(n, r->n);
    return n;
}

static void test_search_required_params(void **state)
{
    (void)state;
    req r;
    assert_int_equal(required_of("$nc.user=sysadm", &r), 1);
    assert_string_equal(r.names[0], "nc.user");
    assert_string_equal(r.vals[0], "sysadm");
    /* required ones, and the only optional one; names and values come lowercased */
    assert_int_equal(required_of("+$X-Request-Id=4F2A $web.method=\"get x\"", &r), 2);
    assert_string_equal(r.names[0], "x-request-id");
    assert_string_equal(r.vals[0], "4f2a");
    assert_string_equal(r.names[1], "web.method");
    assert_string_equal(r.vals[1], "get x");
    /* two optional terms: neither alone is needed */
    assert_int_equal(required_of("+$a=1 $b=2 foo", &r), 1);
    assert_string_equal(r.names[0], "a");
    assert_int_equal(required_of("$b=2 $c=3", &r), 0);
    /* excluded terms, words and pseudo-params say nothing about params */
    assert_int_equal(required_of("-$a=1 +word +$method=x +$node.name=y", &r), 0);
    assert_int_equal(required_of("", &r), 0);
}

/* ---- params JSON ----------------------------------------------------------------------- */

typedef struct pairs {
    cp_buf text;   /* "name=value;" per callback, with the lengths checked */
    size_t calls;
    size_t stop_at;
    int stop_ret;
} pairs;

static int on_pair(void *ud, const char *name, size_t nlen, const char *val, size_t vlen)
{
    pairs *p = ud;
    p->calls++;
    cp_buf_append(&p->text, name, nlen);
    cp_buf_putc(&p->text, '=');
    cp_buf_append(&p->text, val, vlen);
    cp_buf_putc(&p->text, ';');
    return p->calls == p->stop_at ? p->stop_ret : 0;
}

static int each(const char *json, size_t n, pairs *p)
{
    cp_buf_reset(&p->text);
    p->calls = 0;
    int st = cp_params_each(json, n, on_pair, p);
    cp_buf_putc(&p->text, 0);
    return st;
}

static void test_params_each(void **state)
{
    (void)state;
    pairs p = {0};
    cp_buf_init(&p.text);
#define EACH(s) each((s), sizeof(s) - 1, &p)
    assert_int_equal(EACH("{\"a\":[\"1\",\"2\"],\"b\":[],\"c\":[\"\"]}"), CP_OK);
    assert_string_equal((char *)p.text.data, "a=1;a=2;c=;");
    assert_int_equal(EACH("{}"), CP_OK);
    assert_int_equal(p.calls, 0);
    assert_int_equal(EACH(" {\n\"a\" : [ \"1\" ] }\t"), CP_OK);
    assert_string_equal((char *)p.text.data, "a=1;");
    /* every escape; a pair; UTF-8 kept */
    assert_int_equal(EACH("{\"n\\\"x\":[\"q\\\"b\\\\s\\/n\\nt\\tr\\rb\\bf\\fA\\u0041e\\u00e9s\\ud83d\\ude00\xC3\xA9\"]}"), CP_OK);
    assert_string_equal((char *)p.text.data, "n\"x=q\"b\\s/n\nt\tr\rb\bf\fAAe\xC3\xA9s\xF0\x9F\x98\x80\xC3\xA9;");
    /* \u0000 gives a NUL byte, reported through the length */
    assert_int_equal(EACH("{\"z\":[\"a\\u0000b\"]}"), CP_OK);
    assert_int_equal(p.text.len, 7);
    assert_memory_equal(p.text.data, "z=a\0b;", 6);
    /* a stop: fn's value comes back, no further calls */
    p.stop_at = 2;
    p.stop_ret = 42;
    assert_int_equal(EACH("{\"a\":[\"1\",\"2\",\"3\"],\"b\":[\"4\"]}"), 42);
    assert_int_equal(p.calls, 2);
    p.stop_at = 0;
    /* an escaped name stays valid while long escaped values grow the buffer */
    cp_buf big;
    cp_buf_init(&big);
    cp_buf_puts(&big, "{\"\\u0041bc\":[");
    for (int i = 0; i < 5; i++) {
        if (i) cp_buf_putc(&big, ',');
        cp_buf_putc(&big, '"');
        for (int k = 0; k < 2000 * (i + 1); k++) cp_buf_puts(&big, "\\n");
        cp_buf_putc(&big, '"');
    }
    cp_buf_puts(&big, "]}");
    assert_int_equal(each((char *)big.data, big.len, &p), CP_OK);
    assert_int_equal(p.calls, 5);
    size_t off = 0;
    for (int i = 0; i < 5; i++) {
        assert_memory_equal(p.text.data + off, "Abc=", 4);
        off += 4;
        for (int k = 0; k < 2000 * (i + 1); k++) assert_int_equal(p.text.data[off + (size_t)k], '\n');
        off += 2000 * (size_t)(i + 1);
        assert_int_equal(p.text.data[off++], ';');
    }
    cp_buf_free(&big);
#undef EACH
    cp_buf_free(&p.text);
}

static void test_params_corrupt(void **state)
{
    (void)state;
    static const char *bad[] = {
        "", " ", "{", "}", "[]", "null", "{\"a\":\"b\"}", "{\"a\":[1]}", "{\"a\":[\"b\",]}", "{\"a\":[\"b\"],}",
        "{\"a\":[\"b\"]} x", "{\"a\":[\"b\"]}}", "{a:[\"b\"]}", "{\"a\"[\"b\"]}", "{\"a\":[\"b\"]", "{\"a\":[\"b\"",
        "{\"a\":[\"b", "{\"a\":[\"b\\\"]}", "{\"a\":[\"\x01\"]}", "{\"a\":[\"\t\"]}", "{\"a\":[\"\\x\"]}",
        "{\"a\":[\"\\u12\"]}", "{\"a\":[\"\\u12g4\"]}", "{\"a\":[\"\\ud800\"]}", "{\"a\":[\"\\udc00\"]}",
        "{\"a\":[\"\\ud800\\u0041\"]}", "{\"a\":[\"\\ud800x\"]}", "{\"a\":[\"\xff\"]}", "{\"a\":[\"\xc0\xaf\"]}",
        "{\"a\":[\"\xed\xa0\x80\"]}", "{\"a\":[\"\xf4\x90\x80\x80\"]}", "{\"a\":[\"\xe2\x82\"]}",
        "{\"a\":[\"b\" \"c\"]}", "{\"a\":[\"b\"] \"c\":[]}", "{\"a\":[[\"b\"]]}", "{\"a\":[\"b\"],\"c\":{}}",
        "\xEF\xBB\xBF{}",
    };
    pairs p = {0};
    cp_buf_init(&p.text);
    for (size_t i = 0; i < CP_ARRAY_LEN(bad); i++) {
        int st = each(bad[i], strlen(bad[i]), &p);
        if (st != CP_ECORRUPT) fail_msg("params \"%s\": %d", bad[i], st);
    }
    /* NUL inside the text is a raw control character */
    assert_int_equal(each("{\"a\":[\"b\0\"]}", 12, &p), CP_ECORRUPT);
    assert_int_equal(cp_params_each(NULL, 0, on_pair, &p), CP_ECORRUPT);
    cp_buf_free(&p.text);
}

/* What cp_json_str writes, cp_params_each reads back byte for byte (valid UTF-8 input). */
static void test_params_roundtrip(void **state)
{
    (void)state;
    static const char *alphabet[] = {"a", "Z", " ", "\"", "\\", "/", "\n", "\r", "\t", "\x01", "\x1f", "\x7f",
                                     "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "$", "=", ","};
    uint64_t rng = 12345;
    pairs p = {0};
    cp_buf_init(&p.text);
    cp_buf json, want, s;
    cp_buf_init(&json);
    cp_buf_init(&want);
    cp_buf_init(&s);
    for (int round = 0; round < 300; round++) {
        cp_buf_reset(&json);
        cp_buf_reset(&want);
        cp_buf_putc(&json, '{');
        size_t names = test_rand(&rng) % 4;
        for (size_t i = 0; i < names; i++) {
            if (i) cp_buf_putc(&json, ',');
            cp_buf_reset(&s);
            size_t nl = test_rand(&rng) % 6;
            for (size_t k = 0; k < nl; k++) cp_buf_puts(&s, alphabet[test_rand(&rng) % CP_ARRAY_LEN(alphabet)]);
            cp_json_str(&json, (char *)s.data, s.len);
            cp_buf_putc(&json, ':');
            cp_buf_putc(&json, '[');
            size_t name_len = s.len;
            char name[64];
            memcpy(name, s.data, name_len);
            size_t vals = test_rand(&rng) % 4;
            for (size_t v = 0; v < vals; v++) {
                if (v) cp_buf_putc(&json, ',');
                cp_buf_reset(&s);
                size_t vl = test_rand(&rng) % 12;
                for (size_t k = 0; k < vl; k++) cp_buf_puts(&s, alphabet[test_rand(&rng) % CP_ARRAY_LEN(alphabet)]);
                cp_json_str(&json, (char *)s.data, s.len);
                cp_buf_append(&want, name, name_len);
                cp_buf_putc(&want, '=');
                cp_buf_append(&want, s.data, s.len);
                cp_buf_putc(&want, ';');
            }
            cp_buf_putc(&json, ']');
        }
        cp_buf_putc(&json, '}');
        assert_int_equal(each((char *)json.data, json.len, &p), CP_OK);
        assert_int_equal(p.text.len, want.len + 1);
        assert_memory_equal(p.text.data, want.data, want.len);
    }
    cp_buf_free(&json);
    cp_buf_free(&want);
    cp_buf_free(&s);
    cp_buf_free(&p.text);
}

/* ---- sort columns ------------------------------------------------------------------------ */

static void test_sort(void **state)
{
    (void)state;
    static const char *names[CP_SORT_COUNT] = {
        "ts_ms", "duration_ms", "cpu_time", "wait_time", "memory_used", "suspend_ms", "calls", "transactions",
        "queue_wait_ms", "logs_generated", "logs_written", "file_read", "file_written", "net_read", "net_written",
        "method", "namespace", "service", "pod", "restart_ms", "thread", "error"};
    for (int c = 0; c < CP_SORT_COUNT; c++) {
        assert_non_null(cp_sort_name((cp_sort_col)c));
        assert_string_equal(cp_sort_name((cp_sort_col)c), names[c]);
        char buf[64];
        cp_sort_col col = CP_SORT_COUNT;
        int desc = -1;
        assert_int_equal(cp_sort_parse(names[c], strlen(names[c]), &col, &desc), CP_OK);
        assert_int_equal(col, c);
        assert_int_equal(desc, 0);
        snprintf(buf, sizeof buf, "-%s", names[c]);
        assert_int_equal(cp_sort_parse(buf, strlen(buf), &col, &desc), CP_OK);
        assert_int_equal(col, c);
        assert_int_equal(desc, 1);
        snprintf(buf, sizeof buf, "+%s", names[c]);
        desc = -1;
        assert_int_equal(cp_sort_parse(buf, strlen(buf), &col, &desc), CP_OK);
        assert_int_equal(col, c);
        assert_int_equal(desc, 0);
    }
    assert_null(cp_sort_name(CP_SORT_COUNT));
    cp_sort_col col = CP_SORT_POD;
    int desc = 0;
    assert_int_equal(cp_sort_parse(NULL, 0, &col, &desc), CP_OK);
    assert_int_equal(col, CP_SORT_TS);
    assert_int_equal(desc, 1);
    static const char *bad[] = {"-", "+", "bogus", "duration", "DURATION_MS", "ts_ms ", " ts_ms", "--ts_ms",
                                "+-ts_ms", "ts", "ts_msx"};
    for (size_t i = 0; i < CP_ARRAY_LEN(bad); i++)
        if (cp_sort_parse(bad[i], strlen(bad[i]), &col, &desc) != CP_EINVAL) fail_msg("sort \"%s\" accepted", bad[i]);
    assert_int_equal(cp_sort_parse("ts_ms\0", 6, &col, &desc), CP_EINVAL);
}

/* ---- call ids ---------------------------------------------------------------------------- */

static int ref_eq(const cp_call_ref *a, const cp_call_ref *b)
{
    return a->ts_ms == b->ts_ms && a->restart_ms == b->restart_ms && a->trace_file_index == b->trace_file_index &&
           a->buffer_offset == b->buffer_offset && a->record_index == b->record_index && a->pod_hash == b->pod_hash;
}

static void id_roundtrip(const cp_call_ref *r)
{
    char id[CP_CALL_ID_MAX];
    cp_call_id_format(r, id);
    size_t n = strlen(id);
    assert_true(n < CP_CALL_ID_MAX);
    assert_null(strchr(id, ','));
    for (size_t i = 0; i < n; i++) assert_non_null(strchr("0123456789abcdef-", id[i])); /* URL-safe */
    cp_call_ref back;
    memset(&back, 0xAB, sizeof back);
    if (cp_call_id_parse(id, n, &back) != CP_OK) fail_msg("id %s does not parse", id);
    assert_true(ref_eq(r, &back));
}

static void test_call_ids(void **state)
{
    (void)state;
    cp_call_ref r = {1700000000123, 1700000000000, 3, 4096, 7, 0xdeadbeefULL};
    char id[CP_CALL_ID_MAX];
    cp_call_id_format(&r, id);
    assert_string_equal(id, "1700000000123-1700000000000-3-4096-7-00000000deadbeef");
    id_roundtrip(&r);
    /* the extremes, negatives included (hostile agents) */
    cp_call_ref ext[] = {
        {INT64_MIN, INT64_MIN, INT32_MIN, INT32_MIN, INT32_MIN, UINT64_MAX},
        {INT64_MAX, INT64_MAX, INT32_MAX, INT32_MAX, INT32_MAX, 0},
        {0, 0, 0, 0, 0, 0},
        {-1, -5, -1, -2, -3, 0x0123456789abcdefULL},
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(ext); i++) id_roundtrip(&ext[i]);
    cp_call_id_format(&ext[0], id);
    assert_string_equal(id, "-9223372036854775808--9223372036854775808--2147483648--2147483648--2147483648-ffffffffffffffff");
    uint64_t rng = 99;
    for (int i = 0; i < 2000; i++) {
        cp_call_ref x = {(int64_t)test_rand(&rng), (int64_t)test_rand(&rng) >> (i % 64), (int32_t)test_rand(&rng),
                         (int32_t)(test_rand(&rng) >> 40), (int32_t)(test_rand(&rng) % 100) - 50, test_rand(&rng)};
        id_roundtrip(&x);
    }
    static const char *bad[] = {
        "",
        "1-2-3-4-5",
        "1-2-3-4-5-",
        "1-2-3-4-5-00000000deadbee",
        "1-2-3-4-5-00000000deadbeef0",
        "1-2-3-4-5-00000000DEADBEEF",
        "1-2-3-4-5-00000000deadbeeg",
        "01-2-3-4-5-00000000deadbeef",
        "1-2-3-4-05-00000000deadbeef",
        "-0-2-3-4-5-00000000deadbeef",
        "+1-2-3-4-5-00000000deadbeef",
        "1-2-2147483648-4-5-00000000deadbeef",
        "1-2-3--2147483649-5-00000000deadbeef",
        "9223372036854775808-2-3-4-5-00000000deadbeef",
        "1--9223372036854775809-3-4-5-00000000deadbeef",
        "1-2-3-4-5-6-00000000deadbeef",
        "1-2-3-4-00000000deadbeef",
        "1 -2-3-4-5-00000000deadbeef",
        "1,2-3-4-5-00000000deadbeef",
        "1-2-3-4-5-00000000deadbeef ",
        "1-2-3-4-5_00000000deadbeef",
        "--1-2-3-4-5-00000000deadbeef",
        "a-2-3-4-5-00000000deadbeef",
    };
    cp_call_ref out;
    for (size_t i = 0; i < CP_ARRAY_LEN(bad); i++)
        if (cp_call_id_parse(bad[i], strlen(bad[i]), &out) != CP_EINVAL) fail_msg("id \"%s\" accepted", bad[i]);
    assert_int_equal(cp_call_id_parse("1-2-3-4-5-00000000deadbeef\0", 27, &out), CP_EINVAL);
    char longid[200];
    memset(longid, '1', sizeof longid);
    assert_int_equal(cp_call_id_parse(longid, sizeof longid, &out), CP_EINVAL);
    /* a prefix of a valid id is never an id */
    cp_call_id_format(&ext[3], id);
    for (size_t k = 0; k < strlen(id); k++) assert_int_equal(cp_call_id_parse(id, k, &out), CP_EINVAL);
}

/* ---- cursors ----------------------------------------------------------------------------- */

static void cursor_expect_equal(const cp_cursor *a, const cp_cursor *b)
{
    assert_true(a->filter_hash == b->filter_hash);
    assert_true(a->issued_ms == b->issued_ms);
    assert_int_equal(a->key.col, b->key.col);
    assert_int_equal(!!a->key.desc, b->key.desc);
    assert_true(ref_eq(&a->key.ref, &b->key.ref));
    if (cp_sort_is_text(a->key.col)) {
        size_t want = a->key.text_len < sizeof a->key.text ? a->key.text_len : sizeof a->key.text - 1;
        assert_int_equal(b->key.text_len, want);
        assert_memory_equal(a->key.text, b->key.text, want);
        assert_int_equal(b->key.text[want], '\0');
    } else {
        assert_true(a->key.num == b->key.num);
    }
}

static void cursor_roundtrip(const cp_cursor *c, char *text)
{
    cp_cursor_format(c, text);
    size_t n = strlen(text);
    assert_true(n > 0 && n < CP_CURSOR_MAX);
    for (size_t i = 0; i < n; i++)
        assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", text[i]));
    cp_cursor back;
    memset(&back, 0x5A, sizeof back);
    assert_int_equal(cp_cursor_parse(text, n, &back), CP_OK);
    cursor_expect_equal(c, &back);
    char again[CP_CURSOR_MAX];
    cp_cursor_format(&back, again);
    assert_string_equal(text, again);
}

/* base64url without padding, for building hand-made cursors */
static void b64url(const uint8_t *p, size_t n, char *out)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        acc = acc << 8 | p[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out[o++] = a[acc >> bits & 63];
        }
    }
    if (bits) out[o++] = a[acc << (6 - bits) & 63];
    out[o] = '\0';
}

static void test_cursors(void **state)
{
    (void)state;
    char text[CP_CURSOR_MAX];
    cp_cursor c;
    memset(&c, 0, sizeof c);
    c.filter_hash = 0x0123456789abcdefULL;
    c.issued_ms = 1700000000000;
    c.key.col = CP_SORT_DURATION;
    c.key.desc = 1;
    c.key.num = -42;
    c.key.ref = (cp_call_ref){1700000000123, 1700000000000, 3, 4096, -7, UINT64_MAX};
    cursor_roundtrip(&c, text);
    size_t numeric_len = strlen(text);
    assert_int_equal(numeric_len, 84); /* 63 bytes */

    /* every column, both directions, extremes */
    uint64_t rng = 7;
    for (int col = 0; col < CP_SORT_COUNT; col++) {
        for (int d = 0; d < 2; d++) {
            memset(&c, 0, sizeof c);
            c.filter_hash = test_rand(&rng);
            c.issued_ms = (int64_t)test_rand(&rng);
            c.key.col = (cp_sort_col)col;
            c.key.desc = d ? 5 : 0; /* any non-zero is "desc" */
            c.key.num = d ? INT64_MIN : INT64_MAX;
            c.key.ref = (cp_call_ref){(int64_t)test_rand(&rng), INT64_MIN, INT32_MIN, INT32_MAX, 0, test_rand(&rng)};
            c.key.text_len = (size_t)(test_rand(&rng) % 40);
            for (size_t i = 0; i < c.key.text_len; i++) c.key.text[i] = (char)test_rand(&rng);
            cursor_roundtrip(&c, text);
        }
    }
    /* text columns: empty, any bytes, the 1023-byte maximum, and a longer length cut */
    memset(&c, 0, sizeof c);
    c.key.col = CP_SORT_METHOD;
    cursor_roundtrip(&c, text);
    for (size_t i = 0; i < sizeof c.key.text; i++) c.key.text[i] = (char)(i * 31 + 7);
    c.key.text_len = 1023;
    cursor_roundtrip(&c, text);
    assert_int_equal(strlen(text), 1440);
    c.key.text_len = 5000;
    cursor_roundtrip(&c, text);
    assert_int_equal(strlen(text), 1440);

    /* malformed: empty, junk, padding, wrong lengths, every prefix, anything appended */
    cp_cursor out;
    c.key.text_len = 1;
    cp_cursor_format(&c, text); /* 58 bytes: ends in a 2-character group */
    size_t n = strlen(text);
    for (size_t k = 0; k < n; k++) assert_int_equal(cp_cursor_parse(text, k, &out), CP_EINVAL);
    char more[CP_CURSOR_MAX + 16];
    static const char *tails[] = {"A", "AA", "AAA", "AAAA", "="};
    for (size_t i = 0; i < CP_ARRAY_LEN(tails); i++) {
        snprintf(more, sizeof more, "%s%s", text, tails[i]);
        assert_int_equal(cp_cursor_parse(more, strlen(more), &out), CP_EINVAL);
    }
    /* non-zero unused bits in the last character */
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    memcpy(more, text, n + 1);
    more[n - 1] = alphabet[(strchr(alphabet, more[n - 1]) - alphabet) | 1];
    assert_int_equal(cp_cursor_parse(more, n, &out), CP_EINVAL);
    static const char *junk[] = {"", "!!!!", "AAAA", "AAAA====", "abc+def/", "A", "AB CD"};
    for (size_t i = 0; i < CP_ARRAY_LEN(junk); i++)
        assert_int_equal(cp_cursor_parse(junk[i], strlen(junk[i]), &out), CP_EINVAL);
    char huge[4000];
    memset(huge, 'A', sizeof huge);
    assert_int_equal(cp_cursor_parse(huge, sizeof huge, &out), CP_EINVAL);
    assert_int_equal(cp_cursor_parse(huge, CP_CURSOR_MAX, &out), CP_EINVAL);

    /* hand-made binaries: version, column, direction and length checks */
    uint8_t bin[1200];
    memset(bin, 0, sizeof bin);
    bin[0] = 1;
    bin[1] = CP_SORT_CPU;
    b64url(bin, 63, more);
    assert_int_equal(cp_cursor_parse(more, strlen(more), &out), CP_OK);
    assert_int_equal(out.key.col, CP_SORT_CPU);
    b64url(bin, 64, more);
    assert_int_equal(cp_cursor_parse(more, strlen(more), &out), CP_EINVAL);
    b64url(bin, 62, more);
    assert_int_equal(cp_cursor_parse(more, strlen(more), &out), CP_EINVAL);
    bin[0] = 2;
    b64url(bin, 63, more);
    assert_int_equal(cp_cursor_parse(more, strlen(more), &out), CP_EINVAL);
    bin[0] = 1;
    bin[1] = CP_SORT_COUNT;
    b64url(bin, 63, more);
    assert_int_equal(cp_cursor_parse(more, strlen(more), &out), CP_EINVAL);
    bin[1] = CP_SORT_CPU;
    bin[2] = 2;
    b64url(bin, 63, more);
    assert_int_equal(cp_cursor_parse(more, strlen(more), &out), CP_EINVAL);
    bin[2] = 0;
    bin[1] = CP_SORT_THREAD; /* text: u16 length 1024 is over the key's limit */
    bin[55] = 0x04;
    bin[56] = 0x00;
    b64url(bin, 57 + 1024, more);
    assert_int_equal(cp_cursor_parse(more, strlen(more), &out), CP_EINVAL);
    bin[55] = 0x00;
    bin[56] = 0x03; /* length 3 with 4 bytes following */
    b64url(bin, 57 + 4, more);
    assert_int_equal(cp_cursor_parse(more, strlen(more), &out), CP_EINVAL);
    b64url(bin, 57 + 3, more);
    assert_int_equal(cp_cursor_parse(more, strlen(more), &out), CP_OK);
    assert_int_equal(out.key.text_len, 3);
    b64url(bin, 56, more); /* length field cut */
    assert_int_equal(cp_cursor_parse(more, strlen(more), &out), CP_EINVAL);
}

/* ---- FNV-1a ------------------------------------------------------------------------------- */

static void test_fnv(void **state)
{
    (void)state;
    /* reference vectors of FNV-1a 64 */
    assert_true(cp_fnv64(CP_FNV_SEED, "", 0) == 0xcbf29ce484222325ULL);
    assert_true(cp_fnv64(CP_FNV_SEED, "a", 1) == 0xaf63dc4c8601ec8cULL);
    assert_true(cp_fnv64(CP_FNV_SEED, "foobar", 6) == 0x85944171f73967e8ULL);
    /* chainable */
    assert_true(cp_fnv64(cp_fnv64(CP_FNV_SEED, "foo", 3), "bar", 3) == cp_fnv64(CP_FNV_SEED, "foobar", 6));
    /* the pod part of call ids is the same hash */
    assert_true(cp_pod_hash("ns", 2, "pod-1", 5) == cp_fnv64(CP_FNV_SEED, "ns/pod-1", 8));
}

/* ui.md §3.6: what "hide system/proxy calls" hides. */
/* Each case is asked three times: directly, then twice through one memo (a miss that
 * fills the slot and a hit), and the three answers must agree. The memo lives across
 * cases, so a method seen before with other params is a hit that must still read them. */
static cp_system_memo sys_memo;

static int sys(const char *method, const char *params)
{
    cp_call_view v = {method, strlen(method), "pod_1", 5, params, params ? strlen(params) : 0};
    int direct = cp_system_call(&v, cp_system_idle_default, cp_system_idle_default_count);
    for (int k = 0; k < 2; k++)
        assert_int_equal(cp_system_call_memo(&sys_memo, &v, cp_system_idle_default, cp_system_idle_default_count),
                         direct);
    return direct;
}

static void test_system_calls(void **state)
{
    (void)state;
    /* work */
    assert_int_equal(sys("void com.acme.OrderController.create() (OrderController.java:10) [app.jar]",
                         "{\"web.url\":[\"http://x/api/orders\"],\"web.method\":[\"POST\"]}"), 0);
    assert_int_equal(sys("void com.acme.Jobs.run()", NULL), 0);
    assert_int_equal(sys("void com.acme.Jobs.run()", "{}"), 0);
    /* the idle list */
    assert_int_equal(sys("void org.quartz.core.QuartzSchedulerThread.run() (QuartzSchedulerThread.java:1) [quartz.jar]", "{}"), 1);
    assert_int_equal(sys("void org.quartz.impl.jdbcjobstore.JobStoreSupport$MisfireHandler.run()", NULL), 1);
    /* markers in the method or web.url, case-insensitively */
    assert_int_equal(sys("int java.net.SocketInputStream.read(byte[])", NULL), 1);
    assert_int_equal(sys("void com.acme.Web.handle()", "{\"web.url\":[\"http://10.1.2.3:8180/actuator/HEALTH\"]}"), 1);
    assert_int_equal(sys("void com.acme.Web.handle()", "{\"web.url\":[\"/a\",\"/probes/ready\"]}"), 1);
    /* a marker in another param is not a probe */
    assert_int_equal(sys("void com.acme.Web.handle()", "{\"web.referer\":[\"/actuator/health\"]}"), 0);
    /* the idle and absorbed markers, whatever their value (or none) */
    assert_int_equal(sys("void com.acme.Web.handle()", "{\"call.idle\":[\"1\"]}"), 1);
    assert_int_equal(sys("void com.acme.Web.handle()", "{\"async.absorbed\":[]}"), 1);
    assert_int_equal(sys("void com.acme.Web.handle()", "{\"x\":[\"call.idle\"]}"), 0);
    /* an extra idle entry, and an empty one that must not match everything */
    const char *extra[] = {"", "com.acme.Jobs.run"};
    cp_call_view v = {"void com.acme.Jobs.run()", 24, "p", 1, NULL, 0};
    assert_int_equal(cp_system_call(&v, extra, 1), 0);
    assert_int_equal(cp_system_call(&v, extra, 2), 1);
    /* a memo holds the verdicts of one idle list: cleared when the list changes */
    cp_system_memo *m = calloc(1, sizeof *m);
    assert_int_equal(cp_system_call_memo(m, &v, extra, 1), 0);
    assert_int_equal(cp_system_call_memo(m, &v, extra, 1), 0);
    cp_system_memo_clear(m);
    assert_int_equal(cp_system_call_memo(m, &v, extra, 2), 1);
    assert_int_equal(cp_system_call_memo(m, &v, extra, 2), 1);
    /* many methods: every verdict the same as without the memo (slots are reused) */
    for (int i = 0; i < 20000; i++) {
        char meth[96];
        int len = snprintf(meth, sizeof meth, "void com.acme.%s%d.run()", i % 7 ? "Svc" : "Jobs.run.", i % 9000);
        cp_call_view w = {meth, (size_t)len, "p", 1, i % 5 ? NULL : "{\"call.idle\":[]}", i % 5 ? 0 : 15};
        assert_int_equal(cp_system_call_memo(m, &w, extra, 2), cp_system_call(&w, extra, 2));
    }
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration_spec_table),
        cmocka_unit_test(test_duration_spaces_and_rounding),
        cmocka_unit_test(test_duration_invalid),
        cmocka_unit_test(test_search_spec_table),
        cmocka_unit_test(test_search_syntax),
        cmocka_unit_test(test_search_empty_and_limits),
        cmocka_unit_test(test_search_params_details),
        cmocka_unit_test(test_search_long_escaped_values),
        cmocka_unit_test(test_search_required_params),
        cmocka_unit_test(test_params_each),
        cmocka_unit_test(test_params_corrupt),
        cmocka_unit_test(test_params_roundtrip),
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_call_ids),
        cmocka_unit_test(test_cursors),
        cmocka_unit_test(test_fnv),
        cmocka_unit_test(test_system_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
