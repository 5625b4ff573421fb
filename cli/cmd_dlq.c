/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy dlq: a group's dead letters, on the dead-letter API (eddy/dlq.h). A replay of --all goes
 * one dead letter at a time, after counting them, so a terminal can show its progress; like
 * eddy_dlq_replay_all it stops at the number counted first, so a handler that keeps failing
 * (and dead-lettering again) does not keep it going. */
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: eddy dlq list [GROUP] [--max N]\n"
    "       eddy dlq show GROUP ID\n"
    "       eddy dlq replay GROUP (ID... | --all)\n"
    "       eddy dlq purge GROUP (ID... | --all)\n"
    "\n"
    "A group's dead letters (the stream {NS}:dlq:GROUP): entries its subscription could not\n"
    "deliver (failed max_deliveries times, malformed, too large).\n"
    "  list [GROUP]  the dead letters of GROUP, oldest first (at most --max N); without GROUP,\n"
    "                the groups of the namespace's subjects that have dead letters\n"
    "  show          one dead letter with its event (data decoded as by tail)\n"
    "  replay        publishes each again to its subject (a new entry: every group of the\n"
    "                subject gets it) and removes the dead letter, in one atomic step\n"
    "  purge         deletes dead letters without replaying them\n"
    "With --json: list prints a JSON array, replay and purge {\"replayed\"|\"purged\": N}.\n"
    "Exit 4 when an ID is not there.\n";

static json_t *dead_letter_json(const eddy_dead_letter *dl) {
    json_t *o =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:i}", "id", eddy_dead_letter_id(dl), "group",
                  eddy_dead_letter_group(dl), "subject", eddy_dead_letter_subject(dl), "entry_id",
                  eddy_dead_letter_entry_id(dl), "reason", eddy_dead_letter_reason(dl),
                  "deliveries", (int)eddy_dead_letter_deliveries(dl));
    const eddy_event *ev;
    eddy_error err = {0};
    if (!o)
        return NULL;
    if (eddy_dead_letter_event(dl, &ev, &err) == EDDY_OK) {
        json_object_set_new(o, "event", cli_event_json(ev));
        json_t *value = cli_data_value(ev);
        if (value)
            json_object_set_new(o, "data_value", value);
    } else {
        json_object_set_new(o, "event", json_null());
        json_object_set_new(o, "event_error", json_string(err.detail));
    }
    return o;
}

static eddy_status collect(const eddy_dead_letter *dl, void *user) {
    json_array_append_new(user, dead_letter_json(dl));
    return EDDY_OK;
}

/* Groups with dead letters, from the namespace's subjects. */
static int list_groups(cli *c, eddy_admin *a) {
    eddy_error err = {0};
    char *text = eddy_admin_stats_json(a, NULL, &err);
    if (!text)
        return cli_fail(c, "cannot read the namespace", err.status, &err);
    json_t *doc = json_loads(text, 0, NULL), *out = json_array();
    free(text);
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(doc, "groups"), i,
                       g) if (json_integer_value(json_object_get(g, "dead_letters")) > 0)
        json_array_append_new(out, json_pack("{s:O,s:O}", "group", json_object_get(g, "group"),
                                             "dead_letters", json_object_get(g, "dead_letters")));
    json_decref(doc);
    if (c->json) {
        cli_print_pretty(out);
        return CLI_OK;
    }
    printf("%-32s %s\n", "GROUP", "DEAD LETTERS");
    json_array_foreach(out, i, g)
        printf("%-32s %lld\n", json_string_value(json_object_get(g, "group")),
               (long long)json_integer_value(json_object_get(g, "dead_letters")));
    if (json_array_size(out) == 0)
        printf("(no dead letters in namespace %s)\n", c->ns);
    json_decref(out);
    return CLI_OK;
}

