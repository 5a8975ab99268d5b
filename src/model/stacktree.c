/* stacktree.c -- sampled stacks merged into a call tree (cp_stacktree.h is the contract).
 *
 * Layout as in tree.c: everything index-based (uint32) so arrays grow without
 * invalidating references; frame texts are interned per tree (text -> index) and a node's
 * child for a frame is found in one tree-wide open-addressing table keyed by (parent,
 * frame). Node 0 is the synthetic root. cp_tree itself cannot be reused: it builds from
 * trace blobs (enter/exit events with times), and samples carry weights, not times.
 *
 * A sample is added in two passes: a look-up pass finds how much of its stack exists and
 * what it would cost (new nodes, new text bytes), so a stack over a budget is refused
 * before anything changes; then the missing nodes are created and the weights added
 * along the path. Derived numbers (calls) and the child order are computed only when
 * the tree is written, without recursion.
 */
#include "model/cp_stacktree.h"
#include "common/cp_map.h"
#include "common/cp_strtab.h"

#include <stdio.h>
#include <stdlib.h>

#define NONE UINT32_MAX
#define MAX_INDEX (UINT32_MAX - 2) /* indexes stay clear of NONE and of "+1" encodings */

void cp_stacktree_limits_default(cp_stacktree_limits *l)
{
    l->max_nodes = 1000000;
    l->max_text_bytes = (size_t)256 << 20;
    l->max_depth = 4096;
    l->max_frame_bytes = 4096;
}

/* The reason into err (cp_set_err), and st. */
#define fail(err, errlen, st, ...) (cp_set_err((err), (errlen), __VA_ARGS__), (st))

static int64_t sat_add(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b; /* b >= 0 everywhere here */
}

/* Bytes of p[0..n) kept under a cap of max: never ends inside a UTF-8 sequence, so a cut
 * text stays as valid as it was. */
static size_t utf8_cut(const char *p, size_t n, size_t max)
{
    if (n <= max) return n;
    size_t k = max;
    while (k > 0 && ((uint8_t)p[k] & 0xC0) == 0x80) k--;
    return k;
}


/* ---- the tree ------------------------------------------------------------------------- */

typedef struct snode {
    uint32_t frame, parent, first_child, next_sibling;
    int64_t total, self, inv;
} snode;

struct cp_stacktree {
    cp_stacktree_limits lim;
    cp_strtab frames;
    snode *nodes;                /* node 0: the synthetic root */
    size_t nnodes, capnodes;
    cp_u64map children;          /* (parent << 32 | frame) -> the child's node index */
    uint32_t *path;              /* scratch: the nodes of the stack being added */
    size_t cappath;
    size_t samples, cut;
};

cp_stacktree *cp_stacktree_new(const cp_stacktree_limits *l)
{
    cp_stacktree *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    cp_stacktree_limits_default(&t->lim);
    if (l) {
        if (l->max_nodes) t->lim.max_nodes = l->max_nodes;
        if (l->max_text_bytes) t->lim.max_text_bytes = l->max_text_bytes;
        if (l->max_depth) t->lim.max_depth = l->max_depth;
        if (l->max_frame_bytes) t->lim.max_frame_bytes = l->max_frame_bytes;
    }
    if (cp_grow((void **)&t->nodes, &t->capnodes, 1, sizeof *t->nodes, 64) != CP_OK) {
        free(t);
        return NULL;
    }
    t->nodes[0] = (snode){NONE, NONE, NONE, NONE, 0, 0, 0};
    t->nnodes = 1;
    return t;
}

void cp_stacktree_free(cp_stacktree *t)
{
    if (!t) return;
    cp_strtab_free(&t->frames);
    free(t->nodes);
    cp_u64map_free(&t->children);
    free(t->path);
    free(t);
}

size_t cp_stacktree_samples(const cp_stacktree *t) { return t->samples; }
size_t cp_stacktree_nodes(const cp_stacktree *t) { return t->nnodes - 1; }
int64_t cp_stacktree_total(const cp_stacktree *t) { return t->nodes[0].total; }
size_t cp_stacktree_cut_stacks(const cp_stacktree *t) { return t->cut; }
const cp_stacktree_limits *cp_stacktree_limits_of(const cp_stacktree *t) { return &t->lim; }

static uint64_t edge_key(uint32_t parent, uint32_t frame) { return (uint64_t)parent << 32 | frame; }

