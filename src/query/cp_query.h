/* cp_query.h -- what a calls query is made of, parsed from the API's text parameters:
 * the duration filter (ui.md §3.4), the classic search syntax (ui.md §3.5), sort
 * columns, call ids and keyset cursors. Pure: no I/O.
 */
#ifndef CP_QUERY_H
#define CP_QUERY_H

#include "model/cp_model.h"

#include <stdint.h>

/* ---- duration filter (ui.md §3.4) ---------------------------------------------------
 *
 *   filter := lower | upper | exact | range
 *   lower  := [ ">" | ">=" ] amount        upper := ( "<" | "<=" ) amount
 *   exact  := "=" amount                   range := amount ".." { "." } amount
 *   amount := number [ "ms" | "s" ]        number := digits [ "." digits ]
 *
 * Spaces anywhere are ignored. No unit = seconds. Bounds inclusive, rounded to whole ms;
 * range ends may be swapped. Empty text = no filter (min 0, max INT64_MAX). */
typedef struct cp_duration_filter {
    int64_t min_ms;   /* 0 = no lower bound */
    int64_t max_ms;   /* INT64_MAX = no upper bound */
} cp_duration_filter;

/* CP_OK, or CP_EINVAL with a reason in err ("abc", ">", "1..", "5m" are invalid). */
int cp_duration_parse(const char *s, size_t n, cp_duration_filter *out, char *err, size_t errlen);

/* ---- the search syntax (ui.md §3.5) -------------------------------------------------
 *
 *   query := term { space term }       term := [ "+" | "-" ] atom
 *   atom  := phrase | param | word     param := "$" name "=" ( word | phrase )
 *   phrase:= '"'..'"' | "'"..."'" | "`"..."`"
 *
 * Unsigned terms are optional (at least one must match when any exist), "+" required,
 * "-" excluded. Matching is case-insensitive (ASCII folding) substring matching. An
 * unnamed atom matches the method, the pod name, any param name or any param value
 * (params whose name starts with "_" are ignored by unnamed atoms). $name=value matches
 * the values of the param `name` (name compared case-insensitively); $method= and
 * $node.name= match the method and the pod name. "$name" without "=" is a word. */
#define CP_SEARCH_MAX_TEXT 1000   /* characters of query text accepted */
#define CP_SEARCH_MAX_TERMS 64

typedef struct cp_search cp_search;

/* An empty (or all-space) text gives a search that matches everything. CP_EINVAL with a
 * reason for an unterminated quote, "$=x", too many terms, text over the limit. */
int cp_search_parse(const char *s, size_t n, cp_search **out, char *err, size_t errlen);
void cp_search_free(cp_search *q);
int cp_search_is_empty(const cp_search *q);
/* Values of $name=value terms that are required or the only optional term: a call can
 * match only if its param `name` has a value containing one of them (for index pruning
 * in the cold tier). Calls fn(name, value) for each; returns how many. */
size_t cp_search_required_params(const cp_search *q,
                                 void (*fn)(void *ud, const char *name, size_t nlen, const char *val, size_t vlen),
                                 void *ud);

/* Prefilter needles: a call can match only if one of the returned lowercase texts occurs
 * (ASCII case-insensitively) in its method, its pod name, a param name or a param value
 * -- the longest required term, else every optional term. Fills needles[0..max) with
 * pointers into q (and lens), returns how many; 0 when the search has no such condition
 * (only excluded terms, an empty term) or more than max would be needed. */
size_t cp_search_needles(const cp_search *q, const char **needles, size_t *lens, size_t max);

/* 1 if the lowercased needle nd[0..nn) occurs in h[0..hn), ASCII letters compared
 * case-insensitively (the search's substring test; SSE2 where available). */
int cp_ci_contains(const char *h, size_t hn, const char *nd, size_t nn);

/* 1 if the call matches, 0 if not. Never allocates. Thread-safe for a shared q. */
int cp_search_match(const cp_search *q, const cp_call_view *v);

/* ---- params JSON ({"name":["v",...],...} as cp_call.params_json) --------------------- */

/* Iterates the params: fn(name, value) per value, strings unescaped into a scratch
 * buffer. fn returns non-zero to stop (returned). CP_ECORRUPT if the text is not of
 * that shape. */
