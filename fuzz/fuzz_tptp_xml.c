/* fuzz_tptp_xml.c -- libFuzzer target: the .trcxml decoder (expat, limits, time and
 * String[] parsing) and the TPTP encoders. The input is a .trcxml document; fzt_check
 * (fuzz_tptp.h) decodes it whole, cut into pieces and with a sink that stops early, and
 * for a document that decodes cleanly checks that re-encoding it as .trcxml and as
 * .trcbin round-trips to the same messages and bytes. */
#include "fuzz_tptp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fzt_check(CP_TPTP_XML, data, size);
    return 0;
}
