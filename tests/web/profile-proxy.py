#!/usr/bin/env python3
"""The agent behind a reverse proxy that also answers the profile API.

    profile-proxy.py AGENT_URL PORT_FILE FIXTURE BASE_FIXTURE

Forwards every request to the agent unchanged, except GET
/api/v1/profile?...&format=folded, answered from FIXTURE (a window that
ends within two minutes of now) or BASE_FIXTURE (an older window), as the
profile API's contract says (text/plain, one folded stack per line).  For
the web page's flame graph where the agent has no profiling; it also shows
the page working behind a proxy.  Writes the port it listens on to
PORT_FILE.
"""
import http.server
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

agent, port_file, fixture, base_fixture = sys.argv[1:5]


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send(self, status, headers, body):
        self.send_response(status)
        for k, v in headers:
            if k.lower() not in ("connection", "transfer-encoding", "date", "server"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        if u.path == "/api/v1/profile":
            q = urllib.parse.parse_qs(u.query)
            if q.get("format") != ["folded"] or "match[]" not in q:
                self.send(400, [("Content-Type", "application/json")],
                          b'{"status":"error","errorType":"bad_data","error":"test proxy: format=folded and match[] only"}')
                return
            end = float(q.get("end", [time.time()])[0])
            path = fixture if end >= time.time() - 120 else base_fixture
            with open(path, "rb") as f:
                self.send(200, [("Content-Type", "text/plain; charset=utf-8")], f.read())
            return
        req = urllib.request.Request(agent + self.path, headers={
            k: v for k, v in self.headers.items() if k.lower() in ("accept", "accept-encoding", "if-none-match")})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                self.send(r.status, r.getheaders(), r.read())
        except urllib.error.HTTPError as e:
            self.send(e.code, e.headers.items(), e.read())


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.replace(port_file + ".tmp", port_file)
srv.serve_forever()
