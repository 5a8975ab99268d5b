/* zipout_test.c -- the streaming zip writer (cp_zipout.h) behind bulk downloads
 * (dumps-http.md §7.2: a zip of many `<pod>/<original name>` entries, possibly above 4 GiB).
 *
 * Archives are written into memory and read back by a small independent reader in this
 * file (end records, ZIP64 records, central directory, local headers, data descriptors,
 * raw inflate), checking names, sizes, CRC-32 and contents byte for byte. When python3,
 * unzip or bsdtar are on the machine, a written file must also pass zipfile.testzip(),
 * unzip -t and libarchive's seekable and streaming readers;
 * cp_zip_probe (cp_dumpfmt.h) must read every archive too. ZIP64 is exercised with more
 * than 65535 entries and with one stored entry above 4 GiB, streamed through a sink that
 * keeps only the header and trailer bytes. A classic archive (cp_zipw_classic, for .xlsx)
 * is read by the same reader and tools without any ZIP64 field, and refuses to reach
 * 4 GiB or 65535 entries. */
#include "testutil.h"

#include "http/cp_zipout.h"
#include "model/cp_dumpfmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define U32 0xFFFFFFFFull

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p) { return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16; }
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

static int buf_sink(void *ud, const void *p, size_t n) { return cp_buf_append(ud, p, n); }

/* The archives written and read next are classic ones (cp_zipw_classic): version 2.0, no
 * ZIP64 extra in the local headers, 4-byte sizes in the data descriptors. */
static int g_classic;

/* ---- an independent reader ------------------------------------------------------------------- */

typedef struct zr_entry {
    char *name;
    uint16_t made_by, needed, flags, method, dos_time, dos_date;
    uint32_t crc, ext_attr;
    uint64_t csize, usize, offset;
    int32_t mtime;      /* from the central 0x5455 extra */
    int zip64_fields;   /* 8-byte fields in the central ZIP64 extra */
} zr_entry;

typedef struct zr_archive {
    zr_entry *e;
    uint64_t n;
    uint64_t cd_off, cd_size;
    int zip64_end;      /* a ZIP64 end record and locator were present */
} zr_archive;

static void zr_free(zr_archive *a)
{
    for (uint64_t i = 0; i < a->n; i++) free(a->e[i].name);
    free(a->e);
    memset(a, 0, sizeof *a);
}

/* Reads the end records and the central directory from tail[0..len), which holds the
 * archive's bytes from offset base to its end. */
static void zr_central(const uint8_t *tail, size_t len, uint64_t base, zr_archive *a)
{
    memset(a, 0, sizeof *a);
    assert_true(len >= 22);
    const uint8_t *end = tail + len - 22; /* the writer adds no comment */
    assert_int_equal(le32(end), 0x06054b50);
    assert_int_equal(le16(end + 4), 0);
    assert_int_equal(le16(end + 6), 0);
    assert_int_equal(le16(end + 8), le16(end + 10));
    assert_int_equal(le16(end + 20), 0);
    uint64_t n = le16(end + 10), cd_size = le32(end + 12), cd_off = le32(end + 16);
    if (len >= 22 + 20 && le32(end - 20) == 0x07064b50) {
        const uint8_t *loc = end - 20;
        assert_int_equal(le32(loc + 4), 0);
        assert_int_equal(le32(loc + 16), 1);
        uint64_t e64 = le64(loc + 8);
        assert_true(e64 >= base && e64 - base + 56 == len - 22 - 20); /* right before the locator */
        const uint8_t *r = tail + (e64 - base);
        assert_int_equal(le32(r), 0x06064b50);
        assert_int_equal(le64(r + 4), 44);
        assert_int_equal(le16(r + 14), 45);
        assert_int_equal(le32(r + 16), 0);
        assert_int_equal(le32(r + 20), 0);
        assert_int_equal(le64(r + 24), le64(r + 32));
        /* the classic fields either agree or are the ZIP64 marker */
        assert_true(n == 0xFFFF || n == le64(r + 32));
        assert_true(cd_size == U32 || cd_size == le64(r + 40));
        assert_true(cd_off == U32 || cd_off == le64(r + 48));
        n = le64(r + 32);
        cd_size = le64(r + 40);
        cd_off = le64(r + 48);
        a->zip64_end = 1;
        assert_int_equal(cd_off + cd_size, e64);
    } else {
        assert_true(n < 0xFFFF && cd_size < U32 && cd_off < U32);
        assert_int_equal(cd_off + cd_size, base + len - 22);
    }
    assert_true(cd_off >= base);
    a->n = n;
    a->cd_off = cd_off;
    a->cd_size = cd_size;
    a->e = calloc(n ? n : 1, sizeof *a->e);
    const uint8_t *p = tail + (cd_off - base), *cd_end = p + cd_size;
    for (uint64_t i = 0; i < n; i++) {
        zr_entry *e = &a->e[i];
        assert_true(cd_end - p >= 46);
        assert_int_equal(le32(p), 0x02014b50);
        e->made_by = le16(p + 4);
        e->needed = le16(p + 6);
        e->flags = le16(p + 8);
        e->method = le16(p + 10);
        e->dos_time = le16(p + 12);
        e->dos_date = le16(p + 14);
        e->crc = le32(p + 16);
        e->csize = le32(p + 20);
        e->usize = le32(p + 24);
        uint16_t nl = le16(p + 28), xl = le16(p + 30), cl = le16(p + 32);
        assert_int_equal(cl, 0);
        assert_int_equal(le16(p + 34), 0);
        e->ext_attr = le32(p + 38);
        e->offset = le32(p + 42);
        assert_true(cd_end - p >= 46 + nl + xl);
        e->name = malloc((size_t)nl + 1);
        memcpy(e->name, p + 46, nl);
        e->name[nl] = 0;
        const uint8_t *x = p + 46 + nl, *xe = x + xl;
        int have_ut = 0;
        while (x < xe) {
            assert_true(xe - x >= 4);
            uint16_t tag = le16(x), sz = le16(x + 2);
            assert_true(xe - x - 4 >= sz);
            const uint8_t *d = x + 4;
            if (tag == 0x0001) {
                /* APPNOTE 4.5.3: only the fields whose 32-bit value is the marker, in order */
                size_t k = 0;
                if (e->usize == U32) e->usize = le64(d + 8 * k++);
                if (e->csize == U32) e->csize = le64(d + 8 * k++);
                if (e->offset == U32) e->offset = le64(d + 8 * k++);
                assert_int_equal(sz, 8 * k);
                e->zip64_fields = (int)k;
            } else if (tag == 0x5455) {
                assert_int_equal(sz, 5);
                assert_int_equal(d[0], 1);
                e->mtime = (int32_t)le32(d + 1);
                have_ut = 1;
            } else {
                fail_msg("unexpected extra 0x%04x", tag);
            }
            x += 4 + sz;
        }
        assert_true(have_ut);
        /* as the local header, which always has a ZIP64 extra unless classic */
        assert_int_equal(e->needed, g_classic ? 20 : 45);
        p = xe;
    }
    assert_true(p == cd_end);
}

