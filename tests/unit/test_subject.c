/* SPDX-License-Identifier: BSD-3-Clause */
/* Subjects and patterns: every validation rule and its detail, matching, and overlap, the
 * last checked both against a table and exhaustively against brute-force enumeration of
 * subjects, using a reference matcher written independently of src/events/subject.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "events/subject.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

typedef eddy_status (*checker)(const char *, eddy_error *);

/* Expects ok, and that success leaves the caller's error struct alone. */
static void expect_ok(checker check, const char *what, const char *text) {
    eddy_error err = {.status = EDDY_ERR_CANCELLED, .detail = "untouched"};
    eddy_status st = check(text, &err);
    cr_expect_eq(st, EDDY_OK, "%s '%s': got %s (%s)", what, text, eddy_status_name(st), err.detail);
    cr_expect_eq(err.status, EDDY_ERR_CANCELLED, "%s '%s': error struct touched", what, text);
    cr_expect_str_eq(err.detail, "untouched", "%s '%s': detail touched", what, text);
    cr_expect_eq(check(text, NULL), EDDY_OK, "%s '%s' with a NULL error", what, text);
}

/* Expects failure with `want`, a detail containing `needle`, and the same status without an
 * error struct. */
static void expect_fail(checker check, const char *what, const char *text, eddy_status want,
                        const char *needle) {
    eddy_error err = {0};
    eddy_status st = check(text, &err);
    cr_expect_eq(st, want, "%s '%s': got %s, want %s", what, text ? text : "(null)",
                 eddy_status_name(st), eddy_status_name(want));
    cr_expect_eq(err.status, want, "%s '%s': err.status %s", what, text ? text : "(null)",
                 eddy_status_name(err.status));
    cr_expect(strstr(err.detail, needle) != NULL, "%s '%s': detail \"%s\" lacks \"%s\"", what,
              text ? text : "(null)", err.detail, needle);
    cr_expect_eq(check(text, NULL), want, "%s '%s' with a NULL error", what,
                 text ? text : "(null)");
}

/* Valid as both subject and pattern. */
static const char *const valid_subjects[] = {
    "a",
    "orders",
    "orders.created",
    "orders.eu-west.created_v2",
    "A.B.C.D.E.F.G.H.I.J.K.L.M.N.O.P",
    "1.2.3",
    "~!@#$%^&()[]{}<=+|\\/?,;:'\"`-_", /* every printable but ' ', '.', '*' and '>' */
    "x.~",
    "a-.-b",
};

Test(subject, valid) {
    for (size_t i = 0; i < N(valid_subjects); i++) {
        expect_ok(eddy__subject_check, "subject", valid_subjects[i]);
        expect_ok(eddy__pattern_check, "pattern", valid_subjects[i]);
    }
}

struct bad {
    const char *text;
    const char *needle;
};

static const struct bad bad_subjects[] = {
    {"", "subject is empty"},
    {".", "empty token at 0 (leading '.')"},
    {"..", "empty token at 0 (leading '.')"},
    {".a", "empty token at 0 (leading '.')"},
    {"a.", "empty token at 2 (trailing '.')"},
    {"a.b.", "empty token at 4 (trailing '.')"},
    {"a..b", "subject 'a..b': empty token at 2"},
    {"a.b..c", "empty token at 4"},
    {"*", "wildcard '*' at 0"},
    {">", "wildcard '>' at 0"},
    {"a.*", "wildcard '*' at 2"},
    {"a.>", "wildcard '>' at 2"},
    {"a*", "wildcard '*' at 1"},
    {"a.b>c", "wildcard '>' at 3"},
    {" ", "space at 0"},
    {"a b", "space at 1"},
    {"a. b", "space at 2"},
    {"a ", "space at 1"},
    {"a\tb", "byte 0x09 at 1 is not printable ASCII"},
    {"a\nb", "byte 0x0a at 1"},
    {"\x01", "byte 0x01 at 0"},
    {"a\x7f", "byte 0x7f at 1"},
    {"caf\xc3\xa9", "byte 0xc3 at 3"},
    {"a\x1b[31m", "'a\\x1b[31m'"}, /* control bytes are escaped in the detail, not raw */
};

