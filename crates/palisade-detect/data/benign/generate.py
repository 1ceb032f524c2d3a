#!/usr/bin/env python3
"""Generate Palisade's own benign value sets (JSON lines, label benign), deterministically,
without network access. Run from anywhere: `python3 generate.py` rewrites the *.jsonl files
next to it. Sets:

- prose.jsonl:    sentences in several languages with apostrophes, quotes, semicolons,
                  parentheses, and SQL-ish or shell-ish everyday words (select, union, drop,
                  or, and 1 more, "delete my account", "cat & dog"...)
- code.jsonl:     code snippets and markdown as users paste them in comment fields
- tokens.jsonl:   URLs, e-mail addresses, JWTs, base64, UUIDs, hashes, file names, dates,
                  phone numbers, prices, search queries
- browser.jsonl:  user agents, referers, accept headers, cookies

handwritten.jsonl is not generated: values of API traffic written by hand (kept as they are).
"""
import base64
import json
import os
import random
import uuid

R = random.Random(20241122)
HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, category, values):
    seen = set()
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        for v in values:
            if v in seen or not v:
                continue
            seen.add(v)
            f.write(json.dumps({"label": "benign", "category": category, "source": "palisade/" + name, "value": v}, ensure_ascii=False) + "\n")
    return len(seen)


# ---------------------------------------------------------------------------------------------
# Prose
# ---------------------------------------------------------------------------------------------
SUBJECTS = ["I", "We", "My wife", "Our team", "The kids", "My boss", "Everyone here", "John O'Brien", "D'Angelo", "Mrs. O'Neil"]
VERBS = ["can't find", "didn't receive", "would like to select", "want to drop", "need to update", "couldn't delete", "tried to union", "love", "hate", "ordered"]
OBJECTS = [
    "the blue one", "my order from last week", "the union jack flag", "a table for two", "the drop-down menu", "all the items in my cart",
    "the \"premium\" plan", "two more; maybe three", "the one with 'extra' cheese", "the select few", "1 or 2 of them", "the script for the play",
]
ENDINGS = [".", "!", "?", " :)", " ;)", "...", " - thanks!", " (again).", "; please help.", " -- urgent", " & thanks", "!!"]

