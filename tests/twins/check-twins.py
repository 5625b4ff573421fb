#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks that the two front ends' APIs are twins (docs/twins.md).

Reads the public headers of both families and fails, naming each problem, when:
- a function of one family has no twin in the other (eddy_X / eddy_rX) and is not listed in
  docs/twins.md's one-sided table with a reason; or a listed entry is stale (it has a twin
  now, or it names nothing);
- two twins take different arguments, other than how the result is delivered (see args_key);
- a name uses a word the API gave up: ckpt or marker (the word is checkpoint), _get_info or
  _status (the introspection suffix is _stats), a cancellation other than eddy_cancel_*;
- an object mixes its lifetime pairs (_new with _close, _open with _free) or lacks the other half;
- a deprecated name (eddy/deprecated.h, eddy/rdeprecated.h) does not name an existing replacement.

Usage: check-twins.py INCLUDE_DIR TWINS_MD
"""
import re
import sys

BLOCKING = ["blocking.h", "store.h", "feed.h", "push.h", "domain.h", "dlq.h", "admin.h", "model.h"]
REACTIVE = ["reactive.h", "rstore.h", "rfeed.h", "rpush.h", "rdomain.h", "rmodel.h"]
SHARED = ["bus.h", "event.h", "filter.h", "status.h", "value.h", "version.h", "writes.h"]

# Object types of the blocking side and their reactive twins, for comparing arguments.
TYPE_TWINS = {
    "eddy_bus": "eddy_rbus",
    "eddy_store": "eddy_rstore",
    "eddy_feed": "eddy_rfeed",
    "eddy_domain_feed": "eddy_rdomain_feed",
    "eddy_push_model": "eddy_rpush_model",
    "eddy_push_sources": "eddy_rpush_sources",
    "eddy_push_source_spec": "eddy_rpush_source_spec",
    "eddy_checkpoints": "eddy_rcheckpoints",
}

DECL = re.compile(
    r"(EDDY_DEPRECATED\(\"([^\"]*)\"\)\s*)?EDDY_EXPORT\s+([^;{()]*?)\b(eddy_[a-z0-9_]+)\s*\(([^)]*)\)\s*;",
    re.S,
)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def read_decls(path):
    """{name: (params, deprecated_message_or_None)} of the functions a header exports."""
    with open(path, encoding="utf-8") as f:
        text = strip_comments(f.read())
    out = {}
    for m in DECL.finditer(text):
        params = [" ".join(p.split()) for p in m.group(5).split(",")]
        if params == ["void"]:
            params = []
        out[m.group(4)] = (params, m.group(2) if m.group(1) else None)
    return out


def param_type(p):
    """The type of a parameter declaration (its name removed)."""
    m = re.match(r"^(.*?)([A-Za-z_][A-Za-z0-9_]*)(\s*\[[^]]*\])?$", p)
    if not m or not m.group(1).strip():
        return p
    return " ".join(m.group(1).replace("*", " * ").split()).replace(" *", "*")


def is_out(t):
    """A pointer whose outermost pointee is not const: where a call writes a result."""
    if "*" not in t:
        return False
    left = t[: t.rindex("*")].strip()
    if left.endswith("const"):
        return False
    if "*" in left:
        return True
    return not left.startswith("const")


def args_key(params, other_types, reactive):
    """What must match between twins: the inputs, types only, the blocking side's types named as
    the reactive side's. Dropped as "how the result is delivered": the first parameter stays
    (the object); results written through pointers (and the size of a buffer just before);
    callbacks the other side has no such type for; every void *user; the error detail; the
    reactive side's loop."""
    key = []
    prev_out_buffer = False
    first = True  # the object the call is on: the first parameter after the loop
    for p in params:
        t = param_type(p)
        if not reactive:
            for b, r in TYPE_TWINS.items():
                t = re.sub(r"\b%s\b" % b, r, t)
        drop = False
        if t in ("void*", "eddy_error*", "struct ev_loop*"):
            drop = True
        elif first:
            first = False
        elif is_out(t):
            drop = True
        elif t.endswith("_fn") and t not in other_types:
            drop = True
        elif t == "size_t" and prev_out_buffer:
            drop = True
        prev_out_buffer = drop and t == "char*"
        if not drop:
            key.append(t)
    return key


def mapped_types(params, reactive):
    out = set()
    for p in params:
        t = param_type(p)
        if not reactive:
            for b, r in TYPE_TWINS.items():
                t = re.sub(r"\b%s\b" % b, r, t)
        out.add(t)
    return out


def read_list(path):
    """The one-sided table: {name_or_prefix*: (side, reason)}."""
    rows = {}
    row = re.compile(r"^\|\s*`(eddy_[a-z0-9_*]+)`\s*\|\s*(blocking only|reactive only|shared|arguments)\s*\|(.*)\|\s*$")
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = row.match(line)
            if m:
                rows[m.group(1)] = (m.group(2), m.group(3).strip())
    return rows


