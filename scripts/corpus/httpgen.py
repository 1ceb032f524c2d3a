"""Shared parts of the whole-request corpus generators (Python 3 standard library only).

A generated request is a dict, written as one JSON line:
  {"id", "label": "benign"|"attack", "class", "app", "location", ["family"],
   "request": raw HTTP/1.1 text}    or "request_base64" when the body is binary.
Everything is drawn from a `random.Random` seeded by the caller, so the output is the same
byte for byte on every run with the same Python (the gzip container is written with mtime 0
and no file name).
"""

import base64
import gzip
import io
import json
import string
import urllib.parse

# --- vocabularies -------------------------------------------------------------------------

CHROME_VERSIONS = ["118.0.5993.117", "119.0.6045.199", "120.0.6099.224", "121.0.6167.184",
                   "122.0.6261.128", "123.0.6312.122", "124.0.6367.207", "125.0.6422.141",
                   "126.0.6478.126", "127.0.6533.119", "128.0.6613.137", "129.0.6668.100",
                   "130.0.6723.116", "131.0.6778.85"]
FIREFOX_VERSIONS = ["115.0", "118.0", "120.0", "121.0", "122.0", "123.0", "124.0", "125.0",
                    "126.0", "127.0", "128.0", "131.0", "132.0"]
SAFARI_VERSIONS = [("16.6", "605.1.15"), ("17.0", "605.1.15"), ("17.2.1", "605.1.15"),
                   ("17.4", "605.1.15"), ("17.5", "605.1.15"), ("18.0", "605.1.15"),
                   ("18.1", "605.1.15")]
DESKTOP_OS = ["Windows NT 10.0; Win64; x64", "Macintosh; Intel Mac OS X 10_15_7",
              "X11; Linux x86_64", "X11; Ubuntu; Linux x86_64", "X11; CrOS x86_64 14541.0.0"]
ANDROID = ["Linux; Android 10; K", "Linux; Android 13; Pixel 7", "Linux; Android 14; SM-S918B",
           "Linux; Android 12; M2101K6G"]
IOS = ["iPhone; CPU iPhone OS 17_4 like Mac OS X", "iPhone; CPU iPhone OS 16_6 like Mac OS X",
       "iPad; CPU OS 17_2 like Mac OS X"]

LANGS = ["en-US,en;q=0.9", "en-GB,en;q=0.9,en-US;q=0.8", "de-DE,de;q=0.9,en-US;q=0.8,en;q=0.7",
         "fr-FR,fr;q=0.9,en-US;q=0.8,en;q=0.7", "es-ES,es;q=0.9", "pt-BR,pt;q=0.9,en-US;q=0.8,en;q=0.7",
         "ja,en-US;q=0.9,en;q=0.8", "zh-CN,zh;q=0.9,en;q=0.8", "ru-RU,ru;q=0.9,en-US;q=0.8,en;q=0.7",
         "ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7", "it-IT,it;q=0.9,en-US;q=0.8,en;q=0.7",
         "nl-NL,nl;q=0.9,en-US;q=0.8,en;q=0.7", "pl-PL,pl;q=0.9,en-US;q=0.8,en;q=0.7",
         "tr-TR,tr;q=0.9,en-US;q=0.8,en;q=0.7", "en-US,en;q=0.5", "de,en-US;q=0.7,en;q=0.3"]

SITES = ["shop.example.com", "www.example.org", "news.example.net", "docs.example.io",
         "app.example.com", "forum.example.org", "blog.example.dev", "mail.example.com",
         "maps.example.com", "video.example.tv", "travel.example.co.uk", "bank.example.de",
         "wiki.example.org", "jobs.example.fr", "store.example.jp", "learn.example.edu"]
SEARCH_ENGINES = [("https://www.google.com/search", "q"), ("https://www.bing.com/search", "q"),
                  ("https://duckduckgo.com/", "q"), ("https://search.yahoo.com/search", "p"),
                  ("https://yandex.ru/search/", "text"), ("https://www.baidu.com/s", "wd"),
                  ("https://www.ecosia.org/search", "q"), ("https://search.brave.com/search", "q")]

