#!/usr/bin/env python3
"""Generate the whole-request benign corpus (Python 3 standard library only, seeded).

    python3 scripts/corpus/gen_benign.py [--seed 27] [--out crates/palisade-detect/data/requests/benign.jsonl.gz]

Each line: {"id", "label", "class", "app", "location", "request" | "request_base64"}.
The values come from grammars and vocabularies of what browsers, apps and API clients send
(see the README beside the output); nothing here looks at what any detector says.

Labels: `benign`, or `ambiguous` for a request that people send with no ill intent but whose
value is, by grammar, a complete working payload in the context a detector assumes, whatever
the intent: a quote that closes an SQL string followed by SQL that parses up to a comment or a
balanced quote (`what does ' or 1=1 -- do`); a `<script>` element with its end tag; a command
substitution `$(...)` or a pipe into a shell; a template expression that evaluates
(`{{7*7}}`); a path that reaches a system file after lexical normalisation
(`what is ../../etc/passwd`). A firewall is right to stop those, so they are not counted as
false positives; `detect eval` reports them apart. The criterion is the payload's grammar
(`PAYLOAD_IN_SEARCH` below names the payload each such search holds), never a detector's answer.
"""

import argparse
import base64
import json
import random
import string
import struct
import zlib

from httpgen import (FIRST_NAMES, LAST_NAMES, SEARCH_ENGINES, SITES, WORDS, alnum, b64url,
                     browser, browser_headers, cookie_jar, pooled_jwt, email, gz, hexs, jwt, pct, pick, qs,
                     request, reset_visitor, row, uuid4, write_jsonl_gz)

# --- search vocabularies ------------------------------------------------------------------

SEARCHES = {
    "en": ["cheap flights to lisbon", "how to boil an egg", "weather tomorrow", "best laptop 2024",
           "python list comprehension", "why is the sky blue", "pizza near me", "what's on tv tonight",
           "rock & roll hall of fame", "o'reilly books", "c++ vs rust", "node.js fetch timeout",
           "100% cotton t-shirt", "who won the game last night?", "convert 5 ft to cm", "1/2 cup in grams",
           "movies like \"inception\"", "git rebase vs merge", "react useeffect cleanup", "is it going to rain",
           "tax return deadline", "error: cannot find module 'react'", "how to center a div", "kubernetes pod pending",
           "dinner ideas < 30 min", "best sci-fi books of all time", "mortgage calculator", "translate hello to spanish"],
    "de": ["wetter morgen berlin", "günstige flüge nach mallorca", "rezept für apfelstrudel", "öffnungszeiten rathaus",
           "was heißt 'select' auf deutsch", "bahn verspätung entschädigung", "straßenbahn fahrplan", "größe 42 schuhe"],
    "fr": ["météo paris demain", "recette crêpes", "horaires sncf", "qu'est-ce que l'inflation", "où acheter un vélo",
           "traduction « hello »", "l'été indien chanson", "impôts déclaration en ligne"],
    "es": ["el tiempo en madrid", "cómo hacer paella", "vuelos baratos a méxico", "¿qué es una api?",
           "mejor móvil calidad precio", "horario del metro", "año nuevo chino 2025"],
    "pt": ["previsão do tempo são paulo", "como fazer pão de queijo", "melhores séries da netflix", "o que é sql"],
    "ja": ["東京 天気", "ラーメン 美味しい 新宿", "パスワード 忘れた", "新幹線 予約", "エクセル 関数 一覧"],
    "zh": ["北京天气", "如何学习编程", "数据库 索引 原理", "手机 推荐 2024", "上海 地铁 线路图"],
    "ru": ["погода в москве", "как выучить английский", "рецепт борща", "курс доллара", "что такое sql инъекция"],
    "ko": ["서울 날씨", "맛집 추천", "영화 예매", "파이썬 설치 방법"],
    "ar": ["الطقس في دبي", "تعلم البرمجة", "أخبار اليوم"],
    "pl": ["pogoda kraków", "przepis na pierogi", "rozkład jazdy pkp"],
}
# Searches about SQL and security, in several languages (what developers and students type).
SQL_SEARCHES = ["and 1=1 meaning", "what does ' or 1=1 -- do", "select 1 from dual", "select * from users where id = 1",
                "sql union select example", "drop table if exists syntax", "sql injection ' or '1'='1 explained",
                "mysql sleep(5) function", "waitfor delay '0:0:5' sql server", "postgres pg_sleep usage",
                "union all vs union", "insert into select from another table", "group by having count(*) > 1",
                "order by 1 desc", "left join vs inner join", "delete from table where id in (select id from",
                "xss <script>alert(1)</script> example", "what is ../../etc/passwd", "how does $(whoami) work in bash",
                "bash ; vs &&", "cat /etc/hosts linux", "what is /bin/sh", "ldap filter (&(uid=*)) syntax",
                "{{7*7}} template injection", "${jndi:ldap} log4j explained", "curl | sh is it safe",
                "sql select 1 from dual oracle", "1=1 と は", "sql インジェクション 対策 ' or 1=1",
                "что значит union select", "sql 注入 and 1=1", "injection sql exemple ' or 1=1 --",
                "was bedeutet select * from", "onload event javascript", "javascript:void(0) meaning",
                "document.cookie httponly", "eval() in python security", "nc -l port listen", "chmod 777 meaning"]
# The searches above that hold a complete working payload (see the labels in the docstring),
# with the payload: a search, or a prefix typed so far, that contains it is `ambiguous`.
PAYLOAD_IN_SEARCH = {
    "what does ' or 1=1 -- do": "' or 1=1 --",
    "sql injection ' or '1'='1 explained": "' or '1'='1",
    "injection sql exemple ' or 1=1 --": "' or 1=1 --",
    "xss <script>alert(1)</script> example": "<script>alert(1)</script>",
    "what is ../../etc/passwd": "../../etc/passwd",
    "how does $(whoami) work in bash": "$(whoami)",
    "{{7*7}} template injection": "{{7*7}}",
    "curl | sh is it safe": "| sh",
}


def search_label(text, typed=None):
    """`ambiguous` when what was typed (all of `text` by default) holds the text's payload."""
    payload = PAYLOAD_IN_SEARCH.get(text)
    return "ambiguous" if payload is not None and payload in (text if typed is None else typed) else "benign"


# Short words that are also shell commands or programs.
SHELL_WORDS = ["ls", "id", "pwd", "cd", "at", "nc", "ps", "df", "du", "w", "who", "top", "cat", "man", "env",
               "dir", "cp", "mv", "rm", "ln", "sh", "su", "vi", "ed", "bc", "dd", "tr", "wc", "sort", "date",
               "time", "kill", "ping", "host", "echo", "more", "less", "find", "head", "tail", "sleep", "wget",
               "curl", "whoami", "uname", "ifconfig", "netstat", "telnet", "perl", "python", "ruby", "php",
               "node", "bash", "zsh", "ssh", "ftp", "tar", "zip", "make", "yes", "true", "test"]
# What autocomplete endpoints get: prefixes of what is being typed.
def prefix_of(rng, text):
    n = rng.randrange(1, max(2, len(text)))
    return text[:n]


# --- app helpers --------------------------------------------------------------------------

def site(rng):
    return pick(rng, SITES)


def page_url(rng, host):
    return f"https://{host}/{pick(rng, WORDS)}/{pick(rng, WORDS)}" + (f"?id={rng.randrange(1, 99999)}" if rng.random() < 0.3 else "")


def search_referer(rng, query=None):
    base, key = pick(rng, SEARCH_ENGINES)
    if query is None:
        lang = pick(rng, list(SEARCHES))
        query = pick(rng, SEARCHES[lang])
    extra = [("hl", pick(rng, ["en", "de", "fr", "ja"]))] if rng.random() < 0.3 else []
    if "google" in base and rng.random() < 0.5:
        extra += [("sca_esv", hexs(rng, 16)), ("source", "hp"), ("ei", alnum(rng, 22)), ("oq", query[:5])]
    return base + "?" + qs([(key, query)] + extra)


