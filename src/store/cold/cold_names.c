/* cold_names.c -- names in the cold tier: duration ranges, object keys, inverted-index
 * tables (cp_cold.h). Pure functions. */
#include "store/cp_cold.h"

#include <stdio.h>
#include <time.h>

/* seed 004 Appendix A */
static const int64_t range_lower[CP_COLD_RANGES] = {0, 1, 10, 100, 1000, 5000, 30000, 90000};
static const int32_t range_upper[CP_COLD_RANGES] = {1, 10, 100, 1000, 5000, 30000, 90000, INT32_MAX};
static const char *const range_name[CP_COLD_RANGES] = {"0ms", "1ms", "10ms", "100ms", "1s", "5s", "30s", "90s"};

int cp_cold_range_of(int64_t duration_ms)
{
    int r = 0;
    while (r + 1 < CP_COLD_RANGES && duration_ms >= range_lower[r + 1]) r++;
    return r;
}

int64_t cp_cold_range_lower(int range) { return range >= 0 && range < CP_COLD_RANGES ? range_lower[range] : 0; }

int32_t cp_cold_range_upper(int range)
{
    return range >= 0 && range < CP_COLD_RANGES ? range_upper[range] : INT32_MAX;
}

const char *cp_cold_range_name(int range) { return range >= 0 && range < CP_COLD_RANGES ? range_name[range] : "?"; }

int cp_cold_range_of_upper(int64_t upper)
{
    for (int r = 0; r < CP_COLD_RANGES; r++)
        if (range_upper[r] == upper) return r;
    return -1;
}

static int plain_char(uint8_t ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
           ch == '_' || ch == '-';
}

int cp_cold_ns_component(const char *ns, size_t ns_len, cp_buf *out)
{
    int plain = ns_len > 0 && ns_len <= 128 && !(ns_len == 1 && ns[0] == '.') &&
                !(ns_len == 2 && ns[0] == '.' && ns[1] == '.') && strncmp(ns, "x-", ns_len < 2 ? ns_len : 2) != 0;
    for (size_t i = 0; plain && i < ns_len; i++) plain = plain_char((uint8_t)ns[i]);
    if (plain) return cp_buf_append(out, ns, ns_len);
    /* hex keeps any name reversible and key-safe; very long names are cut (a namespace is
     * at most 63 characters in Kubernetes, so this never merges two real ones) */
    static const char hex[] = "0123456789abcdef";
    int st = cp_buf_puts(out, "x-");
    size_t n = ns_len > 120 ? 120 : ns_len;
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        st = cp_buf_putc(out, (uint8_t)hex[(uint8_t)ns[i] >> 4]);
        if (st == CP_OK) st = cp_buf_putc(out, (uint8_t)hex[(uint8_t)ns[i] & 15]);
    }
    return st;
}

/* <YYYY>/<MM>/<DD>/<HH>/<ns>/cloud_profiler_<name>[.<claim>].parquet */
static int hour_key(int64_t hour_ms, const char *ns, size_t ns_len, const char *name, const char *claim, cp_buf *out)
{
    if (hour_ms < 0) return CP_EINVAL;
    time_t t = (time_t)(hour_ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm)) return CP_EINVAL;
    char hour_claim[64];
    snprintf(hour_claim, sizeof hour_claim, "%04d%02d%02d_%02d00", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour);
    int st = cp_buf_printf(out, "%04d/%02d/%02d/%02d/", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour);
    if (st == CP_OK) st = cp_cold_ns_component(ns, ns_len, out);
    if (st == CP_OK) st = cp_buf_printf(out, "/cloud_profiler_%s", name);
    /* the claim that starts the hour owns the plain name */
    if (st == CP_OK && strcmp(claim, hour_claim) != 0) st = cp_buf_printf(out, ".%s", claim);
    if (st == CP_OK) st = cp_buf_puts(out, ".parquet");
    return st;
}

int cp_cold_calls_key(int64_t hour_ms, const char *ns, size_t ns_len, int range, const char *claim, cp_buf *out)
{
    if (range < 0 || range >= CP_COLD_RANGES) return CP_EINVAL;
    return hour_key(hour_ms, ns, ns_len, range_name[range], claim, out);
}

int cp_cold_rollup_key(int64_t hour_ms, const char *ns, size_t ns_len, const char *claim, cp_buf *out)
{
    return hour_key(hour_ms, ns, ns_len, "rollup", claim, out);
}

void cp_cold_inv_table(const char *param, size_t len, char out[CP_COLD_INV_NAME])
{
    uint32_t h = 0x811c9dc5u;
    for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)param[i]) * 0x01000193u;
    size_t o = 0;
    memcpy(out, "inv_", 4);
    o = 4;
    for (size_t i = 0; i < len && i < 32; i++) {
        uint8_t ch = (uint8_t)param[i];
        if (ch >= 'A' && ch <= 'Z') ch = (uint8_t)(ch - 'A' + 'a');
        out[o++] = (char)((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ? ch : '_');
    }
    snprintf(out + o, CP_COLD_INV_NAME - o, "_%08x", h);
}

int cp_cold_inv_name_ok(const char *name)
{
    if (!name || strncmp(name, "inv_", 4) != 0) return 0;
    size_t n = strlen(name);
    if (n <= 4 || n >= CP_COLD_INV_NAME) return 0;
    for (size_t i = 4; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return 0;
    }
    return 1;
}