static int list(cli *c, eddy_dlq *dlq, const char *group, long long max) {
    json_t *all = json_array();
    eddy_dlq_cursor cur;
    eddy_dlq_cursor_init(&cur);
    eddy_error err = {0};
    eddy_status st = EDDY_OK;
    while (st == EDDY_OK && !cur.done && (max == 0 || (long long)json_array_size(all) < max)) {
        size_t page = 100;
        if (max > 0 && (size_t)(max - (long long)json_array_size(all)) < page)
            page = (size_t)(max - (long long)json_array_size(all));
        st = eddy_dlq_list(dlq, group, &cur, page, collect, all, &err);
    }
    if (st != EDDY_OK) {
        json_decref(all);
        return cli_fail(c, "cannot list", st, &err);
    }
    if (c->json) {
        cli_print_pretty(all);
        return CLI_OK;
    }
    size_t i;
    json_t *d;
    printf("%-20s %-28s %-15s %10s  %s\n", "ID", "SUBJECT", "REASON", "DELIVERIES", "TYPE");
    json_array_foreach(all, i, d) {
        json_t *ev = json_object_get(d, "event");
        printf("%-20s %-28s %-15s %10lld  %s\n", json_string_value(json_object_get(d, "id")),
               json_string_value(json_object_get(d, "subject")),
               json_string_value(json_object_get(d, "reason")),
               (long long)json_integer_value(json_object_get(d, "deliveries")),
               ev && json_is_object(ev) ? json_string_value(json_object_get(ev, "type"))
                                        : "(does not decode)");
    }
    if (json_array_size(all) == 0)
        printf("(no dead letters in group %s)\n", group);
    json_decref(all);
    return CLI_OK;
}

typedef struct replay_all {
    eddy_dlq *dlq;
    const char *group;
    bool purge;
    size_t total, done, failed;
    cli_progress bar;
    eddy_status st; /* the first failure */
    eddy_error err;
} replay_all;

/* Replays (or purges) the dead letter it is shown; a listing stopped here resumes after it. */
static eddy_status replay_one(const eddy_dead_letter *dl, void *user) {
    replay_all *r = user;
    if (r->done + r->failed >= r->total)
        return EDDY_ERR_CANCELLED; /* counted at the start: the rest came later */
    eddy_error err = {0};
    eddy_status st =
        r->purge ? eddy_dlq_purge(r->dlq, r->group, eddy_dead_letter_id(dl), &err)
                 : eddy_dlq_replay(r->dlq, r->group, eddy_dead_letter_id(dl), NULL, 0, &err);
    if (st == EDDY_OK) {
        r->done++;
    } else {
        r->failed++;
        if (r->st == EDDY_OK) {
            r->st = st;
            r->err = err;
        }
        if (cli_exit_code(st) == 3) /* the connection is gone: stop */
            return st;
    }
    cli_progress_update(&r->bar, r->done + r->failed);
    return EDDY_OK;
}

static int act_all(cli *c, eddy_dlq *dlq, const char *group, bool purge) {
    eddy_error err = {0};
    size_t n;
    eddy_status st = eddy_dlq_count(dlq, group, &n, &err);
    if (st != EDDY_OK)
        return cli_fail(c, "cannot count", st, &err);
    replay_all r = {.dlq = dlq, .group = group, .purge = purge, .total = n};
    cli_progress_start(&r.bar, purge ? "purging" : "replaying", n);
    eddy_dlq_cursor cur;
    eddy_dlq_cursor_init(&cur);
    while (st == EDDY_OK && !cur.done && r.done + r.failed < r.total)
        st = eddy_dlq_list(dlq, group, &cur, 64, replay_one, &r, &err);
    cli_progress_end(&r.bar);
    if (st == EDDY_ERR_CANCELLED)
        st = EDDY_OK;
    if (c->json)
        cli_print_line(json_pack("{s:I,s:I}", purge ? "purged" : "replayed", (json_int_t)r.done,
                                 "failed", (json_int_t)r.failed));
    else
        printf("%s %zu of %zu dead letters of group %s\n", purge ? "purged" : "replayed", r.done, n,
               group);
    if (st != EDDY_OK)
        return cli_fail(c, "cannot list", st, &err);
    if (r.st != EDDY_OK)
        return cli_fail(c, purge ? "purge" : "replay", r.st, &r.err);
    return CLI_OK;
}