PROSE_FIXED = [
    "It's the best product I've ever bought; I'd recommend it to anyone.",
    "Don't forget: select the size before you add it to the cart.",
    "Please drop me a line when it's back in stock.",
    "I'm 5'11\" and the medium fits fine.",
    "Select one or more options, and 1 more if you like.",
    "Union Street, apt. 4; ring twice",
    "He said \"where's the order?\" and I said \"I don't know\".",
    "Rock 'n' roll is here to stay",
    "The 90's were great; the 2000's, not so much.",
    "I want to delete my account and all my data, or at least update my e-mail.",
    "Insert the card into the reader, then select 'Pay'.",
    "We'll meet at O'Hare at 5 o'clock -- or 6, if the flight is late.",
    "Where is my refund?! It's been 3 weeks...",
    "Are you open on Sunday? (asking for a friend)",
    "Tom & Jerry; Bonnie & Clyde; salt & pepper",
    "The price was $19.99 + tax = $21.59",
    "50% off? That's 1/2 price!",
    "Please, no peanuts :( my son is allergic",
    "Call me at +1 (555) 010-4477 or e-mail me.",
    "Can I exchange size 10 for size 9 1/2?",
    "Order #12345 hasn't arrived; tracking says 'delivered'.",
    "What's the difference between 'and' and 'or' in the search filters?",
    "Login fails with \"invalid password\" even though it's right",
    "The command line tool says: permission denied",
    "Hi, I'd like to order 2x pizza margherita and 1 tiramisu.",
    "From: Anne; To: Bob; Subject: lunch",
    "Note to self -- buy milk, eggs & bread",
    "\"Quoted\" text with 'single' quotes and `backticks`",
    "a < b and c > d, obviously",
    "I <3 this shop",
    "5 > 3 is true; 2 < 1 is false",
    "Cats = love",
    "if you can't beat them, join them",
    "Where can I select the delivery date and drop-off point?",
    "Union members get 10% off; union dues are separate.",
    "Truncate the description to 100 characters, please.",
    "Execute the plan; exec summary attached.",
    "I'll have the chicken (no sauce), and a Coke.",
    "She wrote: 'I will be there at 8; don't wait.'",
    "Bobby Tables is my son's nickname",
    "My name is O'Reilly and your form rejects it!",
    "Sleep well; wake up early; repeat.",
    "Benchmark results: 1,234 req/s vs 987 req/s",
]
LANG = [
    "C'est l'été ; on part à l'aube, n'est-ce pas ?",
    "J'ai commandé deux articles, mais je n'en ai reçu qu'un.",
    "Qu'est-ce que c'est ? « Un cadeau », m'a-t-il dit.",
    "L'hôtel est près de la gare; l'accueil était parfait.",
    "Ich hätte gern zwei Stück; geht das bis Freitag?",
    "Die Lieferung kam nicht an – bitte prüfen Sie das.",
    "„Ausgezeichnet“, sagte sie; wir kommen wieder.",
    "¿Dónde está mi pedido? Lo pedí el lunes; aún nada.",
    "¡Qué bonito! Me encanta el color y la talla es perfecta.",
    "Calle d'Alcalá 23, 2º izq.",
    "Dell'Acqua, l'ordine è arrivato ma manca un pezzo; grazie.",
    "Non c'è problema: l'importante è che arrivi entro venerdì.",
    "Olá! Não recebi o código; poderiam reenviar?",
    "Obrigado pela ajuda — tudo resolvido.",
    "Goedemorgen, ik wil graag 's avonds bezorgd worden.",
    "Zamówienie nr 123 nie dotarło; proszę o pomoc.",
    "Добрый день! Где мой заказ? Жду уже неделю.",
    "Спасибо, всё пришло вовремя; качество отличное.",
    "Καλησπέρα, θα ήθελα να αλλάξω το μέγεθος.",
    "注文した商品がまだ届きません。確認をお願いします。",
    "ありがとうございます！また利用します。",
    "这个产品很好用，推荐给大家；物流也很快。",
    "请问什么时候发货？谢谢！",
    "배송이 언제 되나요? 빨리 받고 싶어요.",
    "הזמנתי אתמול; מתי זה יגיע?",
    "شكراً لكم، وصل الطلب بسرعة.",
    "Merhaba, siparişim nerede? Teşekkürler.",
    "Hyvää päivää! Tilaus saapui; kiitos.",
    "Tack så mycket, det var precis vad jag ville ha!",
    "Dziękuję; wszystko w porządku.",
    "Xin chào, tôi muốn đổi size áo.",
    "नमस्ते, मेरा ऑर्डर कब आएगा?",
]
NAMES = ["O'Connor", "D'Amico", "Anne-Marie", "Jean-Luc Picard", "José Ñúñez", "Zoë Brontë", "Ng", "Smith-Jones", "St. John", "van der Berg", "McDonald's",
         "Dr. Who", "Øyvind Ås", "Łukasz Żółć", "Ærøskøbing", "Müller & Söhne GmbH", "AT&T", "Barnes & Noble", "Procter & Gamble", "Ben & Jerry's"]
ADDRESSES = ["12 O'Connell St., Dublin", "Flat 3; 22 Union Road", "Rue de l'Église 5", "1600 Amphitheatre Pkwy, Mountain View, CA 94043",
             "PO Box 42 (attn: billing)", "Calle 13 #45-67, Bogotá", "Hauptstraße 1/2", "c/o Smith & Co, Suite #200", "221B Baker Street",
             "Apt. 5-B, 3rd floor", "Building 7 - Gate \"C\""]
SEARCH = ["select dress", "union jack t-shirt", "drop earrings", "table lamp", "or sofa", "and 1 more", "shirts or blouses", "black & white", "100% cotton",
          "size 10-12", "kids' shoes", "men's watch", "\"exact phrase\"", "where to buy", "how to delete account", "update address", "insert coin", "script font",
          "alert bracelet", "exec chair", "cat toys", "echo dot", "ping pong table", "curl cream", "wget", "rm -rf tutorial", "../ meaning", "1=1 math", "c++ book",
          "c# in depth", "node.js", "what is <html>", "sleep mask", "benchmark", "waitfor", "having fun", "group by color", "order by price", "limit 10"]


def prose():
    out = list(PROSE_FIXED) + LANG + NAMES + ADDRESSES + SEARCH
    for _ in range(700):
        out.append(f"{R.choice(SUBJECTS)} {R.choice(VERBS)} {R.choice(OBJECTS)}{R.choice(ENDINGS)}")
    for _ in range(150):
        a, b = R.sample(PROSE_FIXED + LANG, 2)
        out.append(a + " " + b)
    return out


