#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A service that talks to eddy written from docs/wire-format.md alone: Debian's python3-redis,
no eddy code, and a few lines of msgpack (Debian 12 ships no python3-msgpack in eddy's
dependencies, and the subset below is all the test needs).

    peer.py publish URL NS SUBJECT N      N events, then one entry without "source"
    peer.py respond URL NS SUBJECT GROUP N answers N requests, then leaves the registry
    peer.py consume URL NS SUBJECT GROUP N reads N events in a group of its own
    peer.py dlq URL NS GROUP              prints the group's dead letters

Every line it prints is one JSON object; tests/interop/test_interop.c reads them."""

import base64
import json
import os
import struct
import sys
import time
import uuid

import redis

# ---- msgpack: nil, booleans, integers, floats, strings, binary, arrays and maps ----------


def pack(v):
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        if len(b) < 32:
            return bytes([0xA0 | len(b)]) + b
        return b"\xdb" + struct.pack(">I", len(b)) + b
    if isinstance(v, bytes):
        return b"\xc6" + struct.pack(">I", len(v)) + v
    if isinstance(v, list):
        return b"\xdd" + struct.pack(">I", len(v)) + b"".join(pack(x) for x in v)
    if isinstance(v, dict):
        out = b"\xdf" + struct.pack(">I", len(v))
        for k, x in v.items():
            out += pack(k) + pack(x)
        return out
    raise TypeError(type(v))


def unpack(b):
    v, at = _unpack(b, 0)
    if at != len(b):
        raise ValueError("trailing bytes")
    return v


def _unpack(b, i):
    t = b[i]
    i += 1
    if t < 0x80:
        return t, i
    if t >= 0xE0:
        return t - 256, i
    if 0xA0 <= t <= 0xBF:
        return _str(b, i, t & 0x1F)
    if 0x90 <= t <= 0x9F:
        return _array(b, i, t & 0x0F)
    if 0x80 <= t <= 0x8F:
        return _map(b, i, t & 0x0F)
    fixed = {0xC0: None, 0xC2: False, 0xC3: True}
    if t in fixed:
        return fixed[t], i
    ints = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q",
            0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q", 0xCA: ">f", 0xCB: ">d"}
    if t in ints:
        n = struct.calcsize(ints[t])
        return struct.unpack(ints[t], b[i:i + n])[0], i + n
    sizes = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I", 0xC4: ">B", 0xC5: ">H", 0xC6: ">I",
             0xDC: ">H", 0xDD: ">I", 0xDE: ">H", 0xDF: ">I"}
    if t in sizes:
        n = struct.calcsize(sizes[t])
        size = struct.unpack(sizes[t], b[i:i + n])[0]
        i += n
        if t in (0xD9, 0xDA, 0xDB):
            return _str(b, i, size)
        if t in (0xC4, 0xC5, 0xC6):
            return bytes(b[i:i + size]), i + size
        if t in (0xDC, 0xDD):
            return _array(b, i, size)
        return _map(b, i, size)
    raise ValueError("msgpack type 0x%02x" % t)


def _str(b, i, n):
    return b[i:i + n].decode(), i + n


def _array(b, i, n):
    out = []
    for _ in range(n):
        v, i = _unpack(b, i)
        out.append(v)
    return out, i


def _map(b, i, n):
    out = {}
    for _ in range(n):
        k, i = _unpack(b, i)
        v, i = _unpack(b, i)
        out[k] = v
    return out, i


# ---- the wire format --------------------------------------------------------------------


def stream_key(ns, subject):
    return "{%s}:s:%s" % (ns, subject)  # the braces are literal: the hash tag


def now_rfc3339():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % (int(t * 1000) % 1000)


# An extension's CloudEvents type rides in its field name: "x-<name>" is a String,
# "x-<name>:<type>" any other type, its value the type's canonical text (wire format 2).
def ext_field(name, value):
    if isinstance(value, bool):
        return "x-%s:boolean" % name
    if isinstance(value, int):
        return "x-%s:integer" % name
    if isinstance(value, bytes):
        return "x-%s:binary" % name
    return "x-" + name


def ext_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


def ext_value(field, text):
    """An extension field (without "x-") and its text as (name, Python value)."""
    name, _, kind = field.partition(":")
    if kind == "integer":
        return name, int(text)
    if kind == "boolean":
        return name, text == "true"
    if kind == "binary":
        return name, base64.b64decode(text)
    return name, text  # String, URI, URI-reference, Timestamp: text


def event_fields(id, type, data, **ext):
    """A CloudEvent as stream entry fields, in the order eddy writes them."""
    fields = {
        "specversion": "1.0",
        "id": id,
        "source": "/interop/python",
        "type": type,
        "time": now_rfc3339(),
        "datacontenttype": "application/msgpack",
    }
    for name, value in ext.items():
        fields[ext_field(name, value)] = ext_text(value)
    fields["data"] = pack(data)
    return fields


def decode_event(fields):
    """Entry fields (bytes to bytes) to a JSON-able dict; '_' fields are the bus's own."""
    ev = {"ext": {}, "meta": {}}
    for k, v in fields.items():
        k = k.decode()
        if k.startswith("_"):
            ev["meta"][k] = v.decode()
        elif k == "data":
            ev["data"] = v  # decoded below: the fields may come in any order
        elif k.startswith("x-"):
            name, value = ext_value(k[2:], v.decode())
            ev["ext"][name] = value if not isinstance(value, bytes) else value.hex()
        else:
            ev[k] = v.decode()
    if "data" in ev:
        if ev.get("datacontenttype") == "application/msgpack":
            ev["data"] = unpack(ev["data"])
        else:
            ev["data"] = ev["data"].decode(errors="replace")
    return ev