/* Checks entry e's local header, data and data descriptor in the whole archive z, inflating
 * or copying the data into out. Returns the offset just past the descriptor. */
static uint64_t zr_entry_data(const uint8_t *z, size_t zlen, const zr_entry *e, cp_buf *out)
{
    assert_true(e->offset + 30 <= zlen);
    const uint8_t *l = z + e->offset;
    assert_int_equal(le32(l), 0x04034b50);
    assert_int_equal(le16(l + 4), g_classic ? 20 : 45);
    assert_int_equal(le16(l + 6), e->flags);
    assert_int_equal(le16(l + 8), e->method);
    assert_int_equal(le16(l + 10), e->dos_time);
    assert_int_equal(le16(l + 12), e->dos_date);
    /* flag bit 3: CRC and sizes come in the descriptor; the sizes are the ZIP64 marker
     * and the local ZIP64 extra (sizes unknown: 0) makes the descriptor's sizes 8 bytes;
     * a classic header has zero sizes, no ZIP64 extra and 4-byte descriptor sizes */
    assert_int_equal(le32(l + 14), 0);
    assert_int_equal(le32(l + 18), g_classic ? 0 : U32);
    assert_int_equal(le32(l + 22), g_classic ? 0 : U32);
    uint16_t nl = le16(l + 26), xl = le16(l + 28);
    assert_int_equal(nl, strlen(e->name));
    assert_memory_equal(l + 30, e->name, nl);
    assert_int_equal(xl, g_classic ? 9 : 20 + 9);
    const uint8_t *x = l + 30 + nl;
    if (!g_classic) {
        assert_int_equal(le16(x), 0x0001);
        assert_int_equal(le16(x + 2), 16);
        assert_int_equal(le64(x + 4), 0);
        assert_int_equal(le64(x + 12), 0);
        x += 20;
    }
    assert_int_equal(le16(x), 0x5455);
    assert_int_equal(le16(x + 2), 5);
    assert_int_equal(x[4], 1);
    assert_int_equal((int32_t)le32(x + 5), e->mtime);
    uint64_t data = e->offset + 30 + nl + xl;
    assert_true(data + e->csize <= zlen);
    cp_buf_reset(out);
    if (e->method == 0) {
        assert_int_equal(e->csize, e->usize);
        assert_int_equal(cp_buf_append(out, z + data, (size_t)e->csize), CP_OK);
    } else {
        assert_int_equal(e->method, 8);
        assert_int_equal(cp_buf_reserve(out, (size_t)e->usize + 1), CP_OK);
        z_stream s;
        memset(&s, 0, sizeof s);
        assert_int_equal(inflateInit2(&s, -MAX_WBITS), Z_OK);
        s.next_in = (Bytef *)(uintptr_t)(z + data);
        s.avail_in = (uInt)e->csize;
        s.next_out = out->data;
        s.avail_out = (uInt)e->usize + 1;
        assert_int_equal(inflate(&s, Z_FINISH), Z_STREAM_END);
        assert_int_equal(s.avail_in, 0);     /* the stream is exactly csize bytes */
        out->len = s.total_out;
        inflateEnd(&s);
    }
    assert_int_equal(out->len, e->usize);
    assert_int_equal(crc32(0, out->data, (uInt)out->len), e->crc);
    const uint8_t *d = z + data + e->csize;
    size_t dlen = g_classic ? 16 : 24;
    assert_true(data + e->csize + dlen <= zlen);
    assert_int_equal(le32(d), 0x08074b50);
    assert_int_equal(le32(d + 4), e->crc);
    if (g_classic) {
        assert_int_equal(le32(d + 8), e->csize);
        assert_int_equal(le32(d + 12), e->usize);
    } else {
        assert_int_equal(le64(d + 8), e->csize);
        assert_int_equal(le64(d + 16), e->usize);
    }
    return data + e->csize + dlen;
}

/* Reads a whole in-memory archive; checks that the entries are back to back and that the
 * central directory follows the last one. contents[i] (when not NULL) receive the data. */
static void zr_read(const cp_buf *z, zr_archive *a, cp_buf *contents)
{
    zr_central(z->data, z->len, 0, a);
    uint64_t pos = 0;
    cp_buf tmp;
    cp_buf_init(&tmp);
    for (uint64_t i = 0; i < a->n; i++) {
        const zr_entry *e = &a->e[i];
        assert_int_equal(e->offset, pos);
        assert_int_equal(e->flags, 0x0808); /* data descriptor + UTF-8 */
        assert_int_equal(e->made_by >> 8, 3); /* Unix */
        assert_int_equal(e->ext_attr >> 16, 0100644);
        pos = zr_entry_data(z->data, z->len, e, contents ? &contents[i] : &tmp);
    }
    assert_int_equal(pos, a->cd_off);
    cp_buf_free(&tmp);
}

/* ---- outside readers --------------------------------------------------------------------------- */

typedef struct vfile {
    const uint8_t *p;
    uint64_t n;
} vfile;

static int mem_pread(void *ud, void *dst, size_t n, uint64_t off)
{
    const vfile *f = ud;
    if (off > f->n || n > f->n - off) return CP_EIO;
    memcpy(dst, f->p + off, n);
    return CP_OK;
}

static void probe(const cp_buf *z, uint64_t entries, const char *first, uint64_t first_size, uint64_t total)
{
    vfile f = {z->data, z->len};
    cp_zip_info zi;
    char err[256];
    int st = cp_zip_probe(mem_pread, &f, z->len, &zi, err, sizeof err);
    if (st != CP_OK) fail_msg("cp_zip_probe: %s", err);
    assert_int_equal(zi.entries, entries);
    if (entries) {
        assert_string_equal(zi.first_name, first);
        assert_int_equal(zi.first_size, first_size);
    }
    assert_int_equal(zi.total_size, total);
}

