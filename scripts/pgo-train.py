#!/usr/bin/env python3
"""Training traffic for a profile-guided build (scripts/pgo-build).

    scripts/pgo-train.py HOST:PORT [--rounds 3] [--seed 1]

Sends HTTP/1.1 requests over keep-alive connections to a Palisade that proxies to any upstream
answering 200, built from the repository's own data only (crates/palisade-detect/data: the benign
sets and the handwritten attacks), never from the benchmark bodies: GETs with and without a
query, browser-like headers and cookies, JSON bodies from 100 bytes to ~40 KiB (objects, arrays,
numbers, nested keys), form bodies, and about one request in ten carrying an attack value in
one of those places. Every loop is bounded by --rounds; each socket has a 30 s timeout.
Prints how many requests were answered, by status; exits 1 if any answer is neither 200 nor
403.
"""
import argparse
import collections
import json
import pathlib
import random
import socket
import sys
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "crates" / "palisade-detect" / "data"


def load(paths):
    values = []
    for p in paths:
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip():
                values.append(json.loads(line)["value"])
    return values


def json_doc(rng, benign, size):
    """A JSON document of about `size` bytes: records of mixed fields, nested once."""
    items = []
    total = 0
    while total < size:
        rec = {
            "id": rng.randrange(1, 10**9),
            "name": rng.choice(benign)[:60],
            "price": round(rng.random() * 500, 2),
            "active": rng.random() < 0.5,
            "tags": [rng.choice(benign)[:20] for _ in range(rng.randrange(0, 4))],
            "note": rng.choice(benign),
            "meta": {"created": "2026-11-%02dT10:%02d:00Z" % (rng.randrange(1, 29), rng.randrange(60)),
                     "ref": rng.choice(benign)[:40], "count": rng.randrange(1000)},
        }
        items.append(rec)
        total += len(json.dumps(rec))
    if len(items) == 1:
        return items[0]
    return {"items": items, "total": len(items), "page": {"next": None, "size": len(items)}}


def requests(rng, benign, browser, attacks, host, rounds):
    ua = [v for v in browser if "Mozilla" in v] or ["Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0"]
    for _ in range(rounds):
        for i in range(2000):
            attack = rng.choice(attacks) if rng.random() < 0.1 else None
            kind = rng.random()
            headers = [("Host", host)]
            if rng.random() < 0.6:
                headers += [("User-Agent", rng.choice(ua)), ("Accept", "application/json"),
                            ("Accept-Language", "en-US,en;q=0.9")]
            if rng.random() < 0.3:
                headers.append(("Cookie", "session=%032x; theme=%s" % (rng.getrandbits(128),
                                urllib.parse.quote(attack or rng.choice(benign)[:30]))))
            body = b""
            if kind < 0.3:
                path = "/test"
            elif kind < 0.5:
                q = urllib.parse.urlencode({"q": attack or rng.choice(benign),
                                            "page": str(rng.randrange(1, 50))})
                path = "/search?" + q
            elif kind < 0.9:
                size = rng.choice([100, 300, 1000, 1000, 2000, 5000, 30000])
                doc = json_doc(rng, benign, size)
                if attack:
                    doc = {"comment": attack, "data": doc}
                body = json.dumps(doc).encode()
                path = "/orders"
                headers.append(("Content-Type", "application/json"))
            else:
                body = urllib.parse.urlencode({"name": rng.choice(benign)[:40],
                                               "message": attack or rng.choice(benign)}).encode()
                path = "/form"
                headers.append(("Content-Type", "application/x-www-form-urlencoded"))
            method = "POST" if body else "GET"
            if body:
                headers.append(("Content-Length", str(len(body))))
            head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
            yield head.encode("utf-8", "replace") + b"\r\n" + body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    benign_files = sorted((DATA / "benign").glob("*.jsonl"))
    benign = load(benign_files)
    browser = load([DATA / "benign" / "browser.jsonl"])
    attacks = load(sorted((DATA / "attacks").glob("*.jsonl")))
    host, port = args.addr.rsplit(":", 1)
    statuses = collections.Counter()
    sock = None
    for req in requests(rng, benign, browser, attacks, args.addr, args.rounds):
        if sock is None:
            sock = socket.create_connection((host, int(port)), timeout=30)
            f = sock.makefile("rb")
        sock.sendall(req)
        line = f.readline()
        if not line:
            sock.close(); sock = None
            statuses["closed"] += 1
            continue
        status = line.split()[1].decode()
        length, close = 0, False
        while (h := f.readline()) not in (b"\r\n", b""):
            k, _, v = h.partition(b":")
            k = k.strip().lower()
            if k == b"content-length":
                length = int(v)
            elif k == b"connection" and v.strip().lower() == b"close":
                close = True
        f.read(length)
        statuses[status] += 1
        if close:
            sock.close(); sock = None
    if sock:
        sock.close()
    print(" ".join(f"{k}:{v}" for k, v in sorted(statuses.items())))
    # Every request is answered 200 (passed) or 403 (blocked by detection); anything else means
    # the training did not exercise what it should (a refused body, a dead upstream).
    other = {k: v for k, v in statuses.items() if k not in ("200", "403")}
    if other or statuses["200"] == 0:
        print(f"unexpected answers: {other or 'no 200 at all'}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