typedef int (*cp_params_fn)(void *ud, const char *name, size_t nlen, const char *val, size_t vlen);
int cp_params_each(const char *json, size_t n, cp_params_fn fn, void *ud);
/* The same, with name_fn(name) first for each member (also those with no values). */
typedef int (*cp_params_name_fn)(void *ud, const char *name, size_t nlen);
int cp_params_walk(const char *json, size_t n, cp_params_name_fn name_fn, cp_params_fn fn, void *ud);

/* ---- system calls (ui.md §3.6 "hide system/proxy calls") ---------------------------- */

/* The default idle list: substrings of the method of scheduler, listener and cluster
 * housekeeping loops. */
extern const char *const cp_system_idle_default[];
extern const size_t cp_system_idle_default_count;

/* 1 if the call is a system call: its method contains one of idle[0..nidle), it carries
 * `call.idle` or `async.absorbed`, or its method or `web.url` contains a probe or
 * socket-read marker (SocketInputStream.read, /actuator/{ready,health,metrics,prometheus},
 * /probes/{live,ready}, case-insensitively). Thread-safe. */
int cp_system_call(const cp_call_view *v, const char *const *idle, size_t nidle);

/* The method part of cp_system_call's verdict remembered by method text: the hot
 * writers test millions of calls of a few thousand methods, and the idle list and
 * markers cost ~20 substring scans of each method. A memo belongs to one thread and one
 * idle list; zero-filled (or cp_system_memo_clear) is empty. A slot keeps a 64-bit hash
 * of the text, so two texts meet in one slot only by a hash collision. */
#define CP_SYSTEM_MEMO_SLOTS 4096
typedef struct cp_system_memo {
    uint64_t key[CP_SYSTEM_MEMO_SLOTS]; /* hash | 1 (0 = empty); bit 0 of val = verdict */
    uint8_t val[CP_SYSTEM_MEMO_SLOTS];
} cp_system_memo;
void cp_system_memo_clear(cp_system_memo *m);
/* cp_system_call through the memo (same answer). */
int cp_system_call_memo(cp_system_memo *m, const cp_call_view *v, const char *const *idle, size_t nidle);

/* ---- sort columns ------------------------------------------------------------------ */

/* "duration" / "-duration" (the API's field names, "-" = descending; "+" or nothing =
 * ascending). CP_EINVAL for an unknown column. Default when n == 0: -ts_ms. */
int cp_sort_parse(const char *s, size_t n, cp_sort_col *col, int *desc);
const char *cp_sort_name(cp_sort_col col);     /* API field name */

/* ---- call ids ---------------------------------------------------------------------
 *
 * Opaque to clients, stable forever (derived from the call's data, so the same call has
 * the same id hot or cold): "<ts_ms>-<restart_ms>-<trace_file_index>-<buffer_offset>-
 * <record_index>-<pod_hash as 16 hex>", all decimal but the hash. No commas, URL-safe. */
#define CP_CALL_ID_MAX 96
/* Writes the id (NUL-terminated) into out[CP_CALL_ID_MAX]. */
void cp_call_id_format(const cp_call_ref *r, char *out);
/* CP_EINVAL if s is not an id. */
int cp_call_id_parse(const char *s, size_t n, cp_call_ref *out);

/* ---- keyset cursors ------------------------------------------------------------------
 *
 * A page ends at a row; the next page starts strictly after it in the sort order
 * (sort column in its direction, then ts_ms desc, then the call ref desc). The cursor
 * carries that row's key, the hash of the filters it was issued for (re-sending other
 * filters with it is an error) and its issue time (it expires). Text: base64url. */
typedef struct cp_cursor {
    uint64_t filter_hash;
    int64_t issued_ms;
    cp_sort_key key;        /* the last row of the page */
} cp_cursor;

#define CP_CURSOR_MAX 1500
/* Writes the cursor text (NUL-terminated) into out[CP_CURSOR_MAX]. */
void cp_cursor_format(const cp_cursor *c, char *out);
/* CP_EINVAL if malformed. */
int cp_cursor_parse(const char *s, size_t n, cp_cursor *out);

/* 64-bit FNV-1a over a byte string, for filter hashes. Chainable: pass the previous
 * hash as seed (start with CP_FNV_SEED). */
#define CP_FNV_SEED 0xcbf29ce484222325ULL
uint64_t cp_fnv64(uint64_t seed, const void *p, size_t n);

#endif