static int have_cmd(const char *cmd)
{
    char sh[256];
    snprintf(sh, sizeof sh, "command -v %s >/dev/null 2>&1", cmd);
    return system(sh) == 0;
}

/* Writes z to a file and has outside readers check it: Python's zipfile (testzip: every
 * CRC; the names in order, which also checks flag bit 11, without which Python decodes
 * cp437; the first entry's DOS date_time), Info-ZIP's unzip -t, and libarchive's bsdtar
 * both seekable and from a pipe (the streaming reader walks local headers and data
 * descriptors): its listing must be the names and, when given, the concatenated
 * contents must come out. Each tool is skipped when absent (python3 is in
 * scripts/setup.sh). unzip is left out where it warns by design: an empty archive, names
 * over its 4 KiB limit. */
static void outside_check(const cp_buf *z, const char *const *names, size_t n, const char *first_time,
                          int use_unzip, const cp_buf *contents)
{
    int py = have_cmd("python3"), uz = use_unzip && have_cmd("unzip"), bt = have_cmd("bsdtar");
    if (!py) print_message("python3 not found: zipfile check skipped\n");
    if (!bt) print_message("bsdtar not found: libarchive check skipped\n");
    char *dir = make_temp_dir("zipout");
    char zpath[4200], npath[4200], epath[4200], cmd[13000];
    snprintf(zpath, sizeof zpath, "%s/a.zip", dir);
    snprintf(npath, sizeof npath, "%s/names.txt", dir);
    snprintf(epath, sizeof epath, "%s/expect.bin", dir);
    FILE *f = fopen(zpath, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(z->data, 1, z->len, f), z->len);
    fclose(f);
    f = fopen(npath, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) fprintf(f, "%s\n", names[i]);
    fclose(f);
    if (contents) {
        f = fopen(epath, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(contents->data, 1, contents->len, f), contents->len);
        fclose(f);
    }
    if (py) {
        snprintf(cmd, sizeof cmd,
                 "python3 -c '"
                 "import zipfile,sys\n"
                 "z=zipfile.ZipFile(sys.argv[1])\n"
                 "assert z.testzip() is None\n"
                 "exp=[l for l in open(sys.argv[2],encoding=\"utf-8\").read().split(\"\\n\") if l]\n"
                 "got=z.namelist()\n"
                 "assert got==exp,(got[:3],exp[:3],len(got),len(exp))\n"
                 "assert all(i.flag_bits&0x808==0x808 for i in z.infolist())\n"
                 "t=sys.argv[3]\n"
                 "assert not t or z.infolist()[0].date_time==tuple(map(int,t.split(\",\"))),z.infolist()[0].date_time\n"
                 "' '%s' '%s' '%s'",
                 zpath, npath, first_time ? first_time : "");
        assert_int_equal(system(cmd), 0);
    }
    if (uz) {
        snprintf(cmd, sizeof cmd, "unzip -tqq '%s' >/dev/null", zpath);
        assert_int_equal(system(cmd), 0);
    }
    if (bt) {
        /* the names are UTF-8: bsdtar converts them to the locale's charset */
        snprintf(cmd, sizeof cmd, "LC_ALL=C.UTF-8 bsdtar -tf '%s' | cmp -s - '%s'", zpath, npath);
        assert_int_equal(system(cmd), 0);
        snprintf(cmd, sizeof cmd, "cat '%s' | LC_ALL=C.UTF-8 bsdtar -tf - | cmp -s - '%s'", zpath, npath);
        assert_int_equal(system(cmd), 0);
        if (contents) {
            snprintf(cmd, sizeof cmd, "LC_ALL=C.UTF-8 bsdtar -xOf '%s' | cmp -s - '%s'", zpath, epath);
            assert_int_equal(system(cmd), 0);
            snprintf(cmd, sizeof cmd, "cat '%s' | LC_ALL=C.UTF-8 bsdtar -xOf - | cmp -s - '%s'", zpath, epath);
            assert_int_equal(system(cmd), 0);
        }
    }
    remove_tree(dir);
    free(dir);
}

/* ---- tests ------------------------------------------------------------------------------------ */

static void test_empty(void **state)
{
    (void)state;
    cp_buf z;
    cp_buf_init(&z);
    cp_zipw *w;
    assert_int_equal(cp_zipw_new(buf_sink, &z, &w), CP_OK);
    assert_int_equal(cp_zipw_finish(w), CP_OK);
    assert_int_equal(cp_zipw_bytes(w), 22);
    cp_zipw_free(w);
    static const uint8_t eocd[22] = {0x50, 0x4b, 0x05, 0x06};
    assert_int_equal(z.len, 22);
    assert_memory_equal(z.data, eocd, 22);
    zr_archive a;
    zr_read(&z, &a, NULL);
    assert_int_equal(a.n, 0);
    zr_free(&a);
    probe(&z, 0, NULL, 0, 0);
    outside_check(&z, NULL, 0, NULL, 0, NULL);
    cp_buf_free(&z);
}

/* 2023-12-19 06:17:35 UTC: DOS time keeps even seconds (34), the 0x5455 extra the second. */
#define T_MS 1702966655123ll

