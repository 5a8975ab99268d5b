/* wire_test.c -- primitive encodings (protocol.md §1) and the command parser (§3). */
#include "testutil.h"

#include "wire/cp_wire.h"

#include <stdlib.h>

static int varint_of(const uint8_t *p, size_t n, int32_t *v)
{
    cp_rd r;
    cp_rd_init(&r, p, n);
    int st = cp_rd_varint(&r, v);
    if (st == CP_OK) assert_int_equal(r.pos, n);
    return st;
}

static void test_varint_table(void **state)
{
    (void)state;
    static const struct {
        int32_t v;
        uint8_t b[5];
        size_t n;
    } t[] = {
        {0, {0x00}, 1},
        {1, {0x01}, 1},
        {127, {0x7F}, 1},
        {128, {0x80, 0x01}, 2},
        {129, {0x81, 0x01}, 2},
        {300, {0xAC, 0x02}, 2},
        {999465, {0xA9, 0x80, 0x3D}, 3},
        {2147483647, {0xFF, 0xFF, 0xFF, 0xFF, 0x07}, 5},
        {-1, {0xFF, 0xFF, 0xFF, 0xFF, 0x0F}, 5},
        {-2, {0xFE, 0xFF, 0xFF, 0xFF, 0x0F}, 5},
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(t); i++) {
        int32_t v;
        assert_int_equal(varint_of(t[i].b, t[i].n, &v), CP_OK);
        assert_int_equal(v, t[i].v);
        for (size_t k = 0; k < t[i].n; k++) assert_int_equal(varint_of(t[i].b, k, &v), CP_AGAIN);
    }
    /* the 5th byte's high bit is ignored (Java semantics), no 6th byte is read */
    uint8_t b5[] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x55};
    cp_rd r;
    cp_rd_init(&r, b5, sizeof b5);
    int32_t v;
    assert_int_equal(cp_rd_varint(&r, &v), CP_OK);
    assert_int_equal(r.pos, 5);
}

