/* buf.c -- status strings and the growable byte buffer. */
#include "cp_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

const char *cp_strstatus(int status)
{
    switch (status) {
    case CP_OK: return "ok";
    case CP_AGAIN: return "incomplete input";
    case CP_EPROTO: return "malformed input";
    case CP_ELIMIT: return "limit exceeded";
    case CP_ENOMEM: return "out of memory";
    case CP_EIO: return "i/o error";
    case CP_EABORT: return "aborted";
    case CP_EINVAL: return "invalid argument";
    case CP_ENOTFOUND: return "not found";
    case CP_ECORRUPT: return "corrupt data";
    default: return "unknown error";
    }
}

void cp_buf_init(cp_buf *b)
{
    b->data = NULL;
    b->len = b->cap = 0;
}

void cp_buf_free(cp_buf *b)
{
    free(b->data);
    cp_buf_init(b);
}

int cp_buf_reserve(cp_buf *b, size_t extra)
{
    if (extra > SIZE_MAX / 2 - b->len) return CP_ENOMEM;
    size_t need = b->len + extra;
    if (need <= b->cap) return CP_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    uint8_t *p = realloc(b->data, cap);
    if (!p) return CP_ENOMEM;
    b->data = p;
    b->cap = cap;
    return CP_OK;
}

int cp_buf_append(cp_buf *b, const void *p, size_t n)
{
    if (n == 0) return CP_OK;
    if (cp_buf_reserve(b, n) != CP_OK) return CP_ENOMEM;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return CP_OK;
}

int cp_buf_putc(cp_buf *b, uint8_t c)
{
    if (b->len == b->cap && cp_buf_reserve(b, 1) != CP_OK) return CP_ENOMEM;
    b->data[b->len++] = c;
    return CP_OK;
}

int cp_buf_puts(cp_buf *b, const char *s) { return cp_buf_append(b, s, strlen(s)); }

int cp_buf_printf(cp_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return CP_EINVAL;
    if ((size_t)n < sizeof tmp) return cp_buf_append(b, tmp, (size_t)n);
    if (cp_buf_reserve(b, (size_t)n + 1) != CP_OK) return CP_ENOMEM;
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return CP_OK;
}

void cp_buf_consume(cp_buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

int cp_grow(void **arr, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap) return CP_OK;
    size_t n = *cap ? *cap : (first ? first : 16);
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem) return CP_ENOMEM;
        n *= 2;
    }
    void *p = realloc(*arr, n * elem);
    if (!p) return CP_ENOMEM;
    *arr = p;
    *cap = n;
    return CP_OK;
}

int cp_buf_put_i64(cp_buf *b, int64_t v)
{
    char tmp[24];
    size_t n = sizeof tmp;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[--n] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) tmp[--n] = '-';
    return cp_buf_append(b, tmp + n, sizeof tmp - n);
}

int cp_buf_put_named_i64(cp_buf *b, const char *name, size_t n, int64_t v)
{
    int st = cp_buf_append(b, name, n);
    return st != CP_OK ? st : cp_buf_put_i64(b, v);
}
