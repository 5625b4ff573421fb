/* Identifies the reactive front end at run time; also keeps the library non-empty on
 * toolchains that refuse an archive without objects. */
#include "eddy/reactive.h"

const char *eddy_reactive_version(void) { return "0.1.0"; }
