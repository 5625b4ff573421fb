/* SPDX-License-Identifier: BSD-3-Clause */
/* One table per public options struct (eddy_settings, and the others a caller fills after an
 * _init call): each row names a field by its offset, with its type, default, unit, range and
 * one line of documentation. Defaults, validation of single fields, setting a field by name
 * from a string, the owned copy a handle keeps and docs/configuration.md (tools/config_doc.c)
 * all come from the rows, so none of them can drift from the others.
 *
 * The size rule (docs/compatibility.md): a caller's struct starts with `struct_size`, which its
 * _init macro set to the sizeof the caller was compiled with; 0 (a struct zeroed or built with
 * designated initializers) means the size of the first release with the rule (size_0_3).
 * eddy__opts_widen gives the library a struct of its own size: the caller's fields, and the
 * defaults of the fields the caller's headers did not have. */
#ifndef EDDY_SRC_OPTIONS_H
#define EDDY_SRC_OPTIONS_H

#include <stddef.h>

#include "eddy/status.h"

typedef enum eddy__opt_type {
    EDDY__OPT_STRING,   /* const char *; NULL is "not set" */
    EDDY__OPT_BOOL,     /* bool */
    EDDY__OPT_UNSIGNED, /* unsigned */
    EDDY__OPT_SIZE,     /* size_t */
    EDDY__OPT_LONG,     /* long */
    EDDY__OPT_LLONG,    /* long long */
    EDDY__OPT_ULLONG,   /* unsigned long long */
    EDDY__OPT_ENUM,     /* an enum (int), set by the names in `choices` */
    EDDY__OPT_CALLBACK, /* a function pointer: set in code only */
    EDDY__OPT_POINTER,  /* a pointer to the caller's data: set in code only */
    EDDY__OPT_STRINGS,  /* const char *const * with a size_t count in the next row */
    EDDY__OPT_COUNT     /* the size_t count of the previous row's array */
} eddy__opt_type;

enum {
    EDDY__OPT_ZERO_OFF = 1u << 0,     /* 0 turns it off; any other value lies in min..max */
    EDDY__OPT_KEY_SAFE = 1u << 1,     /* a string that goes into Redis keys */
    EDDY__OPT_NOT_EMPTY = 1u << 2,    /* a string that may be NULL but not "" */
    EDDY__OPT_NULL_DEFAULT = 1u << 3, /* a NULL string means the default */
    EDDY__OPT_REQUIRED = 1u << 4      /* documented as required (checked by its consumer) */
};

/* Where a row is copied in the owned copy: its offset there, or none (copied by hand). */
#define EDDY__OPT_NO_COPY ((size_t)-1)

typedef struct eddy__opt {
    const char *name;
    eddy__opt_type type;
    size_t offset; /* in the public struct */
    size_t size;   /* of the field */
    size_t copy_offset;
    const char *def_str;    /* a string's default (NULL: none) */
    long long def;          /* a number's or bool's default (a ULLONG's fits) */
    long long min;          /* numbers: the smallest valid value */
    unsigned long long max; /* numbers: the largest */
    unsigned flags;
    const char *unit;           /* "ms", "bytes", ...; "" when none */
    const char *default_doc;    /* the default in words, when not the number or string */
    const char *range_note;     /* said after a range error and in the doc */
    const char *const *choices; /* ENUM: the names of values 0, 1, ... (NULL-terminated) */
    const char *doc;            /* one line */
} eddy__opt;

typedef struct eddy__opt_table {
    const char *prefix; /* "settings": errors say "settings.workers ..." */
    const char *type_name;
    const char *init_name; /* the _init macro that fills the defaults */
    const eddy__opt *rows;
    size_t nrows;
    size_t size;     /* sizeof the struct in this library */
    size_t size_0_3; /* the size a struct_size of 0 stands for */
    const char *doc; /* a paragraph for docs/configuration.md */
} eddy__opt_table;

extern const eddy__opt_table eddy__settings_table;
extern const eddy__opt_table eddy__subscription_spec_table;
extern const eddy__opt_table eddy__feed_config_table;
extern const eddy__opt_table eddy__push_options_table;
extern const eddy__opt_table eddy__append_opts_table;
extern const eddy__opt_table eddy__gather_opts_table;
/* Every table, for the documentation; NULL-terminated. */
extern const eddy__opt_table *const eddy__opt_tables[];

/* The end of an _init_sized for a struct without a table: the first min(size, full_size)
 * bytes of full into dst (the rest of dst's size bytes zeroed) and size into its leading
 * struct_size. */
void eddy__init_sized(void *dst, size_t size, const void *full, size_t full_size);

/* The row called name, or NULL. */
const eddy__opt *eddy__opts_find(const eddy__opt_table *t, const char *name);
/* The caller's struct size a recorded struct_size stands for (0: size_0_3), at most t->size. */
size_t eddy__opts_caller_size(const eddy__opt_table *t, size_t recorded);
/* Writes the defaults into the first `size` bytes of dst and records size in struct_size. */
void eddy__opts_init(const eddy__opt_table *t, void *dst, size_t size);
/* full (t->size bytes): the caller's fields of src (NULL: none) and the defaults of the rest,
 * struct_size t->size. */
void eddy__opts_widen(const eddy__opt_table *t, void *full, const void *src);
/* Checks every row's own rule (range, key safety, ...) on a struct of t->size bytes.
 * EDDY_ERR_INVALID_SPEC naming the field. */
eddy_status eddy__opts_check(const eddy__opt_table *t, const void *s, eddy_error *err);
/* Sets the field called name of s (a caller's struct, struct_size recorded) from text; see
 * eddy_settings_set. */
eddy_status eddy__opts_set(const eddy__opt_table *t, void *s, const char *name, const char *value,
                           eddy_error *err);
/* Writes the field's value of s as text (the default when the caller's struct lacks it). */
eddy_status eddy__opts_get(const eddy__opt_table *t, const void *s, const char *name, char *buf,
                           size_t len, eddy_error *err);
/* Copies every row that has a copy_offset from src (t->size bytes) into dst: strings
 * duplicated (a NULL_DEFAULT one's NULL as its default), the rest byte for byte. EDDY_ERR_NOMEM
 * after freeing what it copied. */
eddy_status eddy__opts_copy(const eddy__opt_table *t, void *dst, const void *src, eddy_error *err);
/* Frees the strings eddy__opts_copy duplicated into dst. */
void eddy__opts_free(const eddy__opt_table *t, void *dst);

#endif
