/* SPDX-License-Identifier: BSD-3-Clause */
/* RFC 3339 parsing into instants (see rfc3339.h).
 *
 * Days are counted from the civil date with the proleptic Gregorian calendar (Howard
 * Hinnant's days_from_civil), so the result does not depend on the process's locale, time
 * zone or the platform's time_t. Only ASCII digits are accepted: isdigit() would consult the
 * locale. Years are four digits, so every result fits int64 with room to spare. */
#include "util/rfc3339.h"

#include <stddef.h>

static bool digits(const char **p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return true;
}

static bool take(const char **p, char c) {
    if (**p != c)
        return false;
    (*p)++;
    return true;
}

static bool leap_year(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int month_days(int y, int m) {
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap_year(y) ? 29 : days[m - 1];
}

/* Days from 1970-01-01 to y-m-d. */
static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                                   /* [0, 399] */
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

bool eddy__rfc3339_parse(const char *s, eddy__instant *out) {
    if (!s)
        return false;
    const char *p = s;
    int year, month, day, hour, minute, second;
    if (!digits(&p, 4, &year) || !take(&p, '-') || !digits(&p, 2, &month) || !take(&p, '-') ||
        !digits(&p, 2, &day))
        return false;
    if (month < 1 || month > 12 || day < 1 || day > month_days(year, month))
        return false;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return false;
    p++;
    if (!digits(&p, 2, &hour) || !take(&p, ':') || !digits(&p, 2, &minute) || !take(&p, ':') ||
        !digits(&p, 2, &second))
        return false;
    if (hour > 23 || minute > 59 || second > 60)
        return false;
    int32_t nsec = 0;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return false;
        int n = 0;
        for (; *p >= '0' && *p <= '9'; p++, n++)
            if (n < 9)
                nsec = nsec * 10 + (*p - '0');
        for (; n < 9; n++)
            nsec *= 10;
    }
    int offset = 0; /* seconds east of UTC */
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1;
        int oh, om;
        if (!digits(&p, 2, &oh) || !take(&p, ':') || !digits(&p, 2, &om) || oh > 23 || om > 59)
            return false;
        offset = sign * (oh * 3600 + om * 60);
    } else {
        return false;
    }
    if (*p != '\0')
        return false;
    out->sec =
        days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset;
    out->nsec = nsec;
    return true;
}

int eddy__instant_cmp(eddy__instant a, eddy__instant b) {
    if (a.sec != b.sec)
        return a.sec < b.sec ? -1 : 1;
    return (a.nsec > b.nsec) - (a.nsec < b.nsec);
}
