"""A real gRPC server and client (grpcio) for the end-to-end tests of crates/palisade/tests/e2e/grpc.rs.

No generated code: messages are raw bytes (hand-encoded protobuf in the tests).

  grpc_peer.py server [--cert PEM --key PEM]
      Serves test.Echo/Unary (answers the request bytes), test.Echo/Bidi (answers each message
      as it comes), with trailing metadata `x-trailer: t-<method>`, and grpc.health.v1.Health/Check
      (SERVING for "", NOT_SERVING for "down", NOT_FOUND otherwise). Prints the port, serves until
      stdin closes.
  grpc_peer.py client TARGET METHOD HEX... [--gzip] [--ca PEM --name NAME]
      Calls METHOD (unary with one message, bidi with each) and prints one JSON line: code,
      details, responses (hex), trailing metadata. `HEX*N` is HEX repeated N times.
"""
import json
import sys
from concurrent import futures

import grpc


def server(args):
    def unary(req, ctx):
        ctx.set_trailing_metadata((("x-trailer", "t-unary"),))
        return req

    def bidi(it, ctx):
        ctx.set_trailing_metadata((("x-trailer", "t-bidi"),))
        for m in it:
            yield m

    def check(req, ctx):
        # HealthCheckRequest { string service = 1; }
        service = req[2:].decode() if len(req) > 2 else ""
        if service == "":
            return b"\x08\x01"  # SERVING
        if service == "down":
            return b"\x08\x02"  # NOT_SERVING
        ctx.abort(grpc.StatusCode.NOT_FOUND, "unknown service")

    echo = grpc.method_handlers_generic_handler("test.Echo", {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "Bidi": grpc.stream_stream_rpc_method_handler(bidi),
    })
    health = grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
        "Check": grpc.unary_unary_rpc_method_handler(check),
    })
    s = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    s.add_generic_rpc_handlers((echo, health))
    if "--cert" in args:
        cert = open(args[args.index("--cert") + 1], "rb").read()
        key = open(args[args.index("--key") + 1], "rb").read()
        port = s.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([(key, cert)]))
    else:
        port = s.add_insecure_port("127.0.0.1:0")
    s.start()
    print(port, flush=True)
    sys.stdin.read()
    s.stop(0)


def message(arg):
    h, _, n = arg.partition("*")
    return bytes.fromhex(h) * (int(n) if n else 1)


def client(args):
    target, method = args[0], args[1]
    gzip = "--gzip" in args
    args = [a for a in args if a != "--gzip"]
    end = args.index("--ca") if "--ca" in args else len(args)
    msgs = [message(a) for a in args[2:end]]
    kw = {"compression": grpc.Compression.Gzip} if gzip else {}
    if "--ca" in args:
        ca = open(args[args.index("--ca") + 1], "rb").read()
        name = args[args.index("--name") + 1]
        ch = grpc.secure_channel(target, grpc.ssl_channel_credentials(ca), options=(("grpc.ssl_target_name_override", name),))
    else:
        ch = grpc.insecure_channel(target)
    out = {"code": "OK", "details": "", "responses": [], "trailers": {}}
    try:
        if method.endswith("/Bidi"):
            call = ch.stream_stream(method, request_serializer=None, response_deserializer=None)(iter(msgs), timeout=20, **kw)
            for r in call:
                out["responses"].append(r.hex())
        else:
            fut = ch.unary_unary(method, request_serializer=None, response_deserializer=None).future(msgs[0], timeout=20, **kw)
            out["responses"].append(fut.result().hex())
            call = fut
        out["trailers"] = {k: v for k, v in (call.trailing_metadata() or ())}
    except grpc.RpcError as e:
        out["code"] = e.code().name
        out["details"] = e.details() or ""
        out["trailers"] = {k: v for k, v in (e.trailing_metadata() or ())}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    {"server": server, "client": client}[sys.argv[1]](sys.argv[2:])
