/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy groups, registry and stats: what an admin handle (eddy/admin.h) reads from the backend.
 * groups and stats print the stats document (or its subjects and groups as tables), so every
 * figure is computed once, in the library. */
#include <string.h>
#include <time.h>

#include "cli.h"

static int open_admin(cli *c, eddy_admin **out) {
    eddy_settings s;
    int rc = cli_settings(c, &s);
    if (rc >= 0)
        return rc;
    eddy_error err = {0};
    eddy_status st = eddy_admin_open(&s, out, &err);
    if (st != EDDY_OK)
        return cli_fail_connect(c, "cannot connect", st, &err);
    cli_connected(false);
    return -1;
}

/* The namespace's stats document as the library writes it, JSON or the Prometheus text format
 * (the caller frees it). */
static int stats_text(cli *c, const char *pattern, bool prometheus, char **out) {
    eddy_admin *a;
    int rc = open_admin(c, &a);
    if (rc >= 0)
        return rc;
    eddy_error err = {0};
    *out = prometheus ? eddy_admin_stats_prometheus(a, pattern, &err)
                      : eddy_admin_stats_json(a, pattern, &err);
    eddy_admin_close(a);
    return *out ? -1 : cli_fail(c, "cannot read the namespace", err.status, &err);
}

/* The namespace's stats document, parsed. */
static int stats_doc(cli *c, const char *pattern, json_t **out) {
    char *text;
    int rc = stats_text(c, pattern, false, &text);
    if (rc >= 0)
        return rc;
    json_error_t je;
    *out = json_loads(text, 0, &je);
    free(text);
    if (!*out) {
        fprintf(stderr, "eddy %s: the library wrote bad JSON: %s\n", c->command, je.text);
        return CLI_FAILED;
    }
    return -1;
}

/* An age in milliseconds for people ("-", "850ms", "12s", "3m20s", "2h05m", "3d04h"). */
static const char *age(json_t *ms, char *buf, size_t size) {
    if (!json_is_integer(ms))
        return "-";
    long long v = json_integer_value(ms), s = v / 1000;
    if (v < 1000)
        snprintf(buf, size, "%lldms", v);
    else if (s < 60)
        snprintf(buf, size, "%llds", s);
    else if (s < 3600)
        snprintf(buf, size, "%lldm%02llds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, size, "%lldh%02lldm", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, size, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
    return buf;
}

static const char *figure(json_t *v, char *buf, size_t size) {
    if (!json_is_integer(v))
        return "?";
    snprintf(buf, size, "%lld", (long long)json_integer_value(v));
    return buf;
}

/* ---- groups ------------------------------------------------------------------------------- */

static const char groups_help[] =
    "usage: eddy groups [PATTERN]\n"
    "\n"
    "For each subject PATTERN matches (default: all), its stream's length and groups: consumers,\n"
    "pending entries (delivered, not acknowledged), lag (entries not delivered yet; ? when the\n"
    "server cannot tell), the age of the oldest pending entry, and dead letters (the group's\n"
    "dead-letter stream, shared by all its subjects). Then each group summed over those subjects.\n"
    "With --json: {\"subjects\": [...], \"groups\": [...]} as in eddy stats.\n";

int cmd_groups(cli *c, int argc, char **argv) {
    char *pos[1];
    int npos, rc = cli_parse(c, argc, argv, NULL, pos, 1, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(groups_help);
    json_t *doc;
    if ((rc = stats_doc(c, npos ? pos[0] : NULL, &doc)) >= 0)
        return rc;
    json_t *subjects = json_object_get(doc, "subjects"), *groups = json_object_get(doc, "groups");
    if (c->json) {
        cli_print_pretty(json_pack("{s:O,s:O}", "subjects", subjects, "groups", groups));
        json_decref(doc);
        return CLI_OK;
    }
    size_t i, k;
    json_t *si, *g;
    char b1[32], b2[32], b3[32];
    printf("%-32s %-28s %9s %9s %9s %9s %10s %6s\n", "SUBJECT", "GROUP", "LENGTH", "CONSUMERS",
           "PENDING", "LAG", "OLDEST", "DLQ");
    json_array_foreach(subjects, i, si) {
        const char *subject = json_string_value(json_object_get(si, "subject"));
        json_t *gs = json_object_get(si, "groups");
        if (json_array_size(gs) == 0)
            printf("%-32s %-28s %9s\n", subject, "-",
                   figure(json_object_get(si, "length"), b1, sizeof(b1)));
        json_array_foreach(gs, k, g) {
            printf("%-32s %-28s %9s %9lld %9lld %9s %10s %6lld\n", subject,
                   json_string_value(json_object_get(g, "group")),
                   figure(json_object_get(si, "length"), b1, sizeof(b1)),
                   (long long)json_integer_value(json_object_get(g, "consumers")),
                   (long long)json_integer_value(json_object_get(g, "pending")),
                   figure(json_object_get(g, "lag"), b2, sizeof(b2)),
                   age(json_object_get(g, "oldest_pending_ms"), b3, sizeof(b3)),
                   (long long)json_integer_value(json_object_get(g, "dead_letters")));
        }
    }
    if (json_array_size(subjects) == 0)
        printf("(no subject%s%s)\n", npos ? " matches " : "", npos ? pos[0] : "");
    if (json_array_size(subjects) > 1 && json_array_size(groups) > 0) {
        printf("\n%-28s %8s %9s %9s %9s %10s %6s\n", "GROUP (over the subjects)", "SUBJECTS",
               "CONSUMERS", "PENDING", "LAG", "OLDEST", "DLQ");
        json_array_foreach(groups, i, g)
            printf("%-28s %8lld %9lld %9lld %9s %10s %6lld\n",
                   json_string_value(json_object_get(g, "group")),
                   (long long)json_integer_value(json_object_get(g, "subjects")),
                   (long long)json_integer_value(json_object_get(g, "consumers")),
                   (long long)json_integer_value(json_object_get(g, "pending")),
                   figure(json_object_get(g, "lag"), b2, sizeof(b2)),
                   age(json_object_get(g, "oldest_pending_ms"), b3, sizeof(b3)),
                   (long long)json_integer_value(json_object_get(g, "dead_letters")));
    }
    json_decref(doc);
    return CLI_OK;
}

/* ---- registry ----------------------------------------------------------------------------- */

static const char registry_help[] =
    "usage: eddy registry\n"
    "\n"
    "The namespace's live subscriptions (handlers) and responders, one per bus: kind, group,\n"
    "instance (the bus), name, pattern, and when the lease ends unless renewed.\n"
    "With --json: [{\"kind\", \"group\", \"instance\", \"name\", \"pattern\", \"lease_until_ms\",\n"
    "\"lease_left_ms\"}].\n";

static eddy_status add_registration(const eddy_registration *r, void *user) {
    json_array_append_new(user, json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I}", "kind",
                                          r->responder ? "responder" : "handler", "group", r->group,
                                          "instance", r->instance, "name", r->name, "pattern",
                                          r->pattern, "lease_until_ms",
                                          (json_int_t)r->lease_until_ms, "lease_left_ms",
                                          (json_int_t)(r->lease_until_ms - eddy_now_ms())));
    return EDDY_OK;
}

