#!/usr/bin/python3
# tests/tools/h2seeds.py: writes the seed corpus of tests/fuzz/fuzz_h2.c into DIR
# (python3-h2 encodes both sides' frames; the input format is the target's).
#
#	h2seeds.py DIR
import os
import sys

import h2.config
import h2.connection
from hpack import Encoder
from hyperframe.frame import HeadersFrame

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
TOK = "tok-7Hq2ZpW9xK4mR8vN"
PH = "AIRLOCK_PLACEHOLDER_TOK_0123456789abcdef"


def exchange(host, reqs, answers):
    """reqs: (headers, body or None); answers: (headers, body, trailers) per stream."""
    cfg = lambda side: h2.config.H2Configuration(client_side=side,
                                                 header_encoding="utf-8")
    cl = h2.connection.H2Connection(cfg(True))
    cl.initiate_connection()
    for i, (hd, body) in enumerate(reqs):
        sid = 1 + 2 * i
        cl.send_headers(sid, [(":method", hd[0]), (":scheme", "https"),
                              (":authority", host), (":path", hd[1])] + hd[2],
                        end_stream=body is None)
        if body is not None:
            cl.send_data(sid, body, end_stream=True)
    vm = cl.data_to_send()[len(PREFACE):]
    sv = h2.connection.H2Connection(cfg(False))
    sv.initiate_connection()
    up = h2.connection.H2Connection(cfg(True))
    up.initiate_connection()
    for i, (hd, body) in enumerate(reqs):
        sid = 1 + 2 * i
        up.send_headers(sid, [(":method", hd[0]), (":scheme", "https"),
                              (":authority", host), (":path", hd[1])],
                        end_stream=True)
    sv.receive_data(up.data_to_send())
    sv.data_to_send()
    for i, (hd, body, tr) in enumerate(answers):
        sid = 1 + 2 * i
        sv.send_headers(sid, hd, end_stream=body is None and tr is None)
        if body is not None:
            sv.send_data(sid, body, end_stream=tr is None)
        if tr is not None:
            sv.send_headers(sid, tr, end_stream=True)
    return vm, sv.data_to_send()


def seed(d, name, rule, vm, origin):
    with open(os.path.join(d, name), "wb") as f:
        f.write(bytes([rule]) + vm + b"\0ORIGIN\0" + origin)


def raw_headers(host, fields, pseudo=None):
    e = Encoder()
    f = HeadersFrame(1)
    f.data = e.encode((pseudo if pseudo is not None else
                       [(":method", "GET"), (":scheme", "https"),
                        (":authority", host), (":path", "/")]) + fields)
    f.flags = {"END_STREAM", "END_HEADERS"}
    return f.serialize()


def main(d):
    os.makedirs(d, exist_ok=True)
    ok = [(":status", "200"), ("content-type", "text/plain")]
    vm, og = exchange("api.test", [(("GET", "/", []), None)], [(ok, b"hello\n", None)])
    seed(d, "get", 0, vm, og)
    vm, og = exchange("api.test", [(("POST", "/echo", []), b"x=" + PH.encode())],
                      [(ok, b"never\n", None)])
    seed(d, "placeholder-body", 0, vm, og)
    vm, og = exchange("api.test", [(("GET", "/", [("authorization", "Bearer " + PH)]),
                                    None)], [(ok, b"ok\n", None)])
    seed(d, "placeholder-supplied", 0, vm, og)
    vm, og = exchange("api.test", [(("GET", "/x?k=" + PH, []), None)], [(ok, b"", None)])
    seed(d, "placeholder-path", 0, vm, og)
    vm, og = exchange("other.test", [(("GET", "/echo", []), None)],
                      [(ok + [("x-echo", "Bearer " + TOK)], b"a" + TOK.encode() + b"z",
                        [("grpc-status", "0"), ("x-t", TOK)])])
    seed(d, "redact-fields-data-trailers", 1, vm, og)
    vm, og = exchange("api.test", [(("GET", "/a", []), None), (("GET", "/b", []), None),
                                   (("HEAD", "/c", []), None)],
                      [(ok, b"one\n", None), (ok, b"two\n", None), (ok, None, None)])
    seed(d, "three-streams", 0, vm, og)
    vm, og = exchange("api.test", [(("POST", "/g", [("content-type", "application/grpc"),
                                                   ("te", "trailers")]), b"\0\0\0\0\0")],
                      [([(":status", "200"), ("content-type", "application/grpc")],
                        b"\0\0\0\0\0", [("grpc-status", "0")])])
    seed(d, "grpc", 0, vm, og)
    seed(d, "upper-name", 0, raw_headers("api.test", [("X-Up", "1")]), b"")
    seed(d, "connection-field", 0, raw_headers("api.test", [("connection", "close")]), b"")
    seed(d, "host-mismatch", 0, raw_headers("api.test", [("host", "evil.test")]), b"")
    seed(d, "connect", 0, raw_headers("api.test", [], [(":method", "CONNECT"),
                                                      (":authority", "api.test:443")]),
         b"")
    # An HTTP/1.1 origin (RULE & 2): the origin's bytes are HTTP/1.1 answers.
    vm, _ = exchange("api.test", [(("GET", "/", []), None)], [(ok, b"x", None)])
    seed(d, "h1-get", 2, vm, b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello\n")
    vm, _ = exchange("api.test", [(("GET", "/a", []), None), (("GET", "/b", []), None),
                                  (("HEAD", "/c", []), None)],
                     [(ok, b"x", None)] * 3)
    seed(d, "h1-three-keepalive", 2, vm,
         b"HTTP/1.1 100 Continue\r\n\r\n"
         b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\none\n"
         b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n"
         b"\r\n3\r\ntwo\r\n1\r\n\n\r\n0\r\n\r\n"
         b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n")
    vm, _ = exchange("api.test", [(("POST", "/echo", []), b"body-bytes")], [(ok, b"x", None)])
    seed(d, "h1-post", 2, vm, b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
    vm, _ = exchange("other.test", [(("GET", "/echo", []), None)], [(ok, b"x", None)])
    seed(d, "h1-redact-chunks", 3, vm,
         b"HTTP/1.1 200 OK\r\nX-Echo: Bearer " + TOK.encode() +
         b"\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n" + TOK[:7].encode() +
         b"\r\n" + ("%x" % (len(TOK) - 7)).encode() + b"\r\n" + TOK[7:].encode() +
         b"\r\n0\r\n\r\n")
    seed(d, "h1-cl-te", 3, vm, b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    seed(d, "h1-bad-chunk", 3, vm, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
         b"\r\n3\r\nabc\r\nzz\r\n")
    seed(d, "h1-smuggle", 3, vm, b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"
         b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nSMUGGLED\n")
    seed(d, "h1-close-framed", 3, vm, b"HTTP/1.1 200 OK\r\n\r\nuntil the end")
    vm, _ = exchange("api.test", [(("POST", "/g", [("content-type", "application/grpc"),
                                                  ("te", "trailers")]), b"\0\0\0\0\0")],
                     [(ok, b"x", None)])
    seed(d, "h1-grpc", 2, vm, b"")


main(sys.argv[1])
