/* cp_dumptext.h -- the text dumps read into values (dumps-http.md §8.1-§8.3): Java thread
 * dumps (jstack format), per-thread `top` snapshots and JVM unified-logging GC logs.
 *
 * Pure code: text in, a parsed value out, no I/O. Input is untrusted: lines of any length,
 * any bytes, any number of threads/rows/events up to the bounds below (CP_ELIMIT beyond).
 * Unknown lines are skipped, never an error: a dump is still shown when the JVM adds a
 * line format this parser has not seen. Every parsed value owns its strings (copied,
 * NUL-terminated, control bytes other than tab kept as they are) and is freed with one call.
 */
#ifndef CP_DUMPTEXT_H
#define CP_DUMPTEXT_H

#include "common/cp_common.h"

#include <stddef.h>
#include <stdint.h>

#define CP_DUMPTEXT_MAX_BYTES (256u << 20) /* input bytes */
#define CP_TD_MAX_THREADS 100000
#define CP_TD_MAX_FRAMES 1000000           /* frames of a whole dump */
#define CP_TOP_MAX_ROWS 100000
#define CP_GC_MAX_EVENTS 1000000

/* ---- thread dump (§8.1) ------------------------------------------------------------------ */

typedef enum cp_td_lock_kind {
    CP_TD_LOCKED = 1,        /* - locked <0x..> (a C) */
    CP_TD_WAITING_ON,        /* - waiting on <0x..> (a C) */
    CP_TD_WAITING_TO_LOCK,   /* - waiting to lock <0x..> (a C) */
    CP_TD_PARKING,           /* - parking to wait for  <0x..> (a C) */
    CP_TD_ELIMINATED,        /* - eliminated <owner is scalar replaced> (a C) or <0x..> */
    CP_TD_OWNABLE,           /* an entry of "Locked ownable synchronizers:" */
} cp_td_lock_kind;

typedef struct cp_td_lock {
    cp_td_lock_kind kind;
    const char *addr;        /* "0x000000008f0c1234", or "" when the line has none */
    const char *cls;         /* "java.lang.Object" (after "a "), or "" */
    int frame;               /* index of the frame (within the thread) it is under; -1 for ownable */
} cp_td_lock;

typedef struct cp_td_frame {
    const char *text;        /* after "at ": "java.base@17.0.7/java.lang.Thread.sleep(Native Method)" */
} cp_td_frame;

typedef struct cp_td_thread {
    const char *name;        /* between the first '"' and the last '"' before " #" / " prio=" / " os_prio=" ... */
    int64_t seq;             /* #<seq>, -1 for JVM-internal threads */
    int daemon;
    int prio;                /* -1 when absent */
    int os_prio;             /* -1 when absent */
    double cpu_ms;           /* -1 when absent (JDK 8) */
    double elapsed_s;        /* -1 when absent */
    uint64_t tid;            /* tid=0x.. */
    int64_t nid;             /* nid=0x.. as a number (the OS thread id); -1 when absent */
    const char *header_state;/* the header's state text: "waiting on condition", "runnable"... */
    const char *state;       /* java.lang.Thread.State: "RUNNABLE"...; "" when no such line (JVM threads) */
    const char *state_detail;/* "parking", "sleeping", "on object monitor"; "" when none */
    const cp_td_frame *frames;
    size_t nframes;
    const cp_td_lock *locks; /* in the order of the lines */
    size_t nlocks;
} cp_td_thread;

typedef struct cp_td {
    int64_t time_ms;         /* first line "YYYY-MM-DD HH:MM:SS" read as UTC; -1 if absent */
    const char *vm;          /* "Full thread dump <this>:" without the trailing ':'; "" */
    int64_t smr_length;      /* "_java_thread_list=0x..., length=N": N; -1 if absent */
    const cp_td_thread *threads;
    size_t nthreads;         /* thread blocks (Java + JVM threads) */
    size_t java_threads;     /* blocks with a #<seq> */
    int64_t jni_global_refs, jni_weak_refs; /* trailer; -1 if absent */
    size_t deadlocks;        /* "Found one Java-level deadlock:" = 1, "Found N deadlocks." = N */
} cp_td;

