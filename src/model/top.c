/* top.c -- a batch-mode, per-thread `top` snapshot read into a cp_top (cp_dumptext.h,
 * dumps-http.md §8.2).
 *
 * The summary lines are recognised by their prefixes ("top - ", "Threads:", "%Cpu(s):",
 * "<unit> Mem", "<unit> Swap") and read as "<number> <name>" pairs, so fields top adds,
 * drops or reorders between versions cost nothing. The row layout comes from the column
 * header ("PID USER ..."): rows are split on blanks, the last COMMAND column takes the rest
 * of the line (thread names hold spaces: "Timer c+"). A row missing a column -- a file
 * cut mid-line -- is skipped. A second "top - " line (a second iteration) ends the
 * snapshot.
 */
#include "dumptext_internal.h"

#include <limits.h>
#include <stdlib.h>

typedef struct top_owned {
    cp_top top; /* first: cp_top_free gets back to the rest */
    dt_arena arena;
    cp_top_row *rows;
    size_t cap_rows;
} top_owned;

enum col { COL_OTHER, COL_PID, COL_USER, COL_PR, COL_NI, COL_VIRT, COL_RES, COL_SHR, COL_S, COL_CPU, COL_MEM, COL_TIME, COL_CMD };

#define TOP_MAX_COLS 64

typedef struct top_parser {
    top_owned *o;
    int seen_top;            /* a "top - " line was read */
    size_t ncols;            /* 0 until the column header */
    unsigned char cols[TOP_MAX_COLS];
    char *err;
    size_t errlen;
} top_parser;

/* ---- values ----------------------------------------------------------------------------------- */

/* KiB per unit letter of top's memory figures (k, m, g, t, p, e; either case). */
static double unit_kib(char c)
{
    switch (c | 0x20) {
    case 'k': return 1;
    case 'm': return 1024.0;
    case 'g': return 1024.0 * 1024;
    case 't': return 1024.0 * 1024 * 1024;
    case 'p': return 1024.0 * 1024 * 1024 * 1024;
    case 'e': return 1024.0 * 1024 * 1024 * 1024 * 1024;
    default: return 0;
    }
}

/* VIRT/RES/SHR: KiB, or a number with a unit suffix; -1 if not a size. */
static double size_kib(dt_span s)
{
    double v, k = 1;
    if (!dt_num(&s, &v) || v < 0) return -1;
    if (s.n == 1) k = unit_kib(s.p[0]);
    else if (s.n != 0) k = 0;
    if (k == 0) return -1;
    v *= k;
    return v < 1e300 ? v : -1;
}

/* TIME+ / TIME: "m:ss.hh", "m:ss", "h:mm:ss", "h,mm" (hours,minutes) and "Nh"/"Nd"/"Nw",
 * the forms procps falls back to as the column runs out of width. -1 if none. */
static double time_s(dt_span s)
{
    int64_t a, b, c;
    double secs;
    if (!dt_int(&s, &a) || a < 0 || a > INT64_MAX / 1000000) return -1;
    if (s.n == 1 && (s.p[0] == 'h' || s.p[0] == 'd' || s.p[0] == 'w'))
        return (double)a * (s.p[0] == 'h' ? 3600 : s.p[0] == 'd' ? 86400 : 604800);
    if (dt_eat(&s, ",")) return dt_int_all(s, &b) && b >= 0 && b < 60 ? (double)a * 3600 + (double)b * 60 : -1;
    if (!dt_eat(&s, ":")) return -1;
    dt_span t = s;
    if (dt_int(&t, &b) && b >= 0 && b < 60 && dt_eat(&t, ":") && dt_int_all(t, &c) && c >= 0 && c < 61)
        return (double)a * 3600 + (double)b * 60 + (double)c;
    if (!dt_num_all(s, &secs) || secs < 0 || secs >= 61) return -1;
    return (double)a * 60 + secs;
}

/* ---- summary lines ---------------------------------------------------------------------------- */

