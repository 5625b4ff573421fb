/* SPDX-License-Identifier: BSD-3-Clause */
/* Building the event a command sends (pub, request, store append) from its options: --data as
 * JSON sent as msgpack, or --data-file's bytes as they are. */
#include <string.h>
#include <time.h>

#include "cli.h"
#include "eddy/value.h"

bool cli_read_file(const char *path, char **bytes, size_t *len) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return false;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    for (size_t got; b && (got = fread(b + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *bigger = realloc(b, cap *= 2);
            if (!bigger)
                free(b);
            b = bigger;
        }
    }
    bool ok = b && !ferror(f);
    if (f != stdin)
        fclose(f);
    if (!ok) {
        free(b);
        return false;
    }
    *bytes = b;
    *len = n;
    return true;
}

/* The current time, RFC 3339 in UTC with milliseconds. */
static void now_rfc3339(char *out, size_t size) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char secs[32];
    strftime(secs, sizeof(secs), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, size, "%.24s.%03dZ", secs, (int)(ts.tv_nsec / 1000000L % 1000));
}

int cli_build_event(cli *c, const cli_event_opts *o, const char *default_type, eddy_event **out) {
    *out = NULL;
    if ((o->data != NULL) + (o->data_file != NULL) + (o->line != NULL) > 1)
        return cli_usage(c, "give one of --data, --data-file and lines on stdin");
    if (o->content_type && !o->data_file && !o->line)
        return cli_usage(c, "--content-type goes with --data-file or stdin lines (--data is sent "
                            "as msgpack)");
    char *bytes = NULL;
    size_t len = 0;
    char why[200];
    if (o->data && !cli_json_to_msgpack(o->data, &bytes, &len, why, sizeof(why)))
        return cli_usage(c, "--data is not JSON: %s", why);
    bool line_json = o->line && !o->content_type;
    if (line_json && !cli_json_to_msgpack(o->line, &bytes, &len, why, sizeof(why)))
        return cli_usage(c, "the line is not JSON (give --content-type to send it as it is): %s",
                         why);
    if (o->line && !line_json) {
        if (!(bytes = malloc(o->line_len ? o->line_len : 1)))
            return cli_usage(c, "out of memory");
        memcpy(bytes, o->line, o->line_len);
        len = o->line_len;
    }
    if (o->data_file && !cli_read_file(o->data_file, &bytes, &len)) {
        fprintf(stderr, "eddy %s: cannot read --data-file '%s'\n", c->command, o->data_file);
        return CLI_USAGE;
    }
    char id[37], now[48];
    cli_random_id(id);
    eddy_event *ev = eddy_event_new();
    eddy_status st = ev ? EDDY_OK : EDDY_ERR_NOMEM;
    if (st == EDDY_OK)
        st = eddy_event_set_id(ev, o->id ? o->id : id);
    if (st == EDDY_OK)
        st = eddy_event_set_source(ev, o->source ? o->source : "eddy-cli");
    if (st == EDDY_OK)
        st = eddy_event_set_type(ev, o->type ? o->type : default_type);
    if (st == EDDY_OK && o->time) {
        if (strcmp(o->time, "now") == 0)
            now_rfc3339(now, sizeof(now));
        st = eddy_event_set_time(ev, strcmp(o->time, "now") == 0 ? now : o->time);
    }
    if (st == EDDY_OK && (o->data || o->data_file || o->line))
        st = eddy_event_set_datacontenttype(ev, o->data || line_json ? EDDY_MSGPACK_CONTENT_TYPE
                                                : o->content_type    ? o->content_type
                                                                     : "application/octet-stream");
    if (st == EDDY_OK && bytes)
        st = eddy_event_set_data(ev, bytes, len);
    free(bytes);
    for (int i = 0; st == EDDY_OK && i < o->ext.n; i++) {
        const char *kv = o->ext.items[i], *eq = strchr(kv, '=');
        if (!eq || eq == kv) {
            eddy_event_free(ev);
            return cli_usage(c, "--ext '%s': expected NAME=VALUE", kv);
        }
        char name[64];
        snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
        eddy_error why_ext = {0};
        if ((size_t)(eq - kv) >= sizeof(name))
            snprintf(why_ext.detail, sizeof(why_ext.detail), "name too long");
        else
            st = eddy_event_set_extension(ev, name, eq + 1, &why_ext);
        if ((size_t)(eq - kv) >= sizeof(name) || st != EDDY_OK) {
            eddy_event_free(ev);
            return cli_usage(c, "--ext '%s': %s", kv,
                             why_ext.detail[0] ? why_ext.detail : eddy_status_str(st));
        }
    }
    eddy_error err = {0};
    if (st == EDDY_OK)
        st = eddy_event_validate(ev, &err);
    if (st != EDDY_OK) {
        eddy_event_free(ev);
        return cli_fail(c, "bad event", st, &err);
    }
    *out = ev;
    return -1;
}