static void test_one_stored(void **state)
{
    (void)state;
    cp_buf z;
    cp_buf_init(&z);
    cp_zipw *w;
    const char *text = "Hello, zip!\n";
    assert_int_equal(cp_zipw_new(buf_sink, &z, &w), CP_OK);
    assert_int_equal(cp_zipw_begin(w, "hello.txt", T_MS, 0), CP_OK);
    assert_int_equal(cp_zipw_bytes(w), 30 + 9 + 29); /* the local header is out at once */
    assert_int_equal(cp_zipw_data(w, text, 5), CP_OK);
    assert_int_equal(cp_zipw_data(w, text + 5, 0), CP_OK);
    assert_int_equal(cp_zipw_data(w, text + 5, 7), CP_OK);
    assert_int_equal(cp_zipw_bytes(w), 68 + 12); /* stored data is not held back */
    assert_int_equal(cp_zipw_end(w), CP_OK);
    assert_int_equal(cp_zipw_finish(w), CP_OK);
    assert_int_equal(cp_zipw_bytes(w), z.len);
    cp_zipw_free(w);
    /* 68 local + 12 data + 24 descriptor + 46 + 9 + 9 central + 22 end */
    assert_int_equal(z.len, 68 + 12 + 24 + 64 + 22);
    assert_memory_equal(z.data + 68, text, 12); /* stored bytes verbatim */
    zr_archive a;
    cp_buf got[1];
    cp_buf_init(&got[0]);
    zr_read(&z, &a, got);
    assert_int_equal(a.n, 1);
    assert_string_equal(a.e[0].name, "hello.txt");
    assert_int_equal(a.e[0].method, 0);
    assert_int_equal(a.e[0].usize, 12);
    assert_int_equal(a.e[0].crc, crc32(0, (const Bytef *)text, 12));
    assert_int_equal(a.e[0].mtime, 1702966655);
    assert_int_equal(a.e[0].dos_date, (2023 - 1980) << 9 | 12 << 5 | 19);
    assert_int_equal(a.e[0].dos_time, 6 << 11 | 17 << 5 | 34 / 2);
    assert_int_equal(a.zip64_end, 0);
    assert_memory_equal(got[0].data, text, 12);
    cp_buf_free(&got[0]);
    zr_free(&a);
    probe(&z, 1, "hello.txt", 12, 12);
    const char *names[] = {"hello.txt"};
    outside_check(&z, names, 1, "2023,12,19,6,17,34", 1, NULL);
    cp_buf_free(&z);
}

/* Writes each of n entries from data[i] in random slices; deflate[i] picks the method. */
static void write_entries(cp_buf *z, const char *const *names, const cp_buf *data, const int *deflate, size_t n,
                          int64_t mtime, uint64_t *seed)
{
    cp_zipw *w;
    assert_int_equal(cp_zipw_new(buf_sink, z, &w), CP_OK);
    if (g_classic) cp_zipw_classic(w);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(cp_zipw_begin(w, names[i], mtime, deflate[i]), CP_OK);
        size_t pos = 0;
        while (pos < data[i].len) {
            uint64_t r = test_rand(seed);
            size_t k = (r & 1) ? 1 + (size_t)(r >> 8) % 100 : 1 + (size_t)(r >> 8) % 300000;
            if (k > data[i].len - pos) k = data[i].len - pos;
            assert_int_equal(cp_zipw_data(w, data[i].data + pos, k), CP_OK);
            pos += k;
        }
        assert_int_equal(cp_zipw_end(w), CP_OK);
        assert_int_equal(cp_zipw_bytes(w), z->len); /* each entry is fully out after end */
    }
    assert_int_equal(cp_zipw_finish(w), CP_OK);
    assert_int_equal(cp_zipw_bytes(w), z->len);
    cp_zipw_free(w);
}

/* Thread dumps, top and GC text deflated (bulk download of §7.2), mixed with stored and
 * empty entries, under `<pod>/<name>` and UTF-8 names. */
static void test_mixed_entries(void **state)
{
    (void)state;
    const char *names[] = {
        "orders-5cbcd847d-l2t7t_1719318147399/20231219T061734UTC.td.txt",
        "orders-5cbcd847d-l2t7t_1719318147399/20231219T061734UTC.top.txt",
        "db-0/20231219T062953UTC.gc.log",
        "db-0/gc.log.0",                                   /* 0 bytes, deflated */
        "empty-stored",                                    /* 0 bytes, stored */
        "пример/Ünïcødé €/файл.td.txt",                    /* UTF-8 */
        "heap/20240731T225935.hprof.zip",                  /* an already compressed file, stored */
        "a/b/c/d/e/f/g/h.txt",
    };
    enum { N = 8 };
    const int deflate[N] = {1, 1, 1, 1, 0, 1, 0, 1};
    cp_buf data[N];
    load_fixture("dumps/20231219T061734UTC.td.txt", &data[0]);
    load_fixture("dumps/20231219T061734UTC.top.txt", &data[1]);
    load_fixture("dumps/20231219T062953UTC.gc.log", &data[2]);
    assert_int_equal(data[0].len, 85956); /* dumps-http.md §7.3: 86 KB for 73 threads */
    cp_buf_init(&data[3]);
    cp_buf_init(&data[4]);
    cp_buf_init(&data[5]);
    for (int i = 0; i < 1000; i++) cp_buf_printf(&data[5], "строка %d: ünïcødé €\n", i);
    load_fixture("dumps/test-service.heap.hprof.zip", &data[6]);
    cp_buf_init(&data[7]);
    uint64_t seed = 42;
    for (int i = 0; i < 200000; i++) cp_buf_putc(&data[7], (uint8_t)test_rand(&seed)); /* incompressible */

    cp_buf z;
    cp_buf_init(&z);
    write_entries(&z, names, data, deflate, N, T_MS, &seed);
    zr_archive a;
    cp_buf got[N];
    for (int i = 0; i < N; i++) cp_buf_init(&got[i]);
    zr_read(&z, &a, got);
    assert_int_equal(a.n, N);
    uint64_t total = 0;
    for (int i = 0; i < N; i++) {
        assert_string_equal(a.e[i].name, names[i]);
        assert_int_equal(a.e[i].method, deflate[i] ? 8 : 0);
        assert_int_equal(a.e[i].usize, data[i].len);
        assert_int_equal(got[i].len, data[i].len);
        if (data[i].len) assert_memory_equal(got[i].data, data[i].data, data[i].len);
        assert_int_equal(a.e[i].crc, crc32(0, data[i].data, (uInt)data[i].len));
        assert_int_equal(a.e[i].mtime, 1702966655);
        total += data[i].len;
    }
    /* text deflates well; an empty deflate stream is the 2-byte final empty block */
    assert_true(a.e[0].csize * 5 < a.e[0].usize);
    assert_true(a.e[2].csize * 5 < a.e[2].usize);
    assert_int_equal(a.e[3].csize, 2);
    assert_int_equal(a.e[3].crc, 0);
    assert_int_equal(a.e[4].csize, 0);
    probe(&z, N, names[0], data[0].len, total);
    cp_buf all;
    cp_buf_init(&all);
    for (int i = 0; i < N; i++) cp_buf_append(&all, data[i].data, data[i].len);
    outside_check(&z, names, N, "2023,12,19,6,17,34", 1, &all);
    cp_buf_free(&all);
    for (int i = 0; i < N; i++) {
        cp_buf_free(&data[i]);
        cp_buf_free(&got[i]);
    }
    zr_free(&a);
    cp_buf_free(&z);
}