/* Parses a thread dump. An input with no thread block at all is CP_ECORRUPT ("not a
 * thread dump"); *out is NULL then. */
int cp_td_parse(const char *text, size_t n, cp_td **out, char *err, size_t errlen);
void cp_td_free(cp_td *td);

/* Counts threads per state for the dump record: fn(state key, count) once per distinct
 * key in first-seen order, where the key is "<STATE>" or "<STATE> (<detail>)" (e.g.
 * "TIMED_WAITING (parking)"), and "" for threads without a state line. */
void cp_td_state_counts(const cp_td *td, void (*fn)(void *ud, const char *key, size_t count), void *ud);

/* ---- top snapshot (§8.2) --------------------------------------------------------------------- */

typedef struct cp_top_row {
    int64_t pid;             /* the thread id in per-thread mode */
    const char *user;
    const char *pr;          /* "20", "rt" */
    int ni;
    double virt_kib, res_kib, shr_kib; /* suffixes m/g/t (and k) converted to KiB */
    char state;              /* 'R', 'S', 'D', 'T', 'Z', 'I', or '?' */
    double cpu_pct, mem_pct;
    double time_s;           /* TIME+ "m:ss.hh" (or "m:ss", "h:mm:ss"-like "mmm:ss") in seconds */
    const char *command;     /* "Timer c+" as printed */
} cp_top_row;

typedef struct cp_top {
    int64_t pid;             /* "Start collecting CPU usage for PID <pid>"; -1 if absent */
    const char *clock;       /* "06:17:34" from "top - 06:17:34 up ..."; "" */
    const char *uptime;      /* "10 days,  3:04" as printed; "" */
    int users;               /* -1 if absent */
    double load[3];          /* -1 when absent */
    int64_t threads_total, running, sleeping, stopped, zombie; /* -1 when absent */
    double cpu_us, cpu_sy, cpu_ni, cpu_id, cpu_wa, cpu_hi, cpu_si, cpu_st; /* -1 when absent */
    /* memory in KiB whatever the unit printed (KiB/MiB/GiB, numeric or graph mode); -1 if absent */
    double mem_total, mem_free, mem_used, mem_buff_cache;
    double swap_total, swap_free, swap_used, mem_avail;
    const cp_top_row *rows;
    size_t nrows;
} cp_top;

/* Parses a top snapshot. No header line ("PID USER ...") and no "top - " line is
 * CP_ECORRUPT ("not a top snapshot"). */
int cp_top_parse(const char *text, size_t n, cp_top **out, char *err, size_t errlen);
void cp_top_free(cp_top *top);

/* ---- GC log (§8.3) ----------------------------------------------------------------------------- */

typedef struct cp_gc_event {
    int64_t gc_id;           /* GC(<id>) */
    int64_t time_ms;         /* the line's ISO time with offset, as UTC epoch ms (ms precision) */
    double uptime_s;         /* [<uptime>s]; -1 if absent */
    const char *kind;        /* "Pause Young", "Pause Full", "Pause Remark", "Pause Cleanup", ... */
    const char *cause;       /* the parenthesised parts joined by " ": "Allocation Failure",
                              * "Normal G1 Evacuation Pause"; "" when none */
    int64_t before_kib, after_kib, capacity_kib; /* heap before -> after (capacity); -1 if absent */
    double pause_ms;         /* -1 if absent */
} cp_gc_event;

typedef struct cp_gc_log {
    const cp_gc_event *events; /* the pause lines, in file order */
    size_t nevents;
    size_t lines;            /* lines read */
    int64_t first_ms, last_ms; /* first/last decorated line time; -1 when none */
    const char *collector;   /* "Serial" from "Using Serial"; "" */
    int legacy;              /* 1: a JDK 8 format log (no unified-logging decorations):
                              * shown raw, no events */
} cp_gc_log;

/* Parses a GC log. Lines without a decoration or without a pause are counted and skipped;
 * a log with no line at all is still CP_OK (no events). */
int cp_gc_parse(const char *text, size_t n, cp_gc_log **out, char *err, size_t errlen);
void cp_gc_free(cp_gc_log *gc);

#endif
