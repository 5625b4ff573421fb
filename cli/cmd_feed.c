/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy feed: a catch-up feed's marker in the store's checkpoint storage (eddy_store_checkpoints).
 * The marker says "this feed caught up once"; it is not a position: deleting it makes the feed's
 * next catch-up replay the whole history. */
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: eddy feed status FEED\n"
    "       eddy feed reset FEED\n"
    "\n"
    "A catch-up feed's marker (the key {NS}:ckpt:FEED). It means \"this feed caught up once\"\n"
    "(its catch-up then skips the replay), not a position in the store.\n"
    "  status  whether the marker is there, and its value\n"
    "  reset   deletes it: the feed's next catch-up replays the whole history\n"
    "With --json: {\"feed\", \"marker\": true|false, \"value\"} and {\"feed\", \"reset\": true,\n"
    "\"had_marker\"}.\n";

int cmd_feed(cli *c, int argc, char **argv) {
    char *pos[2];
    int npos, rc = cli_parse(c, argc, argv, NULL, pos, 2, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(help);
    if (npos != 2 || (strcmp(pos[0], "status") != 0 && strcmp(pos[0], "reset") != 0))
        return cli_usage(c, "usage: eddy feed status|reset FEED");
    const char *feed = pos[1];
    eddy_settings s;
    if ((rc = cli_settings(c, &s)) >= 0)
        return rc;
    eddy_error err = {0};
    eddy_store *store;
    eddy_status st = eddy_store_open(&s, &store, &err);
    if (st != EDDY_OK)
        return cli_fail_connect(c, "cannot open the store", st, &err);
    cli_connected(false);
    eddy_checkpoints cp = eddy_store_checkpoints(store);
    char value[1024] = "";
    bool found = false;
    st = cp.ops->read(cp.self, feed, value, sizeof(value), &found, &err);
    if (st == EDDY_OK && strcmp(pos[0], "reset") == 0) {
        if ((st = cp.ops->remove(cp.self, feed, &err)) == EDDY_OK) {
            if (c->json)
                cli_print_line(
                    json_pack("{s:s,s:b,s:b}", "feed", feed, "reset", 1, "had_marker", found));
            else
                printf(found ? "feed %s: marker deleted; its next catch-up replays the history\n"
                             : "feed %s: had no marker\n",
                       feed);
        }
    } else if (st == EDDY_OK) {
        if (c->json)
            cli_print_line(
                found ? json_pack("{s:s,s:b,s:s}", "feed", feed, "marker", 1, "value", value)
                      : json_pack("{s:s,s:b}", "feed", feed, "marker", 0));
        else if (found)
            printf("feed %s: caught up once (marker %s)\n", feed, value);
        else
            printf("feed %s: no marker (its next catch-up replays the history)\n", feed);
    }
    eddy_store_close(store);
    return st == EDDY_OK ? CLI_OK : cli_fail(c, feed, st, &err);
}
