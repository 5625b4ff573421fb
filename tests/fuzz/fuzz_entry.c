/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for eddy__entry_decode, which reads stream entries anyone may have written.
 *
 * Input layout: one byte choosing max_size, then pieces that alternate field, value; each
 * piece is a one-byte length and that many bytes (the last takes what is left), so pieces can
 * hold any byte, NUL included. Every piece gets its own exact-size allocation without a
 * terminator, so ASan catches a decoder that reads past a length or relies on a NUL.
 *
 * Properties beyond "no crash": a decoded event validates, its size is its encoding's size,
 * and encoding then decoding it gives the same event back. The view decode, given copies with
 * one readable byte past each piece (a NUL, or for odd-length pieces a non-NUL byte, so both
 * the borrowing and the copying paths run), refuses and accepts exactly as the decode does and
 * gives the same event. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "events/entry.h"
#include "util/cmd.h"

#define MAX_PIECES 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *a, const char *b) {
    if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
        abort();
}

static void check_same(const eddy_event *a, const eddy_event *b) {
    check_str(eddy_event_id(a), eddy_event_id(b));
    check_str(eddy_event_source(a), eddy_event_source(b));
    check_str(eddy_event_specversion(a), eddy_event_specversion(b));
    check_str(eddy_event_type(a), eddy_event_type(b));
    check_str(eddy_event_subject(a), eddy_event_subject(b));
    check_str(eddy_event_time(a), eddy_event_time(b));
    check_str(eddy_event_datacontenttype(a), eddy_event_datacontenttype(b));
    check_str(eddy_event_dataschema(a), eddy_event_dataschema(b));
    size_t n = eddy_event_extension_count(a);
    if (n != eddy_event_extension_count(b))
        abort();
    for (size_t i = 0; i < n; i++) {
        const char *an, *av, *bn, *bv;
        if (eddy_event_extension_at(a, i, &an, &av) != EDDY_OK ||
            eddy_event_extension_at(b, i, &bn, &bv) != EDDY_OK)
            abort();
        check_str(an, bn);
        check_str(av, bv);
        check_str(eddy_event_extension(b, an), av);
        eddy_ext_type at, bt;
        if (eddy_event_extension_type_at(a, i, &at) != EDDY_OK ||
            eddy_event_extension_type_at(b, i, &bt) != EDDY_OK || at != bt)
            abort();
    }
    size_t alen, blen;
    const void *ad = eddy_event_data(a, &alen), *bd = eddy_event_data(b, &blen);
    if ((ad == NULL) != (bd == NULL) || alen != blen || (alen && memcmp(ad, bd, alen) != 0))
        abort();
}

static void round_trip(const eddy_event *ev) {
    if (eddy_event_validate(ev, NULL) != EDDY_OK)
        abort();
    eddy__cmd cmd;
    eddy__cmd_init(&cmd);
    eddy__cmd_str(&cmd, "XADD");
    eddy__cmd_str(&cmd, "k");
    eddy__cmd_str(&cmd, "*");
    eddy_status st = eddy__entry_encode(ev, &cmd);
    if (st == EDDY_ERR_NOMEM) {
        eddy__cmd_reset(&cmd);
        return;
    }
    if (st != EDDY_OK)
        abort();
    size_t n = (size_t)cmd.argc - 3, total = 0;
    for (size_t i = 0; i < n; i++)
        total += cmd.argvlen[3 + i];
    if (total != eddy_event_size(ev))
        abort();
    eddy_event *again = NULL;
    eddy_error err;
    st = eddy__entry_decode(eddy__cmd_argv(&cmd) + 3, cmd.argvlen + 3, n, total, &again, &err);
    if (st == EDDY_OK)
        check_same(ev, again);
    else if (st != EDDY_ERR_NOMEM)
        abort();
    eddy_event_free(again);
    eddy_event *dup = eddy_event_dup(ev);
    if (dup)
        check_same(ev, dup);
    eddy_event_free(dup);
    eddy__cmd_reset(&cmd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    /* 0xff: no limit; otherwise limits up to ~4 KB, around the sizes the fuzzer produces. */
    size_t max_size = data[0] == 0xff ? SIZE_MAX : (size_t)data[0] * 16;
    char *fv[MAX_PIECES];
    size_t fvlen[MAX_PIECES];
    size_t n = 0, pos = 1;
    while (pos < size && n < MAX_PIECES) {
        size_t len = data[pos++];
        if (len > size - pos)
            len = size - pos;
        fv[n] = malloc(len ? len : 1);
        if (!fv[n])
            break;
        memcpy(fv[n], data + pos, len);
        fvlen[n++] = len;
        pos += len;
    }

    eddy_event *ev = NULL;
    eddy_error err;
    eddy_status st = eddy__entry_decode((const char *const *)fv, fvlen, n, max_size, &ev, &err);
    if (st == EDDY_OK) {
        if (!ev)
            abort();
        round_trip(ev);
    } else if (ev ||
               (st != EDDY_ERR_MALFORMED && st != EDDY_ERR_TOO_LARGE && st != EDDY_ERR_NOMEM) ||
               err.status != st || memchr(err.detail, '\0', sizeof(err.detail)) == NULL) {
        abort();
    }

    /* The view decode over copies that may be borrowed (see the opening comment). */
    char *tv[MAX_PIECES];
    size_t nt = 0;
    for (; nt < n; nt++) {
        if (!(tv[nt] = malloc(fvlen[nt] + 1)))
            break;
        memcpy(tv[nt], fv[nt], fvlen[nt]);
        tv[nt][fvlen[nt]] = fvlen[nt] % 2 ? 'x' : '\0';
    }
    if (nt == n) {
        eddy__event_view view;
        const eddy_event *vev = NULL;
        eddy_error verr;
        eddy_status vst = eddy__entry_decode_view((const char *const *)tv, fvlen, n, max_size,
                                                  &view, &vev, &verr);
        if (vst == EDDY_OK) {
            if (!vev || (st != EDDY_OK && st != EDDY_ERR_NOMEM))
                abort();
            if (ev)
                check_same(ev, vev);
            eddy__event_view_release(&view);
        } else if (vev || (vst != st && vst != EDDY_ERR_NOMEM && st != EDDY_ERR_NOMEM)) {
            abort();
        }
    }
    for (size_t i = 0; i < nt; i++)
        free(tv[i]);
    eddy_event_free(ev);

    /* The lookup the bus uses for its own fields, over the same pieces. */
    size_t vlen;
    const char *v = eddy__entry_field((const char *const *)fv, fvlen, n, "_reply_to", &vlen);
    volatile unsigned char sink = 0;
    for (size_t i = 0; v && i < vlen; i++)
        sink ^= (unsigned char)v[i]; /* ASan checks the returned length is real */
    (void)sink;

    for (size_t i = 0; i < n; i++)
        free(fv[i]);
    return 0;
}
