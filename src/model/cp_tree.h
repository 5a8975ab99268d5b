/* cp_tree.h -- merged call trees (ui.md §4.1, §4.10; API shape ui.md §8.5).
 *
 * A tree is built from the trace blobs of one or more calls (cp_model.h). Walking a
 * blob's events with a stack: on ENTER the current node's child with the same method
 * (compared by method *text*, so calls of different pod restarts merge) is reused or
 * created and pushed; on EXIT the invocation's numbers are added to the node. Per node:
 *
 *   total            sum over invocations of (exit - enter)
 *   self             total - sum of children's total
 *   suspension       sum over invocations of the overlap of [enter, exit] with the
 *                    blob's pauses (overlapping pauses merged first)
 *   self_suspension  suspension - sum of children's suspension
 *   invocations      times the method ran directly under this parent
 *   calls            sum of invocations of every node below
 *   first, last      earliest enter / latest exit relative to the tree's start
 *
 * TAG events attach (param, value) to the invocation on top of the stack; the
 * `call.info` tag with an empty value is skipped (protocol.md §5.5). At EXIT the
 * invocation's values are folded into the node's parameter groups: a value of an
 * SQL-like param (paramType 3, the deduplicated big-value stream, and the `binds`
 * param) groups by its SQL signature (cp_sql_signature) and keeps its distinct texts as
 * variants (top 20 by duration, then "::other"); other values group by exact text. A
 * `binds` value nests under the most recent SQL value of the same invocation. Each group
 * carries duration = sum of the totals of the invocations that had a value in it (once
 * per invocation) and count = those invocations. At most 256 groups per container: the
 * group with the smallest duration folds into the param's "::other" group. Groups are
 * ordered by duration descending, "::other" last. Big values come from the blob (xml:
 * paramType 1, sql: paramType 3); an unresolved one is a group whose value is the
 * reference text "<kind>:<file>:<offset>" with `unresolved: true`.
 *
 * One call: the root is the call's root method. Several calls: a synthetic root whose
 * method is "<N> calls" holds every call's root (merged by method text); its numbers are
 * the sums of its children's.
 *
 * Children are ordered by total desc, then self, suspension, self_suspension,
 * invocations + calls, invocations (all desc), then method text (asc, for a stable
 * order).
 */
#ifndef CP_TREE_H
#define CP_TREE_H

#include "model/cp_model.h"

typedef struct cp_tree_limits {
    size_t max_nodes;      /* distinct nodes (default 1 000 000): over it -> CP_ELIMIT */
    size_t max_events;     /* events walked over all calls (default 50 000 000) */
    size_t max_groups;     /* groups per container (default 256) */
    size_t max_variants;   /* variants kept per SQL group before "::other" (default 20) */
    size_t trim_chars;     /* values longer than this are cut in the JSON (default 15 000),
                            * with "trimmed": true and their full length */
} cp_tree_limits;

void cp_tree_limits_default(cp_tree_limits *l);

typedef struct cp_tree cp_tree;

/* l may be NULL for defaults. NULL on ENOMEM. */
cp_tree *cp_tree_new(const cp_tree_limits *l);
void cp_tree_free(cp_tree *t);

/* Adds one call's events. CP_ECORRUPT if the trace is not a valid trace file or its
 * first event is not an ENTER; CP_ELIMIT over a budget. err gets a one-line reason.
 * A trace that ends before its depth-0 EXIT (cut) closes the open invocations at the
 * last event's time and marks the tree `truncated`. */
int cp_tree_add(cp_tree *t, const cp_blob *b, char *err, size_t errlen);

/* Names the call the next cp_tree_add walks (its API id, len bytes; copied). A value
 * longer than trim_chars that starts a group while it is the current call gets
 * "source":id in the JSON: the call to ask GET /calls/{id}/value for the whole text, for
 * trees that list no calls (an aggregate profile). Only the ids of such calls are kept.
 * CP_OK or CP_ENOMEM. */
int cp_tree_set_source(cp_tree *t, const char *id, size_t len);

/* Number of calls added / nodes so far. */
size_t cp_tree_calls(const cp_tree *t);
size_t cp_tree_nodes(const cp_tree *t);

/* Appends the tree as JSON:
 *
 *   {"version":1,"methods":[string],"params":[string],"calls":CALLS,
 *    "root":Node,"truncated":bool,"nodes":N,"start_ms":..,"end_ms":..}
 *   Node  = {"method":index,"total":..,"self":..,"suspension":..,"self_suspension":..,
 *            "invocations":..,"calls":..,"first":..,"last":..,
 *            "params":[Param]?, "children":[Node]?}
 *   Param = {"param":index,"groups":[Group]}
 *   Group = {"value":string,"duration":..,"count":..,"variants":[{"value","duration",
 *            "count"}]?,"params":[Param]?,"unresolved":true?,"trimmed":true?,
 *            "length":full_length?, "ref":"<kind>:<file>:<offset>"?,"key":"<16 hex>"?,
 *            "source":"<call id>"?}
 *
 * A value longer than trim_chars characters is cut to them, with "trimmed", "length" (in
 * characters) and "key": cp_tree_value_key of the whole value's UTF-8 text, as 16
 * lower-case hex digits. For a group by SQL signature that is its representative (first)
 * text, for a variant its own text. The key depends on the text only, so it is the same
 * in every tree that holds the value, and cp_tree_want_value gets the text back.
 * "source" (cp_tree_set_source) names the call the trimmed value was first seen in.
 *
 * `methods` and `params` are the tree's own dictionaries (indexes into them). calls_json
 * is inserted verbatim as CALLS (a JSON array the caller built; NULL -> []). */
int cp_tree_json(const cp_tree *t, const char *calls_json, size_t calls_len, cp_buf *out);

/* ---- whole values (GET /calls/{id}/value) ---------------------------------------------- */

/* The key of a value (its "key" in the JSON when trimmed): a 64-bit hash of its bytes. */
uint64_t cp_tree_value_key(const char *text, size_t len);

/* Asks the tree to keep, while calls are added, the whole text of a value of the param
 * named param[0..plen) whose key is `key`: every value is looked at (a node's, binds
 * nested under SQL, the variants of a signature group), whether or not its group ends up
 * shown. Only that one text is copied, and only if it has at most max_bytes bytes, so the
 * memory is bounded whatever the trace holds. Call before cp_tree_add. CP_OK or CP_ENOMEM. */
int cp_tree_want_value(cp_tree *t, const char *param, size_t plen, uint64_t key, size_t max_bytes);

/* After the calls were added: CP_OK with the whole value in *text and *len (owned by the tree,
 * valid until cp_tree_free), CP_ENOTFOUND when no value of the param had the key,
 * CP_ELIMIT when it has *len bytes, over max_bytes; CP_EINVAL without cp_tree_want_value. */
int cp_tree_find_value(const cp_tree *t, const char **text, size_t *len);

/* SQL signature (ui.md §4.1): commas removed, single-quoted literals removed (a doubled
 * quote inside a literal belongs to it), digits removed, every word (letters, digits,
 * underscore) replaced by its first character, whitespace removed. Appends to out. */
int cp_sql_signature(const char *s, size_t n, cp_buf *out);

#endif