static void test_names_and_times(void **state)
{
    (void)state;
    cp_buf z;
    cp_buf_init(&z);
    cp_zipw *w;
    assert_int_equal(cp_zipw_new(buf_sink, &z, &w), CP_OK);
    static const char *const bad[] = {
        "", "/abs", "a//b", "a/", "./a", "a/./b", "../a", "a/..", "..", ".", "a\\b", "a\nb", "a\x7f",
        "\xC3",            /* truncated UTF-8 */
        "\xC0\xAF",        /* overlong '/' */
        "\xED\xA0\x80",    /* a surrogate */
        "\xF4\x90\x80\x80", /* above U+10FFFF */
        "\xFF",
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(bad); i++) assert_int_equal(cp_zipw_begin(w, bad[i], 0, 0), CP_EINVAL);
    assert_int_equal(cp_zipw_begin(w, NULL, 0, 0), CP_EINVAL);
    char *longname = malloc(65537);
    memset(longname, 'n', 65536);
    longname[65536] = 0;
    assert_int_equal(cp_zipw_begin(w, longname, 0, 0), CP_EINVAL); /* 65536 bytes */
    assert_int_equal(z.len, 0);                                      /* nothing was written */
    longname[65535] = 0;
    /* times: before 1980 clamps the DOS fields (the extra keeps the second, floor of ms);
     * after 2107 clamps to its last day; a negative ms rounds down */
    static const struct {
        int64_t ms;
        int32_t unix_s;
        uint16_t date, time;
    } t[] = {
        {T_MS, 1702966655, (2023 - 1980) << 9 | 12 << 5 | 19, 6 << 11 | 17 << 5 | 17},
        {0, 0, 0 << 9 | 1 << 5 | 1, 0},
        {-1, -1, 0 << 9 | 1 << 5 | 1, 0},
        {315532800000ll, 315532800, 0 << 9 | 1 << 5 | 1, 0},                                /* 1980-01-01 */
        {951825599000ll, 951825599, (2000 - 1980) << 9 | 2 << 5 | 29, 11 << 11 | 59 << 5 | 29}, /* leap day */
        {4354819199000ll, INT32_MAX, 127 << 9 | 12 << 5 | 31, 23 << 11 | 59 << 5 | 29},     /* 2107-12-31 23:59:59 */
        {INT64_MAX, INT32_MAX, 127 << 9 | 12 << 5 | 31, 23 << 11 | 59 << 5 | 29},
        {INT64_MIN, INT32_MIN, 0 << 9 | 1 << 5 | 1, 0},
    };
    const char *names[] = {longname, "a", "b", "c", "d", "e", "f", "g"};
    for (size_t i = 0; i < CP_ARRAY_LEN(t); i++) {
        assert_int_equal(cp_zipw_begin(w, names[i], t[i].ms, (int)(i & 1)), CP_OK);
        assert_int_equal(cp_zipw_data(w, names[i], strlen(names[i])), CP_OK);
        assert_int_equal(cp_zipw_end(w), CP_OK);
    }
    assert_int_equal(cp_zipw_finish(w), CP_OK);
    cp_zipw_free(w);
    zr_archive a;
    cp_buf got[CP_ARRAY_LEN(t)];
    for (size_t i = 0; i < CP_ARRAY_LEN(t); i++) cp_buf_init(&got[i]);
    zr_read(&z, &a, got);
    assert_int_equal(a.n, CP_ARRAY_LEN(t));
    for (size_t i = 0; i < CP_ARRAY_LEN(t); i++) {
        assert_string_equal(a.e[i].name, names[i]);
        assert_memory_equal(got[i].data, names[i], strlen(names[i]));
        assert_int_equal(a.e[i].mtime, t[i].unix_s);
        assert_int_equal(a.e[i].dos_date, t[i].date);
        assert_int_equal(a.e[i].dos_time, t[i].time);
        cp_buf_free(&got[i]);
    }
    zr_free(&a);
    outside_check(&z, names, CP_ARRAY_LEN(t), "2023,12,19,6,17,34", 0, NULL);
    free(longname);
    cp_buf_free(&z);
}

static int fail_sink_calls;
static int fail_sink(void *ud, const void *p, size_t n)
{
    (void)p;
    (void)n;
    int *left = ud;
    fail_sink_calls++;
    return --*left == 0 ? -77 : 0;
}

static void test_misuse_and_sink_errors(void **state)
{
    (void)state;
    cp_buf z;
    cp_buf_init(&z);
    cp_zipw *w;
    assert_int_equal(cp_zipw_new(NULL, &z, &w), CP_EINVAL);
    assert_int_equal(cp_zipw_new(buf_sink, &z, &w), CP_OK);
    assert_int_equal(cp_zipw_data(w, "x", 1), CP_EINVAL); /* no entry */
    assert_int_equal(cp_zipw_end(w), CP_EINVAL);
    assert_int_equal(cp_zipw_begin(w, "a", 0, 1), CP_OK);
    assert_int_equal(cp_zipw_begin(w, "b", 0, 1), CP_EINVAL); /* a is not ended */
    assert_int_equal(cp_zipw_finish(w), CP_EINVAL);
    assert_int_equal(cp_zipw_data(w, NULL, 1), CP_EINVAL);
    assert_int_equal(cp_zipw_data(w, "x", 1), CP_OK);
    assert_int_equal(cp_zipw_end(w), CP_OK);
    assert_int_equal(cp_zipw_finish(w), CP_OK);
    assert_int_equal(cp_zipw_begin(w, "c", 0, 0), CP_EINVAL); /* after finish */
    assert_int_equal(cp_zipw_finish(w), CP_EINVAL);
    cp_zipw_free(w);
    zr_archive a;
    zr_read(&z, &a, NULL);
    assert_int_equal(a.n, 1);
    zr_free(&a);
    cp_buf_free(&z);
    cp_zipw_free(NULL);

    /* a sink failing at its k-th call: that call's API function returns its status, and
     * every later call returns it again without touching the sink */
    for (int k = 1; k <= 6; k++) {
        int left = k;
        fail_sink_calls = 0;
        assert_int_equal(cp_zipw_new(fail_sink, &left, &w), CP_OK);
        int st = CP_OK, seen = 0;
        for (int e = 0; e < 2 && !seen; e++) {
            char big[300000];
            memset(big, 'a' + e, sizeof big);
            int r;
            if ((r = cp_zipw_begin(w, e ? "two" : "one", 0, e)) != CP_OK) st = r;
            else if ((r = cp_zipw_data(w, big, sizeof big)) != CP_OK) st = r;
            else if ((r = cp_zipw_end(w)) != CP_OK) st = r;
            seen = st != CP_OK;
        }
        if (!seen) st = cp_zipw_finish(w);
        assert_int_equal(st, -77);
        int calls = fail_sink_calls;
        assert_int_equal(cp_zipw_data(w, "x", 1), -77);
        assert_int_equal(cp_zipw_end(w), -77);
        assert_int_equal(cp_zipw_finish(w), -77);
        assert_int_equal(fail_sink_calls, calls);
        cp_zipw_free(w);
    }
}