/* "top - 06:17:33 up 12 days, 10:20,  0 user,  load average: 7.57, 5.18, 5.04" */
static int top_header(top_parser *ps, dt_span s)
{
    cp_top *top = &ps->o->top;
    dt_span clock = dt_token(&s);
    top->clock = dt_strdup(&ps->o->arena, clock.p, clock.n);
    if (!top->clock) return CP_ENOMEM;
    dt_span up = s, load = {s.p + s.n, 0};
    size_t k = dt_find(s, "load average:");
    if (k != SIZE_MAX) {
        up.n = k;
        load = (dt_span){s.p + k + 13, s.n - k - 13};
    }
    dt_ltrim(&up);
    if (dt_eat(&up, "up ")) {
        /* up = "12 days, 10:20,  0 user,  ": drop the trailing separators, then a
         * trailing ",  <n> user(s)" is the user count */
        while (up.n && (dt_is_space(up.p[up.n - 1]) || up.p[up.n - 1] == ',')) up.n--;
        if (dt_ends(up, " user") || dt_ends(up, " users")) {
            size_t c = up.n;
            while (c > 0 && up.p[c - 1] != ',') c--;
            dt_span u = {up.p + c, up.n - c};
            int64_t users;
            dt_ltrim(&u);
            if (dt_int(&u, &users) && users >= 0 && users <= INT_MAX && (dt_eat(&u, " users") || dt_eat(&u, " user")) &&
                u.n == 0) {
                top->users = (int)users;
                up.n = c ? c - 1 : 0;
            }
        }
        dt_trim(&up);
        top->uptime = dt_strdup(&ps->o->arena, up.p, up.n);
        if (!top->uptime) return CP_ENOMEM;
    }
    for (int i = 0; i < 3; i++) {
        double v;
        while (load.n && (dt_is_space(load.p[0]) || load.p[0] == ',')) dt_skip(&load, 1);
        if (!dt_num(&load, &v) || v < 0) break;
        top->load[i] = v;
    }
    return CP_OK;
}

/* Calls fn for each "<number>[unit] <name>" of a summary line, the name being words of
 * letters and '/' ("buff/cache", "avail Mem"); separators are ',', '.', blanks. */
static void pairs(dt_span s, void (*fn)(void *ud, double v, char unit, dt_span name), void *ud)
{
    while (s.n) {
        while (s.n && (dt_is_space(s.p[0]) || s.p[0] == ',' || s.p[0] == '.')) dt_skip(&s, 1);
        double v;
        if (!dt_num(&s, &v)) {
            while (s.n && s.p[0] != ',') dt_skip(&s, 1); /* not a pair: up to the next one */
            continue;
        }
        char unit = 0;
        if (s.n && dt_is_alpha(s.p[0]) && (s.n == 1 || dt_is_space(s.p[1]))) {
            unit = s.p[0];
            dt_skip(&s, 1);
        }
        dt_ltrim(&s);
        dt_span name = {s.p, 0};
        while (name.n < s.n) {
            char c = s.p[name.n];
            if (dt_is_alpha(c) || c == '/' || c == '%') name.n++;
            else if (c == ' ' && name.n + 1 < s.n && dt_is_alpha(s.p[name.n + 1])) name.n++;
            else break;
        }
        dt_skip(&s, name.n);
        fn(ud, v, unit, name);
    }
}

static int name_is(dt_span s, const char *lit) { return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0; }

static void on_threads(void *ud, double v, char unit, dt_span name)
{
    cp_top *top = ud;
    if (unit || v < 0 || v > 1e15 || v != (double)(int64_t)v) return;
    int64_t n = (int64_t)v;
    if (name_is(name, "total")) top->threads_total = n;
    else if (name_is(name, "running")) top->running = n;
    else if (name_is(name, "sleeping")) top->sleeping = n;
    else if (name_is(name, "stopped")) top->stopped = n;
    else if (name_is(name, "zombie")) top->zombie = n;
}

static void on_cpu(void *ud, double v, char unit, dt_span name)
{
    cp_top *top = ud;
    if (unit || v < 0) return;
    static const char *const names[] = {"us", "sy", "ni", "id", "wa", "hi", "si", "st"};
    double *dst[] = {&top->cpu_us, &top->cpu_sy, &top->cpu_ni, &top->cpu_id,
                     &top->cpu_wa, &top->cpu_hi, &top->cpu_si, &top->cpu_st};
    for (size_t i = 0; i < CP_ARRAY_LEN(names); i++)
        if (name_is(name, names[i])) *dst[i] = v;
}

typedef struct mem_ctx {
    cp_top *top;
    double unit; /* KiB per unit of the line */
    int swap;
} mem_ctx;

static void on_mem(void *ud, double v, char unit, dt_span name)
{
    mem_ctx *m = ud;
    double k = unit ? unit_kib(unit) : m->unit;
    if (k == 0 || v < 0 || v > 1e280) return;
    v *= k;
    cp_top *top = m->top;
    if (name_is(name, "total")) *(m->swap ? &top->swap_total : &top->mem_total) = v;
    else if (name_is(name, "free")) *(m->swap ? &top->swap_free : &top->mem_free) = v;
    else if (name_is(name, "used")) *(m->swap ? &top->swap_used : &top->mem_used) = v;
    else if (name_is(name, "buff/cache")) top->mem_buff_cache = v;
    else if (name_is(name, "avail Mem")) top->mem_avail = v;
}

/* "MiB Mem :  64308.2 total, ..." or graph mode "KiB Mem : 65.2/12268760 [|||...]" (the
 * figure is the percentage in use of the total). s follows "<unit> ". */
