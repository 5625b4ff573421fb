/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy — the command-line tool: global options, the list of commands, exit codes. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: eddy [--url URL] [--ns NS] [OPTIONS] COMMAND [ARGS...]\n"
    "\n"
    "Publish, tail, request and answer CloudEvents on eddy's Redis Streams, and look at a\n"
    "namespace: groups, dead letters, the event store, feed markers, the registry, stats.\n"
    "\n"
    "Backend URLs (--url):\n"
    "  redis://[[user]:password@]host[:port][/db]       Redis (port 6379, db 0)\n"
    "  rediss://[[user]:password@]host[:port][/db]      the same over TLS (see --tls-*)\n"
    "  redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db]\n"
    "                                                   the master Sentinel watches (port 26379)\n"
    "  rediss-sentinel://...                            the same over TLS\n"
    "  redis-cluster://[[user]:password@]host[:port][,host[:port]...]\n"
    "                                                   Redis Cluster, from its seed nodes\n"
    "  rediss-cluster://...                             the same over TLS\n"
    "  unix:///path[?db=N]                              Redis on a unix socket\n"
    "  memory://[name]                                  in-process (this command only)\n"
    "Shown URLs never carry the password (redis://:***@host:port). With $EDDY_PASSWORD or\n"
    "--askpass the password is not in the URL, and redis://user@host names the user.\n"
    "\n"
    "Global options (before or after the command):\n"
    "  --url URL             the backend (default $EDDY_URL, else redis://127.0.0.1:6379)\n"
    "  --ns NS               the namespace: every key is {NS}:... (default $EDDY_NS, else eddy)\n"
    "  --askpass             read the password from the terminal, without echo\n"
    "  --tls-cacert FILE     CA certificates (PEM) to verify the server with ($EDDY_TLS_CACERT;\n"
    "                        default the system's store)\n"
    "  --tls-cacertdir DIR   a directory of CA certificates ($EDDY_TLS_CACERTDIR)\n"
    "  --tls-cert FILE       a client certificate (PEM), with --tls-key ($EDDY_TLS_CERT)\n"
    "  --tls-key FILE        the client certificate's key (PEM) ($EDDY_TLS_KEY)\n"
    "  --tls-sni NAME        the server name to ask for and verify ($EDDY_TLS_SNI; default the\n"
    "                        URL's host)\n"
    "  --tls-insecure        skip verifying the server's certificate ($EDDY_TLS_INSECURE=1)\n"
    "  -X NAME=VALUE         any setting of the bus by its name (repeatable), e.g.\n"
    "                        -X command_timeout_ms=10000 (see docs/configuration.md)\n"
    "  --json                machine-readable output (one JSON document, or JSON lines)\n"
    "  --raw                 tail, request, store read and tail: only each event's data\n"
    "  --help                help for eddy, or for a command: eddy COMMAND --help\n"
    "  --version             print eddy's version and exit\n"
    "\n"
    "Environment:\n"
    "  EDDY_URL, EDDY_NS     as --url and --ns\n"
    "  EDDY_PASSWORD         the password (instead of the URL's: not seen in ps or history)\n"
    "  EDDY_TLS_CACERT, EDDY_TLS_CACERTDIR, EDDY_TLS_CERT, EDDY_TLS_KEY, EDDY_TLS_SNI,\n"
    "  EDDY_TLS_INSECURE     as the --tls-* options, for TLS URLs\n"
    "\n"
    "Commands:\n"
    "  pub SUBJECT          publish an event (data as JSON, sent as msgpack, or a file's bytes),\n"
    "                       or one event per line of stdin (pub SUBJECT -)\n"
    "  tail PATTERN         print events published to matching subjects, as JSON lines\n"
    "                       (--from start|ID|TIME, --last N: history first)\n"
    "  request SUBJECT      send a request and print the reply\n"
    "  respond PATTERN      answer requests (echo, or a fixed reply), for testing\n"
    "  groups [PATTERN]     groups per subject: consumers, pending, lag, oldest pending, dead\n"
    "                       letters, and each group summed over the pattern's subjects\n"
    "  dlq list|show|replay|purge   a group's dead letters\n"
    "  store read|tail|append       the event store, one stream or all\n"
    "  feed status|reset FEED       a catch-up feed's marker (\"caught up once\")\n"
    "  registry             live subscriptions and responders, with their leases\n"
    "  stats [PATTERN]      the namespace as one JSON document (subjects, groups, registry)\n"
    "  top [PATTERN]        a live view: per subject and group rates in and out, lag, pending,\n"
    "                       oldest pending, consumers, dead letters; responders (q quits)\n"
    "  exporter --listen HOST:PORT   serve the namespace's figures to Prometheus (/metrics)\n"
    "  bench pub|sub|req    measure the backend: rates and latency (writes to it; see --help)\n"
    "  version              the library's version\n"
    "\n"
    "Exit codes:\n"
    "  0  done\n"
    "  1  the operation failed (the backend refused it, a responder failed, ...)\n"
    "  2  usage: an unknown command or option, a bad argument, bad JSON, a bad subject\n"
    "  3  the backend cannot be reached (down, refused password or certificate, TLS, not a\n"
    "     Redis server, no such database)\n"
    "  4  not found (a dead letter's id)\n"
    "  5  no reply: no responders, no reply by the deadline, or --timeout ended a wait\n";