Test(subject, invalid) {
    for (size_t i = 0; i < N(bad_subjects); i++)
        expect_fail(eddy__subject_check, "subject", bad_subjects[i].text, EDDY_ERR_INVALID_SUBJECT,
                    bad_subjects[i].needle);
    expect_fail(eddy__subject_check, "subject", NULL, EDDY_ERR_INVALID_SUBJECT, "subject is NULL");
}

/* "a.a.a..." of exactly len bytes (len odd keeps it from ending in '.'). */
static void dotted(char *buf, size_t len) {
    for (size_t i = 0; i < len; i++)
        buf[i] = i % 2 ? '.' : 'a';
    buf[len] = '\0';
}

Test(subject, length_limit) {
    char buf[EDDY__SUBJECT_MAX + 8];

    memset(buf, 'x', EDDY__SUBJECT_MAX);
    buf[EDDY__SUBJECT_MAX] = '\0';
    expect_ok(eddy__subject_check, "subject", buf);
    expect_ok(eddy__pattern_check, "pattern", buf);
    buf[EDDY__SUBJECT_MAX] = 'x';
    buf[EDDY__SUBJECT_MAX + 1] = '\0';
    expect_fail(eddy__subject_check, "subject", buf, EDDY_ERR_INVALID_SUBJECT,
                "513 bytes, more than the 512 allowed");
    expect_fail(eddy__pattern_check, "pattern", buf, EDDY_ERR_INVALID_PATTERN,
                "513 bytes, more than the 512 allowed");

    dotted(buf, EDDY__SUBJECT_MAX - 1);
    expect_ok(eddy__subject_check, "subject", buf);
    dotted(buf, EDDY__SUBJECT_MAX + 1);
    expect_fail(eddy__subject_check, "subject", buf, EDDY_ERR_INVALID_SUBJECT, "513 bytes");

    /* The detail elides a long subject instead of losing the explanation to truncation. */
    eddy_error err;
    eddy__subject_check(buf, &err);
    cr_expect(strstr(err.detail, "...'") != NULL, "detail: %s", err.detail);
}

/* Every byte value inside a token: only printable ASCII other than the reserved four passes,
 * and the detail names the byte and where it is. */
Test(subject, every_byte) {
    for (int c = 1; c < 256; c++) {
        char text[4] = {'a', (char)c, 'b', '\0'};
        bool ok = c > 0x20 && c < 0x7f && c != '*' && c != '>';
        if (ok) {
            expect_ok(eddy__subject_check, "subject", text);
            expect_ok(eddy__pattern_check, "pattern", text);
            continue;
        }
        char needle[64];
        if (c == '*' || c == '>')
            snprintf(needle, sizeof(needle), "wildcard '%c' at 1", c);
        else if (c == ' ')
            snprintf(needle, sizeof(needle), "space at 1");
        else
            snprintf(needle, sizeof(needle), "byte 0x%02x at 1 is not printable ASCII", c);
        expect_fail(eddy__subject_check, "subject", text, EDDY_ERR_INVALID_SUBJECT, needle);
        if (c == '*' || c == '>')
            snprintf(needle, sizeof(needle), "'%c' at 1 must be a whole token", c);
        expect_fail(eddy__pattern_check, "pattern", text, EDDY_ERR_INVALID_PATTERN, needle);
    }
}

static const char *const valid_patterns[] = {
    "*", ">", "*.*", "*.>", "a.*", "a.>", "*.b", "a.*.c", "*.*.>", "a.b.c.>", "orders.*.created",
};

Test(pattern, valid) {
    for (size_t i = 0; i < N(valid_patterns); i++)
        expect_ok(eddy__pattern_check, "pattern", valid_patterns[i]);
}