static void mem_line(top_parser *ps, dt_span s, double unit)
{
    cp_top *top = &ps->o->top;
    mem_ctx m = {top, unit, 0};
    if (dt_eat(&s, "Swap")) m.swap = 1;
    else if (!dt_eat(&s, "Mem")) return;
    dt_ltrim(&s);
    if (!dt_eat(&s, ":")) return;
    dt_span g = s;
    double pct, total;
    dt_ltrim(&g);
    if (dt_num(&g, &pct) && dt_eat(&g, "/")) {
        if (!dt_num(&g, &total) || pct < 0 || pct > 100 || total < 0 || total > 1e280) return;
        total *= unit;
        *(m.swap ? &top->swap_total : &top->mem_total) = total;
        *(m.swap ? &top->swap_used : &top->mem_used) = total * pct / 100;
        return;
    }
    pairs(s, on_mem, &m);
}

/* "%Cpu(s):100.0 us,  0.0 sy, ..." or graph mode "%Cpu(s):  12.5/3.1  16[|||...]" (us/sy). */
static void cpu_line(top_parser *ps, dt_span s)
{
    cp_top *top = &ps->o->top;
    dt_span g = s;
    double us, sy;
    dt_ltrim(&g);
    if (dt_num(&g, &us) && dt_eat(&g, "/")) {
        if (dt_num(&g, &sy) && us >= 0 && sy >= 0) {
            top->cpu_us = us;
            top->cpu_sy = sy;
        }
        return;
    }
    pairs(s, on_cpu, top);
}

/* ---- column header and rows ------------------------------------------------------------------------ */

static void column_header(top_parser *ps, dt_span s)
{
    static const struct {
        const char *name;
        unsigned char col;
    } names[] = {
        {"PID", COL_PID}, {"USER", COL_USER}, {"PR", COL_PR},     {"NI", COL_NI},     {"VIRT", COL_VIRT},
        {"RES", COL_RES}, {"SHR", COL_SHR},   {"S", COL_S},       {"%CPU", COL_CPU},  {"%MEM", COL_MEM},
        {"TIME+", COL_TIME}, {"TIME", COL_TIME}, {"COMMAND", COL_CMD},
    };
    ps->ncols = 0;
    for (;;) {
        dt_span tok = dt_token(&s);
        if (!tok.n || ps->ncols == TOP_MAX_COLS) break;
        unsigned char col = COL_OTHER;
        for (size_t i = 0; i < CP_ARRAY_LEN(names); i++)
            if (name_is(tok, names[i].name)) col = names[i].col;
        ps->cols[ps->ncols++] = col;
    }
}

static int row_line(top_parser *ps, dt_span s)
{
    top_owned *o = ps->o;
    cp_top_row r = {.pid = -1, .user = "", .pr = "", .virt_kib = -1, .res_kib = -1, .shr_kib = -1,
                    .state = '?', .cpu_pct = -1, .mem_pct = -1, .time_s = -1, .command = ""};
    dt_span cell[TOP_MAX_COLS];
    for (size_t i = 0; i < ps->ncols; i++) {
        if (ps->cols[i] == COL_CMD && i + 1 == ps->ncols) {
            dt_trim(&s); /* the last COMMAND column holds the rest of the line */
            cell[i] = s;
        } else {
            cell[i] = dt_token(&s);
        }
        if (!cell[i].n) return CP_OK; /* a short (cut) row */
    }
    int64_t v;
    for (size_t i = 0; i < ps->ncols; i++) {
        dt_span c = cell[i];
        switch (ps->cols[i]) {
        case COL_PID:
            if (!dt_int_all(c, &v) || v < 0) return CP_OK; /* not a row */
            r.pid = v;
            break;
        case COL_USER: r.user = c.p; break; /* copied below */
        case COL_PR: r.pr = c.p; break;
        case COL_NI:
            if (dt_int_all(c, &v) && v >= INT_MIN && v <= INT_MAX) r.ni = (int)v;
            break;
        case COL_VIRT: r.virt_kib = size_kib(c); break;
        case COL_RES: r.res_kib = size_kib(c); break;
        case COL_SHR: r.shr_kib = size_kib(c); break;
        case COL_S: r.state = c.n == 1 && memchr("RSDTZI", c.p[0], 6) ? c.p[0] : '?'; break;
        case COL_CPU:
            if (!dt_num_all(c, &r.cpu_pct) || r.cpu_pct < 0) r.cpu_pct = -1;
            break;
        case COL_MEM:
            if (!dt_num_all(c, &r.mem_pct) || r.mem_pct < 0) r.mem_pct = -1;
            break;
        case COL_TIME: r.time_s = time_s(c); break;
        default: break;
        }
    }
    if (r.pid < 0) return CP_OK;
    for (size_t i = 0; i < ps->ncols; i++) {
        const char **dst = ps->cols[i] == COL_USER ? &r.user : ps->cols[i] == COL_PR ? &r.pr
                         : ps->cols[i] == COL_CMD ? &r.command : NULL;
        if (!dst) continue;
        *dst = dt_strdup(&o->arena, cell[i].p, cell[i].n);
        if (!*dst) return dt_fail(ps->err, ps->errlen, CP_ENOMEM, "out of memory");
    }
    if (o->top.nrows >= CP_TOP_MAX_ROWS)
        return dt_fail(ps->err, ps->errlen, CP_ELIMIT, "more than %d top rows", CP_TOP_MAX_ROWS);
    if (cp_grow((void **)&o->rows, &o->cap_rows, o->top.nrows + 1, sizeof *o->rows, 128) != CP_OK)
        return dt_fail(ps->err, ps->errlen, CP_ENOMEM, "out of memory");
    o->rows[o->top.nrows++] = r;
    return CP_OK;
}