WORDS = ("account address agenda album answer apple archive article audio author backup badge "
         "banner basket battery beach bicycle billing birthday blanket board booking bottle "
         "budget button calendar camera campaign candle career catalog center chair channel "
         "chart checkout chicken city client climate coffee collection color comment company "
         "concert contact contract cookie country coupon course cover credit culture customer "
         "dashboard database delivery design device dinner discount document domain download "
         "drawer editor election energy engine event export family feature festival field "
         "filter finance flight folder forest format friend garden gallery garage gift glass "
         "group guide guitar health history holiday hotel house image import invoice island "
         "jacket journal kitchen label language laptop layout lesson library license light "
         "market meeting member memory message method mobile module monitor mountain movie "
         "museum music network notebook number office order owner package painting palace "
         "panel paper parking partner payment people phone photo picture planet player pocket "
         "policy portal poster printer product profile project promise quality question radio "
         "rating receipt recipe record region report request review river robot room route "
         "salary sample school screen season section server service session settings shadow "
         "share shipping shirt shoes signal sister skill sleep snow soccer software speaker "
         "sport square stadium station status storage story street student studio subject "
         "summer support survey table tablet teacher team template theme ticket timer title "
         "token topic tower track train travel trip update upload user vacation version video "
         "village voice wallet watch weather website wedding window winter worker yoga zone").split()

FIRST_NAMES = ["Anna", "Ben", "Chloé", "Daniel", "Émile", "Fatima", "George", "Hana", "Igor",
               "José", "Kai", "Léa", "Mohammed", "Nina", "Oskar", "Priya", "Quentin", "Rosa",
               "Søren", "Tomás", "Uma", "Viktor", "Wei", "Xavier", "Yuki", "Zoë", "Seán",
               "D'Arcy", "Åsa", "Jürgen"]
LAST_NAMES = ["Smith", "Müller", "García", "O'Brien", "Rossi", "Dubois", "Kowalski", "Tanaka",
              "Nguyen", "Silva", "Ivanov", "Johansson", "Kim", "O'Connor", "Van der Berg",
              "Dell'Acqua", "Schmidt", "López", "Chen", "Novák", "D'Angelo", "MacDonald"]


def pick(rng, seq):
    return seq[rng.randrange(len(seq))]


def hexs(rng, n):
    return "".join(pick(rng, "0123456789abcdef") for _ in range(n))


def alnum(rng, n, alphabet=string.ascii_letters + string.digits):
    return "".join(pick(rng, alphabet) for _ in range(n))