/* Writes n one-byte stored entries; returns whether ZIP64 end records were needed. */
static void many_entries(size_t n, cp_buf *z, char ***names_out)
{
    cp_zipw *w;
    assert_int_equal(cp_zipw_new(buf_sink, z, &w), CP_OK);
    char **names = malloc(n * sizeof *names);
    for (size_t i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "pod-%zu/%06zu.td.txt", i % 7, i);
        names[i] = strdup(name);
        assert_int_equal(cp_zipw_begin(w, name, T_MS, (int)(i % 5 == 0)), CP_OK);
        uint8_t b = (uint8_t)i;
        assert_int_equal(cp_zipw_data(w, &b, 1), CP_OK);
        assert_int_equal(cp_zipw_end(w), CP_OK);
    }
    assert_int_equal(cp_zipw_finish(w), CP_OK);
    cp_zipw_free(w);
    *names_out = names;
}

/* More than 65535 entries need the ZIP64 end record; 65534 do not. */
static void test_zip64_entry_count(void **state)
{
    (void)state;
    static const size_t counts[] = {65534, 65535, 65540};
    for (size_t c = 0; c < CP_ARRAY_LEN(counts); c++) {
        size_t n = counts[c];
        cp_buf z;
        cp_buf_init(&z);
        char **names;
        many_entries(n, &z, &names);
        zr_archive a;
        zr_read(&z, &a, NULL);
        assert_int_equal(a.n, n);
        assert_int_equal(a.zip64_end, n >= 0xFFFF);
        const uint8_t *end = z.data + z.len - 22;
        assert_int_equal(le16(end + 10), n >= 0xFFFF ? 0xFFFF : n);
        for (size_t i = 0; i < n; i += 997) {
            assert_string_equal(a.e[i].name, names[i]);
            assert_int_equal(a.e[i].usize, 1);
            assert_int_equal(a.e[i].zip64_fields, 0); /* small entries need no ZIP64 extra */
        }
        assert_string_equal(a.e[n - 1].name, names[n - 1]);
        probe(&z, n, names[0], 1, n);
        if (n == 65540) outside_check(&z, (const char *const *)names, n, "2023,12,19,6,17,34", 1, NULL);
        for (size_t i = 0; i < n; i++) free(names[i]);
        free(names);
        zr_free(&a);
        cp_buf_free(&z);
    }
}

/* ---- an entry above 4 GiB ------------------------------------------------------------------- */

#define BLOCK (1u << 20)

/* Keeps the bytes written while `keep` is set, with their archive offsets; counts the
 * others and checks they are the caller's block itself (stored data is not copied). */
typedef struct big_sink {
    int keep;
    uint64_t off;                /* archive bytes so far */
    cp_buf kept;
    uint64_t kept_off[16];       /* start offset of each kept segment in kept */
    size_t kept_at[16], nseg;
    const uint8_t *block;
    uint64_t passed;
    uint64_t data_off, data_len;  /* the big entry's data, for big_pread */
} big_sink;

static int big_write(void *ud, const void *p, size_t n)
{
    big_sink *s = ud;
    if (s->keep) {
        if (s->nseg == 0 || s->kept_off[s->nseg - 1] + (s->kept.len - s->kept_at[s->nseg - 1]) != s->off) {
            assert_true(s->nseg < 16);
            s->kept_off[s->nseg] = s->off;
            s->kept_at[s->nseg++] = s->kept.len;
        }
        assert_int_equal(cp_buf_append(&s->kept, p, n), CP_OK);
    } else {
        assert_true(p >= (const void *)s->block && (const uint8_t *)p + n <= s->block + BLOCK);
        s->passed += n;
    }
    s->off += n;
    return 0;
}

/* pread over the virtual archive: kept segments as kept, the big entry's data region
 * [data_off, data_off + data_len) rebuilt from the block (cp_zip_probe searches the last
 * 64 KiB for the end record, which here reaches into the data); anything else fails. */
static int big_pread(void *ud, void *dst, size_t n, uint64_t off)
{
    big_sink *s = ud;
    uint8_t *out = dst;
    while (n) {
        size_t got = 0;
        for (size_t i = 0; i < s->nseg && !got; i++) {
            size_t seglen = (i + 1 < s->nseg ? s->kept_at[i + 1] : s->kept.len) - s->kept_at[i];
            if (off >= s->kept_off[i] && off < s->kept_off[i] + seglen) {
                got = (size_t)(s->kept_off[i] + seglen - off);
                if (got > n) got = n;
                memcpy(out, s->kept.data + s->kept_at[i] + (off - s->kept_off[i]), got);
            }
        }
        if (!got && off >= s->data_off && off < s->data_off + s->data_len) {
            out[0] = s->block[(off - s->data_off) % BLOCK];
            got = 1;
        }
        if (!got) return CP_EIO;
        out += got;
        off += got;
        n -= got;
    }
    return CP_OK;
}

static const uint8_t *kept_at(const big_sink *s, uint64_t off, size_t n)
{
    uint8_t *tmp = NULL;
    for (size_t i = 0; i < s->nseg; i++) {
        size_t seglen = (i + 1 < s->nseg ? s->kept_at[i + 1] : s->kept.len) - s->kept_at[i];
        if (off >= s->kept_off[i] && off + n <= s->kept_off[i] + seglen)
            return s->kept.data + s->kept_at[i] + (off - s->kept_off[i]);
    }
    fail_msg("offset %llu (+%zu) was not kept", (unsigned long long)off, n);
    return tmp;
}

