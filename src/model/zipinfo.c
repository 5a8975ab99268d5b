/* zipinfo.c -- the central directory of a zip archive, read through a pread callback
 * (dumps-http.md §8.4): entry count, the first entry's name, sizes and method.
 *
 * Heap dumps are zips of several GB written by streaming writers: sizes may live in
 * ZIP64 extra fields and the end record may be the ZIP64 one. Only the end records and
 * the central directory are read, never entry data. Every offset and size from the file
 * is checked against the file's size before it is used to read. */
#include "model/cp_dumpfmt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define EOCD_LEN 22
#define EOCD_MAX_COMMENT 65535
#define Z64_LOCATOR_LEN 20
#define Z64_EOCD_LEN 56
#define CDH_LEN 46                     /* central directory file header, fixed part */
#define LFH_LEN 30                     /* local file header, fixed part */
#define MAX_ENTRIES 1000000u
#define WINDOW (256u << 10)            /* > the largest entry: 46 + 3 * 65535 bytes */

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p) { return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16; }
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

typedef struct zrd {
    cp_dump_pread_fn pread;
    void *ud;
    uint64_t size;
    char *err;
    size_t errlen;
} zrd;

/* Reads n bytes at off, which the caller has already checked lie inside the file. */
static int zread(zrd *z, void *dst, size_t n, uint64_t off)
{
    if (off > z->size || n > z->size - off) {
        cp_set_err(z->err, z->errlen, "read of %zu bytes at %llu is past the end of the file", n, (unsigned long long)off);
        return CP_ECORRUPT;
    }
    if (n == 0) return CP_OK;
    int st = z->pread(z->ud, dst, n, off);
    if (st != CP_OK) {
        cp_set_err(z->err, z->errlen, "cannot read %zu bytes at offset %llu: %s", n, (unsigned long long)off,
                cp_strstatus(st));
        return st < 0 ? st : CP_EIO;
    }
    return CP_OK;
}

/* A sliding window over the central directory [start, end): whole entries are looked at
 * in memory without one callback per field. */
typedef struct cdwin {
    uint8_t *buf;
    size_t cap;
    uint64_t off;   /* file offset of buf[0] */
    size_t len;     /* valid bytes */
    uint64_t end;   /* end of the central directory */
} cdwin;

/* Points *p at n bytes at off (off + n <= end, n <= cap, checked by the caller). */
static int win_get(zrd *z, cdwin *w, uint64_t off, size_t n, const uint8_t **p)
{
    if (off < w->off || off - w->off > w->len || n > w->len - (size_t)(off - w->off)) {
        uint64_t left = w->end - off;
        size_t want = left < w->cap ? (size_t)left : w->cap;
        int st = zread(z, w->buf, want, off);
        if (st != CP_OK) return st;
        w->off = off;
        w->len = want;
    }
    *p = w->buf + (off - w->off);
    return CP_OK;
}

/* Finds the end-of-central-directory record in the file's last 64 KiB + 22 bytes. The
 * comment may contain the signature too: the record whose comment ends exactly at the
 * end of the file wins, else the last one whose comment fits. */
static int find_eocd(zrd *z, uint64_t *pos, uint8_t rec[EOCD_LEN])
{
    size_t tail = z->size < EOCD_LEN + EOCD_MAX_COMMENT ? (size_t)z->size : EOCD_LEN + EOCD_MAX_COMMENT;
    uint8_t *buf = malloc(tail);
    if (!buf) return CP_ENOMEM;
    uint64_t base = z->size - tail;
    int st = zread(z, buf, tail, base);
    if (st != CP_OK) {
        free(buf);
        return st;
    }
    size_t found = SIZE_MAX, loose = SIZE_MAX;
    for (size_t i = tail - EOCD_LEN + 1; i-- > 0;) {
        if (buf[i] != 'P' || buf[i + 1] != 'K' || buf[i + 2] != 5 || buf[i + 3] != 6) continue;
        size_t clen = le16(buf + i + 20);
        if (i + EOCD_LEN + clen == tail) {
            found = i;
            break;
        }
        if (loose == SIZE_MAX && i + EOCD_LEN + clen <= tail) loose = i;
    }
    if (found == SIZE_MAX) found = loose;
    if (found != SIZE_MAX) {
        memcpy(rec, buf + found, EOCD_LEN);
        *pos = base + found;
    }
    free(buf);
    if (found == SIZE_MAX) {
        cp_set_err(z->err, z->errlen, "not a zip archive: no end of central directory record");
        return CP_ECORRUPT;
    }
    return CP_OK;
}

/* Where the central directory is, from the end records. */
typedef struct cdloc {
    uint64_t entries, cd_size, cd_off;
    uint64_t limit;   /* the directory must end here: the first end record */
} cdloc;