def listed(name, rows):
    if name in rows:
        return name
    for k in rows:
        if k.endswith("*") and name.startswith(k[:-1]):
            return k
    return None


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    inc, md = sys.argv[1], sys.argv[2]
    fam = {}
    for side, headers in (("blocking", BLOCKING), ("reactive", REACTIVE), ("shared", SHARED)):
        fam[side] = {}
        for h in headers:
            fam[side].update(read_decls("%s/%s" % (inc, h)))
    deprecated = read_decls("%s/deprecated.h" % inc)
    deprecated.update(read_decls("%s/rdeprecated.h" % inc))
    rows = read_list(md)
    errors = []
    used_rows = set()

    active = {s: {n: v for n, v in fam[s].items() if v[1] is None} for s in fam}
    blocking, reactive = active["blocking"], active["reactive"]

    def twin_of(name, side):
        if side == "blocking":
            return "eddy_r" + name[len("eddy_"):]
        return "eddy_" + name[len("eddy_r"):] if name.startswith("eddy_r") else None

    for side, mine, other in (("blocking", blocking, reactive), ("reactive", reactive, blocking)):
        for name in sorted(mine):
            twin = twin_of(name, side)
            row = listed(name, rows)
            if twin and twin in other:
                if (row and rows[row][0] not in ("shared", "arguments")
                        and not row.endswith("*")):
                    errors.append("%s is listed as %s but has its twin %s: remove it from %s"
                                  % (name, rows[row][0], twin, md))
                if side == "blocking":
                    b, r = mine[name][0], other[twin][0]
                    kb = args_key(b, mapped_types(r, True), False)
                    kr = args_key(r, mapped_types(b, False), True)
                    arow = rows.get(twin)
                    if arow and arow[0] == "arguments":
                        used_rows.add(twin)
                        if kb == kr:
                            errors.append("%s is listed as taking other arguments than %s, but "
                                          "it does not: remove it from %s" % (twin, name, md))
                        elif not arow[1]:
                            errors.append("%s is listed without a reason" % twin)
                    elif kb != kr:
                        errors.append("%s and %s take different arguments: %s vs %s"
                                      % (name, twin, kb, kr))
                continue
            if row:
                used_rows.add(row)
                want = "%s only" % side
                if rows[row][0] not in (want, "shared"):
                    errors.append("%s is listed as %s but is in the %s headers"
                                  % (name, rows[row][0], side))
                if not rows[row][1]:
                    errors.append("%s is listed without a reason" % name)
                continue
            if twin is None:
                errors.append("%s (reactive headers) lacks the r after eddy_: no twin can match"
                              % name)
            else:
                errors.append("%s has no twin %s, and %s does not list it as %s only"
                              % (name, twin, md, side))

    every = {}
    for s in active:
        every.update(active[s])
    for row in rows:
        if row.endswith("*"):
            if not any(n.startswith(row[:-1]) for n in every):
                errors.append("%s lists %s, which matches no function" % (md, row))
        elif row not in every:
            errors.append("%s lists %s, which no header declares" % (md, row))

    # One word per concept.
    for name in sorted(every):
        if "ckpt" in name or "marker" in name:
            errors.append("%s: the word is checkpoint (not ckpt or marker)" % name)
        if name.endswith("_get_info") or name.endswith("_info") or (
                name.endswith("_status") and not name.startswith("eddy_status_")):
            errors.append("%s: the introspection suffix is _stats" % name)
        if "cancel" in name and not name.startswith("eddy_cancel_") and not listed(name, rows):
            errors.append("%s: the cancellation is eddy_cancel_* (or list it with a reason)" % name)

    # One lifetime pair per kind of object.
    for name in sorted(every):
        for make, end, wrong in (("_new", "_free", "_close"), ("_open", "_close", "_free")):
            if name.endswith(make):
                obj = name[: -len(make)]
                if obj + end not in every:
                    errors.append("%s has no %s%s" % (name, obj, end))
                if obj + wrong in every:
                    errors.append("%s mixes lifetime pairs: %s%s and %s%s"
                                  % (obj, make, end, obj, wrong))

    # Every deprecated name names its replacement, which exists.
    for name, (_, msg) in sorted(deprecated.items()):
        m = re.match(r"use (eddy_[a-z0-9_]+)$", msg or "")
        if not m:
            errors.append("%s (deprecated) does not say \"use <new name>\"" % name)
        elif m.group(1) not in every:
            errors.append("%s (deprecated) names %s, which no header declares"
                          % (name, m.group(1)))
        if name in every:
            errors.append("%s is both deprecated and declared again" % name)

    npairs = sum(1 for n in blocking if twin_of(n, "blocking") in reactive)
    for e in errors:
        print("twins: " + e)
    print("twins: %d pairs, %d blocking, %d reactive, %d listed one-sided, %d deprecated: %s"
          % (npairs, len(blocking), len(reactive), len(rows), len(deprecated),
             "FAIL" if errors else "ok"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
