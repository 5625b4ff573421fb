/* The library's version (eddy/version.h). */
#include "eddy/version.h"

const char *eddy_version(void) { return EDDY_VERSION_STRING; }