static const struct bad bad_patterns[] = {
    {"", "pattern is empty"},
    {".", "empty token at 0 (leading '.')"},
    {".*", "empty token at 0 (leading '.')"},
    {"*.", "empty token at 2 (trailing '.')"},
    {"a..*", "pattern 'a..*': empty token at 2"},
    {">.a", "'>' at 0 must be the last token"},
    {"a.>.b", "pattern 'a.>.b': '>' at 2 must be the last token"},
    {">.>", "'>' at 0 must be the last token"},
    {"a*", "pattern 'a*': '*' at 1 must be a whole token"},
    {"*a", "'*' at 0 must be a whole token"},
    {"a.b*.c", "'*' at 3 must be a whole token"},
    {"**", "'*' at 0 must be a whole token"},
    {"a>", "'>' at 1 must be a whole token"},
    {">a", "'>' at 0 must be a whole token"},
    {">>", "'>' at 0 must be a whole token"},
    {"a.*>", "'*' at 2 must be a whole token"},
    {"a. *", "space at 2"},
    {"* ", "'*' at 0 must be a whole token"},
    {"a.\t", "byte 0x09 at 2"},
    {"a.\xff", "byte 0xff at 2"},
};

Test(pattern, invalid) {
    for (size_t i = 0; i < N(bad_patterns); i++)
        expect_fail(eddy__pattern_check, "pattern", bad_patterns[i].text, EDDY_ERR_INVALID_PATTERN,
                    bad_patterns[i].needle);
    expect_fail(eddy__pattern_check, "pattern", NULL, EDDY_ERR_INVALID_PATTERN, "pattern is NULL");
}

Test(pattern, is_literal) {
    for (size_t i = 0; i < N(valid_subjects); i++)
        cr_expect(eddy__pattern_is_literal(valid_subjects[i]), "'%s'", valid_subjects[i]);
    for (size_t i = 0; i < N(valid_patterns); i++)
        cr_expect(!eddy__pattern_is_literal(valid_patterns[i]), "'%s'", valid_patterns[i]);
    cr_expect(!eddy__pattern_is_literal(NULL));
}

struct pair {
    const char *a, *b;
    bool want;
};

static const struct pair matches[] = {
    {"a", "a", true},
    {"a", "b", false},
    {"a", "ab", false},
    {"ab", "a", false},
    {"a", "a.b", false},
    {"a.b", "a", false},
    {"a.b", "a.b", true},
    {"a.b", "a.c", false},
    {"*", "a", true},
    {"*", "a.b", false},
    {"a.*", "a.b", true},
    {"a.*", "a", false},
    {"a.*", "a.b.c", false},
    {"*.b", "a.b", true},
    {"*.b", "a.c", false},
    {"*.*", "x.y", true},
    {"*.*", "x", false},
    {">", "a", true},
    {">", "a.b.c", true},
    {"a.>", "a", false},
    {"a.>", "a.b", true},
    {"a.>", "a.b.c.d", true},
    {"a.>", "b.c", false},
    {"*.>", "a", false},
    {"*.>", "a.b", true},
    {"a.*.c.>", "a.x.c.d.e", true},
    {"a.*.c.>", "a.x.d.d", false},
    {"orders.*.created", "orders.eu.created", true},
    {"orders.*.created", "orders.eu.deleted", false},
    {"orders.created", "orders.created.v2", false},
    {"abc.>", "ab.c", false},
};

Test(pattern, match) {
    for (size_t i = 0; i < N(matches); i++)
        cr_expect_eq(eddy__pattern_match(matches[i].a, matches[i].b), matches[i].want,
                     "match('%s', '%s') should be %d", matches[i].a, matches[i].b, matches[i].want);
    cr_expect(!eddy__pattern_match(NULL, "a"));
    cr_expect(!eddy__pattern_match("a", NULL));
}

