/* fuzz_asm.c -- libFuzzer target: call assembly (src/model/asm.c, cp_asm.h) over what the
 * trace and calls decoders make of hostile streams.
 *
 * Input: a 4-byte big-endian length L, L bytes of trace stream file, then the calls
 * stream file. Byte 0 of the trace part (if any) picks the limits: max_extents 4..67 (so
 * the expiry, the slim rings' squeeze and shrink and duplicate pointers run on small
 * inputs), whether the assembler's words go to a shared pool, and how the two files are
 * interleaved (a slice of each in turn, or the whole trace first: the extents then wait
 * as slim entries). The sql and xml files 1 are the calls part's bytes (hostile values for
 * the references that land there), read through a resolved-value cache whose pool's budget
 * byte 1 of the trace part picks (x 256 bytes; 0 = no budget).
 *
 * Checked: no crash, no leak, no sanitizer report; every calls record given to the
 * assembler comes out exactly once by the final pump (calls_out == calls_in, nothing
 * pending); kept extents stay within max_extents + the threads' open ones after each
 * trace slice; the shared pools are empty once the assembler is freed, and the value
 * pool never goes past its budget. */
#include "fuzz_common.h"
#include "model/cp_asm.h"
#include "model/cp_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fz_asm {
    const uint8_t *trace;
    size_t trace_fed;
    const uint8_t *values; /* the sql and xml files */
    size_t values_len;
    cp_asm *a;
    uint64_t emitted;
} fz_asm;

static long fa_read(void *ud, cp_stream_kind kind, int32_t idx, uint64_t off, void *buf, size_t n)
{
    fz_asm *f = ud;
    if ((kind == CP_STREAM_SQL || kind == CP_STREAM_XML) && idx == 1) {
        FZ_CHECK(off + n <= f->values_len, "value read past the file");
        memcpy(buf, f->values + off, n);
        return (long)n;
    }
    if (kind != CP_STREAM_TRACE || idx != 1) return CP_ENOTFOUND;
    FZ_CHECK(off + n <= f->trace_fed, "read past what was stored: %llu + %zu > %zu", (unsigned long long)off, n,
             f->trace_fed);
    memcpy(buf, f->trace + off, n);
    return (long)n;
}

static int64_t fa_size(void *ud, cp_stream_kind kind, int32_t idx)
{
    fz_asm *f = ud;
    if ((kind == CP_STREAM_SQL || kind == CP_STREAM_XML) && idx == 1) return (int64_t)f->values_len;
    return kind == CP_STREAM_TRACE && idx == 1 ? (int64_t)f->trace_fed : -1;
}

static int fa_emit(void *ud, const cp_call *c)
{
    fz_asm *f = ud;
    FZ_CHECK(!c->trace == !!c->trace_reason, "a call has a trace or a reason, not both or neither");
    f->emitted++;
    return 0;
}

static int fa_trace(void *ud, const cp_trace_rec *r)
{
    fz_asm *f = ud;
    return cp_asm_trace(f->a, 1, r, 1000) == CP_ENOMEM;
}

static int fa_call(void *ud, const cp_call_rec *r)
{
    fz_asm *f = ud;
    return cp_asm_call(f->a, r, 1000) == CP_ENOMEM;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    size_t tl = (size_t)cp_be32(data);
    if (tl > size - 4) tl = size - 4;
    const uint8_t *trace = data + 4, *calls = trace + tl;
    size_t cl = size - 4 - tl;
    uint8_t knobs = tl ? trace[0] : 0;

    cp_asm_limits lim;
    cp_asm_limits_default(&lim);
    lim.max_extents = 4 + (knobs & 63);
    lim.max_trace_bytes = 1u << 16;
    cp_wordpool *pool = knobs & 64 ? cp_wordpool_new() : NULL;
    cp_membudget values = {.budget = (size_t)(tl > 1 ? trace[1] : 0) * 256};
    fz_asm f = {.trace = trace, .values = calls, .values_len = cl};
    cp_asm_pod pod = {"ns", "svc", "pod", 1};
    cp_asm_io io = {.ud = &f, .read = fa_read, .size = fa_size, .emit = fa_emit, .words = pool, .values = &values};
    f.a = cp_asm_new(&pod, &lim, &io);
    if (!f.a) {
        cp_wordpool_free(pool);
        return 0;
    }
    cp_dec_sink sink = {.ud = &f, .on_trace = fa_trace, .on_call = fa_call};
    cp_dec *dt = cp_dec_new(CP_STREAM_TRACE, NULL, &sink, 0), *dc = cp_dec_new(CP_STREAM_CALLS, NULL, &sink, 0);
    if (dt && dc) {
        /* slices of 16..271 bytes in turn, or the whole trace first */
        size_t step = knobs & 128 ? tl + 1 : 16 + (size_t)(tl ? trace[tl / 2] : 0);
        size_t tpos = 0, cpos = 0;
        int tdone = 0, cdone = 0;
        while (!tdone || !cdone) {
            if (!tdone) {
                size_t n = tl - tpos < step ? tl - tpos : step;
                f.trace_fed = tpos + n; /* stored first, decoded after (as the server does) */
                if (cp_dec_feed(dt, trace + tpos, n) != CP_OK) tdone = 1;
                tpos += n;
                if (tpos == tl) tdone = 1;
                cp_asm_stats st;
                cp_asm_get_stats(f.a, &st);
                FZ_CHECK(st.extents_live <= lim.max_extents + 1024, "extents kept: %zu", st.extents_live);
            }
            if (!cdone) {
                size_t n = cl - cpos < step ? cl - cpos : step;
                if (cp_dec_feed(dc, calls + cpos, n) != CP_OK) cdone = 1;
                cpos += n;
                if (cpos == cl) cdone = 1;
            }
            FZ_CHECK(cp_asm_pump(f.a, 1000, 0) == CP_OK, "pump");
            FZ_CHECK(!values.budget || values.used <= values.budget, "value caches %zu over %zu", values.used,
                     values.budget);
        }
        FZ_CHECK(cp_asm_pump(f.a, 2000, 1) == CP_OK, "final pump");
        cp_asm_stats st;
        cp_asm_get_stats(f.a, &st);
        FZ_CHECK(cp_asm_pending(f.a) == 0, "%zu calls still pending", cp_asm_pending(f.a));
        FZ_CHECK(st.calls_out == st.calls_in && f.emitted == st.calls_in, "calls in %llu, out %llu, emitted %llu",
                 (unsigned long long)st.calls_in, (unsigned long long)st.calls_out, (unsigned long long)f.emitted);
    }
    cp_dec_free(dt);
    cp_dec_free(dc);
    cp_asm_free(f.a);
    FZ_CHECK(cp_wordpool_words(pool) == 0, "words left in the pool");
    FZ_CHECK(values.used == 0, "%zu bytes left in the value pool", values.used);
    cp_wordpool_free(pool);
    return 0;
}