def say(obj):
    print(json.dumps(obj, sort_keys=True), flush=True)


def create_group(r, key, group, start):
    try:
        r.xgroup_create(key, group, id=start, mkstream=True)
    except redis.ResponseError as e:
        if not str(e).startswith("BUSYGROUP"):
            raise


def publish(r, ns, subject, n):
    key = stream_key(ns, subject)
    pipe = r.pipeline(transaction=False)
    pipe.sadd("{%s}:subjects" % ns, subject)  # pattern subscribers find subjects here
    for i in range(n):
        pipe.xadd(key, event_fields("py-%d" % i, "interop.python.v1",
                                    {"n": i, "text": "from python"}, origin="python",
                                    attempt=1))
    bad = event_fields("py-bad", "interop.python.v1", {"n": -1})
    del bad["source"]  # a required attribute: eddy dead-letters the entry as malformed
    pipe.xadd(key, bad)
    ids = pipe.execute()[1:]
    say({"published": [i.decode() for i in ids]})


def respond(r, ns, subject, group, n):
    key = stream_key(ns, subject)
    instance = "py-%d" % os.getpid()
    member = "\t".join(["r", group, instance, "python-responder", subject])
    registry = "{%s}:subs" % ns
    lease_ms = 10000
    # The group first, then the lease: a requester that finds the lease may send at once.
    create_group(r, key, group, "$")
    r.zadd(registry, {member: int(time.time() * 1000) + lease_ms})
    say({"ready": True})
    answered = 0
    while answered < n:
        r.zadd(registry, {member: int(time.time() * 1000) + lease_ms})  # the heartbeat
        got = r.xreadgroup(group, instance, {key: ">"}, count=16, block=1000, noack=True)
        for _, entries in got or []:
            for entry_id, fields in entries:
                answered += answer(r, ns, fields)
    r.zrem(registry, member)
    say({"answered": answered})


def answer(r, ns, fields):
    reply_to = fields.get(b"_reply_to")
    request = fields.get(b"_request")
    deadline = int(fields.get(b"_deadline", b"0"))
    if not reply_to or not request:
        return 0  # a plain publish: nobody waits for an answer
    if not reply_to.decode().startswith("{%s}:inbox:" % ns):
        return 0
    if deadline and time.time() * 1000 > deadline:
        return 0  # the caller gave up already
    ask = unpack(fields[b"data"])
    if ask.get("fail"):
        reply = event_fields(str(uuid.uuid4()), "interop.python.failed", {},
                             messagingfailed="true")
    else:
        reply = event_fields(str(uuid.uuid4()), "interop.python.echoed",
                             {"echo": ask["text"], "n": ask["n"] * 2})
    reply["_request"] = request
    try:
        r.execute_command("XADD", reply_to, "NOMKSTREAM", "MAXLEN", "~", "10000", "*",
                          *[x for kv in reply.items() for x in kv])
    except redis.ResponseError:
        return 0
    return 1


def consume(r, ns, subject, group, n):
    key = stream_key(ns, subject)
    create_group(r, key, group, "0")
    seen = 0
    while seen < n:
        got = r.xreadgroup(group, "py", {key: ">"}, count=16, block=1000)
        for _, entries in got or []:
            for entry_id, fields in entries:
                ev = decode_event(fields)
                ev["entry"] = entry_id.decode()
                say(ev)
                r.xack(key, group, entry_id)  # after handling, as eddy does
                seen += 1


def dlq(r, ns, group):
    for entry_id, fields in r.xrange("{%s}:dlq:%s" % (ns, group)):
        ev = {k.decode(): v.decode(errors="replace") for k, v in fields.items()
              if k.startswith(b"_dlq_")}
        ev["entry"] = entry_id.decode()
        say(ev)


def main(argv):
    cmd, url, ns = argv[1], argv[2], argv[3]
    r = redis.Redis.from_url(url)
    if cmd == "publish":
        publish(r, ns, argv[4], int(argv[5]))
    elif cmd == "respond":
        respond(r, ns, argv[4], argv[5], int(argv[6]))
    elif cmd == "consume":
        consume(r, ns, argv[4], argv[5], int(argv[6]))
    elif cmd == "dlq":
        dlq(r, ns, argv[4])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
