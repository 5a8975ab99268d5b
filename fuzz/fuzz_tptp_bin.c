/* fuzz_tptp_bin.c -- libFuzzer target: the .trcbin decoder and the TPTP encoders. The
 * input is a .trcbin file; fzt_check (fuzz_tptp.h) decodes it whole, cut into pieces and
 * with a sink that stops early, and for a file that decodes cleanly checks that
 * encode -> .trcxml -> decode -> encode gives the same .trcbin bytes as encoding the
 * decoded messages directly. */
#include "fuzz_tptp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fzt_check(CP_TPTP_BIN, data, size);
    return 0;
}