static void test_zip64_big_entry(void **state)
{
    (void)state;
    uint8_t *block = malloc(BLOCK);
    uint64_t seed = 7;
    for (size_t i = 0; i < BLOCK; i++) block[i] = (uint8_t)test_rand(&seed);
    const uint64_t nblocks = 4096, tail = 12345;  /* 4 GiB + 12345 bytes */
    const uint64_t size = nblocks * BLOCK + tail;
    uLong bcrc = crc32(0, block, BLOCK), want = 0;
    for (uint64_t i = 0; i < nblocks; i++) want = crc32_combine(want, bcrc, BLOCK);
    want = crc32_combine(want, crc32(0, block, (uInt)tail), (z_off_t)tail);

    big_sink s = {0};
    cp_buf_init(&s.kept);
    s.block = block;
    s.keep = 1;
    cp_zipw *w;
    assert_int_equal(cp_zipw_new(big_write, &s, &w), CP_OK);
    assert_int_equal(cp_zipw_begin(w, "pod/20240731T225935.hprof.zip", T_MS, 0), CP_OK);
    uint64_t hdr1 = cp_zipw_bytes(w);
    s.keep = 0;
    for (uint64_t i = 0; i < nblocks; i++) assert_int_equal(cp_zipw_data(w, block, BLOCK), CP_OK);
    assert_int_equal(cp_zipw_data(w, block, (size_t)tail), CP_OK);
    assert_int_equal(s.passed, size);
    s.data_off = hdr1;
    s.data_len = size;
    s.keep = 1;
    assert_int_equal(cp_zipw_end(w), CP_OK);
    uint64_t desc1 = hdr1 + size;
    assert_int_equal(cp_zipw_bytes(w), desc1 + 24);
    /* a second entry beyond 4 GiB: its offset needs the ZIP64 extra */
    uint64_t off2 = cp_zipw_bytes(w);
    assert_int_equal(cp_zipw_begin(w, "pod/after.txt", T_MS, 1), CP_OK);
    assert_int_equal(cp_zipw_data(w, "after the big one\n", 18), CP_OK);
    assert_int_equal(cp_zipw_end(w), CP_OK);
    uint64_t cd = cp_zipw_bytes(w);
    assert_int_equal(cp_zipw_finish(w), CP_OK);
    uint64_t total = cp_zipw_bytes(w);
    assert_int_equal(total, s.off);
    cp_zipw_free(w);

    /* the big entry's local header: sizes unknown, so ZIP64 marker + extra with zeros */
    const uint8_t *l1 = kept_at(&s, 0, (size_t)hdr1);
    assert_int_equal(hdr1, 30 + 29 + 29);
    assert_int_equal(le32(l1), 0x04034b50);
    assert_int_equal(le16(l1 + 4), 45);
    assert_int_equal(le32(l1 + 22), U32);
    assert_int_equal(le16(l1 + 30 + 29), 0x0001);
    /* the descriptor of the big entry */
    const uint8_t *d = kept_at(&s, desc1, 24);
    assert_int_equal(le32(d), 0x08074b50);
    assert_int_equal(le32(d + 4), (uint32_t)want);
    assert_int_equal(le64(d + 8), size);
    assert_int_equal(le64(d + 16), size);
    /* the central directory and end records */
    zr_archive a;
    zr_central(kept_at(&s, cd, (size_t)(total - cd)), (size_t)(total - cd), cd, &a);
    assert_int_equal(a.zip64_end, 1); /* the directory's offset is above 4 GiB */
    assert_int_equal(a.cd_off, cd);
    const uint8_t *end = kept_at(&s, total - 22, 22);
    assert_int_equal(le32(end + 16), U32);
    assert_int_equal(a.n, 2);
    assert_string_equal(a.e[0].name, "pod/20240731T225935.hprof.zip");
    assert_int_equal(a.e[0].zip64_fields, 2); /* both sizes, not the offset (0) */
    assert_int_equal(a.e[0].usize, size);
    assert_int_equal(a.e[0].csize, size);
    assert_int_equal(a.e[0].offset, 0);
    assert_int_equal(a.e[0].crc, (uint32_t)want);
    assert_int_equal(a.e[0].needed, 45);
    assert_string_equal(a.e[1].name, "pod/after.txt");
    assert_int_equal(a.e[1].zip64_fields, 1); /* the offset only */
    assert_int_equal(a.e[1].offset, off2);
    assert_int_equal(a.e[1].usize, 18);
    /* the second entry, whole from the kept bytes */
    cp_buf one, got;
    cp_buf_init(&one);
    cp_buf_init(&got);
    assert_int_equal(cp_buf_append(&one, kept_at(&s, off2, (size_t)(cd - off2)), (size_t)(cd - off2)), CP_OK);
    zr_entry e2 = a.e[1];
    e2.offset = 0;
    assert_int_equal(zr_entry_data(one.data, one.len, &e2, &got), one.len);
    assert_memory_equal(got.data, "after the big one\n", 18);
    /* cp_zip_probe reads only end records and the directory */
    cp_zip_info zi;
    char err[256];
    int st = cp_zip_probe(big_pread, &s, total, &zi, err, sizeof err);
    if (st != CP_OK) fail_msg("cp_zip_probe: %s", err);
    assert_int_equal(zi.entries, 2);
    assert_string_equal(zi.first_name, "pod/20240731T225935.hprof.zip");
    assert_int_equal(zi.first_size, size);
    assert_int_equal(zi.total_size, size + 18);
    cp_buf_free(&one);
    cp_buf_free(&got);
    zr_free(&a);
    cp_buf_free(&s.kept);
    free(block);
}

/* ---- classic archives (cp_zipw_classic) ------------------------------------------------------- */

/* The parts of an .xlsx, deflated and stored, read back by the reader above and the
 * outside tools; nothing of ZIP64 anywhere. */
