/* eddy — reactive front end for libev loops (work in progress; see bus.h). */
#ifndef EDDY_REACTIVE_H
#define EDDY_REACTIVE_H
#include "eddy/status.h"
EDDY_EXPORT const char *eddy_reactive_version(void);
#endif
