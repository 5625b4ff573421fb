/* SPDX-License-Identifier: BSD-3-Clause */
/* Built against an installed eddy with its opt-in eddy/msgpack.h (pkg-config eddy msgpack, and
 * find_package(eddy)'s eddy::msgpack): packs a value with msgpack-c, decodes it with eddy and
 * reads a field by path. */
#include <eddy/msgpack.h>
#include <stdio.h>

static eddy_status pack(msgpack_packer *pk, void *user) {
    (void)user;
    msgpack_pack_map(pk, 1);
    msgpack_pack_str_with_body(pk, "n", 1);
    msgpack_pack_int(pk, 42);
    return EDDY_OK;
}

int main(void) {
    eddy_event *ev = NULL;
    eddy_value *v = NULL;
    int64_t n = 0;
    if (eddy_event_create("/install", "t", &ev, NULL) != EDDY_OK ||
        eddy_event_set_value(ev, pack, NULL, NULL) != EDDY_OK ||
        eddy_event_decode_value(ev, &v, NULL) != EDDY_OK ||
        eddy_msgpack_get_int(eddy_value_object(v), "n", &n, NULL) != EDDY_OK || n != 42) {
        fprintf(stderr, "msgpack consumer: n=%lld\n", (long long)n);
        return 1;
    }
    eddy_value_free(v);
    eddy_event_free(ev);
    puts("installed eddy/msgpack.h works");
    return 0;
}
