/* SPDX-License-Identifier: BSD-3-Clause */
/* The eddy command-line tool: what its commands share (options, exit codes, output, events as
 * JSON). Each command lives in a file of its own (cmd_*.c) and is a function
 * int cmd_x(cli *c, int argc, char **argv) that returns the process's exit code. */
#ifndef EDDY_CLI_H
#define EDDY_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "eddy/blocking.h"
#include "eddy/store.h"

/* Exit codes (documented in `eddy --help`). */
enum {
    CLI_OK = 0,
    CLI_FAILED = 1,      /* the operation failed (the backend refused it, a handler failed...) */
    CLI_USAGE = 2,       /* bad command line or input: unknown option, bad JSON, bad subject */
    CLI_UNREACHABLE = 3, /* the backend cannot be reached (connection, authentication, TLS) */
    CLI_NOT_FOUND = 4,   /* what was named is not there (a dead letter's id) */
    CLI_NO_REPLY = 5,    /* no responders, no reply in time, or tail/respond --timeout ended */
};

typedef struct cli {
    const char *url; /* --url, $EDDY_URL, or redis://127.0.0.1:6379 (shown masked: cli_url_shown) */
    const char *ns;  /* --ns, $EDDY_NS, or "eddy" */
    bool json;       /* --json: machine-readable output */
    bool raw;        /* --raw: only the events' data */
    bool help;       /* --help was given */
    bool version;    /* --version was given */
    bool askpass;    /* --askpass: read the password from the terminal */
    /* --tls-*, or $EDDY_TLS_*: the settings' tls_* fields */
    const char *tls_cacert, *tls_cacertdir, *tls_cert, *tls_key, *tls_sni;
    bool tls_insecure;
    bool tls_given; /* a --tls-* option was given on the command line */
    /* -X NAME=VALUE: any setting of the bus, by its name (docs/configuration.md) */
    const char *set[64];
    int nset;
    char *password;      /* $EDDY_PASSWORD or --askpass (malloc'd), NULL when neither */
    char *url_with_pass; /* url with the password spliced in (malloc'd), what the library gets */
    const char *command;
} cli;

/* One option of a command: --name VALUE (or --name=VALUE), or a flag. Kinds: 'f' a flag (bool *),
 * 's' a string (const char **), 'n' a non-negative number (long long *), 'l' a string that may be
 * given again and again (cli_list *). */
#define CLI_LIST_MAX 64
typedef struct cli_list {
    const char *items[CLI_LIST_MAX];
    int n;
} cli_list;

typedef struct cli_opt {
    const char *name;
    char kind;
    void *dst;
} cli_opt;

/* Parses argv[0..argc) (the command's arguments, after its name) against opts (terminated by a
 * {NULL} entry; may be NULL) and the global options, collecting at most maxpos positional
 * arguments. Returns -1 when parsing succeeded, or the exit code after printing why not. */
int cli_parse(cli *c, int argc, char **argv, const cli_opt *opts, char **pos, int maxpos,
              int *npos);

