/* SPDX-License-Identifier: BSD-3-Clause */
/* Building the event a command sends (pub, request, store append) from its options: --data as
 * JSON sent as msgpack, or --data-file's bytes as they are. */
#include <string.h>

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

int cli_build_event(cli *c, const cli_event_opts *o, const char *default_type, eddy_event **out) {
    *out = NULL;
    if (o->data && o->data_file)
        return cli_usage(c, "give --data or --data-file, not both");
    if (o->content_type && !o->data_file)
        return cli_usage(c, "--content-type goes with --data-file (--data is sent as msgpack)");
    char *bytes = NULL;
    size_t len = 0;
    char why[200];
    if (o->data && !cli_json_to_msgpack(o->data, &bytes, &len, why, sizeof(why)))
        return cli_usage(c, "--data is not JSON: %s", why);
    if (o->data_file && !cli_read_file(o->data_file, &bytes, &len)) {
        fprintf(stderr, "eddy %s: cannot read --data-file '%s'\n", c->command, o->data_file);
        return CLI_USAGE;
    }
    char id[37];
    cli_random_id(id);
    eddy_event *ev = eddy_event_new();
    eddy_status st = ev ? EDDY_OK : EDDY_ERR_NOMEM;
    if (st == EDDY_OK)
        st = eddy_event_set_id(ev, o->id ? o->id : id);
    if (st == EDDY_OK)
        st = eddy_event_set_source(ev, o->source ? o->source : "eddy-cli");
    if (st == EDDY_OK)
        st = eddy_event_set_type(ev, o->type ? o->type : default_type);
    if (st == EDDY_OK && (o->data || o->data_file))
        st = eddy_event_set_datacontenttype(ev, o->data           ? EDDY_MSGPACK_CONTENT_TYPE
                                                : o->content_type ? o->content_type
                                                                  : "application/octet-stream");
    if (st == EDDY_OK && bytes)
        st = eddy_event_set_data(ev, bytes, len);
    free(bytes);
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