# ---------------------------------------------------------------------------------------------
# Code and markdown
# ---------------------------------------------------------------------------------------------
CODE = [
    "Use `SELECT * FROM users WHERE id = ?` with a bound parameter, never string concatenation.",
    "```sql\nSELECT name, count(*) FROM orders GROUP BY name ORDER BY 2 DESC;\n```",
    "```python\nfor i in range(10):\n    print(i)\n```",
    "```js\nconst x = items.filter(i => i.price > 10).map(i => i.name);\n```",
    "Try `git log --oneline | head -5`",
    "In bash: `for f in *.txt; do wc -l \"$f\"; done`",
    "`ls -la ~/Downloads`",
    "The regex `^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$` validates most e-mails.",
    "**Bold** and _italic_ and [a link](https://example.com/docs?page=2#install).",
    "# Title\n\n- item one\n- item two\n\n> a quote",
    "1. First\n2. Second\n3. Third",
    "| col | val |\n|-----|-----|\n| a   | 1   |",
    "Use <kbd>Ctrl</kbd>+<kbd>C</kbd> to copy.",
    "HTML entities like &amp; and &lt; are escaped automatically.",
    "In C: `if (a < b && b > c) { return -1; }`",
    "`printf(\"%d items\\n\", n);`",
    "Rust: `let v: Vec<u8> = Vec::with_capacity(16);`",
    "Go: `if err != nil { return err }`",
    "JSON example: {\"name\": \"Ann\", \"tags\": [\"a\", \"b\"]}",
    "YAML: `key: value` and `list: [1, 2, 3]`",
    "Path on Windows: C:\\Users\\Ann\\Documents\\report.docx",
    "Path on Linux: /home/ann/projects/app/src/main.rs",
    "Set `PATH=$PATH:/usr/local/bin` in your ~/.bashrc",
    "Java: `System.out.println(\"Hello, \" + name);`",
    "PHP: `echo htmlspecialchars($name, ENT_QUOTES);`",
    "Ruby: `puts items.map(&:name).join(\", \")`",
    "SQL tip: `DELETE FROM cart WHERE created_at < now() - interval '7 days'` runs nightly.",
    "CSS: `.btn { color: #fff; background: rgb(0, 128, 255); }`",
    "Template: Hello {{ name }}, your order {{ order.id }} shipped.",
    "Formula: =SUM(A1:A10)/COUNT(B1:B10)",
    "Math: (a + b)^2 = a^2 + 2ab + b^2",
    "LaTeX: $\\frac{1}{2}$ and $x_i^2$",
    "Version ranges: >=1.2.0, <2.0.0",
    "Shell prompt: user@host:~$ make test",
    "Error: undefined is not a function (evaluating 'x.map(...)')",
    "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    main()",
    "Exception in thread \"main\" java.lang.NullPointerException at com.example.App.main(App.java:12)",
    "My config: `{\"retries\": 3, \"timeout\": \"5s\"}`",
    "Set the header `Accept: application/json` and retry.",
    "curl -H 'Accept: application/json' https://api.example.com/v1/items?limit=10",
    "Kotlin: `val list = listOf(1, 2, 3).map { it * 2 }`",
    "Swift: `guard let x = y else { return }`",
    "C#: `var q = from c in customers where c.City == \"London\" select c;`",
    "Haskell: `main = mapM_ print [1..10]`",
    "Markdown image: ![logo](https://example.com/logo.png)",
    "Footnote[^1] and ~~strikethrough~~",
    "Use `:wq` to save in vim",
    "@channel the deploy is done ✅",
    "TODO(ann): handle the case where count == 0",
    "// comment in code and /* block comment */",
    "x = y ? a : b; // ternary",
    "Dates: 2024-03-01T12:00:00Z .. 2024-03-31",
]
SNIPPET_PARTS = ["Here is what I tried:", "This works for me:", "Fixed it with", "Could you explain", "Why does", "Thanks! The answer was"]


def code():
    out = list(CODE)
    for _ in range(500):
        out.append(f"{R.choice(SNIPPET_PARTS)} {R.choice(CODE)}")
    return out