/* Prints "eddy <command>: <message>" on stderr and returns CLI_USAGE. */
int cli_usage(cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "eddy <command>: <what>: <status text>: <detail>" and returns the status's exit
 * code (cli_exit_code). */
int cli_fail(cli *c, const char *what, eddy_status st, const eddy_error *err);
int cli_exit_code(eddy_status st);
/* The same for a failure to open a connection (a bus, an admin handle, a store): whatever the
 * server said, exit 3 (CLI_UNREACHABLE), unless the input was bad (2). */
int cli_fail_connect(cli *c, const char *what, eddy_status st, const eddy_error *err);
/* Prints the help text on stdout and returns CLI_OK. */
int cli_help(const char *text);

/* Returns -1, or an exit code after printing why not (bad TLS options, no terminal for
 * --askpass). Settings for the URL (with the password of $EDDY_PASSWORD or --askpass), the
 * namespace, the TLS options, and a log hook that prints warnings on stderr. Until cli_connected is
 * called the hook drops the connection's own lines (what failed is said once, by cli_fail);
 * one-shot commands keep it that way, so a lost connection is one line too. */
int cli_settings(cli *c, eddy_settings *s);
/* The first connect succeeded: let the library's warnings through from now on; everything
 * (tail, respond: a lost connection and its reconnection are worth a line) or all but the
 * reconnect lines (one-shot commands). */
void cli_connected(bool everything);
/* The URL as it may be shown: the password, if any, replaced by "***". */
const char *cli_url_shown(const cli *c);
/* Masks the password of a URL into out ("redis://user:***@host"). */
void cli_mask_url(const char *url, char *out, size_t size);
/* True when the name is a global option that takes a value (--url, --ns, --tls-cacert ...). */
bool cli_global_takes_value(const char *arg);

/* A fresh random event id (UUID v4 text). */
void cli_random_id(char out[37]);

/* ---- events as JSON ---------------------------------------------------------------------- */

/* Options that build an event (pub, request, store append). line: pub's input line, the data
 * (JSON sent as msgpack, or its bytes with --content-type); NULL when none. */
typedef struct cli_event_opts {
    const char *type, *source, *data, *data_file, *content_type, *id, *time;
    cli_list ext; /* --ext name=value, repeatable */
    const char *line;
    size_t line_len;
} cli_event_opts;
/* The options for them, to splice into a command's table (8 entries). */
#define CLI_EVENT_OPTS(o)                                                                          \
    {"type", 's', &(o).type}, {"source", 's', &(o).source}, {"data", 's', &(o).data},              \
        {"data-file", 's', &(o).data_file}, {"content-type", 's', &(o).content_type},              \
        {"id", 's', &(o).id}, {"time", 's', &(o).time}, {                                          \
        "ext", 'l', &(o).ext                                                                       \
    }

/* Builds the event: --data is JSON sent as msgpack ("application/msgpack"), --data-file the raw
 * bytes of a file (--content-type, default "application/octet-stream"). default_type is the type
 * when --type is not given. Returns -1 with *out set, or an exit code after printing why. */
int cli_build_event(cli *c, const cli_event_opts *o, const char *default_type, eddy_event **out);

/* Reads a whole file (- for stdin) into *bytes (malloc'd, the caller's); false when it cannot. */
bool cli_read_file(const char *path, char **bytes, size_t *len);

/* JSON text to msgpack bytes (malloc'd, the caller's). False with why (line and column) when
 * the text is not JSON. */
bool cli_json_to_msgpack(const char *text, char **bytes, size_t *len, char *why, size_t whysize);
/* A msgpack value to JSON: maps with string keys become objects, binary becomes
 * {"base64": ...}. NULL when the bytes are not one msgpack value. New reference. */
json_t *cli_msgpack_to_json(const void *bytes, size_t len);
/* The event in the CloudEvents JSON format (eddy_event_to_json): data_base64 for binary data
 * (msgpack included), JSON data inline, text as a string. New reference; NULL when out of
 * memory. */
json_t *cli_event_json(const eddy_event *ev);
/* Msgpack data (application/msgpack) decoded to JSON, shown beside the event as "data_value";
 * NULL for any other data (a line's "s:o*" then leaves the member out). New reference. */
json_t *cli_data_value(const eddy_event *ev);
/* Events in the CloudEvents JSON format: one object, or an array (a batch). On true *events is
 * a malloc'd array of *count events (free each, then the array); false with why. */
bool cli_read_events(const char *text, size_t len, eddy_event ***events, size_t *count, char *why,
                     size_t whysize);
/* Prints the value as one line on stdout (compact) and flushes, then drops the reference. False
 * when it could not be written (or v is NULL: out of memory): a subscription must then not
 * acknowledge what it did not show. */
bool cli_print_line(json_t *v);
/* --raw: the event's data alone and a newline (msgpack data decoded to JSON, other data as its
 * bytes); false when it could not be written. */
bool cli_print_raw(const eddy_event *ev);
/* Prints the value indented on stdout, then drops the reference; false as above. */
bool cli_print_pretty(json_t *v);
/* Base64 of bytes (malloc'd text). */
char *cli_base64(const void *bytes, size_t len);

/* ---- waiting ------------------------------------------------------------------------------ */

/* Blocks SIGINT and SIGTERM in the calling thread (call before any bus exists, so every thread
 * of the bus inherits the mask) and waits until `done` is set (by cli_wait_done), a signal
 * arrives, or timeout_ms (0: forever) passes. Returns 1 done, 0 signal, -1 timeout. */
void cli_block_signals(void);
int cli_wait(long long timeout_ms);
void cli_wait_done(void);

/* ---- progress bars (stderr, only on a terminal) ------------------------------------------ */

typedef struct cli_progress {
    bool on;
    const char *label;
    unsigned long long total;
    int last_width;
} cli_progress;
void cli_progress_start(cli_progress *p, const char *label, unsigned long long total);
void cli_progress_update(cli_progress *p, unsigned long long done);
void cli_progress_end(cli_progress *p);

/* ---- the commands ------------------------------------------------------------------------- */

int cmd_pub(cli *c, int argc, char **argv);
int cmd_tail(cli *c, int argc, char **argv);
int cmd_request(cli *c, int argc, char **argv);
int cmd_respond(cli *c, int argc, char **argv);
int cmd_groups(cli *c, int argc, char **argv);
int cmd_dlq(cli *c, int argc, char **argv);
int cmd_store(cli *c, int argc, char **argv);
int cmd_feed(cli *c, int argc, char **argv);
int cmd_registry(cli *c, int argc, char **argv);
int cmd_stats(cli *c, int argc, char **argv);
int cmd_top(cli *c, int argc, char **argv);
int cmd_exporter(cli *c, int argc, char **argv);
int cmd_bench(cli *c, int argc, char **argv);

#endif
