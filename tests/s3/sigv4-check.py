#!/usr/bin/env python3
# An S3 endpoint that checks every request's AWS Signature Version 4 as
# AWS documents it (canonical request, string to sign, the derived key),
# with the payload's SHA-256 against x-amz-content-sha256, and keeps objects
# in memory: PUT, GET, HEAD, ListObjectsV2.  s3rver checks only the access
# key id; this checks what the secret key signs.  A bad signature gets
# 403 SignatureDoesNotMatch, a body that does not match its declared hash
# 400 XAmzContentSHA256Mismatch.  Each request is logged to stderr as
# "METHOD PATH ok|bad-signature|bad-payload".
#
# Usage: sigv4-check.py PORTFILE ACCESS_KEY SECRET_KEY
import hashlib
import hmac
import http.server
import os
import sys
import urllib.parse

PORTFILE, ACCESS, SECRET = sys.argv[1], sys.argv[2], sys.argv[3]
objects = {}


def hm(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


class Handler(http.server.BaseHTTPRequestHandler):
    def verdict(self, body):
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("AWS4-HMAC-SHA256 "):
            return "bad-signature"
        parts = dict(p.strip().split("=", 1) for p in auth.split(" ", 1)[1].split(","))
        cred = parts["Credential"].split("/")
        if cred[0] != ACCESS:
            return "bad-signature"
        signed = parts["SignedHeaders"].split(";")
        url = urllib.parse.urlsplit(self.path)
        query = sorted(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        cq = "&".join(urllib.parse.quote(k, safe="-_.~") + "=" +
                      urllib.parse.quote(v, safe="-_.~") for k, v in query)
        ch = "".join(h + ":" + " ".join((self.headers.get(h) or "").split()) + "\n"
                     for h in signed)
        declared = self.headers.get("x-amz-content-sha256", "")
        creq = "\n".join([self.command, url.path, cq, ch, ";".join(signed), declared])
        sts = "\n".join(["AWS4-HMAC-SHA256", self.headers.get("x-amz-date", ""),
                         "/".join(cred[1:]),
                         hashlib.sha256(creq.encode()).hexdigest()])
        key = hm(("AWS4" + SECRET).encode(), cred[1])
        for part in cred[2:]:
            key = hm(key, part)
        if hmac.new(key, sts.encode(), hashlib.sha256).hexdigest() != parts["Signature"]:
            return "bad-signature"
        if declared != "UNSIGNED-PAYLOAD" and declared != hashlib.sha256(body).hexdigest():
            return "bad-payload"
        return "ok"

    def answer(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_one(self, body):
        v = self.verdict(body)
        print(self.command, self.path, v, file=sys.stderr, flush=True)
        if v == "bad-signature":
            self.answer(403, b"<Error><Code>SignatureDoesNotMatch</Code><Message>The request "
                        b"signature we calculated does not match the signature you "
                        b"provided.</Message></Error>")
            return None
        if v == "bad-payload":
            self.answer(400, b"<Error><Code>XAmzContentSHA256Mismatch</Code></Error>")
            return None
        return urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)

    def do_PUT(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        key = self.handle_one(body)
        if key is not None:
            objects[key] = body
            self.answer(200, headers=[("ETag", '"%s"' % hashlib.md5(body).hexdigest())])

    def do_HEAD(self):
        key = self.handle_one(b"")
        if key is not None:
            if key not in objects:
                return self.answer(404)
            b = objects[key]
            self.send_response(200)
            self.send_header("ETag", '"%s"' % hashlib.md5(b).hexdigest())
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()

    def do_GET(self):
        key = self.handle_one(b"")
        if key is None:
            return
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        if q.get("list-type") == "2":
            bucket = key.rstrip("/")
            prefix = bucket + "/" + q.get("prefix", "")
            xml = "<ListBucketResult><IsTruncated>false</IsTruncated>"
            for k in sorted(objects):
                if k.startswith(prefix):
                    xml += "<Contents><Key>%s</Key><Size>%d</Size></Contents>" % (
                        k[len(bucket) + 1:], len(objects[k]))
            return self.answer(200, (xml + "</ListBucketResult>").encode())
        if key not in objects:
            return self.answer(404, b"<Error><Code>NoSuchKey</Code></Error>")
        self.answer(200, objects[key])

    def log_message(self, *args):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