# ---------------------------------------------------------------------------------------------
# Tokens
# ---------------------------------------------------------------------------------------------
WORDS = ["alpha", "beta", "gamma", "delta", "report", "invoice", "photo", "summer", "cat", "dog", "order", "profile", "avatar", "draft", "final", "notes"]
TLDS = ["com", "org", "net", "io", "de", "fr", "co.uk", "com.br", "jp"]
EXTS = ["pdf", "png", "jpg", "jpeg", "docx", "xlsx", "csv", "txt", "zip", "mp4", "json", "svg", "heic", "tar.gz"]


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def jwt():
    header = {"alg": R.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"}
    payload = {"sub": str(R.randint(1, 10**6)), "name": R.choice(NAMES), "iat": 1700000000 + R.randint(0, 10**7), "scope": "read write"}
    sig = bytes(R.getrandbits(8) for _ in range(32))
    return ".".join([b64url(json.dumps(header).encode()), b64url(json.dumps(payload).encode()), b64url(sig)])


def tokens():
    out = []
    for _ in range(200):
        host = f"{R.choice(WORDS)}.{R.choice(['example', 'shop', 'news', 'cdn'])}.{R.choice(TLDS)}"
        path = "/".join(R.sample(WORDS, R.randint(0, 3)))
        q = "&".join(f"{R.choice(WORDS)}={R.randint(0, 999)}" for _ in range(R.randint(0, 3)))
        url = f"https://{host}/{path}" + (f"?{q}" if q else "") + (R.choice(["", "#top", "#section-2"]))
        out.append(url)
    for _ in range(150):
        out.append(f"{R.choice(WORDS)}{R.choice(['', '.', '_', '+'])}{R.choice(WORDS)}{R.randint(0, 99)}@{R.choice(WORDS)}.{R.choice(TLDS)}")
    out += ["o'brien@example.com", "first.last+tag@example.co.uk", "\"john doe\"@example.org", "user@[192.0.2.1]"]
    for _ in range(150):
        out.append(jwt())
    for _ in range(150):
        raw = R.choice([json.dumps({"cart": R.sample(WORDS, 3)}), R.choice(PROSE_FIXED), bytes(R.getrandbits(8) for _ in range(24)).hex()]).encode()
        out.append(base64.b64encode(raw if R.random() < 0.7 else bytes(R.getrandbits(8) for _ in range(30))).decode())
    for _ in range(150):
        out.append(str(uuid.UUID(int=R.getrandbits(128), version=4)))
    for _ in range(100):
        out.append("%032x" % R.getrandbits(128) if R.random() < 0.5 else "%064x" % R.getrandbits(256))
    for _ in range(200):
        name = R.choice(["", "IMG_", "Scan ", "My "]) + "_".join(R.sample(WORDS, R.randint(1, 2))) + R.choice(["", " (1)", "-final", " copy", "_v2", " 2024-05-01"])
        out.append(f"{name}.{R.choice(EXTS)}")
    for _ in range(100):
        out.append(f"{R.randint(2000, 2030)}-{R.randint(1, 12):02d}-{R.randint(1, 28):02d}" + R.choice(["", f"T{R.randint(0, 23):02d}:{R.randint(0, 59):02d}:00Z", f" {R.randint(0, 23):02d}:{R.randint(0, 59):02d}"]))
    for _ in range(80):
        out.append(R.choice(["+1 (555) ", "+44 20 ", "+33 1 ", "0"]) + f"{R.randint(100, 999)}-{R.randint(1000, 9999)}")
    for _ in range(80):
        out.append(R.choice(["$", "€", "£", ""]) + f"{R.randint(0, 9999)}.{R.randint(0, 99):02d}" + R.choice(["", " USD", " EUR"]))
    out += ["192.168.1.10", "2001:db8::1", "10.0.0.0/8", "00:1A:2B:3C:4D:5E", "v1.2.3-beta+exp.sha.5114f85", "ISBN 978-3-16-148410-0",
            "A-123/B", "#ff8800", "rgb(255, 136, 0)", "50%", "1e10", "-42", "3.14159", "0x1F", "N/A", "n/a", "--", "—", "?", "*", "...", "1/2", "a+b", "x^2"]
    # URL slugs and CSS class names that contain SQL words (`my-select-box`, blog post slugs);
    # an RNG of their own so that the values generated before and after them do not move.
    rs = random.Random(4242)
    sqlish = ["select", "union", "drop", "insert", "update", "delete", "order", "by", "or", "and", "where", "from", "table", "sleep", "case", "when", "exec", "join", "group", "having"]
    for _ in range(120):
        parts = [rs.choice(sqlish if rs.random() < 0.5 else WORDS) for _ in range(rs.randint(2, 6))]
        out.append(rs.choice(["-", "_"]).join(parts) + rs.choice(["", "", "-2", "-v3", "-box"]))
    return out


# ---------------------------------------------------------------------------------------------
# Browser headers and cookies
# ---------------------------------------------------------------------------------------------
UAS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0 Safari/537.36 Edg/{v}.0.0.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.{m} Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:{v}.0) Gecko/20100101 Firefox/{v}.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:{v}.0) Gecko/20100101 Firefox/{v}.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_{m} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.{m} Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 13; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/{v}.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (iPad; CPU OS 16_{m} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/{v}.0.0.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "curl/8.{m}.0",
    "okhttp/4.12.0",
    "python-requests/2.31.0",
    "PostmanRuntime/7.36.{m}",
    "Dalvik/2.1.0 (Linux; U; Android 12; M2101K6G Build/SKQ1.210908.001)",
    "MyApp/3.{m}.1 (iPhone; iOS 17.2; Scale/3.00)",
    "Mozilla/5.0 (Windows NT 6.1; WOW64; Trident/7.0; rv:11.0) like Gecko",
]
ACCEPTS = [
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8",
    "application/json, text/plain, */*",
    "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
    "*/*",
    "en-US,en;q=0.9",
    "fr-FR,fr;q=0.9,en-US;q=0.8,en;q=0.7",
    "de-DE,de;q=0.9",
    "gzip, deflate, br, zstd",
    "no-cache",
    "max-age=0",
    "same-origin",
    "\"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\", \"Not-A.Brand\";v=\"99\"",
    "?0",
    "\"Windows\"",
    "keep-alive",
    "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
    "Basic dXNlcjpwYXNzd29yZA==",
]