static uint32_t node_find(const cp_stacktree *t, uint32_t parent, uint32_t frame)
{
    uint64_t v;
    return cp_u64map_get(&t->children, edge_key(parent, frame), &v) ? (uint32_t)v : NONE;
}

/* The parent's child for frame, created on first use (the budget was checked before). */
static int node_child(cp_stacktree *t, uint32_t parent, uint32_t frame, uint32_t *out)
{
    uint32_t id = node_find(t, parent, frame);
    if (id != NONE) {
        *out = id;
        return CP_OK;
    }
    if (cp_grow((void **)&t->nodes, &t->capnodes, t->nnodes + 1, sizeof *t->nodes, 64) != CP_OK) return CP_ENOMEM;
    id = (uint32_t)t->nnodes;
    if (cp_u64map_put(&t->children, edge_key(parent, frame), id) != CP_OK) return CP_ENOMEM;
    t->nnodes++;
    t->nodes[id] = (snode){frame, parent, NONE, t->nodes[parent].first_child, 0, 0, 0};
    t->nodes[parent].first_child = id;
    *out = id;
    return CP_OK;
}

/* A frame's text cut to the frame budget; a NULL text (with len 0) is "". */
static const char *frame_text(const cp_stacktree *t, const cp_stack_frame *f, size_t *len)
{
    if (!f->text) {
        *len = 0;
        return "";
    }
    *len = utf8_cut(f->text, f->len, t->lim.max_frame_bytes);
    return f->text;
}

/* The cost of a stack (n frames kept): nodes to create and bytes of new text. The stack
 * exists down to the first frame whose text or node is unknown; every frame below it is
 * a new node. Texts repeated inside the new part are counted each time: an estimate
 * that can only refuse a stack a little early, never let one pass the budget. */
static void stack_cost(const cp_stacktree *t, const cp_stack_frame *f, size_t n, size_t *new_nodes,
                       size_t *new_text)
{
    uint32_t at = 0;
    size_t i = 0;
    *new_text = 0;
    for (; i < n; i++) {
        size_t len;
        const char *p = frame_text(t, &f[i], &len);
        uint32_t fr = cp_strtab_find(&t->frames, p, len);
        if (fr == NONE) break;
        uint32_t c = node_find(t, at, fr);
        if (c == NONE) break;
        at = c;
    }
    *new_nodes = n - i;
    for (size_t k = i; k < n; k++) {
        size_t len;
        const char *p = frame_text(t, &f[k], &len);
        if (cp_strtab_find(&t->frames, p, len) == NONE) *new_text += len;
    }
}

static int check_budget(const cp_stacktree *t, const cp_stack_frame *f, size_t n, char *err, size_t errlen)
{
    size_t new_nodes, new_text;
    stack_cost(t, f, n, &new_nodes, &new_text);
    size_t nodes = t->nnodes - 1;
    if (new_nodes > t->lim.max_nodes - nodes || t->nnodes + new_nodes >= MAX_INDEX)
        return fail(err, errlen, CP_ELIMIT, "the tree would exceed %zu nodes", t->lim.max_nodes);
    if (new_text > t->lim.max_text_bytes - t->frames.text.len || t->frames.n + new_nodes >= MAX_INDEX)
        return fail(err, errlen, CP_ELIMIT, "the frame texts would exceed %zu bytes", t->lim.max_text_bytes);
    return CP_OK;
}

int cp_stacktree_add(cp_stacktree *t, const cp_stack_frame *frames, size_t n, int64_t weight, char *err,
                     size_t errlen)
{
    if (weight < 0) return fail(err, errlen, CP_EINVAL, "negative weight %lld", (long long)weight);
    if (n && !frames) return fail(err, errlen, CP_EINVAL, "no frames");
    int cut = n > t->lim.max_depth;
    if (cut) n = t->lim.max_depth;
    int st = check_budget(t, frames, n, err, errlen);
    if (st != CP_OK) return st;
    if (cp_grow((void **)&t->path, &t->cappath, n + 1, sizeof *t->path, 64) != CP_OK)
        return fail(err, errlen, CP_ENOMEM, "out of memory");
    uint32_t at = 0;
    t->path[0] = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t fr;
        size_t len;
        const char *p = frame_text(t, &frames[i], &len);
        if (cp_strtab_intern(&t->frames, p, len, &fr) != CP_OK || node_child(t, at, fr, &at) != CP_OK)
            return fail(err, errlen, CP_ENOMEM, "out of memory");
        t->path[i + 1] = at;
    }
    /* weights only once the whole path exists: a failure above changed no number */
    for (size_t i = 0; i <= n; i++) {
        snode *x = &t->nodes[t->path[i]];
        x->total = sat_add(x->total, weight);
        x->inv++;
    }
    snode *leaf = &t->nodes[t->path[n]];
    leaf->self = sat_add(leaf->self, weight);
    t->samples++;
    t->cut += cut;
    return CP_OK;
}

