/* fuzz_dec_posdictionary.c -- libFuzzer target: the posdictionary stream decoder. The input is a stream file;
 * fz_check_decoder (fuzz_common.h) decodes it whole, cut into pieces and with a sink
 * that stops early, and aborts if the results disagree. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_check_decoder(CP_STREAM_POSDICTIONARY, data, size, NULL);
    return 0;
}
