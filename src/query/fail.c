/* fail.c -- the query parsers' error reporting. */
#include "query_internal.h"

#include <stdarg.h>
#include <stdio.h>

int cp_query_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return CP_EINVAL;
}