static const struct pair overlaps[] = {
    {"a", "a", true},
    {"a", "b", false},
    {"a.b", "a.b", true},
    {"a.b", "a.c", false},
    {"a.*", "a.b", true},
    {"a.*", "b.b", false},
    {"a.>", "a", false},
    {"a.*", "*.b", true},
    {"a.>", "*.*.c", true},
    {"a.*", "a.*.c", false},
    {"*.>", "a", false},
    {"*", "a", true},
    {"*", "a.b", false},
    {"*", ">", true},
    {"*.*", ">", true},
    {">", ">", true},
    {">", "a.b.c", true},
    {"a.>", "b.>", false},
    {"a.>", "a.>", true},
    {"a.>", "*.>", true},
    {"a.>", "a.b.>", true},
    {"a.b.>", "a.c.>", false},
    {"a.*.c", "*.b.*", true},
    {"a.*.c", "*.b.d", false},
    {"*.*", "*.*.*", false},
    {"*.*.>", "a.b", false},
    {"*.*.>", "a.b.c", true},
    {"ab", "a", false},
    {"a.bc", "a.b", false},
    {"orders.*.created", "orders.eu.>", true},
    {"orders.*.created", "orders.eu.deleted", false},
};

Test(pattern, overlap) {
    for (size_t i = 0; i < N(overlaps); i++) {
        const struct pair *p = &overlaps[i];
        cr_expect_eq(eddy__pattern_overlap(p->a, p->b), p->want, "overlap('%s', '%s') != %d", p->a,
                     p->b, p->want);
        cr_expect_eq(eddy__pattern_overlap(p->b, p->a), p->want, "overlap('%s', '%s') != %d", p->b,
                     p->a, p->want);
    }
    cr_expect(!eddy__pattern_overlap(NULL, "a"));
    cr_expect(!eddy__pattern_overlap("a", NULL));
}

/* Brute force. Patterns are every token sequence of 1..3 tokens over {a, b, *, >} ('>' only
 * last); subjects are every sequence of 1..4 tokens over {a, b, c}. Any overlap of such
 * patterns has a witness of at most 3 tokens, using 'c' where both sides have '*', so the
 * enumeration decides overlap exactly. */

#define MAXTOK 4

typedef struct {
    int n;
    const char *tok[MAXTOK];
    char text[MAXTOK * 2];
} seq;

static void render(seq *s) {
    s->text[0] = '\0';
    for (int i = 0; i < s->n; i++) {
        if (i)
            strcat(s->text, ".");
        strcat(s->text, s->tok[i]);
    }
}

/* Appends to `out` every sequence of exactly n tokens over `alphabet`; with last_only, the
 * tokens in last_only may appear in the last position only. Returns the new count. */
static size_t enumerate(seq *out, size_t count, int n, const char *const *alphabet, int k,
                        const char *last_only) {
    int idx[MAXTOK] = {0};
    for (;;) {
        seq s = {.n = n};
        bool ok = true;
        for (int i = 0; i < n; i++) {
            s.tok[i] = alphabet[idx[i]];
            if (last_only && i < n - 1 && strcmp(s.tok[i], last_only) == 0)
                ok = false;
        }
        if (ok) {
            render(&s);
            out[count++] = s;
        }
        int i = n - 1;
        while (i >= 0 && ++idx[i] == k)
            idx[i--] = 0;
        if (i < 0)
            return count;
    }
}

/* Reference matcher on token arrays, by recursion on the definition. */
static bool ref_match(const char *const *p, int pn, const char *const *s, int sn) {
    if (pn == 0)
        return sn == 0;
    if (strcmp(p[0], ">") == 0)
        return sn >= 1;
    if (sn == 0)
        return false;
    if (strcmp(p[0], "*") != 0 && strcmp(p[0], s[0]) != 0)
        return false;
    return ref_match(p + 1, pn - 1, s + 1, sn - 1);
}

static const char *const pattern_alphabet[] = {"a", "b", "*", ">"};
static const char *const subject_alphabet[] = {"a", "b", "c"};

