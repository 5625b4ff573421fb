/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — the version of the headers, and of the library a program runs with.
 *
 * EDDY_VERSION_* describe the headers a program was compiled against; eddy_version() the
 * library it is linked with (they differ when a shared library was upgraded underneath). The
 * shared libraries' SONAME carries the major version: libeddy.so.0, libeddy_reactive.so.0. */
#ifndef EDDY_VERSION_H
#define EDDY_VERSION_H

#include "eddy/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EDDY_VERSION_MAJOR 0
#define EDDY_VERSION_MINOR 3
#define EDDY_VERSION_PATCH 0
#define EDDY_VERSION_STRING "0.3.0"
/** One number for comparisons: major * 10000 + minor * 100 + patch. */
#define EDDY_VERSION_NUMBER                                                                        \
    (EDDY_VERSION_MAJOR * 10000 + EDDY_VERSION_MINOR * 100 + EDDY_VERSION_PATCH)

/** The library's version, "MAJOR.MINOR.PATCH" (static text). Thread: any. */
EDDY_EXPORT const char *eddy_version(void);

#ifdef __cplusplus
}
#endif

#endif