/* ---- JSON ---------------------------------------------------------------------------- */


/* What the output needs besides the nodes: calls per node and the children in order. */
typedef struct layout {
    int64_t *calls;    /* sum of invocations of every node below */
    uint32_t *kids;    /* children in output order, grouped by parent ... */
    size_t *kstart;    /* ... node i's are kids[kstart[i] .. kstart[i + 1]) */
} layout;

static void layout_free(layout *d)
{
    free(d->calls);
    free(d->kids);
    free(d->kstart);
}

typedef struct child_key {
    int64_t total, self, invcalls, inv;
    const char *text;
    size_t len;
    uint32_t node;
} child_key;

static int desc64(int64_t a, int64_t b) { return a > b ? -1 : a < b ? 1 : 0; }

/* cp_tree's order without its always-zero suspension keys. */
static int child_cmp(const void *pa, const void *pb)
{
    const child_key *a = pa, *b = pb;
    int c;
    if ((c = desc64(a->total, b->total)) || (c = desc64(a->self, b->self)) || (c = desc64(a->invcalls, b->invcalls)) ||
        (c = desc64(a->inv, b->inv)))
        return c;
    size_t n = a->len < b->len ? a->len : b->len;
    if (n && (c = memcmp(a->text, b->text, n))) return c;
    if (a->len != b->len) return a->len < b->len ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

/* Children are created after their parents (higher index): one reverse sweep sums every
 * subtree without recursion. */
static void sum_calls(const cp_stacktree *t, layout *d)
{
    for (size_t i = t->nnodes; i-- > 1;) {
        uint32_t p = t->nodes[i].parent;
        d->calls[p] = sat_add(d->calls[p], sat_add(t->nodes[i].inv, d->calls[i]));
    }
}

static int order_children(const cp_stacktree *t, layout *d)
{
    size_t n = t->nnodes;
    child_key *keys = malloc(n * sizeof *keys);
    if (!keys) return CP_ENOMEM;
    for (size_t i = 1; i < n; i++) d->kstart[t->nodes[i].parent + 1]++;
    for (size_t i = 0; i < n; i++) d->kstart[i + 1] += d->kstart[i];
    for (size_t i = 0; i < n; i++) {
        size_t k = d->kstart[i];
        for (uint32_t c = t->nodes[i].first_child; c != NONE; c = t->nodes[c].next_sibling) {
            const snode *x = &t->nodes[c];
            child_key *key = &keys[k++];
            key->total = x->total;
            key->self = x->self;
            key->inv = x->inv;
            key->invcalls = sat_add(x->inv, d->calls[c]);
            key->text = cp_strtab_get(&t->frames, x->frame, &key->len);
            key->node = c;
        }
        size_t cnt = k - d->kstart[i];
        if (cnt > 1) qsort(&keys[d->kstart[i]], cnt, sizeof *keys, child_cmp);
    }
    for (size_t i = 0; i + 1 < n; i++) d->kids[i] = keys[i].node;
    free(keys);
    return CP_OK;
}

static int layout_make(const cp_stacktree *t, layout *d)
{
    size_t n = t->nnodes;
    d->calls = calloc(n, sizeof *d->calls);
    d->kstart = calloc(n + 1, sizeof *d->kstart);
    d->kids = malloc(n * sizeof *d->kids);
    if (!d->calls || !d->kstart || !d->kids) return CP_ENOMEM;
    sum_calls(t, d);
    return order_children(t, d);
}

/* A node up to (not including) its children; the root's method is the label's index. */
static int put_node_head(const cp_stacktree *t, const layout *d, cp_buf *out, uint32_t id)
{
    const snode *x = &t->nodes[id];
    int st = cp_buf_put_field(out, "{\"method\":", id ? (int64_t)x->frame : (int64_t)t->frames.n);
    st = st ? st : cp_buf_put_field(out, ",\"total\":", x->total);
    st = st ? st : cp_buf_put_field(out, ",\"self\":", x->self);
    st = st ? st : cp_buf_puts(out, ",\"suspension\":0,\"self_suspension\":0");
    st = st ? st : cp_buf_put_field(out, ",\"invocations\":", x->inv);
    st = st ? st : cp_buf_put_field(out, ",\"calls\":", d->calls[id]);
    return st ? st : cp_buf_puts(out, ",\"first\":0,\"last\":0");
}

/* Depth-first from the root with an explicit stack of (node, next child position). */
static int put_nodes(const cp_stacktree *t, const layout *d, cp_buf *out)
{
    typedef struct level {
        uint32_t node;
        size_t next;
    } level;
    level *stack = NULL;
    size_t depth = 0, cap = 0;
    int st = put_node_head(t, d, out, 0);
    if (st == CP_OK && cp_grow((void **)&stack, &cap, 1, sizeof *stack, 64) != CP_OK) st = CP_ENOMEM;
    if (st == CP_OK) stack[depth++] = (level){0, d->kstart[0]};
    while (st == CP_OK && depth) {
        level *l = &stack[depth - 1];
        if (l->next == d->kstart[l->node + 1]) { /* all children written */
            st = cp_buf_puts(out, l->next > d->kstart[l->node] ? "]}" : "}");
            depth--;
            continue;
        }
        uint32_t c = d->kids[l->next];
        st = cp_buf_puts(out, l->next == d->kstart[l->node] ? ",\"children\":[" : ",");
        l->next++;
        st = st ? st : put_node_head(t, d, out, c);
        if (st == CP_OK && cp_grow((void **)&stack, &cap, depth + 1, sizeof *stack, 64) != CP_OK) st = CP_ENOMEM;
        if (st == CP_OK) stack[depth++] = (level){c, d->kstart[c]};
    }
    free(stack);
    return st;
}

static int put_methods(const cp_stacktree *t, const char *label, cp_buf *out)
{
    int st = cp_buf_putc(out, '[');
    for (size_t i = 0; i < t->frames.n && st == CP_OK; i++) {
        size_t len;
        const char *p = cp_strtab_get(&t->frames, (uint32_t)i, &len);
        if (i) st = cp_buf_putc(out, ',');
        st = st ? st : cp_json_str(out, p, len);
    }
    if (t->frames.n) st = st ? st : cp_buf_putc(out, ',');
    st = st ? st : cp_json_str(out, label, strlen(label));
    return st ? st : cp_buf_putc(out, ']');
}

static int put_json(const cp_stacktree *t, const layout *d, const char *label, int64_t start_ms, int64_t end_ms,
                    const char *sampled, size_t sampled_len, cp_buf *out)
{
    int st = cp_buf_puts(out, "{\"version\":1,\"methods\":");
    st = st ? st : put_methods(t, label, out);
    st = st ? st : cp_buf_puts(out, ",\"params\":[],\"calls\":[],\"root\":");
    st = st ? st : put_nodes(t, d, out);
    st = st ? st : cp_buf_puts(out, ",\"truncated\":false");
    st = st ? st : cp_buf_put_field(out, ",\"nodes\":", (int64_t)cp_stacktree_nodes(t));
    st = st ? st : cp_buf_put_field(out, ",\"start_ms\":", start_ms);
    st = st ? st : cp_buf_put_field(out, ",\"end_ms\":", end_ms);
    st = st ? st : cp_buf_puts(out, ",\"sampled\":");
    st = st ? st : (sampled ? cp_buf_append(out, sampled, sampled_len) : cp_buf_puts(out, "{}"));
    return st ? st : cp_buf_putc(out, '}');
}

int cp_stacktree_json(const cp_stacktree *t, const char *root_label, int64_t start_ms, int64_t end_ms,
                      const char *sampled_json, size_t sampled_len, cp_buf *out)
{
    char synth[48];
    if (!root_label) {
        snprintf(synth, sizeof synth, "%zu samples", t->samples);
        root_label = synth;
    }
    size_t start = out->len;
    layout d = {0};
    int st = layout_make(t, &d);
    if (st == CP_OK) st = put_json(t, &d, root_label, start_ms, end_ms, sampled_json, sampled_len, out);
    layout_free(&d);
    if (st != CP_OK) out->len = start;
    return st;
}
