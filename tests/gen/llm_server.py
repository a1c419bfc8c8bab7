#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat-completions server for kforge's gen tests.

usage: llm_server.py SCENARIO.json LOG.jsonl

SCENARIO is a JSON list; request i gets entry i:
  {"status": 200, "body": "...raw body...", "delay_s": 0, "headers": {"Retry-After": "0"},
   "echo_auth": false}
With "echo_auth" the body's "{AUTH}" is replaced by the request's Authorization
header (to test that kforge redacts a key a server echoes back).
Each request (path, headers except Authorization's value, body) is appended to LOG.

Loopback only. Prints "PORT <port> PID <pid>" on stdout, then serves; exits by
itself when every scripted response was sent, or after 60 s in any case.
"""
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

scenario = json.load(open(sys.argv[1]))
log_path = sys.argv[2]
served = 0
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        global served
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n).decode("utf-8", "replace")
        auth = self.headers.get("Authorization", "")
        with lock:
            i = served
            served += 1
        with open(log_path, "a") as f:
            f.write(json.dumps({"i": i, "path": self.path, "has_auth": bool(auth),
                                "auth_ok": auth == "Bearer " + os.environ.get("KFORGE_TEST_EXPECT_KEY", "\0"),
                                "body": body}) + "\n")
        if i >= len(scenario):
            entry = {"status": 500, "body": "{\"error\": \"scenario exhausted\"}"}
        else:
            entry = scenario[i]
        import time
        time.sleep(entry.get("delay_s", 0))
        out = entry.get("body", "")
        if entry.get("echo_auth"):
            out = out.replace("{AUTH}", auth)
        data = out.encode()
        try:
            self.send_response(entry.get("status", 200))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in entry.get("headers", {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out first: that is what the test wanted
        if served >= len(scenario):
            threading.Thread(target=self.server.shutdown, daemon=True).start()


# Threads: a slow answer must not hold up the client's retry behind it.
ThreadingHTTPServer.daemon_threads = True
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Timer(60.0, server.shutdown).start()
print("PORT %d PID %d" % (server.server_address[1], os.getpid()), flush=True)
server.serve_forever()
os._exit(0)
