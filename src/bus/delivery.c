/* SPDX-License-Identifier: BSD-3-Clause */
/* Public accessors of a delivery. */
#include "bus/delivery.h"
#include "eddy/value.h"

#include <stdlib.h>
#include <time.h>

#include "bus/consumer.h"
#include "error.h"
#include "events/event_internal.h"

const eddy_event *eddy_delivery_event(const eddy_delivery *d) { return d ? d->ev : NULL; }
const char *eddy_delivery_subject(const eddy_delivery *d) { return d ? d->subject : NULL; }
const char *eddy_delivery_entry_id(const eddy_delivery *d) { return d ? d->entry_id : NULL; }
unsigned eddy_delivery_attempt(const eddy_delivery *d) { return d ? d->attempt : 0; }
const char *eddy_delivery_subscription(const eddy_delivery *d) { return d ? d->sub_name : NULL; }

eddy_status eddy_delivery_decode_value(const eddy_delivery *d, eddy_value **out, eddy_error *err) {
    if (!d || !out)
        return EDDY_ERR_INVALID_ARGUMENT;
    return eddy_event_decode_value(d->ev, out, err);
}

void eddy_delivery_finish(eddy_delivery *d, eddy_status st) {
    if (st == EDDY_PENDING) /* a late "still pending" cannot be put off again: a failure */
        st = EDDY_ERR_HANDLER_FAILED;
    if (d && d->finish)
        d->finish(d, st, NULL);
}

void eddy_delivery_in_progress(eddy_delivery *d) {
    if (d && d->consumer)
        eddy__consumer_in_progress(d->consumer, d);
}

void eddy_delivery_reply(eddy_delivery *d, eddy_event *reply) {
    if (d && d->finish)
        d->finish(d, EDDY_OK, reply);
    else
        eddy_event_free(reply);
}

int eddy_delivery_stored_meta(const eddy_delivery *d, eddy_event_meta *meta) {
    if (!d || !meta || !d->stream_id)
        return 0;
    meta->stream_id = d->stream_id;
    meta->version = d->version;
    meta->position = d->position;
    return 1;
}

int eddy_delivery_is_request(const eddy_delivery *d) { return d && d->reply_to; }

eddy_status eddy_delivery_new_reply(const eddy_delivery *d, const char *type, eddy_event **out,
                                    eddy_error *err) {
    if (out)
        *out = NULL;
    if (!d || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "new_reply: delivery or out is NULL");
    eddy_event *reply;
    eddy_status st = eddy__event_create_for(eddy__consumer_source(d->consumer), type,
                                            "eddy_delivery_new_reply", &reply, err);
    if (st == EDDY_OK && (st = eddy_event_continue_trace(reply, d->ev, NULL)) == EDDY_ERR_NOMEM)
        eddy__fail(err, st, "new_reply: out of memory");
    if (st == EDDY_ERR_INVALID_EVENT)
        st = EDDY_OK; /* the request's context was malformed: the reply starts without one */
    if (st != EDDY_OK) {
        eddy_event_free(reply);
        return st;
    }
    *out = reply;
    return EDDY_OK;
}

long long eddy_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long eddy_deadline_in(long long ms) { return eddy_now_ms() + ms; }

eddy_status eddy_delivery_emit(eddy_delivery *d, const char *subject, const eddy_event *ev,
                               eddy_error *err) {
    if (!d || !subject || !ev || !d->consumer)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "emit: delivery, subject or event is NULL");
    return eddy__consumer_emit(d->consumer, d, subject, ev, err);
}

void eddy__emits_free(eddy__emits *e) {
    if (!e)
        return;
    eddy__cmd_reset(&e->keys);
    eddy__cmd_reset(&e->args);
    free(e);
}

void eddy__delivery_free(eddy_delivery *d) {
    if (!d)
        return;
    eddy__emits_free(d->emits);
    eddy_event_free(d->ev);
    free(d->reply_to);
    free(d->stream_id);
    free(d);
}
