/* Public accessors of a delivery. */
#include "delivery.h"

#include <stdlib.h>

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
    if (d && d->finish)
        d->finish(d, st);
}

void eddy__delivery_free(eddy_delivery *d) {
    if (!d)
        return;
    eddy_event_free(d->ev);
    free(d);
}