def api_headers(rng, host, content_type=None, auth=True, browser_like=None):
    """Headers of an XHR/fetch call from a single-page app, or of an API client."""
    if browser_like is None:
        browser_like = rng.random() < 0.7
    if browser_like:
        h = browser_headers(rng, host, dest="json", referer=f"https://{host}/{pick(rng, WORDS)}",
                            cookie=cookie_jar(rng), origin=f"https://{host}" if content_type else None,
                            content_type=content_type, mode="cors")
    else:
        client = pick(rng, ["python-requests/2.31.0", "okhttp/4.12.0", "axios/1.6.7", "Go-http-client/2.0",
                            "node-fetch/1.0 (+https://github.com/bitinn/node-fetch)", "Dart/3.2 (dart:io)",
                            "Stripe/v1 RubyBindings/10.3.0", "PostmanRuntime/7.36.3", "insomnia/8.6.1",
                            "MyApp/5.12.0 (iPhone; iOS 17.4; Scale/3.00)", "Java/17.0.9", "undici"])
        h = [("Host", host), ("User-Agent", client), ("Accept", "application/json")]
        if content_type:
            h.append(("Content-Type", content_type))
        h.append(("Accept-Encoding", "gzip"))
    if auth and rng.random() < 0.5:
        h.append(("Authorization", "Bearer " + pooled_jwt(rng)))
    if rng.random() < 0.3:
        h.append(("X-Request-ID", uuid4(rng)))
    if rng.random() < 0.15:
        h.append(("X-CSRF-Token", alnum(rng, 40, string.ascii_letters + string.digits + "-_")))
    return h


