/* SPDX-License-Identifier: BSD-3-Clause */
/* Filling the caller's optional eddy_error. No allocation: detail is formatted in place. */
#ifndef EDDY_SRC_ERROR_H
#define EDDY_SRC_ERROR_H

#include "eddy/status.h"

/* Sets err (if not NULL) to st with a printf-style detail and returns st, so callers write
 * `return eddy__fail(err, EDDY_ERR_INVALID_SUBJECT, "subject '%s': empty token", s);`. */
eddy_status eddy__fail(eddy_error *err, eddy_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
