/* SPDX-License-Identifier: BSD-3-Clause */
/* The settings table: eddy_settings_set/get for every type, unknown names, bad values and
 * ranges (with the texts a bus gives), the size rule of the option structs (an _init writes
 * only the caller's size; a smaller or zeroed struct reads the defaults of the fields it
 * lacks; arrays of specs stride by the caller's size), and eddy_log_level_name. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bus/sub.h"
#include "config/settings.h"
#include "eddy/blocking.h"
#include "eddy/dlq.h"
#include "eddy/feed.h"
#include "eddy/push.h"
#include "eddy/store.h"
#include "util/options.h"

static eddy_status nop(eddy_delivery *d, void *user) { return EDDY_OK; }

static eddy_settings fresh(void) {
    eddy_settings s;
    eddy_settings_init(&s);
    return s;
}

static void expect_set(eddy_settings *s, const char *name, const char *value, eddy_status want,
                       const char *detail) {
    eddy_error err = {0};
    eddy_status st = eddy_settings_set(s, name, value, &err);
    cr_expect_eq(st, want, "%s=%s: %s (%s)", name, value ? value : "NULL", eddy_status_name(st),
                 err.detail);
    if (detail)
        cr_expect_str_eq(err.detail, detail);
}

static void expect_get(const eddy_settings *s, const char *name, const char *want) {
    char buf[128];
    eddy_error err = {0};
    cr_assert_eq(eddy_settings_get(s, name, buf, sizeof(buf), &err), EDDY_OK, "%s: %s", name,
                 err.detail);
    cr_expect_str_eq(buf, want, "%s", name);
}

Test(settings, init_records_the_size_and_the_defaults_of_the_table) {
    eddy_settings s = fresh();
    cr_expect_eq(s.struct_size, sizeof(eddy_settings));
    cr_expect_str_eq(s.url, "memory://");
    cr_expect_str_eq(s.ns, "eddy");
    cr_expect_eq(s.max_event_size, 1024 * 1024);
    cr_expect_eq(s.workers, 4);
    cr_expect_eq(s.command_timeout_ms, 5000);
    cr_expect_eq(s.consumer_idle_ms, 86400000u);
    cr_expect_eq(s.wait_timeout_ms, 1000);
    cr_expect_null(s.source);
    cr_expect_not(s.tls_insecure);
}

Test(settings, every_field_is_a_row) {
    /* The rows of each table cover its struct: each field's bytes once, in order, to the last
     * one (a gap is at most padding, less than 8 bytes). */
    for (size_t k = 0; eddy__opt_tables[k]; k++) {
        const eddy__opt_table *t = eddy__opt_tables[k];
        size_t end = sizeof(size_t), end_0_3 = end;
        for (size_t i = 0; i < t->nrows; i++) {
            const eddy__opt *o = &t->rows[i];
            cr_expect_geq(o->offset, end, "%s.%s overlaps the previous row", t->prefix, o->name);
            cr_expect_lt(o->offset - end, 8, "%s: a field before %s has no row", t->prefix,
                         o->name);
            end = o->offset + o->size;
            /* A 0.3.0 field lies wholly inside size_0_3, a later one wholly after it. */
            if (o->offset < t->size_0_3) {
                cr_expect_leq(end, t->size_0_3, "%s.%s straddles size_0_3", t->prefix, o->name);
                end_0_3 = end;
            }
            cr_expect_not_null(o->doc);
        }
        cr_expect_lt(t->size - end, 8, "%s: the last fields have no row", t->prefix);
        cr_expect_leq(t->size_0_3, t->size);
        /* size_0_3 (src/config/settings.h, src/bus/sub.h, src/config/option_tables.c) is the end
         * of the last 0.3.0 field: fields added since come after it. */
        cr_expect_lt(t->size_0_3 - end_0_3, 8, "%s: size_0_3 is not the end of a 0.3.0 row",
                     t->prefix);
        cr_expect_leq(t->size, 1024, "%s: larger than eddy__opts_init's buffer", t->prefix);
    }
}