static int read_end_records(zrd *z, cdloc *loc)
{
    uint8_t e[EOCD_LEN];
    uint64_t epos;
    int st = find_eocd(z, &epos, e);
    if (st != CP_OK) return st;
    uint32_t disk = le16(e + 4), cd_disk = le16(e + 6);
    loc->entries = le16(e + 10);
    uint64_t disk_entries = le16(e + 8);
    loc->cd_size = le32(e + 12);
    loc->cd_off = le32(e + 16);
    loc->limit = epos;

    /* ZIP64: a locator right before the record points at the ZIP64 end record, whose
     * 64-bit values replace the (then usually saturated) 16/32-bit ones. */
    if (epos >= Z64_LOCATOR_LEN) {
        uint8_t l[Z64_LOCATOR_LEN];
        uint64_t lpos = epos - Z64_LOCATOR_LEN;
        st = zread(z, l, sizeof l, lpos);
        if (st != CP_OK) return st;
        if (l[0] == 'P' && l[1] == 'K' && l[2] == 6 && l[3] == 7) {
            uint64_t zoff = le64(l + 8);
            if (le32(l + 4) != 0 || le32(l + 16) > 1) {
                cp_set_err(z->err, z->errlen, "multi-disk zip archives are not supported");
                return CP_ECORRUPT;
            }
            if (zoff > lpos || lpos - zoff < Z64_EOCD_LEN) {
                cp_set_err(z->err, z->errlen, "ZIP64 end record offset %llu is inconsistent with the locator at %llu",
                        (unsigned long long)zoff, (unsigned long long)lpos);
                return CP_ECORRUPT;
            }
            uint8_t r[Z64_EOCD_LEN];
            st = zread(z, r, sizeof r, zoff);
            if (st != CP_OK) return st;
            uint64_t rsize = le64(r + 4);
            if (r[0] != 'P' || r[1] != 'K' || r[2] != 6 || r[3] != 6) {
                cp_set_err(z->err, z->errlen, "no ZIP64 end record at offset %llu", (unsigned long long)zoff);
                return CP_ECORRUPT;
            }
            if (rsize < Z64_EOCD_LEN - 12 || rsize > lpos - zoff - 12) {
                cp_set_err(z->err, z->errlen, "ZIP64 end record size %llu is inconsistent", (unsigned long long)rsize);
                return CP_ECORRUPT;
            }
            disk = le32(r + 16);
            cd_disk = le32(r + 20);
            disk_entries = le64(r + 24);
            loc->entries = le64(r + 32);
            loc->cd_size = le64(r + 40);
            loc->cd_off = le64(r + 48);
            loc->limit = zoff;
        }
    }
    if (disk != 0 || cd_disk != 0 || disk_entries != loc->entries) {
        cp_set_err(z->err, z->errlen, "multi-disk zip archives are not supported");
        return CP_ECORRUPT;
    }
    if (loc->cd_off > loc->limit || loc->cd_size > loc->limit - loc->cd_off) {
        cp_set_err(z->err, z->errlen, "central directory (offset %llu, %llu bytes) does not end before the end record at %llu",
                (unsigned long long)loc->cd_off, (unsigned long long)loc->cd_size, (unsigned long long)loc->limit);
        return CP_ECORRUPT;
    }
    if (loc->entries > MAX_ENTRIES) {
        cp_set_err(z->err, z->errlen, "%llu entries, at most %u are read", (unsigned long long)loc->entries, MAX_ENTRIES);
        return CP_ELIMIT;
    }
    if (loc->entries * CDH_LEN > loc->cd_size) {
        cp_set_err(z->err, z->errlen, "%llu entries do not fit a central directory of %llu bytes",
                (unsigned long long)loc->entries, (unsigned long long)loc->cd_size);
        return CP_ECORRUPT;
    }
    return CP_OK;
}

/* One central directory entry's sizes, with ZIP64 extra fields applied. */
typedef struct cdent {
    uint64_t usize, csize, loff;
    uint16_t method;
    size_t name_len, total;
    const uint8_t *name;
} cdent;

/* The ZIP64 extended information extra field (id 1) holds, in this order, exactly the
 * values saturated to 0xFFFFFFFF in the header. */
static int apply_zip64_extra(zrd *z, uint64_t i, const uint8_t *x, size_t xl, cdent *c)
{
    int need_u = c->usize == 0xFFFFFFFFu, need_c = c->csize == 0xFFFFFFFFu, need_o = c->loff == 0xFFFFFFFFu;
    if (!need_u && !need_c && !need_o) return CP_OK;
    size_t pos = 0;
    while (xl - pos >= 4) {
        uint16_t id = le16(x + pos), sz = le16(x + pos + 2);
        pos += 4;
        if (sz > xl - pos) break; /* padding or junk after the last field */
        if (id == 1) {
            const uint8_t *f = x + pos;
            size_t left = sz;
            uint64_t *vals[3] = {need_u ? &c->usize : NULL, need_c ? &c->csize : NULL, need_o ? &c->loff : NULL};
            for (int k = 0; k < 3; k++) {
                if (!vals[k]) continue;
                if (left < 8) {
                    cp_set_err(z->err, z->errlen, "entry %llu: ZIP64 extra field of %u bytes is too short",
                            (unsigned long long)i, sz);
                    return CP_ECORRUPT;
                }
                *vals[k] = le64(f);
                f += 8;
                left -= 8;
            }
            return CP_OK;
        }
        pos += sz;
    }
    cp_set_err(z->err, z->errlen, "entry %llu: sizes need a ZIP64 extra field, which is missing", (unsigned long long)i);
    return CP_ECORRUPT;
}

