/* fuzz_dec_sql.c -- libFuzzer target: the sql and xml stream decoders, which share one
 * format (protocol.md §5.6). Each kind gets the full check of fuzz_common.h, and the
 * two kinds must then agree with each other on the same bytes. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_result sql, xml;
    fz_check_decoder(CP_STREAM_SQL, data, size, &sql);
    fz_check_decoder(CP_STREAM_XML, data, size, &xml);
    /* same format: same records, status and committed offset (error texts name the kind) */
    FZ_CHECK(sql.records == xml.records && sql.digest == xml.digest, "sql and xml decode differently");
    FZ_CHECK(sql.finish_status == xml.finish_status, "sql status %d, xml status %d", sql.finish_status,
             xml.finish_status);
    FZ_CHECK(sql.committed == xml.committed, "sql committed %llu, xml %llu", (unsigned long long)sql.committed,
             (unsigned long long)xml.committed);
    return 0;
}