Test(settings, set_and_get_each_type) {
    eddy_settings s = fresh();
    /* unsigned */
    expect_set(&s, "command_timeout_ms", "7000", EDDY_OK, NULL);
    cr_expect_eq(s.command_timeout_ms, 7000);
    expect_get(&s, "command_timeout_ms", "7000");
    /* size_t */
    expect_set(&s, "max_event_size", "2048", EDDY_OK, NULL);
    cr_expect_eq(s.max_event_size, 2048);
    /* long long */
    expect_set(&s, "stream_maxlen", "1000", EDDY_OK, NULL);
    cr_expect_eq(s.stream_maxlen, 1000);
    /* unsigned long long */
    expect_set(&s, "retention_max_len", "18446744073709551615", EDDY_OK, NULL);
    cr_expect_eq(s.retention_max_len, 18446744073709551615ull);
    expect_get(&s, "retention_max_len", "18446744073709551615");
    /* bool */
    expect_set(&s, "tls_insecure", "yes", EDDY_OK, NULL);
    cr_expect(s.tls_insecure);
    expect_get(&s, "tls_insecure", "true");
    expect_set(&s, "tls_insecure", "OFF", EDDY_OK, NULL);
    cr_expect_not(s.tls_insecure);
    /* string: the struct points at the value */
    const char *url = "redis://127.0.0.1:1/2";
    expect_set(&s, "url", url, EDDY_OK, NULL);
    cr_expect_eq(s.url, url);
    expect_set(&s, "source", "/svc", EDDY_OK, NULL);
    cr_expect_str_eq(s.source, "/svc");
    expect_set(&s, "source", NULL, EDDY_OK, NULL);
    cr_expect_null(s.source);
    expect_get(&s, "source", "");
    /* a NULL string with a default reads as the default */
    expect_set(&s, "ns", NULL, EDDY_OK, NULL);
    expect_get(&s, "ns", "eddy");
}

