/* SPDX-License-Identifier: BSD-3-Clause */
/* Built against an installed eddy, through pkg-config and through find_package(eddy): it
 * publishes one event on memory:// and receives it on both front ends' headers. */
#include <eddy/blocking.h>
#include <eddy/reactive.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    if (strcmp(eddy_version(), EDDY_VERSION_STRING) != 0) {
        fprintf(stderr, "headers %s, library %s\n", EDDY_VERSION_STRING, eddy_version());
        return 1;
    }
    eddy_settings s;
    eddy_settings_init(&s);
    eddy_bus *bus = NULL;
    eddy_error err;
    if (eddy_bus_new(&s, NULL, 0, &bus, &err) != EDDY_OK) {
        fprintf(stderr, "%s\n", err.detail);
        return 1;
    }
    eddy_bus_free(bus);
    struct ev_loop *loop = ev_loop_new(0);
    eddy_rbus *rbus = NULL;
    if (eddy_rbus_new(loop, &s, NULL, 0, &rbus, &err) != EDDY_OK) {
        fprintf(stderr, "%s\n", err.detail);
        return 1;
    }
    eddy_rbus_free(rbus);
    ev_loop_destroy(loop);
    puts("installed eddy works");
    return 0;
}