def browser():
    out = []
    for _ in range(400):
        out.append(R.choice(UAS).format(v=R.randint(100, 130), m=R.randint(0, 6)))
    for _ in range(250):
        host = f"{R.choice(['www.', 'm.', ''])}{R.choice(WORDS)}.{R.choice(['example', 'google', 'bing', 'duckduckgo', 'facebook'])}.{R.choice(TLDS)}"
        q = R.choice(["", "?q=" + R.choice(SEARCH).replace(" ", "+"), "?utm_source=newsletter&utm_medium=email&utm_campaign=spring_sale", "?ref=home", "?page=2&sort=price_asc"])
        out.append(f"https://{host}/{'/'.join(R.sample(WORDS, R.randint(0, 2)))}{q}")
    out += ACCEPTS
    for _ in range(100):
        out.append(", ".join(f"{R.randint(1, 223)}.{R.randint(0, 255)}.{R.randint(0, 255)}.{R.randint(1, 254)}" for _ in range(R.randint(1, 3))))
    for _ in range(300):
        kind = R.randint(0, 7)
        if kind == 0:
            v = "%032x" % R.getrandbits(128)
        elif kind == 1:
            v = f"GA1.2.{R.randint(10**8, 10**9)}.{R.randint(10**9, 2 * 10**9)}"
        elif kind == 2:
            v = jwt()
        elif kind == 3:
            v = base64.b64encode(json.dumps({"lang": R.choice(["en", "fr"]), "theme": R.choice(["dark", "light"])}).encode()).decode()
        elif kind == 4:
            v = "s%3A" + b64url(bytes(R.getrandbits(8) for _ in range(24))) + "." + b64url(bytes(R.getrandbits(8) for _ in range(32)))
        elif kind == 5:
            v = R.choice(["en-US", "fr_FR", "dark", "true", "1", "EUR", "accepted", "necessary,analytics"])
        elif kind == 6:
            v = "%7B%22consent%22%3Atrue%2C%22ts%22%3A" + str(R.randint(10**12, 2 * 10**12)) + "%7D"
        else:
            v = str(uuid.UUID(int=R.getrandbits(128), version=4))
        out.append(v)
    return out


if __name__ == "__main__":
    total = 0
    for name, cat, gen in [("prose.jsonl", "benign-prose", prose), ("code.jsonl", "benign-code", code), ("tokens.jsonl", "benign-tokens", tokens), ("browser.jsonl", "benign-browser", browser)]:
        n = write(name, cat, gen())
        total += n
        print(f"{name}: {n}")
    print(f"total: {total}")
