#!/usr/bin/python3
# The checkers of a whole message that Postern did not write: Python's `email` package
# (policy=default) parses it and reports every defect it finds; dkimpy (Debian's python3-dkim)
# verifies its DKIM-Signature and ARC set against the keys the test publishes. Used by
# test/helpers/wire-check.ts, one message per line: a JSON request on stdin, a JSON answer on
# stdout, so one process serves a whole test file.
#
# Request:  {"raw": base64, "keys": {"sel._domainkey.example.com": "v=DKIM1; k=rsa; p=..."}}
# Answer:   {"defects": [...], "counts": {...}, "headers": {...}, "addresses": {...}, "bodies": [...],
#            "attachments": [...], "dkim": [...], "arc": {...}, "lines": {...}}
import base64
import email
import email.policy
import json
import sys

import dkim
from dkim.util import parse_tag_value

COUNTED = ["from", "sender", "to", "cc", "bcc", "reply-to", "subject", "date", "message-id", "mime-version"]


def dnsfunc_for(keys):
    def dnsfunc(name, timeout=5):
        if isinstance(name, bytes):
            name = name.decode()
        value = keys.get(name.rstrip(".").lower())
        return value.encode() if value is not None else None

    return dnsfunc


def line_facts(raw):
    """The octet rules of RFC 5321/5322: line lengths, bare CR or LF, 8-bit bytes."""
    longest = 0
    bare = -1
    start = 0
    i = 0
    n = len(raw)
    while i < n:
        b = raw[i]
        if b == 0x0D:
            if i + 1 < n and raw[i + 1] == 0x0A:
                longest = max(longest, i - start)
                i += 2
                start = i
                continue
            if bare < 0:
                bare = i
        elif b == 0x0A and bare < 0:
            bare = i
        i += 1
    longest = max(longest, n - start)
    eight_bit = next((j for j, c in enumerate(raw) if c >= 0x80), -1)
    return {"longest": longest, "bareLineEnding": bare, "eightBit": eight_bit, "endsWithCrlf": raw.endswith(b"\r\n")}


def defects_of(msg, utf8_headers):
    out = []
    for part in msg.walk():
        where = part.get_content_type()
        for d in part.defects:
            out.append(f"{where}: {type(d).__name__}: {d}")
        for name, value in part.items():
            for d in getattr(value, "defects", ()):
                # RFC 6532 lets an address's local part be UTF-8 (the defect is the RFC 5322 view).
                if utf8_headers and type(d).__name__ == "NonASCIILocalPartDefect":
                    continue
                out.append(f"{where} header {name}: {type(d).__name__}: {d}")
    return out


def parse(raw):
    """Python's bytes parser reads header fields as ASCII; a header block in UTF-8 (RFC 6532,
    sent with SMTPUTF8) is read as the text it is, as an RFC 6532 receiver does."""
    end = raw.find(b"\r\n\r\n")
    head = raw[: end if end >= 0 else len(raw)]
    if max(head, default=0) >= 0x80:
        try:
            text = raw.decode("utf-8")
            return email.message_from_string(text, policy=email.policy.default.clone(utf8=True)), True
        except UnicodeDecodeError:
            pass
    return email.message_from_bytes(raw, policy=email.policy.default), False


def bodies_and_attachments(msg):
    bodies = []
    attachments = []
    for part in msg.walk():
        if part.is_multipart():
            continue
        if part.is_attachment():
            payload = part.get_payload(decode=True) or b""
            attachments.append(
                {
                    "filename": part.get_filename(),
                    "contentType": part.get_content_type(),
                    "content": base64.b64encode(payload).decode(),
                }
            )
        elif part.get_content_maintype() == "text":
            bodies.append({"type": part.get_content_type(), "content": part.get_content()})
    return bodies, attachments


def dkim_facts(raw, dnsfunc):
    out = []
    msg = email.message_from_bytes(raw, policy=email.policy.compat32)
    signatures = msg.get_all("DKIM-Signature") or []
    for index, value in enumerate(signatures):
        tags = parse_tag_value(" ".join(value.split()).encode())
        facts = {
            "d": tags.get(b"d", b"").decode(),
            "s": tags.get(b"s", b"").decode(),
            "a": tags.get(b"a", b"").decode(),
            "h": [h.strip().lower() for h in tags.get(b"h", b"").decode().split(":") if h.strip()],
        }
        try:
            d = dkim.DKIM(raw)
            facts["verified"] = bool(d.verify(idx=index, dnsfunc=dnsfunc))
        except Exception as err:  # dkimpy raises on a malformed signature or key
            facts["verified"] = False
            facts["error"] = f"{type(err).__name__}: {err}"
        out.append(facts)
    return out


def arc_facts(raw, dnsfunc):
    if b"ARC-Seal:" not in raw and b"arc-seal:" not in raw.lower():
        return {"result": "none"}
    try:
        cv, results, comment = dkim.arc_verify(raw, dnsfunc=dnsfunc)
        return {"result": cv.decode(), "comment": comment}
    except Exception as err:
        return {"result": "error", "comment": f"{type(err).__name__}: {err}"}


def check(request):
    raw = base64.b64decode(request["raw"])
    keys = {k.lower(): v for k, v in request.get("keys", {}).items()}
    dnsfunc = dnsfunc_for(keys)
    answer = {"dkim": dkim_facts(raw, dnsfunc), "arc": arc_facts(raw, dnsfunc), "lines": line_facts(raw)}
    try:
        answer.update(message_facts(raw))
    except Exception as err:  # a message the parser cannot read at all: that is the finding
        answer["defects"] = [f"the message does not parse: {type(err).__name__}: {err}"]
    return answer


def message_facts(raw):
    msg, utf8_headers = parse(raw)
    counts = {name: len(msg.get_all(name) or []) for name in COUNTED}
    headers = {}
    addresses = {}
    for name in COUNTED:
        values = msg.get_all(name)
        if values:
            headers[name] = str(values[0])
            if hasattr(values[0], "addresses"):
                addresses[name] = [[a.display_name, a.addr_spec] for v in values for a in v.addresses]
    bodies, attachments = bodies_and_attachments(msg)
    return {
        "defects": defects_of(msg, utf8_headers),
        "counts": counts,
        "headers": headers,
        "addresses": addresses,
        "contentType": msg.get_content_type(),
        "bodies": bodies,
        "attachments": attachments,
    }


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            answer = check(json.loads(line))
        except Exception as err:  # a checker that crashes on a message is a finding, not silence
            answer = {"crash": f"{type(err).__name__}: {err}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