static int read_entry(zrd *z, cdwin *w, uint64_t i, uint64_t pos, const cdloc *loc, cdent *c)
{
    const uint8_t *h;
    uint64_t left = w->end - pos;
    if (left < CDH_LEN) {
        cp_set_err(z->err, z->errlen, "entry %llu runs past the central directory", (unsigned long long)i);
        return CP_ECORRUPT;
    }
    int st = win_get(z, w, pos, CDH_LEN, &h);
    if (st != CP_OK) return st;
    if (h[0] != 'P' || h[1] != 'K' || h[2] != 1 || h[3] != 2) {
        cp_set_err(z->err, z->errlen, "entry %llu at offset %llu has no central directory signature",
                (unsigned long long)i, (unsigned long long)pos);
        return CP_ECORRUPT;
    }
    c->method = le16(h + 10);
    c->csize = le32(h + 20);
    c->usize = le32(h + 24);
    c->name_len = le16(h + 28);
    size_t xl = le16(h + 30), cl = le16(h + 32);
    c->loff = le32(h + 42);
    c->total = CDH_LEN + c->name_len + xl + cl;
    if (left < c->total) {
        cp_set_err(z->err, z->errlen, "entry %llu runs past the central directory", (unsigned long long)i);
        return CP_ECORRUPT;
    }
    st = win_get(z, w, pos, c->total, &h);
    if (st != CP_OK) return st;
    c->name = h + CDH_LEN;
    st = apply_zip64_extra(z, i, h + CDH_LEN + c->name_len, xl, c);
    if (st != CP_OK) return st;
    /* the entry's local header and data lie before the central directory */
    if (c->loff > loc->cd_off || loc->cd_off - c->loff < LFH_LEN || c->csize > loc->cd_off - c->loff - LFH_LEN) {
        cp_set_err(z->err, z->errlen,
                "entry %llu: data at offset %llu (%llu bytes) does not fit before the central directory at %llu",
                (unsigned long long)i, (unsigned long long)c->loff, (unsigned long long)c->csize,
                (unsigned long long)loc->cd_off);
        return CP_ECORRUPT;
    }
    return CP_OK;
}

int cp_zip_probe(cp_dump_pread_fn pread, void *ud, uint64_t size, cp_zip_info *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    cp_set_err(err, errlen, "%s", "");
    zrd z = {pread, ud, size, err, errlen};
    if (size < EOCD_LEN) {
        cp_set_err(err, errlen, "not a zip archive: %llu bytes", (unsigned long long)size);
        return CP_ECORRUPT;
    }
    cdloc loc;
    int st = read_end_records(&z, &loc);
    if (st != CP_OK) return st;

    cdwin w = {.end = loc.cd_off + loc.cd_size};
    w.cap = loc.cd_size < WINDOW ? (size_t)loc.cd_size : WINDOW;
    w.buf = malloc(w.cap ? w.cap : 1);
    if (!w.buf) return CP_ENOMEM;
    uint64_t pos = loc.cd_off, total = 0;
    for (uint64_t i = 0; i < loc.entries; i++) {
        cdent c;
        st = read_entry(&z, &w, i, pos, &loc, &c);
        if (st != CP_OK) break;
        if (c.usize > UINT64_MAX - total) {
            cp_set_err(err, errlen, "uncompressed sizes overflow 64 bits at entry %llu", (unsigned long long)i);
            st = CP_ECORRUPT;
            break;
        }
        total += c.usize;
        if (i == 0) {
            size_t k = c.name_len < sizeof out->first_name - 1 ? c.name_len : sizeof out->first_name - 1;
            for (size_t j = 0; j < k; j++) {
                uint8_t b = c.name[j];
                out->first_name[j] = b < 0x20 || b == 0x7f ? '?' : (char)b;
            }
            out->first_name[k] = '\0';
            out->first_size = c.usize;
            out->first_comp_size = c.csize;
            out->first_method = c.method;
            out->first_offset = c.loff;
        }
        pos += c.total;
    }
    free(w.buf);
    if (st != CP_OK) {
        memset(out, 0, sizeof *out);
        return st;
    }
    out->entries = loc.entries;
    out->total_size = total;
    return CP_OK;
}