typedef struct command {
    const char *name;
    int (*run)(cli *c, int argc, char **argv);
} command;

static int cmd_version(cli *c, int argc, char **argv) {
    char *pos[1];
    int npos, rc = cli_parse(c, argc, argv, NULL, pos, 0, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help("usage: eddy version\n\nPrints the library's version.\n");
    if (c->json)
        cli_print_line(json_pack("{s:s}", "version", eddy_version()));
    else
        printf("eddy %s\n", eddy_version());
    return CLI_OK;
}

static const command commands[] = {
    {"pub", cmd_pub},           {"tail", cmd_tail},       {"request", cmd_request},
    {"respond", cmd_respond},   {"groups", cmd_groups},   {"dlq", cmd_dlq},
    {"store", cmd_store},       {"feed", cmd_feed},       {"registry", cmd_registry},
    {"stats", cmd_stats},       {"version", cmd_version}, {"top", cmd_top},
    {"exporter", cmd_exporter}, {"bench", cmd_bench},     {NULL, NULL},
};

/* Takes the global options before the command: the index of the command's name, or -1 (with
 * *rc an exit code, or -1 when there is no command). */
static int global_options(cli *c, int argc, char **argv, int *rc) {
    *rc = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-')
            return i;
        int npos;
        int n = cli_global_takes_value(a) && i + 1 < argc ? 2 : 1;
        if ((*rc = cli_parse(c, n, argv + i, NULL, NULL, 0, &npos)) >= 0)
            return -1;
        i += n - 1;
    }
    return -1;
}

int main(int argc, char **argv) {
    cli c = {.url = getenv("EDDY_URL"), .ns = getenv("EDDY_NS")};
    int rc;
    int at = global_options(&c, argc, argv, &rc);
    if (rc >= 0)
        return rc;
    if (at < 0) {
        fputs(usage, c.help ? stdout : stderr);
        return c.help ? CLI_OK : CLI_USAGE;
    }
    if (!c.url || !*c.url)
        c.url = "redis://127.0.0.1:6379";
    if (!c.ns || !*c.ns)
        c.ns = "eddy";
    if (strcmp(argv[at], "help") == 0) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    for (const command *cmd = commands; cmd->name; cmd++)
        if (strcmp(cmd->name, argv[at]) == 0) {
            c.command = cmd->name;
            rc = cmd->run(&c, argc - at - 1, argv + at + 1);
            free(c.url_with_pass);
            return rc;
        }
    fprintf(stderr, "eddy: unknown command '%s' (eddy --help lists them)\n", argv[at]);
    return CLI_USAGE;
}
