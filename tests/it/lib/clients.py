# Python HTTP clients for tests/it/http_clients.test.mjs, run as
#   python3 clients.py '{"mode": ..., "host": ..., "port": ..., ...}'
# Prints one JSON object with what the client saw. Standard library only, so
# Debian's python3 is enough.
import http.client
import json
import sys
import urllib.request


def urllib_call(a):
    url = "http://%s:%d%s" % (a["host"], a["port"], a["path"])
    data = a["body"].encode() if a.get("body") is not None else None
    req = urllib.request.Request(url, data=data, headers=a.get("headers", {}),
                                 method=a.get("method"))
    with urllib.request.urlopen(req, timeout=30) as r:
        return {"status": r.status, "body": r.read().decode()}


def conn(a, http10=False):
    c = http.client.HTTPConnection(a["host"], a["port"], timeout=30)
    if http10:
        c._http_vsn = 10
        c._http_vsn_str = "HTTP/1.0"
    return c


def exchange(c, method, path, body=None, headers=None, **kw):
    """One request on connection c; reports whether it reused c's socket."""
    before = c.sock
    c.request(method, path, body=body, headers=headers or {}, **kw)
    reused = before is not None and c.sock is before
    r = c.getresponse()
    text = r.read().decode()
    return {"status": r.status, "body": text, "reused": reused, "will_close": r.will_close,
            "headers": {k.lower(): v for k, v in r.getheaders()}}


def main():
    a = json.loads(sys.argv[1])
    mode = a["mode"]
    hdrs = {"Content-Type": "application/json"}
    if mode == "urllib":
        out = urllib_call(a)
    elif mode == "hc-keepalive":
        # health, chat, health on one connection
        c = conn(a)
        out = [exchange(c, "GET", a["health"]),
               exchange(c, "POST", a["path"], a["body"], hdrs),
               exchange(c, "GET", a["health"])]
        c.close()
    elif mode == "hc-http10":
        c = conn(a, http10=True)
        out = exchange(c, "POST", a["path"], a["body"], hdrs)
        c.close()
    elif mode == "hc-chunked":
        # a body of unknown length: http.client sends it chunked
        c = conn(a)
        parts = [a["body"][:10].encode(), a["body"][10:].encode()]
        out = exchange(c, "POST", a["path"], iter(parts), hdrs, encode_chunked=True)
        c.close()
    elif mode == "hc-head":
        # HEAD, then GET on the same connection: the HEAD answer carried no body
        c = conn(a)
        out = [exchange(c, "HEAD", a["health"]), exchange(c, "GET", a["health"])]
        c.close()
    else:
        raise SystemExit("unknown mode " + mode)
    json.dump(out, sys.stdout)


main()
