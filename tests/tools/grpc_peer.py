#!/usr/bin/python3
# tests/tools/grpc_peer.py: both ends of the gRPC checks of inspect_h2.t
# (python3-grpcio; raw bytes as messages, so no generated code).
#
#	grpc_peer.py serve ADDR PORT CERT KEY RECORD	a TLS gRPC server: prints "ready"
#	grpc_peer.py call HOST PORT CAFILE		the client, through airlock
#
# The server's methods: /test.Echo/Unary answers "auth=<authorization metadata>",
# /test.Echo/Stream answers 3 messages, /test.Admin/Secret answers "secret"; each
# call's authorization is appended to RECORD ("authorization=...").  The client
# sends no authorization of its own and prints one line per call: "unary: ...",
# "stream: N messages", "denied: <code> <details>" (the Admin call).
import os
import sys
from concurrent import futures

import grpc

ident = lambda b: b


def serve(addr, port, cert, key, rec):
    def auth(ctx):
        a = dict(ctx.invocation_metadata()).get("authorization", "-")
        with open(rec, "a") as f:
            f.write("authorization=%s\n" % a)
        return a

    def unary(req, ctx):
        return ("auth=%s" % auth(ctx)).encode()

    def stream(req, ctx):
        auth(ctx)
        for i in range(3):
            yield b"message %d" % i

    def secret(req, ctx):
        auth(ctx)
        return b"secret"

    h = grpc.method_handlers_generic_handler("test.Echo", {
        "Unary": grpc.unary_unary_rpc_method_handler(unary, ident, ident),
        "Stream": grpc.unary_stream_rpc_method_handler(stream, ident, ident)})
    a = grpc.method_handlers_generic_handler("test.Admin", {
        "Secret": grpc.unary_unary_rpc_method_handler(secret, ident, ident)})
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    srv.add_generic_rpc_handlers((h, a))
    creds = grpc.ssl_server_credentials(
        [(open(key, "rb").read(), open(cert, "rb").read())])
    srv.add_secure_port("%s:%s" % (addr, port), creds)
    srv.start()
    print("ready", flush=True)
    srv.wait_for_termination()


def call(host, port, cafile):
    creds = grpc.ssl_channel_credentials(root_certificates=open(cafile, "rb").read())
    ch = grpc.secure_channel("%s:%s" % (host, port), creds,
                             options=[("grpc.enable_http_proxy", 0)])
    u = ch.unary_unary("/test.Echo/Unary", ident, ident)
    print("unary: %s" % u(b"hello", timeout=10).decode())
    s = ch.unary_stream("/test.Echo/Stream", ident, ident)
    print("stream: %d messages" % len(list(s(b"x", timeout=10))))
    d = ch.unary_unary("/test.Admin/Secret", ident, ident)
    try:
        d(b"x", timeout=10)
        print("denied: no (the call went through)")
    except grpc.RpcError as e:
        print("denied: %s %s" % (e.code(), e.details()))


os.environ.pop("http_proxy", None)
os.environ.pop("https_proxy", None)
os.environ.setdefault("GRPC_DNS_RESOLVER", "native")
if sys.argv[1] == "serve":
    serve(*sys.argv[2:7])
else:
    call(*sys.argv[2:5])