def b64url(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def uuid4(rng):
    h = hexs(rng, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{pick(rng, '89ab')}{h[17:20]}-{h[20:32]}"


def jwt(rng):
    header = {"alg": pick(rng, ["HS256", "RS256", "ES256"]), "typ": "JWT"}
    if header["alg"] != "HS256":
        header["kid"] = alnum(rng, 16)
    now = 1700000000 + rng.randrange(30000000)
    payload = {"sub": str(rng.randrange(10**6, 10**9)), "iat": now, "exp": now + 3600,
               "iss": "https://auth." + pick(rng, SITES).split(".", 1)[1],
               "scope": pick(rng, ["openid profile email", "read:orders write:orders", "api"])}
    if rng.random() < 0.5:
        payload["name"] = pick(rng, FIRST_NAMES) + " " + pick(rng, LAST_NAMES)
        payload["email"] = email(rng)
    sig = bytes(rng.randrange(256) for _ in range(32 if header["alg"] == "HS256" else 64))
    return ".".join([b64url(json.dumps(header, separators=(",", ":")).encode()),
                     b64url(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()),
                     b64url(sig)])


def email(rng):
    first = pick(rng, FIRST_NAMES).lower().replace("'", "").replace("é", "e").replace("ø", "o")
    first = first.encode("ascii", "ignore").decode() or "user"
    return f"{first}{pick(rng, ['', '.', '_'])}{rng.randrange(1, 999)}@{pick(rng, ['gmail.com', 'outlook.com', 'example.com', 'yahoo.co.jp', 'web.de', 'proton.me'])}"


def qs(pairs):
    """A query string the way browsers encode it (spaces as `+`)."""
    return "&".join(urllib.parse.quote_plus(str(k), safe="[]") + "=" + urllib.parse.quote_plus(str(v), safe="")
                    for k, v in pairs)


def pct(s, safe=""):
    return urllib.parse.quote(s, safe=safe)


# --- browsers -----------------------------------------------------------------------------

def browser(rng):
    """A browser identity: (name, User-Agent, client-hint headers or None)."""
    r = rng.random()
    if r < 0.55:
        v = pick(rng, CHROME_VERSIONS)
        major = v.split(".")[0]
        mobile = rng.random() < 0.25
        os_ = pick(rng, ANDROID) if mobile else pick(rng, DESKTOP_OS)
        edge = not mobile and rng.random() < 0.15
        ua = f"Mozilla/5.0 ({os_}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v} {'Mobile ' if mobile else ''}Safari/537.36"
        brand = "Microsoft Edge" if edge else "Google Chrome"
        if edge:
            ua += f" Edg/{v}"
        platform = "Android" if mobile else ("Windows" if "Windows" in os_ else "macOS" if "Mac" in os_ else "Chrome OS" if "CrOS" in os_ else "Linux")
        hints = [("sec-ch-ua", f'"{brand}";v="{major}", "Chromium";v="{major}", "Not_A Brand";v="24"'),
                 ("sec-ch-ua-mobile", "?1" if mobile else "?0"),
                 ("sec-ch-ua-platform", f'"{platform}"')]
        return "chrome", ua, hints
    if r < 0.8:
        v = pick(rng, FIREFOX_VERSIONS)
        os_ = pick(rng, DESKTOP_OS)
        return "firefox", f"Mozilla/5.0 ({os_}; rv:{v}) Gecko/20100101 Firefox/{v}", None
    v, wk = pick(rng, SAFARI_VERSIONS)
    if rng.random() < 0.5:
        os_ = pick(rng, IOS)
        return "safari", f"Mozilla/5.0 ({os_}) AppleWebKit/{wk} (KHTML, like Gecko) Version/{v} Mobile/15E148 Safari/{wk}", None
    return "safari", f"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/{wk} (KHTML, like Gecko) Version/{v} Safari/{wk}", None


ACCEPT = {
    "document": "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
    "document-ff": "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8",
    "document-safari": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "json": "application/json, text/plain, */*",
    "any": "*/*",
    "image": "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
    "style": "text/css,*/*;q=0.1",
}


def browser_headers(rng, host, dest="document", referer=None, cookie=None, origin=None, content_type=None, mode=None):
    """Header lines in the order the browser sends them."""
    v = visitor(rng)
    name, ua, hints = v["browser"]
    lang = v["lang"]
    h = [("Host", host)]
    if name == "chrome":
        h += hints
        if dest == "document":
            h.append(("Upgrade-Insecure-Requests", "1"))
        h.append(("User-Agent", ua))
        if content_type:
            h.append(("Content-Type", content_type))
        acc = ACCEPT["document"] if dest == "document" else ACCEPT.get(dest, ACCEPT["any"])
        h.append(("Accept", acc))
        if origin:
            h.append(("Origin", origin))
        site = "same-origin" if referer and host in referer else ("cross-site" if referer else "none")
        h += [("Sec-Fetch-Site", site), ("Sec-Fetch-Mode", mode or ("navigate" if dest == "document" else "cors")),
              ("Sec-Fetch-Dest", dest if dest in ("document", "image", "style", "script", "font") else "empty")]
        if dest == "document":
            h.append(("Sec-Fetch-User", "?1"))
        if referer:
            h.append(("Referer", referer))
        h.append(("Accept-Encoding", "gzip, deflate, br, zstd"))
        h.append(("Accept-Language", lang))
        if rng.random() < 0.3:
            h.append(("Priority", "u=0, i" if dest == "document" else "u=1, i"))
    else:
        h.append(("User-Agent", ua))
        acc = ACCEPT["document-ff" if name == "firefox" else "document-safari"] if dest == "document" else ACCEPT.get(dest, ACCEPT["any"])
        h.append(("Accept", acc))
        h.append(("Accept-Language", lang))
        h.append(("Accept-Encoding", "gzip, deflate, br" + (", zstd" if name == "firefox" else "")))
        if content_type:
            h.append(("Content-Type", content_type))
        if origin:
            h.append(("Origin", origin))
        if referer:
            h.append(("Referer", referer))
        if name == "firefox":
            h.append(("Connection", "keep-alive"))
            if dest == "document":
                h.append(("Upgrade-Insecure-Requests", "1"))
            h += [("Sec-Fetch-Dest", dest if dest in ("document", "image", "style", "script", "font") else "empty"),
                  ("Sec-Fetch-Mode", mode or ("navigate" if dest == "document" else "cors")),
                  ("Sec-Fetch-Site", "same-origin" if referer and host in referer else ("cross-site" if referer else "none"))]
            if dest == "document":
                h.append(("Sec-Fetch-User", "?1"))
            if rng.random() < 0.4:
                h.append(("DNT", "1"))
    if cookie:
        h.append(("Cookie", cookie))
    return h


# --- cookies ------------------------------------------------------------------------------

def ga_cookie(rng):
    return f"GA1.1.{rng.randrange(10**8, 10**10)}.{1690000000 + rng.randrange(40000000)}"


def consent_string(rng):
    """An IAB TCF-like consent string: base64url of random bits."""
    return "CP" + b64url(bytes(rng.randrange(256) for _ in range(rng.randrange(40, 90)))) + ".YAAAAAAAAAAA"


def cookie_jar(rng):
    """The cookies of the current visitor ([`visitor`])."""
    return visitor(rng)["jar"]


_VISITOR = {}


def reset_visitor():
    _VISITOR.clear()


def visitor(rng):
    """The current visitor: a browser, a language and a cookie jar, kept for a run of
    requests (a session; on average 12 requests) as a real visitor's are. Runs of the same
    cookies also keep the compressed corpus small."""
    if not _VISITOR or rng.random() < 1 / 12:
        _VISITOR.clear()
        _VISITOR.update(browser=browser(rng), lang=pick(rng, LANGS), jar=new_cookie_jar(rng))
    return _VISITOR


def pooled_jwt(rng):
    """The current visitor's bearer token."""
    v = visitor(rng)
    if "jwt" not in v:
        v["jwt"] = jwt(rng)
    return v["jwt"]


def new_cookie_jar(rng):
    """Cookies of common frameworks and trackers."""
    c = []
    if rng.random() < 0.7:
        c.append(("_ga", ga_cookie(rng)))
        c.append((f"_ga_{alnum(rng, 10, string.ascii_uppercase + string.digits)}", f"GS1.1.{1700000000 + rng.randrange(9999999)}.{rng.randrange(1, 90)}.1.{1700000000 + rng.randrange(9999999)}.0.0.0"))
    if rng.random() < 0.3:
        c.append(("_gid", f"GA1.2.{rng.randrange(10**8, 10**10)}.{1700000000 + rng.randrange(9999999)}"))
    if rng.random() < 0.3:
        c.append(("_fbp", f"fb.1.{1700000000000 + rng.randrange(10**10)}.{rng.randrange(10**9)}"))
    r = rng.random()
    if r < 0.2:
        c.append(("sessionid", alnum(rng, 32, string.ascii_lowercase + string.digits)))
        c.append(("csrftoken", alnum(rng, 32)))
    elif r < 0.35:
        c.append(("PHPSESSID", alnum(rng, 26, string.ascii_lowercase + string.digits)))
    elif r < 0.5:
        c.append(("JSESSIONID", hexs(rng, 32).upper() + pick(rng, ["", ".node01", ".worker1"])))
    elif r < 0.6:
        c.append(("connect.sid", "s%3A" + alnum(rng, 32) + "." + alnum(rng, 43, string.ascii_letters + string.digits + "%2B")))
    elif r < 0.7:
        c.append(("_myapp_session", pct(base64.b64encode(bytes(rng.randrange(256) for _ in range(rng.randrange(60, 200)))).decode()) + "--" + hexs(rng, 40)))
    elif r < 0.8:
        c.append(("laravel_session", pct(base64.b64encode(json.dumps({"iv": alnum(rng, 24), "value": alnum(rng, 64), "mac": hexs(rng, 64), "tag": ""}).encode()).decode())))
        c.append(("XSRF-TOKEN", pct(base64.b64encode(json.dumps({"iv": alnum(rng, 24), "value": alnum(rng, 64), "mac": hexs(rng, 64)}).encode()).decode())))
    elif r < 0.9:
        c.append(("access_token", jwt(rng)))
    else:
        c.append(("ASP.NET_SessionId", alnum(rng, 24, string.ascii_lowercase + string.digits)))
        c.append((".AspNetCore.Antiforgery." + alnum(rng, 11), "CfDJ8" + alnum(rng, 150, string.ascii_letters + string.digits + "-_")))
    if rng.random() < 0.35:
        c.append(("euconsent-v2", consent_string(rng)))
    if rng.random() < 0.25:
        c.append(("OptanonConsent", qs([("isGpcEnabled", "0"), ("datestamp", "Mon Nov 04 2024 10:12:33 GMT+0100 (Central European Standard Time)"), ("version", "202409.1.0"), ("groups", "C0001:1,C0002:0,C0003:1,C0004:0"), ("hosts", ""), ("landingPath", "NotLandingPage")])))
    if rng.random() < 0.2:
        c.append(("cookieconsent_status", pick(rng, ["dismiss", "allow", "deny"])))
    if rng.random() < 0.2:
        c.append(("theme", pick(rng, ["dark", "light", "system"])))
    if rng.random() < 0.15:
        c.append(("lang", pick(rng, ["en", "de", "fr", "ja", "pt-BR"])))
    if rng.random() < 0.15:
        c.append(("_hjSessionUser_" + str(rng.randrange(10**6, 10**7)), b64url(json.dumps({"id": uuid4(rng), "created": 1700000000000 + rng.randrange(10**10), "existing": True}, separators=(",", ":")).encode())))
    if rng.random() < 0.1:
        c.append(("cf_clearance", alnum(rng, 43, string.ascii_letters + string.digits + "_-") + "-" + str(1700000000 + rng.randrange(10**7)) + "-1.0.1.1-" + alnum(rng, 60, string.ascii_letters + string.digits + "_.")))
    rng.shuffle(c)
    return "; ".join(f"{k}={v}" for k, v in c) if c else None


# --- serialisation ------------------------------------------------------------------------

def request(method, target, headers, body=b""):
    """Raw HTTP/1.1 bytes; Content-Length added for a body."""
    if isinstance(body, str):
        body = body.encode()
    lines = [f"{method} {target} HTTP/1.1"]
    for k, v in headers:
        lines.append(f"{k}: {v}")
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def row(rid, label, cls, app, location, raw, **extra):
    r = {"id": rid, "label": label, "class": cls, "app": app, "location": location}
    r.update(extra)
    try:
        r["request"] = raw.decode("utf-8")
    except UnicodeDecodeError:
        r["request_base64"] = base64.b64encode(raw).decode()
    return r


def gz(data, level=6):
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=level) as f:
        f.write(data)
    return buf.getvalue()


def write_jsonl_gz(path, rows):
    data = "".join(json.dumps(r, ensure_ascii=True, separators=(",", ":")) + "\n" for r in rows).encode()
    with open(path, "wb") as f:
        f.write(gz(data, 9))
    return len(data)


API_CLIENTS = ["python-requests/2.31.0", "okhttp/4.12.0", "axios/1.6.7", "Go-http-client/2.0", "PostmanRuntime/7.36.3",
               "Dart/3.2 (dart:io)", "Java/17.0.9", "undici", "MyApp/5.12.0 (iPhone; iOS 17.4; Scale/3.00)"]


def api_headers_plain(rng, host, content_type=None):
    """Headers of a non-browser API client."""
    h = [("Host", host), ("User-Agent", pick(rng, API_CLIENTS)), ("Accept", "application/json")]
    if content_type:
        h.append(("Content-Type", content_type))
    h.append(("Accept-Encoding", "gzip"))
    if rng.random() < 0.5:
        h.append(("Authorization", "Bearer " + pooled_jwt(rng)))
    return h
