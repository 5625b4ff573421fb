/* SPDX-License-Identifier: BSD-3-Clause */
/* The Prometheus text exposition format, version 0.0.4, for the library's stats
 * (eddy_bus_stats_prometheus, eddy_admin_stats_prometheus; docs/metrics.md lists the metrics):
 * a small writer, and the two documents written from what their JSON twins are written from
 * (bus_stats.h, admin.h), never from the JSON.
 *
 * The writer's rules (a broken one fails the document, as an allocation failure does; both
 * stick, as in json.h's writer, and are seen once, at eddy__prom_finish):
 *   - a family is begun with its name, type and help; its "# HELP" and "# TYPE" lines are
 *     written with its first sample, so a family without samples leaves no trace, and every
 *     sample of a family follows them (the format wants a family's lines together);
 *   - metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* and do
 *     not start with "__" (reserved); no label name twice in one sample;
 *   - a counter's name ends in "_total", a gauge's does not;
 *   - label values escape backslash, double quote and newline (\\, \", \n), help text
 *     backslash and newline; bytes that are not UTF-8 are written as U+FFFD. */
#ifndef EDDY_SRC_PROMETHEUS_H
#define EDDY_SRC_PROMETHEUS_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bus/admin.h"
#include "bus/bus_stats.h"

typedef enum eddy__prom_type { EDDY__PROM_COUNTER, EDDY__PROM_GAUGE } eddy__prom_type;

typedef struct eddy__prom_label {
    const char *name;
    const char *value; /* NULL is written as "" */
} eddy__prom_label;

typedef struct eddy__prom {
    char *buf;
    size_t len, cap;
    bool failed; /* out of memory, or a rule broken */
    bool broken; /* a rule broken */
    /* The family begun last (borrowed: the caller's strings live until its last sample). */
    const char *name, *help;
    eddy__prom_type type;
    bool header_written;
} eddy__prom;

void eddy__prom_init(eddy__prom *p);
/* Begins a family; its samples follow. */
void eddy__prom_family(eddy__prom *p, const char *name, eddy__prom_type type, const char *help);
/* One sample of the family begun last, with labels[0..n). */
void eddy__prom_u64(eddy__prom *p, const eddy__prom_label *labels, size_t n, uint64_t v);
/* A duration or an age given in milliseconds, written in seconds exactly ("1.5", "0.001"). */
void eddy__prom_ms(eddy__prom *p, const eddy__prom_label *labels, size_t n, long long ms);
/* The NUL-terminated document, the caller's (free), or NULL after a failure. "" when nothing
 * was written. The writer is empty afterwards. */
char *eddy__prom_finish(eddy__prom *p);

bool eddy__prom_metric_name_ok(const char *name);
bool eddy__prom_label_name_ok(const char *name);

/* The documents; the caller's (free). NULL with err set on OOM (or a registry reply the
 * admin one cannot read, with its status). */
char *eddy__bus_stats_prometheus(const eddy__bus_stats_in *in, eddy_error *err);
char *eddy__admin_stats_prometheus(const char *ns, const eddy__admin_scan *s,
                                   const redisReply *registry, eddy_error *err);

#endif
