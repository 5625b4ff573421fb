/* SPDX-License-Identifier: BSD-3-Clause */
/* The library's version (eddy/version.h). */
#include "eddy/version.h"

const char *eddy_version(void) { return EDDY_VERSION_STRING; }
