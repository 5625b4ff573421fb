/* SPDX-License-Identifier: BSD-3-Clause */
/* Key names; see keys.h for the layout. */
#include "keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *key_join(const char *ns, const char *kind, const char *rest) {
    size_t n = strlen(ns) + strlen(kind) + (rest ? strlen(rest) : 0) + 8;
    char *key = malloc(n);
    if (!key)
        return NULL;
    if (rest)
        snprintf(key, n, "{%s}:%s:%s", ns, kind, rest);
    else
        snprintf(key, n, "{%s}:%s", ns, kind);
    return key;
}

char *eddy__key_stream(const char *ns, const char *subject) { return key_join(ns, "s", subject); }
char *eddy__key_gather(const char *ns, const char *subject) { return key_join(ns, "all", subject); }
char *eddy__key_subjects(const char *ns) { return key_join(ns, "subjects", NULL); }
char *eddy__key_dlq(const char *ns, const char *group) { return key_join(ns, "dlq", group); }
char *eddy__key_inbox(const char *ns, const char *id) { return key_join(ns, "inbox", id); }
char *eddy__key_es_all(const char *ns) { return key_join(ns, "es:all", NULL); }
char *eddy__key_es_pos(const char *ns) { return key_join(ns, "es:pos", NULL); }
char *eddy__key_es_stream(const char *ns, const char *stream_id) {
    return key_join(ns, "es:s", stream_id);
}
char *eddy__key_checkpoint(const char *ns, const char *feed_id) {
    return key_join(ns, "ckpt", feed_id);
}
char *eddy__key_model(const char *ns, const char *feed_id, const char *part) {
    size_t n = strlen(feed_id) + strlen(part) + 2;
    char *rest = malloc(n);
    if (!rest)
        return NULL;
    snprintf(rest, n, "%s:%s", feed_id, part);
    char *key = key_join(ns, "rm", rest);
    free(rest);
    return key;
}
char *eddy__key_pubids(const char *ns, const char *subject) {
    return key_join(ns, "pubids", subject);
}
char *eddy__key_pubexp(const char *ns, const char *subject) {
    return key_join(ns, "pubexp", subject);
}

bool eddy__key_name_ok(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c >= 127 || c == '{' || c == '}' || c == ':')
            return false;
    }
    return true;
}
