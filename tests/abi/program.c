/* SPDX-License-Identifier: BSD-3-Clause */
/* A program of an older release: tests/abi/check.sh compiles it against a stored snapshot of
 * the headers (tests/abi/<release>/include) and runs it against the library of HEAD, and
 * against a scratch copy of the library whose eddy_settings has one more field. Its option
 * structs are followed by bytes of 0xAB, so a library that read past the struct the program
 * knows would see them (and its checks, or the counters below, would fail).
 * Its eddy_consumer_stats is followed by such bytes too, which the library must not write.
 * With EDDY_ABI_PROBE=name=value in the environment, the library is expected to have a setting
 * `name` this program's headers lack, at its default `value`. Prints "abi program: ok". */
#include <eddy/blocking.h>
#include <eddy/store.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "abi program: " __VA_ARGS__);                                              \
        fputc('\n', stderr);                                                                       \
        exit(1);                                                                                   \
    } while (0)

static atomic_int handled;

static eddy_status handle(eddy_delivery *d, void *user) {
    (void)d;
    (void)user;
    atomic_fetch_add(&handled, 1);
    return EDDY_OK;
}

int main(void) {
    struct {
        eddy_settings s;
        unsigned char tail[256];
    } w;
    memset(&w, 0xAB, sizeof(w));
    eddy_settings_init(&w.s);
    eddy_error err;
    if (eddy_settings_set(&w.s, "ns", "abi", &err) != EDDY_OK ||
        eddy_settings_set(&w.s, "workers", "2", &err) != EDDY_OK ||
        eddy_settings_set(&w.s, "url", "memory://abi", &err) != EDDY_OK)
        FAIL("eddy_settings_set: %s", err.detail);
    if (eddy_settings_set(&w.s, "workers", "0", &err) != EDDY_ERR_INVALID_SPEC)
        FAIL("workers 0 accepted");
    w.s.source = "/abi";

    const char *probe = getenv("EDDY_ABI_PROBE");
    if (probe && *probe) {
        char name[64], want[64], got[64];
        const char *eq = strchr(probe, '=');
        if (!eq || (size_t)(eq - probe) >= sizeof(name))
            FAIL("EDDY_ABI_PROBE: name=value");
        memcpy(name, probe, (size_t)(eq - probe));
        name[eq - probe] = '\0';
        snprintf(want, sizeof(want), "%s", eq + 1);
        if (eddy_settings_get(&w.s, name, got, sizeof(got), &err) != EDDY_OK)
            FAIL("the library has no setting %s: %s", name, err.detail);
        if (strcmp(got, want) != 0)
            FAIL("%s is %s, not its default %s", name, got, want);
        if (eddy_settings_set(&w.s, name, want, &err) != EDDY_ERR_INVALID_ARGUMENT)
            FAIL("%s set although this program's struct has no room for it", name);
    }

    struct {
        eddy_subscription_spec spec[2];
        unsigned char tail[256];
    } sw;
    memset(&sw, 0xAB, sizeof(sw));
    for (int i = 0; i < 2; i++) {
        eddy_subscription_spec_init(&sw.spec[i]);
        sw.spec[i].name = i ? "second" : "first";
        sw.spec[i].pattern = i ? "abi.two" : "abi.one";
        sw.spec[i].group = "g";
        sw.spec[i].delivery = EDDY_AT_LEAST_ONCE;
        sw.spec[i].handler = handle;
    }
    eddy_bus *bus = NULL;
    if (eddy_bus_new(&w.s, sw.spec, 2, &bus, &err) != EDDY_OK)
        FAIL("eddy_bus_new: %s", err.detail);
    if (eddy_bus_start(bus, &err) != EDDY_OK)
        FAIL("eddy_bus_start: %s", err.detail);
    for (int i = 0; i < 4; i++) {
        eddy_event *ev = NULL;
        if (eddy_bus_new_event(bus, "abi.test", &ev, &err) != EDDY_OK)
            FAIL("eddy_bus_new_event: %s", err.detail);
        if (eddy_bus_publish(bus, i % 2 ? "abi.two" : "abi.one", ev, NULL, 0, &err) != EDDY_OK)
            FAIL("eddy_bus_publish: %s", err.detail);
        eddy_event_free(ev);
    }
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 1000 && atomic_load(&handled) < 4; i++) /* at most 10 s */
        nanosleep(&tick, NULL);
    if (atomic_load(&handled) != 4)
        FAIL("%d of 4 deliveries handled", atomic_load(&handled));
    /* A struct the library fills: it must write no more than this program's struct. */
    struct {
        eddy_consumer_stats cs;
        unsigned char tail[256];
    } cw;
    memset(&cw, 0xAB, sizeof(cw));
    if (eddy_bus_consumer_stats(bus, "second", &cw.cs) != EDDY_OK || cw.cs.handled != 2 ||
        cw.cs.failed)
        FAIL("consumer stats of 'second': handled %llu", (unsigned long long)cw.cs.handled);
    for (size_t i = 0; i < sizeof(cw.tail); i++)
        if (cw.tail[i] != 0xAB)
            FAIL("the library wrote byte %zu past this program's eddy_consumer_stats", i);
    eddy_bus_free(bus);

    eddy_store *store = NULL;
    if (eddy_store_open(&w.s, &store, &err) != EDDY_OK)
        FAIL("eddy_store_open: %s", err.detail);
    struct {
        eddy_append_opts o;
        unsigned char tail[256];
    } ao;
    memset(&ao, 0xAB, sizeof(ao));
    eddy_append_opts_init(&ao.o);
    ao.o.expected_version = EDDY_NO_STREAM;
    eddy_event *ev = NULL;
    if (eddy_event_create("/abi", "abi.stored", &ev, &err) != EDDY_OK)
        FAIL("eddy_event_create: %s", err.detail);
    const eddy_event *evs[] = {ev};
    long long version = 0;
    if (eddy_store_append(store, "s-1", evs, 1, &ao.o, &version, &err) != EDDY_OK || version != 1)
        FAIL("eddy_store_append: %s", err.detail);
    eddy_event_free(ev);
    long long head = 0;
    if (eddy_store_head(store, &head, &err) != EDDY_OK || head != 1)
        FAIL("eddy_store_head: %lld", head);
    eddy_store_close(store);
    if (strcmp(eddy_log_level_name(EDDY_LOG_WARN), "warn") != 0)
        FAIL("eddy_log_level_name");
    printf("abi program: ok (library %s)\n", eddy_version());
    return 0;
}
