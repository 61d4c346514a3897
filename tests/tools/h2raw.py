#!/usr/bin/python3
# tests/tools/h2raw.py: crafted HTTP/2 frames for inspect_h2.t (hpack + hyperframe
# from python3-h2: frames built by hand, so a malformed one goes out as it is).
#
#	h2raw.py ADDR NAME CAFILE CASE
#
# Connects with TLS (SNI NAME, ALPN h2), sends the preface and CASE's frames, and
# prints the first answer that decides it: "status N" (a response on the first
# stream), "reset ERROR" (RST_STREAM on it), "refused ERROR" (a RST_STREAM on any
# stream, streams-over-limit), "goaway ERROR", or "closed"/"timeout".
import socket
import ssl
import sys
import time

import hpack
from h2.errors import ErrorCodes
from hyperframe.frame import (ContinuationFrame, DataFrame, Frame, HeadersFrame,
                              PingFrame, RstStreamFrame, SettingsFrame)

addr, name, cafile, case = sys.argv[1:5]
enc = hpack.Encoder()
dec = hpack.Decoder()


def base(method="GET", path="/"):
    return [(":method", method), (":scheme", "https"), (":authority", name),
            (":path", path)]


def headers(sid, fields, end=True, end_headers=True):
    f = HeadersFrame(sid)
    f.data = enc.encode(fields)
    f.flags = set()
    if end:
        f.flags.add("END_STREAM")
    if end_headers:
        f.flags.add("END_HEADERS")
    return f.serialize()


def data(sid, payload, end=False):
    f = DataFrame(sid)
    f.data = payload
    if end:
        f.flags.add("END_STREAM")
    return f.serialize()


def cases():
    b = base()
    smuggle = {
        "connection-field": b + [("connection", "close"), ("x-smuggle", "1")],
        "te-gzip": b + [("te", "gzip"), ("x-smuggle", "1")],
        "upper-name": b + [("X-Smuggle", "1")],
        "crlf-value": b + [("x-smuggle", "a\r\nx-inject: b")],
        "nul-value": b + [("x-smuggle", "a\0b")],
        "pseudo-after-regular": [(":method", "GET"), ("x-smuggle", "1"),
                                 (":scheme", "https"), (":authority", name),
                                 (":path", "/")],
        "pseudo-duplicate": b + [(":path", "/echo"), ("x-smuggle", "1")],
        "upgrade-h2c": b + [("upgrade", "h2c"), ("x-smuggle", "1")],
        "extended-connect": [(":method", "CONNECT"), (":protocol", "websocket"),
                             (":scheme", "https"), (":authority", name),
                             (":path", "/"), ("x-smuggle", "1")],
    }
    if case in smuggle:
        return headers(1, smuggle[case])
    if case == "host-twice":
        return headers(1, b + [("host", name), ("host", "evil.test")])
    if case == "connect":
        return headers(1, [(":method", "CONNECT"), (":authority", name + ":443")],
                       end=False)
    if case == "cl-mismatch":
        return headers(1, base("POST", "/echo") + [("content-length", "10"),
                                                   ("x-smuggle", "1")],
                       end=False) + data(1, b"abc", end=True)
    if case == "rapid-reset":
        out = b""
        for i in range(400):
            sid = 1 + 2 * i
            out += headers(sid, base()) + RstStreamFrame(sid, error_code=8).serialize()
        return out
    if case == "continuation-flood":
        out = headers(1, base(), end_headers=False)
        for _ in range(200):
            out += ContinuationFrame(1, data=b"").serialize()
        return out
    if case == "settings-flood":
        return b"".join(SettingsFrame(0).serialize() for _ in range(400))
    if case == "ping-flood":
        return b"".join(PingFrame(0, opaque_data=b"12345678").serialize()
                        for _ in range(400))
    if case == "empty-data-flood":
        return headers(1, base("POST", "/echo"), end=False) + \
            b"".join(data(1, b"") for _ in range(400))
    if case == "streams-over-limit":
        return b"".join(headers(1 + 2 * i, base("POST", "/echo"), end=False)
                        for i in range(110))
    if case == "after-flood":
        return headers(1, base())
    sys.exit("h2raw: no case %s" % case)


ctx = ssl.create_default_context(cafile=cafile)
ctx.set_alpn_protocols(["h2"])
s = ctx.wrap_socket(socket.create_connection((addr, 443), timeout=10),
                    server_hostname=name)
if s.selected_alpn_protocol() != "h2":
    print("no h2 (%s)" % s.selected_alpn_protocol())
    sys.exit(0)
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + SettingsFrame(0).serialize())
try:
    s.sendall(cases())
except OSError:
    pass
buf = b""
deadline = time.time() + 8
while time.time() < deadline:
    try:
        more = s.recv(65535)
    except socket.timeout:
        break
    except OSError:
        more = b""
    if not more:
        print("closed")
        sys.exit(0)
    buf += more
    while len(buf) >= 9:
        f, length = Frame.parse_frame_header(memoryview(buf[:9]))
        if len(buf) < 9 + length:
            break
        f.parse_body(memoryview(buf[9:9 + length]))
        buf = buf[9 + length:]
        kind = type(f).__name__
        if kind == "SettingsFrame" and "ACK" not in f.flags:
            s.sendall(SettingsFrame(0, flags=["ACK"]).serialize())
        elif kind == "HeadersFrame":
            fields = dict(dec.decode(f.data))
            st = fields.get(b":status", fields.get(":status"))
            if f.stream_id == 1 and case != "streams-over-limit":
                print("status %s" % (st.decode() if isinstance(st, bytes) else st))
                sys.exit(0)
        elif kind == "RstStreamFrame":
            n = ErrorCodes(f.error_code).name
            if case == "streams-over-limit":
                print("refused %s (stream %d)" % (n, f.stream_id))
                sys.exit(0)
            if f.stream_id == 1 and case != "rapid-reset":
                print("reset %s" % n)
                sys.exit(0)
        elif kind == "GoAwayFrame":
            print("goaway %s" % ErrorCodes(f.error_code).name)
            sys.exit(0)
print("timeout")
