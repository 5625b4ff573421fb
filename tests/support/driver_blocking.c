/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocking front end behind the scenario driver: a direct mapping. */
#include "driver.h"
#include "eddy/blocking.h"
#include "eddy_test.h"

static eddy_status b_new(const eddy_settings *s, const eddy_subscription_spec *specs, size_t n,
                         tbus **out, eddy_error *err) {
    eddy_settings shared = *s;
    eddy_test_share_reads(&shared);
    return eddy_bus_new(&shared, specs, n, (eddy_bus **)out, err);
}
static eddy_status b_subscribe(tbus *b, const eddy_subscription_spec *spec, eddy_error *err) {
    return eddy_bus_subscribe((eddy_bus *)b, spec, err);
}
static eddy_status b_start(tbus *b, eddy_error *err) { return eddy_bus_start((eddy_bus *)b, err); }
static eddy_status b_stop(tbus *b) { return eddy_bus_stop((eddy_bus *)b); }
static void b_free(tbus *b) { eddy_bus_free((eddy_bus *)b); }
static eddy_status b_publish(tbus *b, const char *subject, const eddy_event *ev, eddy_error *err) {
    return eddy_bus_publish((eddy_bus *)b, subject, ev, NULL, 0, err);
}
static eddy_status b_publish_id(tbus *b, const char *subject, const eddy_event *ev, char *id,
                                size_t id_size, eddy_error *err) {
    return eddy_bus_publish((eddy_bus *)b, subject, ev, id, id_size, err);
}
static eddy_status b_stats(tbus *b, const char *name, eddy_consumer_stats *out) {
    return eddy_bus_consumer_stats((eddy_bus *)b, name, out);
}
static eddy_status b_request(tbus *b, const char *subject, const eddy_event *ev,
                             const eddy_request_opts *opts, eddy_event **reply, eddy_error *err) {
    return eddy_bus_request((eddy_bus *)b, subject, ev, opts, reply, err);
}
static eddy_status b_request_value(tbus *b, const char *subject, const char *type,
                                   eddy_pack_fn pack, void *pack_user,
                                   const eddy_request_opts *opts, eddy_event **reply,
                                   eddy_error *err) {
    return eddy_bus_request_value((eddy_bus *)b, subject, type, pack, pack_user, opts, reply, err);
}
static eddy_status b_request_stats(tbus *b, const char *name, eddy_request_stats *out) {
    return eddy_bus_request_stats((eddy_bus *)b, name, out);
}

static eddy_status b_pause(tbus *b, const char *name, eddy_error *err) {
    return eddy_bus_pause((eddy_bus *)b, name, err);
}
static eddy_status b_resume(tbus *b, const char *name, eddy_error *err) {
    return eddy_bus_resume((eddy_bus *)b, name, err);
}

static void *b_native(tbus *b) { return b; }

static void b_run(tbus *b, void (*fn)(void *arg), void *arg) {
    (void)b;
    fn(arg);
}

static eddy_status b_answer_all(tbus *b, const char *name, eddy_error *err) {
    return eddy_bus_answer_all((eddy_bus *)b, name, err);
}
static eddy_status b_request_all(tbus *b, const char *subject, const eddy_event *ev,
                                 const eddy_gather_opts *opts, eddy_replies **out, size_t *each,
                                 eddy_error *err) {
    eddy_status st = eddy_bus_request_all((eddy_bus *)b, subject, ev, opts, out, err);
    *each = eddy_replies_count(*out);
    return st;
}

const driver blocking_driver = {
    "blocking", b_new,    b_subscribe, b_start,         b_stop,          b_free,
    b_publish,  b_stats,  b_request,   b_request_value, b_request_stats, b_pause,
    b_resume,   b_native, b_run,       b_publish_id,    b_answer_all,    b_request_all};