static void test_zigzag_and_varlong(void **state)
{
    (void)state;
    static const struct {
        int32_t v;
        uint8_t b[3];
        size_t n;
    } z[] = {{0, {0x00}, 1},        {1, {0x02}, 1},        {-1, {0x01}, 1},       {2, {0x04}, 1},
             {-2, {0x03}, 1},       {-2189, {0x99, 0x22}, 2}, {48595, {0xA6, 0xF7, 0x05}, 3},
             {581, {0x8A, 0x09}, 2}, {-54608, {0x9F, 0xD5, 0x06}, 3}};
    for (size_t i = 0; i < CP_ARRAY_LEN(z); i++) {
        cp_rd r;
        cp_rd_init(&r, z[i].b, z[i].n);
        int32_t v;
        assert_int_equal(cp_rd_zigzag(&r, &v), CP_OK);
        assert_int_equal(v, z[i].v);
    }
    uint8_t big[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    cp_rd r;
    cp_rd_init(&r, big, sizeof big);
    int64_t l;
    assert_int_equal(cp_rd_varlong(&r, &l), CP_OK);
    assert_true((uint64_t)l == 1ull << 63);
    uint8_t eleven[11];
    memset(eleven, 0x80, sizeof eleven);
    cp_rd_init(&r, eleven, sizeof eleven);
    assert_int_equal(cp_rd_varlong(&r, &l), CP_EPROTO);
}

static void test_str16(void **state)
{
    (void)state;
    /* "aé€😀" and an unpaired high surrogate */
    uint8_t s[] = {0x06, 0x00, 'a', 0x00, 0xE9, 0x20, 0xAC, 0xD8, 0x3D, 0xDE, 0x00, 0xD8, 0x00};
    cp_rd r;
    cp_rd_init(&r, s, sizeof s);
    cp_str16 x;
    assert_int_equal(cp_rd_str16(&r, 100, &x), CP_OK);
    assert_int_equal(x.n, 6);
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(cp_str16_to_utf8(&b, x), CP_OK);
    const char want[] = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xEF\xBF\xBD";
    assert_int_equal(b.len, sizeof want - 1);
    assert_memory_equal(b.data, want, b.len);
    cp_buf_reset(&b);
    cp_rd_init(&r, s, sizeof s);
    assert_int_equal(cp_rd_str16(&r, 5, &x), CP_ELIMIT); /* over the cap */
    cp_rd_init(&r, s, 6);
    assert_int_equal(cp_rd_str16(&r, 100, &x), CP_AGAIN);
    assert_int_equal(r.pos, 0); /* rewound */
    /* JSON escaping keeps UTF-8, escapes controls, replaces invalid bytes */
    assert_int_equal(cp_json_str(&b, "a\"\\\n\x01\xC3\xA9\xFF", 8), CP_OK);
    const char jw[] = "\"a\\\"\\\\\\n\\u0001\xC3\xA9\xEF\xBF\xBD\"";
    assert_int_equal(b.len, sizeof jw - 1);
    assert_memory_equal(b.data, jw, b.len);
    cp_buf_free(&b);
}

static void test_path_component(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(cp_parse_u64("1715", 65535, &v), CP_OK);
    assert_int_equal(v, 1715);
    assert_int_equal(cp_parse_u64("65536", 65535, &v), CP_EINVAL);
    assert_int_equal(cp_parse_u64("", 10, &v), CP_EINVAL);
    assert_int_equal(cp_parse_u64("-1", 10, &v), CP_EINVAL);
    assert_int_equal(cp_parse_u64("12a", 100, &v), CP_EINVAL);
    assert_int_equal(cp_parse_u64("18446744073709551615", UINT64_MAX, &v), CP_EINVAL); /* 20 digits */
    assert_int_equal(cp_parse_u64("9999999999999999999", UINT64_MAX, &v), CP_OK);
    cp_buf b;
    cp_buf_init(&b);
    cp_path_component(&b, "../etc/x y", 10);
    cp_buf_putc(&b, 0);
    assert_string_equal((char *)b.data, "%2E.%2Fetc%2Fx%20y");
    cp_buf_reset(&b);
    cp_path_component(&b, "esc-ui-service_1690.x", 21);
    cp_buf_putc(&b, 0);
    assert_string_equal((char *)b.data, "esc-ui-service_1690.x");
    cp_buf_reset(&b);
    cp_path_component(&b, "", 0);
    cp_buf_putc(&b, 0);
    assert_string_equal((char *)b.data, "_");
    cp_buf_free(&b);
}

/* The handshake of parser.test.protocol (§3.1 worked example), parsed at every prefix. */
static void test_parse_handshake(void **state)
{
    (void)state;
    cp_buf cap;
    load_fixture("conversations/parser.test.protocol", &cap);
    cp_cmd c;
    size_t used;
    for (size_t k = 0; k < 88; k++) assert_int_equal(cp_wire_parse(cap.data, k, &c, &used), CP_AGAIN);
    assert_int_equal(cp_wire_parse(cap.data, cap.len, &c, &used), CP_OK);
    assert_int_equal(used, 88);
    assert_int_equal(c.type, CP_CMD_HANDSHAKE);
    assert_int_equal(c.u.hs.version, CP_PROTOCOL_V2);
    assert_int_equal(c.u.hs.pod.n, 45);
    assert_memory_equal(c.u.hs.pod.p, "esc-ui-service-84967fdd77-pwhw4_1690201584049", 45);
    assert_memory_equal(c.u.hs.service.p, "esc-ui-service", 14);
    assert_memory_equal(c.u.hs.ns.p, "profiler", 8);
    assert_int_equal(cp_be64(cap.data + 88), CP_PROTOCOL_V2);
    /* the trace INIT at 96 */
    assert_int_equal(cp_wire_parse(cap.data + 96, cap.len - 96, &c, &used), CP_OK);
    assert_int_equal(c.type, CP_CMD_INIT);
    assert_int_equal(c.u.init.stream.n, 5);
    assert_memory_equal(c.u.init.stream.p, "trace", 5);
    assert_int_equal(c.u.init.seq, 0);
    assert_int_equal(c.u.init.reset, 0);
    assert_int_equal(used, 18);
    cp_buf_free(&cap);
}

static void test_parse_errors(void **state)
{
    (void)state;
    cp_cmd c;
    size_t used;
    uint8_t data[1 + 16 + 4 + 1025] = {CP_CMD_DATA};
    cp_put_be32(data + 17, 1024); /* 1024 is legal */
    assert_int_equal(cp_wire_parse(data, 1 + 16 + 4 + 1024, &c, &used), CP_OK);
    assert_int_equal(c.u.data.payload.n, 1024);
    cp_put_be32(data + 17, 1025);
    assert_int_equal(cp_wire_parse(data, sizeof data, &c, &used), CP_WIRE_EFIELD);
    cp_put_be32(data + 17, 0xFFFFFFFFu); /* -1 */
    assert_int_equal(cp_wire_parse(data, sizeof data, &c, &used), CP_WIRE_EFIELD);
    cp_put_be32(data + 17, 0);
    assert_int_equal(cp_wire_parse(data, 21, &c, &used), CP_OK); /* empty payload */
    static const uint8_t unknown[] = {0x00, 0x10, 0x12, 0x03, 0x7E, 0xFF};
    for (size_t i = 0; i < sizeof unknown; i++)
        assert_int_equal(cp_wire_parse(&unknown[i], 1, &c, &used), CP_WIRE_EUNKNOWN);
    uint8_t hs[] = {CP_CMD_HANDSHAKE, 0, 0, 0, 0, 0, 1, 0x88, 0xFD, 0x00, 0x00, 0x04, 0x01};
    assert_int_equal(cp_wire_parse(hs, sizeof hs, &c, &used), CP_WIRE_EFIELD);
    uint8_t one[] = {CP_CMD_ACK_FLUSH, CP_CMD_CLOSE, CP_CMD_VERSION_LEGACY};
    for (size_t i = 0; i < sizeof one; i++) {
        assert_int_equal(cp_wire_parse(&one[i], 1, &c, &used), CP_OK);
        assert_int_equal(used, 1);
    }
}

/* Request encoders and reply encoders round-trip through the parser. */
static void test_roundtrip(void **state)
{
    (void)state;
    cp_buf b;
    cp_buf_init(&b);
    uint8_t h[16];
    memset(h, 0xAB, 16);
    assert_int_equal(cp_wire_put_handshake(&b, CP_PROTOCOL_V3, "pod-1", "svc", "ns"), CP_OK);
    assert_int_equal(cp_wire_put_init(&b, "posDictionary", 3, 1), CP_OK);
    assert_int_equal(cp_wire_put_data(&b, h, (const uint8_t *)"xyz", 3), CP_OK);
    cp_cmd c;
    size_t used, pos = 0;
    assert_int_equal(cp_wire_parse(b.data, b.len, &c, &used), CP_OK);
    assert_int_equal(c.u.hs.version, CP_PROTOCOL_V3);
    pos += used;
    assert_int_equal(cp_wire_parse(b.data + pos, b.len - pos, &c, &used), CP_OK);
    assert_int_equal(c.u.init.seq, 3);
    assert_int_equal(c.u.init.reset, 1);
    pos += used;
    assert_int_equal(cp_wire_parse(b.data + pos, b.len - pos, &c, &used), CP_OK);
    assert_memory_equal(c.u.data.handle, h, 16);
    assert_memory_equal(c.u.data.payload.p, "xyz", 3);
    assert_int_equal(pos + used, b.len);
    uint8_t r[36];
    assert_int_equal(cp_wire_put_init_ok(r, h, 3600000, 2097152, 0), 36);
    static const uint8_t tail[20] = {0, 0, 0, 0, 0, 0x36, 0xee, 0x80, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0};
    assert_memory_equal(r + 16, tail, 20);
    uint8_t v[8];
    cp_wire_put_version(v, CP_PROTOCOL_BLACKLISTED);
    static const uint8_t bl[8] = {0, 0, 0, 0, 0x05, 0x4C, 0x56, 0x38};
    assert_memory_equal(v, bl, 8);
    cp_buf_free(&b);
}

/* The capture walker reproduces the inventory of §6.1. */
static void test_captures(void **state)
{
    (void)state;
    cp_buf a, c2s, s2c;
    load_fixture("conversations/parser.test.protocol", &a);
    cp_capture cap;
    cp_capture_item it;
    size_t counts[256] = {0}, acks = 0;
    cp_capture_init_concat(&cap, a.data, a.len);
    int st;
    while ((st = cp_capture_next(&cap, &it)) == CP_OK) {
        counts[it.cmd.type]++;
        acks += it.nacks;
    }
    assert_int_equal(st, CP_AGAIN);
    assert_int_equal(counts[CP_CMD_HANDSHAKE], 1);
    assert_int_equal(counts[CP_CMD_INIT], 8);
    assert_int_equal(counts[CP_CMD_DATA], 533);
    assert_int_equal(counts[CP_CMD_ACK_FLUSH], 165);
    assert_int_equal(acks, 698);
    load_fixture("conversations/agent-v2/client-to-server.bin", &c2s);
    load_fixture("conversations/agent-v2/server-to-client.bin", &s2c);
    memset(counts, 0, sizeof counts);
    acks = 0;
    cp_capture_init_split(&cap, c2s.data, c2s.len, s2c.data, s2c.len);
    while ((st = cp_capture_next(&cap, &it)) == CP_OK) {
        counts[it.cmd.type]++;
        acks += it.nacks;
    }
    assert_int_equal(st, CP_AGAIN); /* also: every server byte consumed */
    assert_int_equal(counts[CP_CMD_INIT], 7);
    assert_int_equal(counts[CP_CMD_DATA], 74);
    assert_int_equal(counts[CP_CMD_ACK_FLUSH], 54);
    assert_int_equal(counts[CP_CMD_CLOSE], 1);
    assert_int_equal(acks, 128);
    cp_buf_free(&a);
    cp_buf_free(&c2s);
    cp_buf_free(&s2c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varint_table),   cmocka_unit_test(test_zigzag_and_varlong),
        cmocka_unit_test(test_str16),          cmocka_unit_test(test_path_component),
        cmocka_unit_test(test_parse_handshake), cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_roundtrip),      cmocka_unit_test(test_captures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