/* ---- API ------------------------------------------------------------------------------------------------ */

void cp_top_free(cp_top *top)
{
    if (!top) return;
    top_owned *o = (top_owned *)top;
    dt_arena_free(&o->arena);
    free(o->rows);
    free(o);
}

int cp_top_parse(const char *text, size_t n, cp_top **out, char *err, size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    if (!out || (!text && n)) return dt_fail(err, errlen, CP_EINVAL, "bad arguments");
    *out = NULL;
    if (n > CP_DUMPTEXT_MAX_BYTES)
        return dt_fail(err, errlen, CP_ELIMIT, "top snapshot of %zu bytes (limit %u)", n, CP_DUMPTEXT_MAX_BYTES);
    top_owned *o = calloc(1, sizeof *o);
    if (!o) return dt_fail(err, errlen, CP_ENOMEM, "out of memory");
    dt_arena_init(&o->arena);
    cp_top *top = &o->top;
    top->pid = -1;
    top->clock = top->uptime = "";
    top->users = -1;
    top->load[0] = top->load[1] = top->load[2] = -1;
    top->threads_total = top->running = top->sleeping = top->stopped = top->zombie = -1;
    top->cpu_us = top->cpu_sy = top->cpu_ni = top->cpu_id = -1;
    top->cpu_wa = top->cpu_hi = top->cpu_si = top->cpu_st = -1;
    top->mem_total = top->mem_free = top->mem_used = top->mem_buff_cache = -1;
    top->swap_total = top->swap_free = top->swap_used = top->mem_avail = -1;
    top_parser ps = {.o = o, .err = err, .errlen = errlen};

    int st = CP_OK, header = 0;
    dt_lines it;
    dt_span line;
    dt_lines_init(&it, text, n);
    while (st == CP_OK && dt_next_line(&it, &line)) {
        dt_span s = line;
        dt_ltrim(&s);
        if (dt_eat(&s, "top - ")) {
            if (ps.seen_top || header) break; /* the next iteration */
            ps.seen_top = 1;
            if (top_header(&ps, s) != CP_OK) st = dt_fail(err, errlen, CP_ENOMEM, "out of memory");
        } else if (ps.ncols && s.n && dt_is_digit(s.p[0])) {
            st = row_line(&ps, s);
        } else if (dt_starts(s, "PID ") && (dt_find(s, " USER") != SIZE_MAX || dt_find(s, " COMMAND") != SIZE_MAX)) {
            column_header(&ps, s);
            header = 1;
        } else if (dt_eat(&s, "Start collecting CPU usage for PID ")) {
            int64_t v;
            if (top->pid < 0 && dt_int(&s, &v) && v >= 0) top->pid = v;
        } else if (dt_eat(&s, "Threads:") || dt_eat(&s, "Tasks:")) {
            pairs(s, on_threads, top);
        } else if (dt_eat(&s, "%Cpu(s):")) {
            cpu_line(&ps, s);
        } else if (s.n > 4 && memcmp(s.p + 1, "iB ", 3) == 0 && unit_kib(s.p[0]) > 0 && s.p[0] != 'k') {
            double unit = unit_kib(s.p[0]);
            dt_skip(&s, 4);
            mem_line(&ps, s, unit);
        } else if (dt_starts(s, "Mem:") || dt_starts(s, "Swap:")) {
            mem_line(&ps, s, 1); /* procps 3.2: "Mem:  16330812k total, ..." */
        }
    }
    if (st == CP_OK && !header && !ps.seen_top) st = dt_fail(err, errlen, CP_ECORRUPT, "not a top snapshot");
    if (st != CP_OK) {
        cp_top_free(top);
        return st;
    }
    top->rows = o->rows;
    *out = top;
    return CP_OK;
}