def jdump(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# --- generators: each returns (class, app, location, raw bytes) ----------------------------

def g_browse(rng):
    host = site(rng)
    path = "/" + "/".join(pick(rng, WORDS) for _ in range(rng.randrange(0, 4)))
    q = ""
    if rng.random() < 0.4:
        q = "?" + qs([(pick(rng, ["page", "sort", "ref", "utm_source", "utm_medium", "utm_campaign", "lang", "id", "tab", "view"]),
                       pick(rng, ["2", "price_asc", "newsletter", "email", "spring-sale_2024", "en", str(rng.randrange(1, 10**6)), "reviews", "grid"]))
                      for _ in range(rng.randrange(1, 4))])
    r = rng.random()
    referer = search_referer(rng) if r < 0.3 else (page_url(rng, host) if r < 0.7 else None)
    h = browser_headers(rng, host, referer=referer, cookie=cookie_jar(rng))
    return "browse", "website", "header", request("GET", path + q, h)


def g_browse_security_referer(rng):
    host = site(rng)
    query = pick(rng, SQL_SEARCHES)
    h = browser_headers(rng, host, referer=search_referer(rng, query), cookie=cookie_jar(rng))
    return ("referer-security-search", "website", "header.Referer", request("GET", f"/blog/{pick(rng, WORDS)}-{pick(rng, WORDS)}", h),
            search_label(query))


def g_search(rng):
    host = site(rng)
    lang = pick(rng, list(SEARCHES))
    query = pick(rng, SEARCHES[lang])
    key = pick(rng, ["q", "query", "search", "s", "keywords", "term", "k"])
    params = [(key, query)]
    if rng.random() < 0.5:
        params += [("page", rng.randrange(1, 20))]
    if rng.random() < 0.3:
        params += [("lang", lang)]
    if rng.random() < 0.2:
        params += [("sort", pick(rng, ["relevance", "date", "-price", "price:asc"]))]
    h = browser_headers(rng, host, referer=f"https://{host}/", cookie=cookie_jar(rng))
    return "search-" + ("latin" if lang in ("en", "de", "fr", "es", "pt", "pl") else "other-script"), "search", "query", request("GET", "/search?" + qs(params), h)


def g_search_sql(rng):
    host = pick(rng, ["stackoverflow.example.com", "docs.example.io", "forum.example.org", "learn.example.edu", "www.example.org"])
    key = pick(rng, ["q", "query", "search"])
    query = pick(rng, SQL_SEARCHES)
    params = [(key, query)]
    if rng.random() < 0.4:
        params.append(("tab", pick(rng, ["relevance", "newest", "votes"])))
    h = browser_headers(rng, host, referer=f"https://{host}/questions", cookie=cookie_jar(rng))
    return "search-about-sql-security", "search", "query", request("GET", "/search?" + qs(params), h), search_label(query)


def g_suggest_shell_word(rng):
    host = site(rng)
    word = pick(rng, SHELL_WORDS)
    endpoint, key, extra = pick(rng, [
        ("/complete/search", "q", [("client", "chrome-omni"), ("gs_ri", "chrome-ext-ansg"), ("xssi", "t")]),
        ("/api/suggest", "term", [("limit", "8")]),
        ("/autocomplete", "prefix", [("locale", "en_US")]),
        ("/ac", "q", [("fmt", "json"), ("cp", str(rng.randrange(1, 5)))]),
        ("/search/suggestions", "query", [("types", "product,brand")]),
        ("/api/v2/typeahead", "text", [("max", "10")]),
    ])
    val = word if rng.random() < 0.7 else word + pick(rng, [" ", " -", " -l", " -la", " command", " linux", " meaning", "ing"])
    params = [(key, val)] + extra
    rng.shuffle(params)
    h = api_headers(rng, host, auth=False, browser_like=True)
    return "suggest-shell-word", "autocomplete", "query", request("GET", endpoint + "?" + qs(params), h)


def g_shell_word_names(rng):
    """Parameters whose *names* are short words that are commands: `id`, `at`, `cd`, `ls`..."""
    host = site(rng)
    names = [("id", str(rng.randrange(1, 10**7))), ("at", str(1700000000 + rng.randrange(10**7))),
             ("cd", pick(rng, ["1", "0", "de", "fr"])), ("ls", pick(rng, ["1", "grid", "list"])),
             ("ps", str(rng.randrange(10, 100))), ("pwd", pick(rng, ["", "1"])), ("nc", pick(rng, ["1", "0"])),
             ("w", str(rng.randrange(100, 2000))), ("df", pick(rng, ["yyyy-MM-dd", "1"])), ("du", str(rng.randrange(1, 60))),
             ("sort", pick(rng, ["asc", "desc"])), ("time", str(rng.randrange(10**9, 2 * 10**9))), ("sleep", str(rng.randrange(0, 5)))]
    rng.shuffle(names)
    params = names[: rng.randrange(1, 5)]
    h = api_headers(rng, host, auth=False)
    return "param-name-shell-word", "rest-api", "query", request("GET", f"/api/{pick(rng, WORDS)}s?" + qs(params), h)


def g_suggest_prefix(rng):
    host = site(rng)
    lang = pick(rng, list(SEARCHES))
    text = pick(rng, SEARCHES[lang] + SQL_SEARCHES)
    typed = prefix_of(rng, text)
    params = [("q", typed), ("client", pick(rng, ["firefox", "chrome", "psy-ab", "web"])), ("hl", lang)]
    h = api_headers(rng, host, auth=False, browser_like=True)
    return "suggest-prefix", "autocomplete", "query", request("GET", "/complete/search?" + qs(params), h), search_label(text, typed)


def g_cdn(rng):
    host = pick(rng, ["cdn.jsdelivr.example", "unpkg.example.com", "cdnjs.example.com", "esm.example.sh", "static.example.com"])
    pkg = pick(rng, ["react", "react-dom", "vue", "lodash", "jquery", "bootstrap", "@popperjs/core", "@fortawesome/fontawesome-free",
                     "three", "d3", "chart.js", "axios", "moment", "dayjs", "@babel/standalone", "swiper", "alpinejs", "htmx.org",
                     "@mui/material", "tailwindcss", "highlight.js", "katex", "mathjax", "select2", "leaflet", "@sentry/browser"])
    ver = pick(rng, ["18.2.0", "3.4.21", "4.17.21", "3.7.1", "5.3.3", "2.11.8", "6.5.1", "0.160.0", "7.8.5", "4.4.1", "1.6.7",
                     "2.29.4", "^1.11", "latest", "~5.3", "1.x", "11.1.0", "0.16.9", "3.2.2", "1.9.4", "7.108.0"])
    f = pick(rng, ["dist/umd/index.min.js", "umd/react.production.min.js", "dist/css/bootstrap.min.css", "dist/index.js",
                   "css/all.min.css", "webfonts/fa-solid-900.woff2", "build/three.module.js", "dist/chart.umd.js",
                   "lib/index.mjs", "+esm", "dist/katex.min.css", "es2015/index.js", "package.json", "dist/leaflet.css",
                   "build/highlight.min.js", "min/moment-with-locales.min.js"])
    style = rng.random()
    if style < 0.5:
        path = f"/npm/{pkg}@{ver}/{f}"
    elif style < 0.7:
        path = f"/{pkg}@{ver}/{f}"
    elif style < 0.8:
        path = f"/gh/{pick(rng, ['twbs', 'jquery', 'vuejs', 'mrdoob', 'sweetalert2'])}/{pick(rng, WORDS)}@v{ver.strip('^~')}/{f}"
    elif style < 0.9:
        path = f"/npm/{pkg}@{ver},{pick(rng, ['lodash', 'dayjs'])}@{pick(rng, ['4', '1'])}/{f}"
    else:
        path = f"/ajax/libs/{pkg.strip('@').replace('/', '-')}/{ver.strip('^~')}/{f.split('/')[-1]}"
    dest = "style" if f.endswith(".css") else ("font" if "woff" in f else "script")
    origin_host = site(rng)
    h = browser_headers(rng, host, dest=dest, referer=f"https://{origin_host}/", mode="no-cors")
    return "cdn-asset", "cdn", "path", request("GET", path, h)


def g_static(rng):
    host = site(rng)
    ext = pick(rng, ["png", "jpg", "webp", "svg", "css", "js", "woff2", "ico", "avif", "json", "map"])
    name = f"{pick(rng, WORDS)}.{hexs(rng, 8)}.{ext}" if rng.random() < 0.6 else f"{pick(rng, WORDS)}-{rng.randrange(1, 2000)}x{rng.randrange(1, 2000)}.{ext}"
    path = f"/{pick(rng, ['static', 'assets', '_next/static/chunks', 'wp-content/uploads/2024/05', 'media', 'build'])}/{name}"
    if rng.random() < 0.3:
        path += "?" + qs([(pick(rng, ["v", "ver", "w", "q", "h"]), pick(rng, [hexs(rng, 8), "6.4.3", str(rng.randrange(100, 2000)), "75"]))])
    dest = {"css": "style", "js": "script", "woff2": "font"}.get(ext, "image")
    h = browser_headers(rng, host, dest=dest, referer=page_url(rng, host), cookie=cookie_jar(rng), mode="no-cors")
    return "static-asset", "website", "path", request("GET", path, h)


REST_NOUNS = ["hosts", "users", "groups", "orders", "items", "projects", "clusters", "nodes", "services", "passwords",
              "shadows", "configs", "environments", "secrets", "certificates", "domains", "networks", "volumes", "logs",
              "keys", "tokens", "sessions", "webhooks", "backups", "exports", "imports", "files", "profiles", "etc",
              "bin", "cmd", "exec", "shell", "admin", "root", "system", "proc", "var", "tmp", "dev", "boot"]
REST_LEAVES = ["hosts", "passwd", "shadow", "config", "env", "status", "health", "metrics", "version", "id", "whoami",
               "exec", "ping", "sleep", "wait", "select", "union", "delete", "drop", "update", "insert", "script",
               "alert", "eval", "system", "include", "import", "localhost", "hostname", "gzip", "deflate", "bin", "sh"]


def g_rest(rng):
    host = "api." + site(rng).split(".", 1)[1]
    depth = rng.randrange(1, 4)
    segs = ["api", pick(rng, ["v1", "v2", "v3", "2024-06-01"])]
    for _ in range(depth):
        segs.append(pick(rng, REST_NOUNS))
        if rng.random() < 0.5:
            segs.append(pick(rng, [str(rng.randrange(1, 10**6)), uuid4(rng), alnum(rng, 12, string.ascii_lowercase + string.digits)]))
    if rng.random() < 0.5:
        segs.append(pick(rng, REST_LEAVES))
    path = "/" + "/".join(segs)
    method = pick(rng, ["GET", "GET", "GET", "DELETE", "PUT", "PATCH", "POST"])
    body = b""
    ct = None
    if method in ("PUT", "PATCH", "POST"):
        ct = "application/json"
        body = jdump({pick(rng, ["name", "hostname", "description", "status", "compression", "encoding"]):
                      pick(rng, ["web-01", "localhost", "gzip", "deflate", "active", "db.internal", "Production cluster",
                                 "hostname", "my-host.local", "build agent #3"]),
                      "enabled": rng.random() < 0.5, "port": rng.randrange(1, 65535)}).encode()
    h = api_headers(rng, host, content_type=ct)
    return "rest-route-words", "rest-api", "path", request(method, path, h, body)


TEXTS = ["Loading...", "Please wait…", "Read more...", "to be continued...", "Hmm... not sure", "…", "...",
         "I said \"hello\" and she said 'hi'", "It's 5 o'clock; let's go!", "Price: $10 (incl. 20% VAT)",
         "50% off -- today only!", "A & B <-> C", "Q&A: what's new?", "x = y + 1", "e-mail me @ work",
         "See you at 10:30 -- don't be late", "Tom & Jerry's #1 fan", "¿Dónde está la biblioteca?",
         "Größe: 42; Farbe: schwarz", "C'est l'été !", "1 + 1 = 2", "select your size", "or else...",
         "Drop us a line", "Union Square, NY", "Order by phone: +1 (555) 010-2030", "and/or",
         "rm -- the band", "Where are you from?", "whoami (the film)", "from 9 to 5", "sleep well :)",
         "Wait -- what?!", "*** Important ***", "Use the `ls` command", "The `<br>` tag", "#include <stdio.h>",
         "C:\\Users\\anna\\Documents\\report.docx", "~/projects/palisade", "../images/logo.png in CSS",
         "1' x 2\" frame", "5'10\" tall", "Rock 'n' roll", "don't; won't; can't"]


def g_form(rng):
    host = site(rng)
    kind = rng.random()
    if kind < 0.3:
        fields = [("username", email(rng)), ("password", alnum(rng, rng.randrange(8, 20), string.ascii_letters + string.digits + "!@#$%^&*()-_=+[]{};:'\",.<>/?\\|`~")),
                  ("remember", "on"), ("csrfmiddlewaretoken", alnum(rng, 64))]
        path, cls = "/accounts/login/", "form-login"
    elif kind < 0.6:
        fields = [("first_name", pick(rng, FIRST_NAMES)), ("last_name", pick(rng, LAST_NAMES)), ("email", email(rng)),
                  ("street", f"{rng.randrange(1, 300)} {pick(rng, ['Main St.', 'Rue de l’Église', 'Hauptstraße', 'Calle Mayor', 'O’Connell St', 'Baker Street'])}"),
                  ("city", pick(rng, ["Zürich", "São Paulo", "Kraków", "New York", "Köln", "Montréal", "Dublin"])),
                  ("zip", str(rng.randrange(10000, 99999))), ("phone", f"+{rng.randrange(1, 99)} {rng.randrange(100, 999)} {rng.randrange(1000000, 9999999)}"),
                  ("notes", pick(rng, TEXTS))]
        path, cls = "/checkout/address", "form-address"
    else:
        fields = [("name", pick(rng, FIRST_NAMES) + " " + pick(rng, LAST_NAMES)), ("email", email(rng)),
                  ("subject", pick(rng, TEXTS)), ("message", " ".join(pick(rng, TEXTS) for _ in range(rng.randrange(1, 5)))),
                  ("_token", alnum(rng, 40))]
        path, cls = "/contact", "form-contact"
    h = browser_headers(rng, host, referer=f"https://{host}{path}", cookie=cookie_jar(rng), origin=f"https://{host}",
                        content_type="application/x-www-form-urlencoded")
    return cls, "website", "form", request("POST", path, h, qs(fields))


def g_comment_json(rng):
    host = site(rng)
    body = {"postId": rng.randrange(1, 10**5), "author": pick(rng, FIRST_NAMES), "body": " ".join(pick(rng, TEXTS) for _ in range(rng.randrange(1, 6))),
            "parentId": None if rng.random() < 0.6 else rng.randrange(1, 10**5)}
    h = api_headers(rng, host, content_type="application/json", browser_like=True)
    return "comment-text", "forum", "json", request("POST", "/api/comments", h, jdump(body))


# Telemetry and error reports ---------------------------------------------------------------

JS_FUNCS = ["Object.<anonymous>", "HTMLButtonElement.onclick", "Module../src/index.js", "async Promise.all (index 0)",
            "new Promise (<anonymous>)", "Array.forEach (<anonymous>)", "sleep", "wait", "waitFor", "delay", "setTimeout",
            "benchmark", "Timeout._onTimeout", "processTicksAndRejections", "XMLHttpRequest.onload", "commitRoot",
            "renderWithHooks", "useEffect", "dispatchEvent", "HTMLDocument.onreadystatechange", "Function.from",
            "select", "Object.select", "Query.where", "union", "Array.map", "String.replace", "JSON.parse",
            "fetchUser", "handleSubmit", "eval", "onload", "Window.onload", "exec", "RegExp.exec", "Worker.onmessage"]
JS_FILES = ["webpack:///./src/app.js", "webpack-internal:///./node_modules/react-dom/cjs/react-dom.development.js",
            "https://static.example.com/js/main.8f3a2c.js", "http://localhost:3000/static/js/bundle.js",
            "app:///main.jsbundle", "chrome-extension://abcdefghijklmnop/content.js", "<anonymous>",
            "https://cdn.example.com/npm/vue@3.4.21/dist/vue.global.js", "file:///Users/dev/project/src/index.ts",
            "node:internal/process/task_queues", "/app/node_modules/express/lib/router/layer.js"]
ERRORS = ["TypeError: Cannot read properties of undefined (reading 'select')",
          "ReferenceError: sleep is not defined", "Error: timeout of 5000ms exceeded",
          "SyntaxError: Unexpected token '<', \"<!DOCTYPE \"... is not valid JSON",
          "TypeError: Failed to fetch", "Error: Request failed with status code 500",
          "ChunkLoadError: Loading chunk 723 failed.", "AbortError: The user aborted a request.",
          "Error: Minified React error #418; visit https://reactjs.org/docs/error-decoder.html?invariant=418",
          "TimeoutError: waiting for selector `#login` failed: timeout 30000ms exceeded",
          "Error: benchmark(5000) took 1234ms", "RangeError: Maximum call stack size exceeded",
          "TypeError: e.select is not a function", "Error: WAITFOR DELAY queue drained before sleep(250) completed",
          "UnhandledPromiseRejection: Error: connect ECONNREFUSED 127.0.0.1:5432"]


def stacktrace(rng, style):
    frames = []
    for _ in range(rng.randrange(2, 12)):
        fn, f, ln, col = pick(rng, JS_FUNCS), pick(rng, JS_FILES), rng.randrange(1, 9000), rng.randrange(1, 200)
        frames.append(f"    at {fn} ({f}:{ln}:{col})" if style == "v8" else f"{fn.split(' ')[0]}@{f}:{ln}:{col}")
    return frames


def g_error_report(rng):
    host = pick(rng, ["o123456.ingest.sentry.example.io", "errors.example.com", "api.bugsnag.example.com", "rum.example.net"])
    err = pick(rng, ERRORS)
    style = pick(rng, ["v8", "ff"])
    frames = stacktrace(rng, style)
    kind = rng.random()
    if kind < 0.5:
        event = {"event_id": hexs(rng, 32), "timestamp": 1700000000 + rng.random() * 10**7, "platform": "javascript",
                 "level": "error", "sdk": {"name": "sentry.javascript.browser", "version": "7.108.0"},
                 "exception": {"values": [{"type": err.split(":")[0], "value": err.split(": ", 1)[-1],
                                           "stacktrace": {"frames": [{"function": fr.strip().split(" ")[1] if style == "v8" else fr.split("@")[0],
                                                                      "filename": pick(rng, JS_FILES), "lineno": rng.randrange(1, 9000),
                                                                      "colno": rng.randrange(1, 200), "in_app": rng.random() < 0.5} for fr in frames]}}]},
                 "breadcrumbs": {"values": [{"category": pick(rng, ["ui.click", "fetch", "navigation", "console"]),
                                             "message": pick(rng, ["body > div#root > button.btn-primary", "GET /api/users?select=id,name [200]",
                                                                    "sleep(250) then retry", "WAITING for response...", "onload fired"]),
                                             "timestamp": 1700000000 + rng.random() * 10**7} for _ in range(rng.randrange(0, 6))]},
                 "request": {"url": page_url(rng, site(rng)), "headers": {"User-Agent": browser(rng)[1]}},
                 "tags": {"release": f"web@{rng.randrange(1, 9)}.{rng.randrange(0, 40)}.{rng.randrange(0, 9)}"}}
        envelope = jdump({"event_id": event["event_id"], "sent_at": "2024-11-29T10:00:00.000Z"}) + "\n" + jdump({"type": "event"}) + "\n" + jdump(event)
        ct = pick(rng, ["text/plain;charset=UTF-8", "application/x-sentry-envelope", "application/json"])
        body = envelope if ct != "application/json" else jdump(event)
        path = f"/api/{rng.randrange(1, 99999)}/envelope/?sentry_key={hexs(rng, 32)}&sentry_version=7"
    else:
        body = jdump({"apiKey": hexs(rng, 32), "notifier": {"name": "Bugsnag JavaScript", "version": "7.22.3"},
                      "events": [{"exceptions": [{"errorClass": err.split(":")[0], "message": err,
                                                  "stacktrace": [{"method": fr.strip(), "file": pick(rng, JS_FILES), "lineNumber": rng.randrange(1, 999)} for fr in frames]}],
                                  "stack": err + "\n" + "\n".join(frames), "severity": "error",
                                  "metaData": {"timing": {"sleep": rng.randrange(0, 500), "wait": rng.randrange(0, 9000), "delay": rng.randrange(0, 99),
                                                          "benchmark": pick(rng, ["select-render", "union-find", "sleep-sort"])}}}]})
        ct = "application/json"
        path = "/"
    h = api_headers(rng, host, content_type=ct, auth=False, browser_like=True)
    return "error-report-stacktrace", "telemetry", "json", request("POST", path, h, body)


PERF_KEYS = ["navigationStart", "domContentLoadedEventEnd", "loadEventEnd", "responseStart", "firstContentfulPaint",
             "largestContentfulPaint", "timeToFirstByte", "waitTime", "sleepTime", "delayMs", "idleTime", "blockingTime",
             "interactionToNextPaint", "cumulativeLayoutShift"]


def g_rum(rng):
    host = pick(rng, ["rum.example.net", "telemetry.example.com", "metrics.example.io"])
    body = {"type": "performance", "page": page_url(rng, site(rng)), "connection": pick(rng, ["4g", "3g", "wifi"]),
            "metrics": {k: round(rng.random() * 5000, 1) for k in rng.sample(PERF_KEYS, rng.randrange(3, 9))},
            "resources": [{"name": pick(rng, JS_FILES), "initiatorType": pick(rng, ["script", "fetch", "img", "link"]),
                           "duration": round(rng.random() * 900, 2), "transferSize": rng.randrange(0, 10**6)} for _ in range(rng.randrange(0, 6))],
            "longTasks": [{"name": pick(rng, ["self", "same-origin-descendant", "cross-origin-ancestor"]), "attribution": pick(rng, ["sleep", "waitFor", "setTimeout handler", "script evaluation"]), "duration": rng.randrange(50, 900)} for _ in range(rng.randrange(0, 3))]}
    ct = pick(rng, ["application/json", "text/plain;charset=UTF-8"])
    h = api_headers(rng, host, content_type=ct, auth=False, browser_like=True)
    return "rum-timing", "telemetry", "json", request("POST", pick(rng, ["/v1/rum", "/beacon", "/collect", "/i"]), h, jdump(body))


EVENT_NAMES = ["onload", "onclick", "onerror", "onsubmit", "onchange", "onfocus", "onblur", "onmouseover", "onkeyup",
               "onscroll", "onresize", "load", "click", "page_view", "add_to_cart", "begin_checkout", "purchase",
               "sign_up", "login", "search", "select_content", "view_item", "scroll", "file_download", "video_start"]


def g_analytics_ga(rng):
    host = pick(rng, ["region1.google-analytics.example.com", "www.google-analytics.example.com", "analytics.example.com"])
    url = page_url(rng, site(rng))
    params = [("v", "2"), ("tid", "G-" + alnum(rng, 10, string.ascii_uppercase + string.digits)), ("gtm", "45je4" + alnum(rng, 5)),
              ("_p", str(rng.randrange(10**9, 10**10))), ("cid", f"{rng.randrange(10**8, 10**10)}.{1700000000 + rng.randrange(10**7)}"),
              ("ul", pick(rng, ["en-us", "de-de", "ja"])), ("sr", pick(rng, ["1920x1080", "390x844", "2560x1440"])),
              ("en", pick(rng, EVENT_NAMES)), ("dl", url), ("dt", pick(rng, TEXTS)), ("_s", str(rng.randrange(1, 30))),
              ("sid", str(1700000000 + rng.randrange(10**7))), ("sct", str(rng.randrange(1, 50))), ("seg", "1"),
              ("ep.event_handler", pick(rng, EVENT_NAMES)), ("epn.value", str(rng.randrange(0, 500)))]
    if rng.random() < 0.5:
        params.append(("dr", search_referer(rng)))
    h = browser_headers(rng, host, dest="json", referer=url, mode="no-cors")
    return "analytics-collect", "analytics", "query", request("POST", "/g/collect?" + qs(params), h)


def g_analytics_product(rng):
    """PostHog / Mixpanel / Segment-style events with `$set`, `$unset`, `$set_once` keys."""
    host = pick(rng, ["app.posthog.example.com", "api-js.mixpanel.example.com", "api.segment.example.io", "events.example.com"])
    props = {"$current_url": page_url(rng, site(rng)), "$browser": pick(rng, ["Chrome", "Firefox", "Safari"]),
             "$os": pick(rng, ["Mac OS X", "Windows", "Android", "iOS"]), "$lib": "web", "$lib_version": "1.96.1",
             "$screen_height": 1080, "$screen_width": 1920, "distinct_id": uuid4(rng), "$session_id": uuid4(rng),
             "$event_type": pick(rng, EVENT_NAMES), "handler": pick(rng, EVENT_NAMES), "$el_text": pick(rng, TEXTS),
             "$elements_chain": f"button.btn.btn-primary:text=\"{pick(rng, ['Save', 'Submit', 'Delete'])}\"nth-child=\"2\"nth-of-type=\"1\";div.modal-footer:nth-child=\"3\""}
    event = {"event": pick(rng, ["$pageview", "$autocapture", "$identify", "$set", "$pageleave", "signed_up", "$groupidentify"]),
             "properties": props, "timestamp": "2024-11-29T10:%02d:%02d.%03dZ" % (rng.randrange(60), rng.randrange(60), rng.randrange(1000))}
    r = rng.random()
    if r < 0.4:
        event["$set"] = {"email": email(rng), "name": pick(rng, FIRST_NAMES), "plan": pick(rng, ["free", "pro", "team"])}
    elif r < 0.6:
        event["$unset"] = rng.sample(["temp_flag", "trial_end", "referrer", "$initial_referrer"], 2)
    elif r < 0.8:
        event["$set_once"] = {"$initial_referrer": search_referer(rng), "$initial_referring_domain": "www.google.com"}
    else:
        event["$add"] = {"logins": 1}
    body = jdump({"api_key": "phc_" + alnum(rng, 43), "batch": [event]}) if rng.random() < 0.5 else jdump(event)
    h = api_headers(rng, host, content_type="application/json", auth=False, browser_like=True)
    return "analytics-product-events", "analytics", "json", request("POST", pick(rng, ["/e/", "/batch/", "/v1/track", "/track/?ip=1&_=" + str(1700000000000 + rng.randrange(10**10))]), h, body)


# GraphQL -----------------------------------------------------------------------------------

GQL = ["query GetUser($id: ID!) { user(id: $id) { id name email avatarUrl(size: 64) } }",
       "query { viewer { login repositories(first: 10, orderBy: {field: UPDATED_AT, direction: DESC}) { nodes { name url } } } }",
       "mutation CreateComment($input: CreateCommentInput!) { createComment(input: $input) { comment { id body } errors { field message } } }",
       "query Search($q: String!) { search(query: $q, type: ISSUE, first: 20) { issueCount edges { node { ... on Issue { title number } } } } }",
       "fragment ProductFields on Product { id title priceRange { minVariantPrice { amount currencyCode } } }\nquery Products($first: Int) { products(first: $first) { edges { node { ...ProductFields } } } }",
       "query IntrospectionQuery { __schema { queryType { name } mutationType { name } types { name kind } } }",
       "subscription OnMessage($room: ID!) { messageAdded(roomId: $room) { id text author { name } } }",
       "mutation { updateSettings(input: {theme: \"dark\", emailDigest: WEEKLY}) { ok } }",
       "query Hosts { hosts(filter: {status: UP}) { hostname ip lastSeen } }",
       "query Orders($where: OrderWhere, $orderBy: [OrderSort!]) { orders(where: $where, orderBy: $orderBy, limit: 50) { id total status } }"]


def g_graphql(rng):
    host = "api." + site(rng).split(".", 1)[1]
    q = pick(rng, GQL)
    variables = pick(rng, [{"id": str(rng.randrange(1, 10**6))}, {"q": pick(rng, SEARCHES["en"] + SQL_SEARCHES[:8])},
                           {"input": {"subjectId": alnum(rng, 20), "body": pick(rng, TEXTS)}}, {"first": 20},
                           {"where": {"status": {"_eq": "open"}, "total": {"_gt": 100}}, "orderBy": [{"createdAt": "DESC"}]}, {}])
    label = search_label(variables["q"]) if "q" in variables else "benign"
    if rng.random() < 0.65:
        body = {"query": q, "variables": variables}
        if rng.random() < 0.5:
            body["operationName"] = q.split("(")[0].split("{")[0].split()[-1] if " " in q.split("{")[0].strip() else None
        h = api_headers(rng, host, content_type="application/json")
        return "graphql-json", "graphql", "json", request("POST", "/graphql", h, jdump(body)), label
    params = [("query", q), ("variables", jdump(variables))]
    if rng.random() < 0.3:
        params.append(("extensions", jdump({"persistedQuery": {"version": 1, "sha256Hash": hexs(rng, 64)}})))
    h = api_headers(rng, host)
    return "graphql-query-param", "graphql", "query", request("GET", "/graphql?" + qs(params), h), label


def g_json_in_query(rng):
    host = "api." + site(rng).split(".", 1)[1]
    filt = pick(rng, [{"status": "open", "tags": ["bug", "ui"]}, {"where": {"price": {"$gte": 10, "$lte": 50}}},
                      {"and": [{"field": "name", "op": "contains", "value": pick(rng, WORDS)}, {"field": "deleted", "op": "eq", "value": False}]},
                      {"sort": [{"field": "createdAt", "dir": "desc"}], "page": {"size": 25, "number": rng.randrange(1, 9)}},
                      {"select": ["id", "name", "email"], "from": "users", "limit": 10},
                      {"query": {"bool": {"must": [{"match": {"title": pick(rng, WORDS)}}], "filter": [{"range": {"date": {"gte": "now-7d"}}}]}}}])
    key = pick(rng, ["filter", "q", "where", "params", "search", "body", "state"])
    params = [(key, jdump(filt))]
    if rng.random() < 0.4:
        params.append(("fields", ",".join(rng.sample(["id", "name", "email", "createdAt", "status", "owner.name"], 3))))
    h = api_headers(rng, host)
    return "json-in-query", "rest-api", "query", request("GET", f"/api/{pick(rng, REST_NOUNS)}?" + qs(params), h)


def g_deep_object_form(rng):
    """Stripe-style deepObject forms and bracketed names (`metadata[order_id]`, `expand[]`)."""
    host = "api.payments.example.com"
    fields = [("amount", str(rng.randrange(100, 100000))), ("currency", pick(rng, ["usd", "eur", "gbp"])),
              (f"metadata[{pick(rng, ['order_id', 'customer_ref', 'note', 'source'])}]", pick(rng, [str(rng.randrange(10**6)), pick(rng, TEXTS)])),
              ("expand[]", pick(rng, ["customer", "payment_intent", "latest_charge"])),
              ("payment_method_types[]", "card"), ("description", pick(rng, TEXTS)),
              (f"line_items[{rng.randrange(0, 5)}][price_data][product_data][name]", pick(rng, WORDS).title() + " " + pick(rng, WORDS)),
              ("shipping[address][line1]", f"{rng.randrange(1, 999)} {pick(rng, ['Main St', 'Rue d’Alésia', 'King’s Road'])}")]
    rng.shuffle(fields)
    h = [("Host", host), ("User-Agent", "Stripe/v1 NodeBindings/14.21.0"), ("Authorization", "Bearer sk_test_" + alnum(rng, 24)),
         ("Content-Type", "application/x-www-form-urlencoded"), ("Stripe-Version", "2023-10-16"), ("Idempotency-Key", uuid4(rng))]
    return "form-deep-object", "payments-api", "form", request("POST", "/v1/" + pick(rng, ["payment_intents", "checkout/sessions", "charges"]), h, qs(fields))


# Code and rich text -------------------------------------------------------------------------

JSX = ["export default function App() {\n  const [count, setCount] = useState(0);\n  return <button onClick={() => setCount(count + 1)}>Clicked {count} times</button>;\n}",
       "const List = ({ items }) => (\n  <ul className=\"list\">\n    {items.map(i => <li key={i.id} onMouseOver={() => hover(i)}>{i.name}</li>)}\n  </ul>\n);",
       "<img src={user.avatar} alt=\"\" onError={(e) => { e.target.src = fallback; }} />",
       "useEffect(() => {\n  const t = setTimeout(() => setReady(true), 500);\n  return () => clearTimeout(t);\n}, []);",
       "document.getElementById('out').innerHTML = `<b>${escapeHtml(name)}</b>`;",
       "window.addEventListener('load', () => { console.log(document.cookie.length); });"]
HTML_SNIPPETS = ["<p>Hello <strong>world</strong></p>\n<script src=\"https://cdn.example.com/npm/prismjs@1.29.0/prism.min.js\"></script>",
                 "<!DOCTYPE html>\n<html>\n<head><title>Demo</title><script>console.log('hi')</script></head>\n<body onload=\"init()\"><div id=\"app\"></div></body>\n</html>",
                 "<a href=\"javascript:void(0)\" class=\"toggle\" onclick=\"toggleMenu()\">Menu</a>",
                 "<iframe src=\"https://www.youtube.example.com/embed/dQw4w9WgXcQ\" allowfullscreen></iframe>",
                 "<form action=\"/subscribe\" method=\"post\"><input name=\"email\" type=\"email\"><button>Go</button></form>",
                 "<svg viewBox=\"0 0 24 24\"><path d=\"M12 2L2 7l10 5 10-5-10-5z\"/></svg>",
                 "<style>body{background:url('/img/bg.png')} .x{color:red}</style>"]
SQL_SNIPPETS = ["SELECT id, name FROM users WHERE created_at > NOW() - INTERVAL '7 days' ORDER BY name;",
                "select count(*) from orders where status = 'shipped' group by customer_id having count(*) > 1",
                "UPDATE accounts SET balance = balance - 100 WHERE id = 42;",
                "WITH recent AS (SELECT * FROM events WHERE ts > now() - interval '1 hour') SELECT type, count(*) FROM recent GROUP BY 1;",
                "CREATE TABLE notes (id serial primary key, body text not null);",
                "SELECT u.name, o.total FROM users u JOIN orders o ON o.user_id = u.id UNION ALL SELECT 'total', sum(total) FROM orders;",
                "DELETE FROM sessions WHERE expires_at < CURRENT_TIMESTAMP; -- cleanup",
                "select pg_sleep(1); -- test the timeout"]
SHELL_SNIPPETS = ["#!/bin/sh\nset -e\nnpm ci && npm run build\n", "for f in *.log; do gzip \"$f\"; done",
                  "curl -fsSL https://example.com/install.sh | sh", "docker run --rm -p 8080:80 nginx:1.25",
                  "find . -name '*.tmp' -delete; ls -la", "export PATH=$HOME/bin:$PATH; echo $(date)"]
MARKDOWN = ["# Release notes\n\n- Fixed `SELECT` query in *reports*\n- Added `<script>` loading via `defer`\n\n```js\nconst x = await fetch('/api');\n```",
            "## Setup\n\n1. Run `cd app && npm install`\n2. Copy `.env.example` to `.env`\n3. Open http://localhost:3000/\n\n> Note: don't use `rm -rf /` :)",
            "Here's a table:\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n**Bold**, _italic_, ~~strike~~, [link](https://example.com/?a=1&b=2)",
            "See ../docs/setup.md and ~/.config/app/settings.json for details..."]


def g_code_editor(rng):
    host = pick(rng, ["codepen.example.io", "playground.example.dev", "gist.example.com", "sandbox.example.io", "notebook.example.org"])
    r = rng.random()
    if r < 0.35:
        cls, files = "code-jsx", {"App.jsx": pick(rng, JSX), "index.js": pick(rng, JSX)}
    elif r < 0.6:
        cls, files = "code-html-script", {"index.html": pick(rng, HTML_SNIPPETS), "style.css": "body { margin: 0; font: 14px/1.4 system-ui; }"}
    elif r < 0.8:
        cls, files = "code-sql-editor", {"query.sql": pick(rng, SQL_SNIPPETS)}
    else:
        cls, files = "code-shell-script", {"build.sh": pick(rng, SHELL_SNIPPETS)}
    body = {"title": pick(rng, WORDS).title() + " demo", "files": [{"name": k, "content": v} for k, v in files.items()],
            "public": rng.random() < 0.5, "updatedAt": "2024-11-29T10:00:00Z"}
    h = api_headers(rng, host, content_type="application/json", browser_like=True)
    return cls, "code-editor", "json", request(pick(rng, ["POST", "PUT"]), f"/api/pens/{alnum(rng, 8)}", h, jdump(body))


def g_rich_text(rng):
    host = pick(rng, ["cms.example.com", "wiki.example.org", "notion.example.so", "blog.example.dev", "mail.example.com"])
    r = rng.random()
    if r < 0.4:
        html = "<p>" + pick(rng, TEXTS) + "</p>" + pick(rng, ["<p><a href=\"javascript:void(0)\">Show more</a></p>", "<p><a href=\"#\" onclick=\"return false;\">toggle</a></p>",
                                                                "<pre><code class=\"language-html\">&lt;script src=\"app.js\"&gt;&lt;/script&gt;</code></pre>",
                                                                "<blockquote>Use <code>SELECT * FROM t</code> sparingly</blockquote>", "<img src=\"/uploads/a.png\" alt=\"chart\" width=\"600\">",
                                                                "<p style=\"color: rgb(255, 0, 0);\">Warning</p>"])
        body, cls = {"id": rng.randrange(1, 10**5), "title": pick(rng, TEXTS), "content_html": html, "status": "draft"}, "rich-text-html"
    elif r < 0.7:
        body, cls = {"page": uuid4(rng), "markdown": pick(rng, MARKDOWN), "version": rng.randrange(1, 99)}, "rich-text-markdown"
    else:
        # A code block holds code of the language it declares (an editor's language menu).
        language = pick(rng, ["sql", "javascript", "bash", "html"])
        code = pick(rng, {"sql": SQL_SNIPPETS, "javascript": JSX, "bash": SHELL_SNIPPETS, "html": HTML_SNIPPETS}[language])
        doc = {"type": "doc", "content": [{"type": "paragraph", "content": [{"type": "text", "text": pick(rng, TEXTS)}]},
                                          {"type": "codeBlock", "attrs": {"language": language},
                                           "content": [{"type": "text", "text": code}]}]}
        body, cls = {"doc": doc, "clientId": rng.randrange(10**6)}, "rich-text-prosemirror"
    h = api_headers(rng, host, content_type="application/json", browser_like=True)
    return cls, "cms", "json", request("PUT", f"/api/pages/{rng.randrange(1, 10**5)}", h, jdump(body))


def g_json_saved_in_json(rng):
    """Apps that store JSON documents as strings inside JSON (dashboards, layouts)."""
    host = "app." + site(rng).split(".", 1)[1]
    inner = {"panels": [{"type": pick(rng, ["graph", "table"]), "query": pick(rng, ["rate(http_requests_total[5m])", "SELECT mean(value) FROM cpu WHERE time > now() - 1h GROUP BY time(1m)", "sum by (host) (up)"]),
                         "title": pick(rng, TEXTS)}], "refresh": "30s"}
    body = {"dashboard": {"title": pick(rng, WORDS), "json": jdump(inner)}, "overwrite": True}
    h = api_headers(rng, host, content_type="application/json")
    return "json-string-holding-json", "dashboard", "json", request("POST", "/api/dashboards/db", h, jdump(body))


# Binary and compressed bodies -----------------------------------------------------------------

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def protobuf(rng, depth=0):
    out = bytearray()
    for field in range(1, rng.randrange(2, 9)):
        wt = pick(rng, [0, 2, 2, 1, 5] if depth < 2 else [0, 2, 1, 5])
        out += varint((field << 3) | wt)
        if wt == 0:
            out += varint(rng.randrange(0, 2**rng.randrange(1, 40)))
        elif wt == 1:
            out += struct.pack("<d", rng.random() * 1e6)
        elif wt == 5:
            out += struct.pack("<f", rng.random() * 1e3)
        else:
            r = rng.random()
            if r < 0.4:
                s = pick(rng, WORDS + TEXTS + [uuid4(rng), email(rng)]).encode()
            elif r < 0.7 and depth < 2:
                s = protobuf(rng, depth + 1)
            else:
                s = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
            out += varint(len(s)) + s
    return bytes(out)


def g_protobuf(rng):
    host = "api." + site(rng).split(".", 1)[1]
    msg = protobuf(rng)
    r = rng.random()
    if r < 0.4:
        ct, body, path = "application/x-protobuf", msg, "/v1/" + pick(rng, ["events", "sync", "metrics"])
    elif r < 0.7:
        ct, body, path = "application/grpc-web+proto", b"\x00" + struct.pack(">I", len(msg)) + msg, "/" + pick(rng, ["chat.v1.ChatService/SendMessage", "maps.v2.Tiles/Get", "user.UserService/GetProfile"])
    else:
        ct, body, path = "application/grpc", b"\x00" + struct.pack(">I", len(msg)) + msg, "/" + pick(rng, ["helloworld.Greeter/SayHello", "telemetry.v1.Collector/Export"])
    h = api_headers(rng, host, content_type=ct, browser_like=ct == "application/grpc-web+proto")
    if ct == "application/grpc":
        h.append(("TE", "trailers"))
    return "binary-protobuf", "grpc-api", "body", request("POST", path, h, body)


def random_binary(rng, n):
    return bytes(rng.randrange(256) for _ in range(n))


def png(rng):
    raw = b"".join(b"\x00" + random_binary(rng, 16 * 3) for _ in range(16))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 16, 16, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def g_binary_upload(rng):
    host = "upload." + site(rng).split(".", 1)[1]
    r = rng.random()
    if r < 0.35:
        ct, body = "application/octet-stream", random_binary(rng, rng.randrange(32, 600))
    elif r < 0.6:
        ct, body = "image/png", png(rng)
    elif r < 0.8:
        ct, body = "application/zip", b"PK\x03\x04" + random_binary(rng, rng.randrange(40, 500))
    else:
        ct, body = pick(rng, ["audio/webm;codecs=opus", "video/mp4", "application/pdf"]), random_binary(rng, rng.randrange(60, 600))
    h = api_headers(rng, host, content_type=ct)
    return "binary-upload", "file-upload", "body", request(pick(rng, ["PUT", "POST"]), f"/files/{uuid4(rng)}", h, body)


def g_multipart_upload(rng):
    host = site(rng)
    boundary = "----WebKitFormBoundary" + alnum(rng, 16)
    fname = pick(rng, ["photo.png", "IMG_2024.jpg", "report (final).pdf", "data.bin", "archive.zip", "voice.webm"])
    content = png(rng) if fname.endswith(".png") else random_binary(rng, rng.randrange(40, 500))
    parts = [f"--{boundary}\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\n{pick(rng, TEXTS)}\r\n".encode(),
             f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{fname}\"\r\nContent-Type: {pick(rng, ['image/png', 'application/octet-stream', 'application/pdf'])}\r\n\r\n".encode() + content + b"\r\n",
             f"--{boundary}--\r\n".encode()]
    h = browser_headers(rng, host, dest="json", referer=f"https://{host}/upload", cookie=cookie_jar(rng), origin=f"https://{host}",
                        content_type=f"multipart/form-data; boundary={boundary}", mode="cors")
    return "multipart-binary-file", "file-upload", "multipart", request("POST", "/upload", h, b"".join(parts))


def g_gzip_json(rng):
    host = pick(rng, ["telemetry.example.com", "api." + site(rng).split(".", 1)[1], "logs.example.io"])
    events = [{"ts": 1700000000000 + rng.randrange(10**9), "level": pick(rng, ["info", "warn", "error"]),
               "msg": pick(rng, ERRORS + TEXTS), "stack": "\n".join(stacktrace(rng, "v8")) if rng.random() < 0.5 else None}
              for _ in range(rng.randrange(1, 20))]
    raw = jdump({"events": events}).encode()
    enc = pick(rng, ["gzip", "gzip", "deflate"])
    body = gz(raw) if enc == "gzip" else zlib.compress(raw)
    h = api_headers(rng, host, content_type="application/json", auth=rng.random() < 0.5, browser_like=False)
    h.append(("Content-Encoding", enc))
    return "compressed-json", "telemetry", "body", request("POST", "/v1/logs", h, body)


def g_sensor(rng):
    """Anti-bot sensor payloads: long blobs of separators, numbers and base64."""
    host = site(rng)
    r = rng.random()
    if r < 0.4:
        parts = [str(rng.randrange(0, 10**6)) if rng.random() < 0.5 else alnum(rng, rng.randrange(1, 30), string.ascii_letters + string.digits + "+/=") for _ in range(rng.randrange(30, 80))]
        blob = "2;" + ";".join(str(rng.randrange(10**6)) for _ in range(4)) + ";" + pick(rng, [",", "-", ";", ":"]).join(parts)
        blob += ",-1,-1,-1,-1,-1,-1,-1,-1,-1,-102,0,-1,-1,0,0,-1,-1,0,0,-1,0,0;" + ";".join(f"{rng.randrange(0, 3)},{rng.randrange(0, 9999)},{rng.randrange(0, 2000)},{rng.randrange(0, 1200)},-1;" for _ in range(8))
        body, ct, path, cls = jdump({"sensor_data": blob}), "text/plain;charset=UTF-8", f"/{alnum(rng, 20, string.ascii_letters + string.digits + '-_')}/{alnum(rng, 8)}", "antibot-sensor-json"
    elif r < 0.7:
        payload = base64.b64encode(random_binary(rng, rng.randrange(150, 700))).decode()
        body, ct, path, cls = qs([("payload", payload), ("appId", "PX" + alnum(rng, 8)), ("tag", "v8.7.2"), ("uuid", uuid4(rng)), ("ft", "330"), ("seq", str(rng.randrange(0, 9))), ("en", "NTA"), ("pc", str(rng.randrange(10**15)))]), "application/x-www-form-urlencoded", "/api/v2/collector", "antibot-sensor-form"
    else:
        chal = alnum(rng, rng.randrange(300, 1200), string.ascii_letters + string.digits + "+/$-_.~!*'()")
        body, ct, path, cls = chal, "text/plain;charset=UTF-8", f"/cdn-cgi/challenge-platform/h/g/flow/ov1/{rng.randrange(10**9)}:{1700000000 + rng.randrange(10**7)}:{alnum(rng, 43)}/{hexs(rng, 16)}/{alnum(rng, 40)}", "antibot-challenge-blob"
    h = browser_headers(rng, host, dest="json", referer=page_url(rng, host), cookie=cookie_jar(rng), origin=f"https://{host}", content_type=ct, mode="cors")
    return cls, "antibot", "body", request("POST", path, h, body)


def g_tokens(rng):
    host = pick(rng, ["auth." + site(rng).split(".", 1)[1], "login.example.com", "accounts.example.org"])
    r = rng.random()
    if r < 0.3:
        params = [("code", alnum(rng, rng.randrange(30, 300), string.ascii_letters + string.digits + "-_.~")), ("state", b64url(random_binary(rng, 24))),
                  ("session_state", uuid4(rng) + "." + alnum(rng, 12)), ("scope", "openid email profile https://www.googleapis.example.com/auth/userinfo.email")]
        h = browser_headers(rng, host, referer="https://accounts.example.com/", cookie=cookie_jar(rng))
        return "oauth-callback", "sso", "query", request("GET", "/oauth2/callback?" + qs(params), h)
    if r < 0.55:
        saml = base64.b64encode(("<samlp:Response xmlns:samlp=\"urn:oasis:names:tc:SAML:2.0:protocol\" ID=\"_" + hexs(rng, 40) + "\" Version=\"2.0\"><saml:Assertion xmlns:saml=\"urn:oasis:names:tc:SAML:2.0:assertion\"><saml:Subject><saml:NameID>" + email(rng) + "</saml:NameID></saml:Subject></saml:Assertion></samlp:Response>").encode()).decode()
        h = browser_headers(rng, host, referer="https://idp.example.com/", cookie=cookie_jar(rng), origin="https://idp.example.com", content_type="application/x-www-form-urlencoded")
        return "saml-post", "sso", "form", request("POST", "/saml/acs", h, qs([("SAMLResponse", saml), ("RelayState", page_url(rng, site(rng)))]))
    if r < 0.8:
        body = {"grant_type": "refresh_token", "refresh_token": alnum(rng, rng.randrange(100, 900), string.ascii_letters + string.digits + "-_."), "client_id": uuid4(rng), "id_token": jwt(rng)}
        h = api_headers(rng, host, content_type="application/json")
        return "long-tokens-json", "sso", "json", request("POST", "/oauth/token", h, jdump(body))
    h = api_headers(rng, "api." + site(rng).split(".", 1)[1], browser_like=False)
    h.append(("X-Api-Key", alnum(rng, 40)))
    h.append(("X-Amz-Security-Token", alnum(rng, 300, string.ascii_letters + string.digits + "+/=")))
    return "long-tokens-headers", "rest-api", "header", request("GET", f"/api/v1/{pick(rng, REST_NOUNS)}", h)


def g_dev_tools(rng):
    host = pick(rng, ["localhost:3000", "localhost:5173", "127.0.0.1:8000", "localhost:8080", "dev.example.test"])
    r = rng.random()
    if r < 0.3:
        path = pick(rng, ["/@vite/client", "/@react-refresh", "/node_modules/.vite/deps/react.js?v=" + hexs(rng, 8), "/src/main.tsx?t=" + str(1700000000000 + rng.randrange(10**9)),
                          "/__webpack_hmr", "/sockjs-node/info?t=" + str(1700000000000 + rng.randrange(10**9)), "/_next/webpack-hmr", "/@fs/home/dev/project/node_modules/vite/dist/client/env.mjs"])
        h = browser_headers(rng, host, dest="script", referer=f"http://{host}/", mode="cors")
        return "dev-server", "dev-tools", "path", request("GET", path, h)
    if r < 0.65:
        body = {"redirect_uri": pick(rng, ["http://localhost:3000/callback", "http://127.0.0.1:8080/auth/callback", "http://localhost/oauth"]),
                "webhook_url": pick(rng, ["http://localhost:4000/hooks", "https://hooks.example.com/abc"]), "allowed_origins": ["http://localhost:5173", "https://app.example.com"]}
        h = api_headers(rng, "api." + site(rng).split(".", 1)[1], content_type="application/json")
        h.append(("Origin", "http://localhost:3000"))
        return "localhost-urls-json", "dev-tools", "json", request("POST", "/api/apps/settings", h, jdump(body))
    params = [("redirect", pick(rng, ["http://localhost:3000/dashboard", "/dashboard", "/settings?tab=profile"])), ("debug", "1")]
    h = browser_headers(rng, "app." + site(rng).split(".", 1)[1], referer="http://localhost:3000/", cookie=cookie_jar(rng))
    return "localhost-urls-query", "dev-tools", "query", request("GET", "/login?" + qs(params), h)


def g_xml_api(rng):
    host = "api." + site(rng).split(".", 1)[1]
    r = rng.random()
    if r < 0.5:
        body = f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<order id=\"{rng.randrange(10**6)}\"><customer>{pick(rng, FIRST_NAMES)} {pick(rng, LAST_NAMES).replace('&', '&amp;')}</customer><note>{pick(rng, TEXTS).replace('&', '&amp;').replace('<', '&lt;')}</note><items><item sku=\"{alnum(rng, 8)}\" qty=\"{rng.randrange(1, 9)}\"/></items></order>"
        ct = "application/xml"
    else:
        body = f"<?xml version=\"1.0\"?>\n<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body><GetWeather xmlns=\"http://example.com/weather\"><City>{pick(rng, ['Zürich', 'São Paulo', 'Köln'])}</City></GetWeather></soap:Body></soap:Envelope>"
        ct = "text/xml; charset=utf-8"
    h = api_headers(rng, host, content_type=ct, browser_like=False)
    if "soap" in body:
        h.append(("SOAPAction", "\"http://example.com/weather/GetWeather\""))
    return "xml-api", "soap-api", "xml", request("POST", "/api/orders" if ct == "application/xml" else "/ws/weather", h, body)


def g_api_client_json(rng):
    host = "api." + site(rng).split(".", 1)[1]
    body = {"name": pick(rng, WORDS) + "-" + pick(rng, WORDS), "description": pick(rng, TEXTS), "private": rng.random() < 0.5,
            "homepage": page_url(rng, site(rng)), "topics": rng.sample(WORDS, 3), "settings": {"compression": pick(rng, ["gzip", "br", "none"]),
            "timezone": pick(rng, ["Europe/Berlin", "America/New_York", "Asia/Tokyo"]), "locale": pick(rng, ["en-US", "de-DE"])}}
    h = api_headers(rng, host, content_type="application/json", browser_like=False)
    return "api-json", "rest-api", "json", request(pick(rng, ["POST", "PATCH"]), f"/api/v1/{pick(rng, REST_NOUNS)}", h, jdump(body))


GENERATORS = [
    (g_browse, 4000), (g_browse_security_referer, 800), (g_search, 2500), (g_search_sql, 1200),
    (g_suggest_shell_word, 2000), (g_shell_word_names, 1200), (g_suggest_prefix, 1500), (g_cdn, 2000),
    (g_static, 1500), (g_rest, 1800), (g_form, 1500), (g_comment_json, 800), (g_error_report, 1500),
    (g_rum, 800), (g_analytics_ga, 1200), (g_analytics_product, 1200), (g_graphql, 1200), (g_json_in_query, 800),
    (g_deep_object_form, 500), (g_code_editor, 1000), (g_rich_text, 900), (g_json_saved_in_json, 300),
    (g_protobuf, 700), (g_binary_upload, 350), (g_multipart_upload, 300), (g_gzip_json, 500), (g_sensor, 700),
    (g_tokens, 800), (g_dev_tools, 600), (g_xml_api, 300), (g_api_client_json, 800),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--out", default="crates/palisade-detect/data/requests/benign.jsonl.gz")
    args = ap.parse_args()
    rows = []
    for gen, count in GENERATORS:
        # One stream per generator: changing one generator leaves the others' requests alone.
        rng = random.Random(f"{args.seed}/{gen.__name__}")
        reset_visitor()
        for i in range(count):
            cls, app, loc, raw, *label = gen(rng)
            rows.append(row(f"{gen.__name__[2:]}-{i:05d}", label[0] if label else "benign", cls, app, loc, raw))
    n = write_jsonl_gz(args.out, rows)
    print(f"{args.out}: {len(rows)} requests, {n} bytes uncompressed")


if __name__ == "__main__":
    main()
