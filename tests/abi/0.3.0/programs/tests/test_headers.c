/* SPDX-License-Identifier: BSD-3-Clause */
/* The public headers include only what they need: a program that includes every header but
 * msgpack.h (the opt-in one) sees neither <msgpack.h> nor the socket headers, so its own names (a
 * static send()) cannot collide with them. Compiling this file is most of the test. */
#include <criterion/criterion.h>

#include "eddy/admin.h"
#include "eddy/blocking.h"
#include "eddy/dlq.h"
#include "eddy/domain.h"
#include "eddy/feed.h"
#include "eddy/filter.h"
#include "eddy/push.h"
#include "eddy/rdomain.h"
#include "eddy/reactive.h"
#include "eddy/rfeed.h"
#include "eddy/rpush.h"
#include "eddy/rstore.h"
#include "eddy/store.h"
#include "eddy/value.h"

#ifdef MSGPACK_PACK_H
#error "a public header other than msgpack.h pulls in <msgpack.h>"
#endif
#ifdef _ARPA_INET_H
#error "a public header pulls in <arpa/inet.h>"
#endif

/* A user's own function of a name the socket API also uses. */
static int send(int x) { return x + 1; }

Test(headers, public_headers_leave_the_program_its_own_names) {
    cr_expect_eq(send(1), 2);
    eddy_pack_fn pack = NULL; /* the value codec's types are declared, not defined */
    cr_expect_null(pack);
}