static void test_classic(void **state)
{
    (void)state;
    const char *names[] = {"[Content_Types].xml", "xl/worksheets/sheet1.xml", "empty", "random.bin"};
    enum { N = 4 };
    const int deflate[N] = {1, 1, 0, 0};
    cp_buf data[N];
    for (int i = 0; i < N; i++) cp_buf_init(&data[i]);
    cp_buf_puts(&data[0], "<?xml version=\"1.0\"?><Types/>");
    for (int i = 0; i < 20000; i++) cp_buf_printf(&data[1], "<row r=\"%d\"><c><v>%d</v></c></row>", i + 1, i * 7);
    uint64_t seed = 11;
    for (int i = 0; i < 100000; i++) cp_buf_putc(&data[3], (uint8_t)test_rand(&seed));
    cp_buf z;
    cp_buf_init(&z);
    g_classic = 1;
    write_entries(&z, names, data, deflate, N, T_MS, &seed);
    zr_archive a;
    cp_buf got[N];
    for (int i = 0; i < N; i++) cp_buf_init(&got[i]);
    zr_read(&z, &a, got);
    g_classic = 0;
    assert_int_equal(a.n, N);
    assert_int_equal(a.zip64_end, 0);
    cp_buf all;
    cp_buf_init(&all);
    for (int i = 0; i < N; i++) {
        assert_string_equal(a.e[i].name, names[i]);
        assert_int_equal(a.e[i].zip64_fields, 0);
        assert_int_equal(got[i].len, data[i].len);
        if (data[i].len) assert_memory_equal(got[i].data, data[i].data, data[i].len);
        cp_buf_append(&all, data[i].data, data[i].len);
    }
    probe(&z, N, names[0], data[0].len, all.len);
    outside_check(&z, names, N, "2023,12,19,6,17,34", 1, &all);
    for (int i = 0; i < N; i++) {
        cp_buf_free(&data[i]);
        cp_buf_free(&got[i]);
    }
    cp_buf_free(&all);
    zr_free(&a);
    cp_buf_free(&z);
}

/* cp_zipw_level: each entry deflated at the level set before its begin; all read back. */
static void test_levels(void **state)
{
    (void)state;
    cp_buf text;
    cp_buf_init(&text);
    uint64_t seed = 5;
    for (int i = 0; i < 20000; i++) /* XML-like: repetitive, with some entropy */
        cp_buf_printf(&text, "<row r=\"%d\"><c r=\"A%d\"><v>%llu</v></c></row>", i, i,
                      (unsigned long long)(test_rand(&seed) % 100000));
    static const int levels[] = {0, 1, 9, 1}; /* 0: the default (6) */
    const char *names[] = {"default", "one", "nine", "one-again"};
    cp_buf z;
    cp_buf_init(&z);
    cp_zipw *w;
    assert_int_equal(cp_zipw_new(buf_sink, &z, &w), CP_OK);
    for (int i = 0; i < 4; i++) {
        if (levels[i]) cp_zipw_level(w, levels[i]);
        assert_int_equal(cp_zipw_begin(w, names[i], T_MS, 1), CP_OK);
        assert_int_equal(cp_zipw_data(w, text.data, text.len), CP_OK);
        assert_int_equal(cp_zipw_end(w), CP_OK);
    }
    assert_int_equal(cp_zipw_finish(w), CP_OK);
    cp_zipw_free(w);
    zr_archive a;
    cp_buf got[4];
    for (int i = 0; i < 4; i++) cp_buf_init(&got[i]);
    zr_read(&z, &a, got);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(got[i].len, text.len);
        assert_memory_equal(got[i].data, text.data, text.len);
        cp_buf_free(&got[i]);
    }
    /* the levels did apply: 1 is larger than the default, which is not smaller than 9 */
    assert_true(a.e[1].csize > a.e[0].csize);
    assert_true(a.e[0].csize >= a.e[2].csize);
    assert_int_equal(a.e[3].csize, a.e[1].csize);
    zr_free(&a);
    cp_buf_free(&z);
    cp_buf_free(&text);
}

static int count_sink(void *ud, const void *p, size_t n)
{
    (void)p;
    *(uint64_t *)ud += n;
    return 0;
}

/* A classic archive stops where its 32-bit sizes and offsets and its 16-bit entry count
 * would overflow, with a sticky CP_ELIMIT, instead of writing what a reader would misread. */
static void test_classic_limits(void **state)
{
    (void)state;
    uint64_t bytes = 0;
    cp_zipw *w;
    /* 65534 entries fit the end record's 16 bits (0xFFFF is ZIP64's marker); one more not */
    assert_int_equal(cp_zipw_new(count_sink, &bytes, &w), CP_OK);
    cp_zipw_classic(w);
    for (int i = 0; i < 65534; i++) {
        assert_int_equal(cp_zipw_begin(w, "e", 0, 0), CP_OK);
        assert_int_equal(cp_zipw_end(w), CP_OK);
    }
    assert_int_equal(cp_zipw_begin(w, "e", 0, 0), CP_ELIMIT);
    assert_int_equal(cp_zipw_finish(w), CP_ELIMIT);
    cp_zipw_free(w);
    /* an entry of 4 GiB - 2 bytes fits (0xFFFFFFFF is ZIP64's marker); one byte more is
     * refused before it reaches the sink; after it the next entry's offset would not fit */
    uint8_t *block = calloc(1, BLOCK);
    bytes = 0;
    assert_int_equal(cp_zipw_new(count_sink, &bytes, &w), CP_OK);
    cp_zipw_classic(w);
    assert_int_equal(cp_zipw_begin(w, "big", 0, 0), CP_OK);
    for (unsigned i = 0; i < 4095; i++) assert_int_equal(cp_zipw_data(w, block, BLOCK), CP_OK);
    assert_int_equal(cp_zipw_data(w, block, BLOCK - 2), CP_OK);
    uint64_t before = bytes;
    assert_int_equal(cp_zipw_data(w, block, 1), CP_ELIMIT);
    assert_int_equal(bytes, before);
    assert_int_equal(cp_zipw_end(w), CP_ELIMIT); /* sticky */
    cp_zipw_free(w);
    bytes = 0;
    assert_int_equal(cp_zipw_new(count_sink, &bytes, &w), CP_OK);
    cp_zipw_classic(w);
    assert_int_equal(cp_zipw_begin(w, "big", 0, 0), CP_OK);
    for (unsigned i = 0; i < 4095; i++) assert_int_equal(cp_zipw_data(w, block, BLOCK), CP_OK);
    assert_int_equal(cp_zipw_data(w, block, BLOCK - 2), CP_OK);
    assert_int_equal(cp_zipw_end(w), CP_OK);
    assert_true(cp_zipw_bytes(w) > U32);
    assert_int_equal(cp_zipw_begin(w, "next", 0, 0), CP_ELIMIT);
    assert_int_equal(cp_zipw_finish(w), CP_ELIMIT);
    cp_zipw_free(w);
    free(block);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_one_stored),
        cmocka_unit_test(test_mixed_entries),
        cmocka_unit_test(test_names_and_times),
        cmocka_unit_test(test_misuse_and_sink_errors),
        cmocka_unit_test(test_zip64_entry_count),
        cmocka_unit_test(test_zip64_big_entry),
        cmocka_unit_test(test_classic),
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_classic_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
