#!/usr/bin/python3
# tests/tools/h2origin.py: an HTTP/2 origin for tests/integration/inspect_h2.t, run in
# the test's "internet" namespace (python3-h2; TLS with ALPN h2 only).
#
#	h2origin.py ADDR PORT CERT KEY NAME RECORD
#
# Every request's fields and body are appended to RECORD (one "stream N" line, then
# "name: value" lines, then "body: ..." in Python repr), so a test can prove what
# reached the origin.  Answers:
#	/echo...	the request's fields, one "name: value" line each, then the body
#	/trailers	"body\n" then the trailers x-echo (the request's authorization)
#			and grpc-status: 0
#	/size/N		N bytes of 'x' in DATA frames of 16 KiB
#	/reset		RST_STREAM (CANCEL) instead of an answer
#	anything else	"origin NAME\n"
# A client that chose http/1.1 gets one HTTP/1.1 answer, "origin NAME (http/1.1)",
# its head recorded the same way.  Prints "ready" once listening.
import socket
import ssl
import sys
import threading

import h2.config
import h2.connection
import h2.events


def serve_h1(sock, name, rec, lock):
    head = b""
    while b"\r\n\r\n" not in head:
        more = sock.recv(65535)
        if not more:
            return
        head += more
    with lock, open(rec, "a") as f:
        f.write("http/1.1\n" + head.decode("latin-1").replace("\r\n", "\n"))
    body = ("origin %s (http/1.1)\n" % name).encode()
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n"
                 b"\r\n" % len(body) + body)
    sock.close()


def serve(sock, name, rec, lock):
    if sock.selected_alpn_protocol() != "h2":
        return serve_h1(sock, name, rec, lock)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(
        client_side=False, header_encoding="utf-8", validate_inbound_headers=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    reqs = {}

    def answer(sid):
        fields, body = reqs.pop(sid)
        path = dict(fields).get(":path", "/")
        with lock, open(rec, "a") as f:
            f.write("stream %d\n" % sid)
            for k, v in fields:
                f.write("%s: %s\n" % (k, v))
            f.write("body: %r\n" % body)
        if path.startswith("/reset"):
            conn.reset_stream(sid, 8)
            return
        trailers = None
        if path.startswith("/echo"):
            data = "".join("%s: %s\n" % (k, v) for k, v in fields).encode() + body
        elif path.startswith("/trailers"):
            data = b"body\n"
            trailers = [("x-echo", dict(fields).get("authorization", "-")),
                        ("grpc-status", "0")]
        elif path.startswith("/size/"):
            data = b"x" * int(path[6:])
        else:
            data = ("origin %s\n" % name).encode()
        conn.send_headers(sid, [(":status", "200"),
                                ("content-type", "text/plain"),
                                ("x-auth-seen", dict(fields).get("authorization",
                                                                 "-"))])
        off = 0
        while off < len(data):
            while conn.local_flow_control_window(sid) == 0:
                sock.sendall(conn.data_to_send())
                more = sock.recv(65535)
                if not more:
                    return
                for ev in conn.receive_data(more):
                    handle(ev)
            n = min(16384, len(data) - off, conn.local_flow_control_window(sid),
                    conn.max_outbound_frame_size)
            conn.send_data(sid, data[off:off + n])
            off += n
        if trailers is not None:
            conn.send_headers(sid, trailers, end_stream=True)
        else:
            conn.end_stream(sid)

    def handle(ev):
        if isinstance(ev, h2.events.RequestReceived):
            reqs[ev.stream_id] = (list(ev.headers), b"")
            if ev.stream_ended is not None:
                answer(ev.stream_id)
        elif isinstance(ev, h2.events.DataReceived):
            f, b = reqs.get(ev.stream_id, ([], b""))
            reqs[ev.stream_id] = (f, b + ev.data)
            conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        elif isinstance(ev, h2.events.StreamEnded):
            if ev.stream_id in reqs:
                answer(ev.stream_id)
        elif isinstance(ev, h2.events.TrailersReceived):
            f, b = reqs.get(ev.stream_id, ([], b""))
            reqs[ev.stream_id] = (f + [("trailer:" + k, v) for k, v in ev.headers], b)

    try:
        while True:
            data = sock.recv(65535)
            if not data:
                break
            for ev in conn.receive_data(data):
                handle(ev)
            sock.sendall(conn.data_to_send())
    except Exception as e:  # a broken test connection ends only itself
        sys.stderr.write("h2origin: %r\n" % e)
    finally:
        sock.close()


def main():
    addr, port, cert, key, name, rec = sys.argv[1:7]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, int(port)))
    ls.listen(64)
    print("ready", flush=True)
    lock = threading.Lock()
    while True:
        s, _ = ls.accept()
        try:
            t = ctx.wrap_socket(s, server_side=True)
        except (ssl.SSLError, OSError):
            s.close()
            continue
        threading.Thread(target=serve, args=(t, name, rec, lock),
                         daemon=True).start()


main()