Test(settings, bad_names_and_types_set_in_code) {
    eddy_settings s = fresh();
    expect_set(&s, "no_such_setting", "1", EDDY_ERR_NOT_FOUND,
               "settings has no option 'no_such_setting'");
    expect_set(&s, NULL, "1", EDDY_ERR_INVALID_ARGUMENT, NULL);
    cr_expect_eq(eddy_settings_set(NULL, "workers", "1", NULL), EDDY_ERR_INVALID_ARGUMENT);
    expect_set(&s, "log", "x", EDDY_ERR_INVALID_ARGUMENT,
               "settings.log is a callback: it is set in code, not from text");
    expect_set(&s, "log_user", "x", EDDY_ERR_INVALID_ARGUMENT, NULL);
    expect_set(&s, "request_names", "a,b", EDDY_ERR_INVALID_ARGUMENT, NULL);
    expect_set(&s, "request_name_count", "2", EDDY_ERR_INVALID_ARGUMENT, NULL);
    char buf[8];
    cr_expect_eq(eddy_settings_get(&s, "log", buf, sizeof(buf), NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_settings_get(&s, "nope", buf, sizeof(buf), NULL), EDDY_ERR_NOT_FOUND);
    cr_expect_eq(eddy_settings_get(&s, "url", buf, 4, NULL), EDDY_ERR_TOO_LARGE);
    cr_expect_eq(eddy_settings_get(NULL, "url", buf, 4, NULL), EDDY_ERR_INVALID_ARGUMENT);
}

Test(settings, bad_values_leave_the_struct_as_it_was) {
    eddy_settings s = fresh();
    expect_set(&s, "workers", "", EDDY_ERR_INVALID_SPEC, "settings.workers: no value");
    expect_set(&s, "workers", NULL, EDDY_ERR_INVALID_SPEC, NULL);
    expect_set(&s, "workers", "four", EDDY_ERR_INVALID_SPEC,
               "settings.workers 'four': not a whole number from 0 to 4294967295");
    expect_set(&s, "workers", "4x", EDDY_ERR_INVALID_SPEC, NULL);
    expect_set(&s, "workers", "-1", EDDY_ERR_INVALID_SPEC, NULL);
    expect_set(&s, "workers", "4294967296", EDDY_ERR_INVALID_SPEC, NULL);
    expect_set(&s, "stream_maxlen", "99999999999999999999", EDDY_ERR_INVALID_SPEC, NULL);
    expect_set(&s, "tls_insecure", "maybe", EDDY_ERR_INVALID_SPEC,
               "settings.tls_insecure 'maybe': true or false (1/0, yes/no, on/off)");
    cr_expect_eq(s.workers, 4);
    cr_expect_eq(s.stream_maxlen, 0);
}

Test(settings, ranges_give_the_texts_a_bus_gives) {
    eddy_settings s = fresh();
    expect_set(&s, "workers", "0", EDDY_ERR_INVALID_SPEC, "settings.workers must be > 0");
    expect_set(&s, "workers", "1025", EDDY_ERR_INVALID_SPEC, "settings.workers above 1024");
    expect_set(&s, "workers", "1024", EDDY_OK, NULL);
    expect_set(&s, "stream_maxlen", "-5", EDDY_ERR_INVALID_SPEC,
               "settings.stream_maxlen is negative");
    expect_set(&s, "publish_dedup_ms", "999", EDDY_ERR_INVALID_SPEC,
               "settings.publish_dedup_ms 999: 0 (off) or 1000 to 86400000 (a day); a shorter "
               "window would not cover a retry after a timeout");
    expect_set(&s, "publish_dedup_ms", "0", EDDY_OK, NULL);
    expect_set(&s, "publish_dedup_ms", "86400000", EDDY_OK, NULL);
    expect_set(&s, "ns", "a:b", EDDY_ERR_INVALID_SPEC,
               "settings.ns 'a:b': 1-128 printable characters without space, '{', '}' or ':'");
    expect_set(&s, "instance", "x y", EDDY_ERR_INVALID_SPEC, NULL);
    expect_set(&s, "source", "", EDDY_ERR_INVALID_SPEC, "settings.source is empty");
    cr_expect_eq(s.workers, 1024);

    /* The bus checks the same rows with the same words. */
    eddy_settings bad = fresh();
    bad.workers = 0;
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_bus_new(&bad, NULL, 0, &bus, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_str_eq(err.detail, "settings.workers must be > 0");
    bad = fresh();
    bad.reconnect_max_ms = 10;
    cr_expect_eq(eddy_bus_new(&bad, NULL, 0, &bus, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_str_eq(err.detail, "settings.reconnect_max_ms is below reconnect_min_ms");
    cr_expect_null(bus);
}

/* A program built against headers with fewer fields: its struct ends before the newer ones. */
Test(settings, a_smaller_struct_gets_the_defaults_of_the_fields_it_lacks) {
    size_t small = offsetof(eddy_settings, command_timeout_ms);
    unsigned char *mem = malloc(sizeof(eddy_settings) + 16);
    memset(mem, 0xAB, sizeof(eddy_settings) + 16);
    eddy_settings_init_sized((eddy_settings *)(void *)mem, small);
    for (size_t i = small; i < sizeof(eddy_settings) + 16; i++)
        cr_assert_eq(mem[i], 0xAB, "init wrote byte %zu past the caller's %zu", i, small);
    eddy_settings *s = (eddy_settings *)(void *)mem;
    cr_expect_eq(s->struct_size, small);
    cr_expect_eq(s->workers, 4);
    /* Reading and setting past the caller's struct. */
    expect_get(s, "command_timeout_ms", "5000");
    expect_set(s, "command_timeout_ms", "1", EDDY_ERR_INVALID_ARGUMENT,
               "settings.command_timeout_ms is newer than the headers this program was built with");
    for (size_t i = small; i < sizeof(eddy_settings) + 16; i++)
        cr_assert_eq(mem[i], 0xAB);
    /* The bus takes the defaults for the rest, not the 0xAB bytes (which would fail checks). */
    eddy__settings copy;
    eddy_error err = {0};
    cr_assert_eq(eddy__settings_copy(&copy, s, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(copy.command_timeout_ms, 5000);
    cr_expect_eq(copy.wait_timeout_ms, 1000);
    cr_expect_null(copy.tls_cacert);
    eddy__settings_free(&copy);
    free(mem);
}

Test(settings, a_zeroed_struct_is_the_0_3_0_layout) {
    eddy_settings s;
    memset(&s, 0, sizeof(s));
    s.workers = 2; /* the rest 0: invalid where 0 is, as it always was */
    eddy__settings copy;
    eddy_error err = {0};
    cr_expect_eq(eddy__settings_copy(&copy, &s, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_str_eq(err.detail, "settings.max_event_size must be > 0");
    cr_expect_eq(eddy__opts_caller_size(&eddy__settings_table, 0), EDDY__SETTINGS_SIZE_0_3);
    cr_expect_leq(EDDY__SETTINGS_SIZE_0_3, sizeof(eddy_settings));
    /* NULL settings: every default. */
    cr_assert_eq(eddy__settings_copy(&copy, NULL, &err), EDDY_OK);
    cr_expect_str_eq(copy.url_text, "memory://");
    cr_expect_str_eq(copy.ns, "eddy");
    cr_expect(copy.instance_random);
    eddy__settings_free(&copy);
}

Test(settings, copies_own_their_strings) {
    eddy_settings s = fresh();
    char ns[] = "orders", src[] = "/x", ca[] = "/ca.pem";
    s.ns = ns;
    s.source = src;
    s.tls_cacert = ca;
    s.instance = "me";
    const char *names[] = {"a", "b"};
    s.request_names = names;
    s.request_name_count = 2;
    eddy__settings c;
    cr_assert_eq(eddy__settings_copy(&c, &s, NULL), EDDY_OK);
    ns[0] = src[0] = ca[0] = '?';
    cr_expect_str_eq(c.ns, "orders");
    cr_expect_str_eq(c.source, "/x");
    cr_expect_str_eq(c.tls_cacert, "/ca.pem");
    cr_expect_str_eq(c.instance, "me");
    cr_expect_not(c.instance_random);
    cr_expect_eq(c.nrequest_names, 2);
    cr_expect_str_eq(c.request_names[1], "b");
    cr_expect_eq(c.command_timeout_ms, 5000);
    eddy__settings_free(&c);
}

Test(settings, other_option_structs_record_their_size) {
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    cr_expect_eq(spec.struct_size, sizeof(spec));
    cr_expect_eq(spec.shape, EDDY_COMPETING);
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cr_expect_eq(cfg.struct_size, sizeof(cfg));
    cr_expect_eq(cfg.page_size, 256);
    eddy_push_options po;
    eddy_push_options_init(&po);
    cr_expect_eq(po.struct_size, sizeof(po));
    cr_expect_eq(po.progress_ms, 250);
    eddy_append_opts ao;
    eddy_append_opts_init(&ao);
    cr_expect_eq(ao.struct_size, sizeof(ao));
    cr_expect_eq(ao.expected_version, EDDY_ANY_VERSION);
    eddy_dlq_cursor cur;
    eddy_dlq_cursor_init(&cur);
    cr_expect_eq(cur.struct_size, sizeof(cur));
    cr_expect_not(cur.done);
    /* An _init given a smaller size writes no more. */
    unsigned char mem[sizeof(eddy_feed_config) + 8];
    memset(mem, 0xCD, sizeof(mem));
    eddy_feed_config_init_sized((eddy_feed_config *)(void *)mem, offsetof(eddy_feed_config, log));
    for (size_t i = offsetof(eddy_feed_config, log); i < sizeof(mem); i++)
        cr_assert_eq(mem[i], 0xCD);
}

/* An array of specs from a program whose spec is larger than this library's (a newer header
 * compiled with an older library cannot happen, but a stride other than sizeof must work). */
Test(settings, spec_arrays_stride_by_the_callers_size) {
    size_t stride = sizeof(eddy_subscription_spec) + 16;
    unsigned char *mem = calloc(2, stride);
    for (int i = 0; i < 2; i++) {
        eddy_subscription_spec *sp = (eddy_subscription_spec *)(void *)(mem + i * stride);
        eddy_subscription_spec_init_sized(sp, stride);
        sp->name = i ? "second" : "first";
    }
    const eddy_subscription_spec *arr = (const eddy_subscription_spec *)(void *)mem;
    cr_expect_str_eq(eddy__spec_at(arr, 1)->name, "second");
    /* A zeroed array strides by the 0.3.0 size, which is this sizeof. */
    eddy_subscription_spec two[2] = {{.name = "a"}, {.name = "b"}};
    cr_expect_str_eq(eddy__spec_at(two, 1)->name, "b");
    cr_expect_eq(EDDY__SPEC_STRIDE_0_3, sizeof(eddy_subscription_spec));
    /* And a bus takes such an array. */
    eddy_subscription_spec specs[2];
    for (int i = 0; i < 2; i++) {
        eddy_subscription_spec_init(&specs[i]);
        specs[i].name = i ? "s2" : "s1";
        specs[i].pattern = "a.b";
        specs[i].group = "g";
        specs[i].handler = nop;
    }
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_new(NULL, specs, 2, &bus, &err), EDDY_OK, "%s", err.detail);
    eddy_consumer_stats cs;
    cr_expect_eq(eddy_bus_consumer_stats(bus, "s2", &cs), EDDY_OK);
    eddy_bus_free(bus);
    free(mem);
}

Test(settings, spec_table_sets_enums) {
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    const eddy__opt_table *t = &eddy__subscription_spec_table;
    cr_expect_eq(eddy__opts_set(t, &spec, "shape", "fanout", NULL), EDDY_OK);
    cr_expect_eq(spec.shape, EDDY_FANOUT);
    cr_expect_eq(eddy__opts_set(t, &spec, "delivery", "AT_LEAST_ONCE", NULL), EDDY_OK);
    cr_expect_eq(spec.delivery, EDDY_AT_LEAST_ONCE);
    eddy_error err = {0};
    cr_expect_eq(eddy__opts_set(t, &spec, "shape", "round_robin", &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_str_eq(err.detail, "subscription_spec.shape 'round_robin': not one of its values");
    char buf[32];
    cr_expect_eq(eddy__opts_get(t, &spec, "shape", buf, sizeof(buf), NULL), EDDY_OK);
    cr_expect_str_eq(buf, "fanout");
}

Test(settings, log_level_names) {
    cr_expect_str_eq(eddy_log_level_name(EDDY_LOG_DEBUG), "debug");
    cr_expect_str_eq(eddy_log_level_name(EDDY_LOG_INFO), "info");
    cr_expect_str_eq(eddy_log_level_name(EDDY_LOG_WARN), "warn");
    cr_expect_str_eq(eddy_log_level_name(EDDY_LOG_ERROR), "error");
    cr_expect_str_eq(eddy_log_level_name((eddy_log_level)42), "unknown");
}

/* A spec from a program whose struct ends before `paused`: the byte after its struct (set
 * here) is not read, paused takes its default. */
Test(settings, a_smaller_spec_gets_the_defaults_of_the_fields_it_lacks) {
    size_t small = offsetof(eddy_subscription_spec, paused);
    unsigned char mem[sizeof(eddy_subscription_spec)];
    memset(mem, 1, sizeof(mem));
    eddy_subscription_spec *spec = (eddy_subscription_spec *)(void *)mem;
    eddy_subscription_spec_init_sized(spec, small);
    cr_assert_eq(mem[small], 1, "init wrote past the caller's struct");
    spec->name = "s";
    spec->pattern = "a.b";
    spec->group = "g";
    spec->handler = nop;
    eddy__settings s;
    cr_assert_eq(eddy__settings_copy(&s, NULL, NULL), EDDY_OK);
    eddy__sub *sub = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy__sub_new(&s, spec, &sub, &err), EDDY_OK, "%s", err.detail);
    cr_expect_not(atomic_load(&sub->paused));
    eddy__sub_free(sub);
    /* The same struct with its full size is paused (the byte is 1). */
    spec->struct_size = sizeof(eddy_subscription_spec);
    cr_assert_eq(eddy__sub_new(&s, spec, &sub, &err), EDDY_OK, "%s", err.detail);
    cr_expect(atomic_load(&sub->paused));
    eddy__sub_free(sub);
    eddy__settings_free(&s);
}

Test(settings, feed_config_table_sets_longs) {
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    const eddy__opt_table *t = &eddy__feed_config_table;
    eddy_error err = {0};
    cr_expect_eq(eddy__opts_set(t, &cfg, "dedup_cache_size", "12", NULL), EDDY_OK);
    cr_expect_eq(cfg.dedup_cache_size, 12);
    cr_expect_eq(eddy__opts_set(t, &cfg, "dedup_cache_size", "0", &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_str_eq(err.detail, "feed_config.dedup_cache_size must be > 0");
    cr_expect_eq(eddy__opts_set(t, &cfg, "max_buffered_events", "-3", &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_eq(eddy__opts_set(t, &cfg, "page_size", "x", &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_eq(eddy__opts_set(t, &cfg, "decode", "x", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(cfg.dedup_cache_size, 12);
    cr_expect_eq(cfg.page_size, 256);
}

Test(settings, names_list_every_setting) {
    eddy_settings s = fresh();
    size_t n = 0;
    char buf[256];
    for (const char *name; (name = eddy_settings_name(n)) != NULL; n++) {
        eddy_status st = eddy_settings_get(&s, name, buf, sizeof(buf), NULL);
        cr_expect(st == EDDY_OK || st == EDDY_ERR_INVALID_ARGUMENT, "%s", name);
    }
    cr_expect_eq(n, eddy__settings_table.nrows);
    cr_expect_str_eq(eddy_settings_name(0), "url");
    cr_expect_null(eddy_settings_name((size_t)-1));
}