static seq patterns[4 + 4 * 4 + 4 * 4 * 4];
static size_t npatterns;
static seq subjects[3 + 9 + 27 + 81];
static size_t nsubjects;

static void build(void) {
    npatterns = nsubjects = 0;
    for (int n = 1; n <= 3; n++)
        npatterns = enumerate(patterns, npatterns, n, pattern_alphabet, 4, ">");
    for (int n = 1; n <= 4; n++)
        nsubjects = enumerate(subjects, nsubjects, n, subject_alphabet, 3, NULL);
}

Test(brute, generated_inputs_are_as_expected) {
    build();
    cr_assert_eq(npatterns, 4 + 3 * 4 + 3 * 3 * 4);
    cr_assert_eq(nsubjects, 3 + 9 + 27 + 81);
    for (size_t i = 0; i < npatterns; i++) {
        expect_ok(eddy__pattern_check, "pattern", patterns[i].text);
        bool literal = !strpbrk(patterns[i].text, "*>");
        cr_expect_eq(eddy__pattern_is_literal(patterns[i].text), literal, "'%s'", patterns[i].text);
        if (!literal)
            expect_fail(eddy__subject_check, "subject", patterns[i].text, EDDY_ERR_INVALID_SUBJECT,
                        "wildcard");
    }
    for (size_t i = 0; i < nsubjects; i++)
        expect_ok(eddy__subject_check, "subject", subjects[i].text);
}

/* '>' anywhere but last, over the same alphabet: every one is refused. */
Test(brute, gt_not_last_is_refused) {
    seq all[4 + 16 + 64];
    size_t n = 0;
    for (int len = 2; len <= 3; len++)
        n = enumerate(all, n, len, pattern_alphabet, 4, NULL);
    size_t refused = 0;
    for (size_t i = 0; i < n; i++) {
        const char *gt = strchr(all[i].text, '>');
        if (!gt || gt[1] == '\0')
            continue;
        expect_fail(eddy__pattern_check, "pattern", all[i].text, EDDY_ERR_INVALID_PATTERN,
                    "must be the last token");
        refused++;
    }
    /* All sequences minus the valid ones: (16 - 12) of two tokens, (64 - 36) of three. */
    cr_expect_eq(refused, (16 - 12) + (64 - 36));
}

Test(brute, match_agrees_with_reference) {
    build();
    for (size_t i = 0; i < npatterns; i++)
        for (size_t j = 0; j < nsubjects; j++) {
            const seq *p = &patterns[i], *s = &subjects[j];
            bool want = ref_match(p->tok, p->n, s->tok, s->n);
            cr_expect_eq(eddy__pattern_match(p->text, s->text), want,
                         "match('%s', '%s') should be %d", p->text, s->text, want);
        }
}

Test(brute, overlap_agrees_with_enumeration) {
    build();
    size_t overlapping = 0;
    for (size_t i = 0; i < npatterns; i++)
        for (size_t j = 0; j < npatterns; j++) {
            const seq *a = &patterns[i], *b = &patterns[j];
            bool want = false;
            for (size_t k = 0; k < nsubjects && !want; k++)
                want = ref_match(a->tok, a->n, subjects[k].tok, subjects[k].n) &&
                       ref_match(b->tok, b->n, subjects[k].tok, subjects[k].n);
            overlapping += want;
            cr_expect_eq(eddy__pattern_overlap(a->text, b->text), want,
                         "overlap('%s', '%s') should be %d", a->text, b->text, want);
            cr_expect_eq(eddy__pattern_overlap(a->text, b->text),
                         eddy__pattern_overlap(b->text, a->text), "asymmetric on '%s', '%s'",
                         a->text, b->text);
        }
    /* Guard against a vacuous pass: both answers occur often. */
    cr_expect_gt(overlapping, npatterns);
    cr_expect_lt(overlapping, npatterns * npatterns);
}