static int act_ids(cli *c, eddy_dlq *dlq, const char *group, char **ids, int n, bool purge) {
    int rc = CLI_OK;
    for (int i = 0; i < n; i++) {
        char entry[64] = "";
        eddy_error err = {0};
        eddy_status st = purge ? eddy_dlq_purge(dlq, group, ids[i], &err)
                               : eddy_dlq_replay(dlq, group, ids[i], entry, sizeof(entry), &err);
        if (st != EDDY_OK) {
            char what[128];
            snprintf(what, sizeof(what), "%s %s", purge ? "purge" : "replay", ids[i]);
            int code = cli_fail(c, what, st, &err);
            if (rc == CLI_OK)
                rc = code;
        } else if (c->json) {
            cli_print_line(purge ? json_pack("{s:s}", "purged", ids[i])
                                 : json_pack("{s:s,s:s}", "replayed", ids[i], "entry_id", entry));
        } else {
            printf(purge ? "purged %s\n" : "replayed %s as %s\n", ids[i], entry);
        }
    }
    return rc;
}

int cmd_dlq(cli *c, int argc, char **argv) {
    long long max = 0;
    bool all = false;
    cli_opt opts[] = {{"max", 'n', &max}, {"all", 'f', &all}, {NULL, 0, NULL}};
    char *pos[64];
    int npos, rc = cli_parse(c, argc, argv, opts, pos, 64, &npos);
    if (rc >= 0)
        return rc;
    if (c->help || npos == 0)
        return c->help ? cli_help(help) : cli_usage(c, "list, show, replay or purge? (see --help)");
    const char *verb = pos[0], *group = npos > 1 ? pos[1] : NULL;
    bool is_list = strcmp(verb, "list") == 0, is_show = strcmp(verb, "show") == 0;
    bool is_replay = strcmp(verb, "replay") == 0, is_purge = strcmp(verb, "purge") == 0;
    if (!is_list && !is_show && !is_replay && !is_purge)
        return cli_usage(c, "unknown dlq command '%s' (list, show, replay, purge)", verb);
    if (is_list && npos > 2)
        return cli_usage(c, "list takes one group");
    if (is_show && npos != 3)
        return cli_usage(c, "usage: eddy dlq show GROUP ID");
    if ((is_replay || is_purge) && (!group || (all ? npos != 2 : npos < 3)))
        return cli_usage(c, "usage: eddy dlq %s GROUP (ID... | --all)", verb);
    eddy_settings s;
    if ((rc = cli_settings(c, &s)) >= 0)
        return rc;
    eddy_error err = {0};
    if (is_list && !group) {
        eddy_admin *a;
        eddy_status st = eddy_admin_open(&s, &a, &err);
        if (st != EDDY_OK)
            return cli_fail_connect(c, "cannot connect", st, &err);
        cli_connected(false);
        rc = list_groups(c, a);
        eddy_admin_close(a);
        return rc;
    }
    eddy_dlq *dlq;
    eddy_status st = eddy_dlq_open(&s, &dlq, &err);
    if (st != EDDY_OK)
        return cli_fail_connect(c, "cannot connect", st, &err);
    cli_connected(false);
    if (is_list) {
        rc = list(c, dlq, group, max);
    } else if (is_show) {
        eddy_dead_letter *dl;
        if ((st = eddy_dlq_get(dlq, group, pos[2], &dl, &err)) != EDDY_OK) {
            rc = cli_fail(c, pos[2], st, &err);
        } else {
            (c->json ? cli_print_line : cli_print_pretty)(dead_letter_json(dl));
            eddy_dead_letter_free(dl);
            rc = CLI_OK;
        }
    } else if (all) {
        rc = act_all(c, dlq, group, is_purge);
    } else {
        rc = act_ids(c, dlq, group, pos + 2, npos - 2, is_purge);
    }
    eddy_dlq_close(dlq);
    return rc;
}
