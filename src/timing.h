/* SPDX-License-Identifier: BSD-3-Clause */
/* The one monotonic clock, and how long to pause before planning again after running out of
 * memory. The waits that follow from the settings are in config/settings.h. */
#ifndef EDDY_SRC_TIMING_H
#define EDDY_SRC_TIMING_H

/* A reader or control loop whose planning ran out of memory (nothing was sent) plans again after
 * this long. */
#define EDDY__NOMEM_RETRY_MS 100

/* Monotonic milliseconds. */
long long eddy__mono_ms(void);

#endif