int cmd_registry(cli *c, int argc, char **argv) {
    char *pos[1];
    int npos, rc = cli_parse(c, argc, argv, NULL, pos, 0, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(registry_help);
    eddy_admin *a;
    if ((rc = open_admin(c, &a)) >= 0)
        return rc;
    json_t *list = json_array();
    eddy_error err = {0};
    eddy_status st = eddy_admin_registry(a, add_registration, list, &err);
    eddy_admin_close(a);
    if (st != EDDY_OK) {
        json_decref(list);
        return cli_fail(c, "cannot read the registry", st, &err);
    }
    if (c->json) {
        cli_print_pretty(list);
        return CLI_OK;
    }
    size_t i;
    json_t *r;
    char b[32];
    printf("%-9s %-28s %-36s %-16s %-24s %s\n", "KIND", "GROUP", "INSTANCE", "NAME", "PATTERN",
           "LEASE");
    json_array_foreach(list, i, r)
        printf("%-9s %-28s %-36s %-16s %-24s %s\n", json_string_value(json_object_get(r, "kind")),
               json_string_value(json_object_get(r, "group")),
               json_string_value(json_object_get(r, "instance")),
               json_string_value(json_object_get(r, "name")),
               json_string_value(json_object_get(r, "pattern")),
               age(json_object_get(r, "lease_left_ms"), b, sizeof(b)));
    if (json_array_size(list) == 0)
        printf("(nothing subscribed in namespace %s)\n", c->ns);
    json_decref(list);
    return CLI_OK;
}

/* ---- stats -------------------------------------------------------------------------------- */

static const char stats_help[] =
    "usage: eddy stats [--prometheus] [PATTERN]\n"
    "\n"
    "Prints the namespace as one JSON document, what can be read from the backend: every\n"
    "subject (PATTERN: those it matches) with its groups, each group summed over them, and the\n"
    "registry (eddy_admin_stats_json in eddy/admin.h). A bus's own counters are in its\n"
    "process: eddy_bus_stats_json. Compact with --json, indented otherwise.\n"
    "\n"
    "Options:\n"
    "  --prometheus   the same figures in the Prometheus text format (version 0.0.4:\n"
    "                 eddy_subject_*, eddy_group_*, eddy_registry_subscriptions; see\n"
    "                 docs/metrics.md), as eddy exporter serves them\n";

int cmd_stats(cli *c, int argc, char **argv) {
    bool prometheus = false;
    const cli_opt opts[] = {{"prometheus", 'f', &prometheus}, {NULL}};
    char *pos[1];
    int npos, rc = cli_parse(c, argc, argv, opts, pos, 1, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(stats_help);
    if (prometheus && c->json)
        return cli_usage(c, "--prometheus and --json: choose one");
    if (c->json || prometheus) { /* the library's text is printed as it is */
        char *text;
        if ((rc = stats_text(c, npos ? pos[0] : NULL, prometheus, &text)) >= 0)
            return rc;
        if (prometheus)
            fputs(text, stdout); /* it ends in a newline */
        else
            puts(text);
        free(text);
        return fflush(stdout) == 0 ? CLI_OK : CLI_FAILED;
    }
    json_t *doc;
    if ((rc = stats_doc(c, npos ? pos[0] : NULL, &doc)) >= 0)
        return rc;
    cli_print_pretty(doc);
    return CLI_OK;
}
