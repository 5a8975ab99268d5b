/* query_internal.h -- what the query layer's files share. */
#ifndef CP_QUERY_INTERNAL_H
#define CP_QUERY_INTERNAL_H

#include "query/cp_query.h"

/* Writes the reason into err (if any) and returns CP_EINVAL: how every parser here fails. */
int cp_query_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
