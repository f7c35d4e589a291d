"""The end-to-end tests' own OTLP/HTTP collector (issue 40).

It decodes what mcp-edge exports with the official OpenTelemetry definitions (PyPI's
opentelemetry-proto, generated from the opentelemetry-proto repository), not with a reading of
our own, so an encoder that drifts from the schema fails here. It accepts POST /v1/traces,
/v1/metrics and /v1/logs (the audit log's records) in protobuf (application/x-protobuf) and in OTLP's JSON encoding (application/json,
where trace and span ids are hex, not the base64 that protobuf's JSON mapping uses), gzip or not,
answers 200 with an empty Export*ServiceResponse, and keeps every export: its raw bytes and the
request decoded. GET /received serves them back as JSON with ids as lowercase hex.

It can also play a collector that fails, for the dead-collector test: `hang` never answers,
`slow` answers after `delay` seconds, `refuse` answers 503. `sink`, for the bench, answers 200
at once and only counts exports and bytes (decoding and keeping them would take the CPU the
bench measures the worker by). The mode is set on the command line
or at run time with POST /mode {"mode": ..., "delay": ...}; DELETE /received forgets everything.

Usage: collector.py [--port N] [--mode ok|hang|slow|refuse|sink] [--delay SECONDS]
Prints {"port": N} on its first line once it listens on 127.0.0.1.
"""

import argparse
import base64
import binascii
import gzip
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

SIGNALS = {
    "/v1/traces": (trace_service_pb2.ExportTraceServiceRequest, trace_service_pb2.ExportTraceServiceResponse),
    "/v1/metrics": (metrics_service_pb2.ExportMetricsServiceRequest, metrics_service_pb2.ExportMetricsServiceResponse),
    "/v1/logs": (logs_service_pb2.ExportLogsServiceRequest, logs_service_pb2.ExportLogsServiceResponse),
}
# The fields OTLP/JSON spells as hex where protobuf's JSON mapping expects base64 (spans, their
# links, and metrics' exemplars).
ID_FIELDS = ("traceId", "spanId", "parentSpanId")

lock = threading.Lock()
state = {"mode": "ok", "delay": 0.0}
exports = []  # every export decoded: see Handler.do_POST
errors = []  # exports that did not decode, or decoded only by ignoring unknown fields
attempts = []  # every POST, in every mode but sink (a hung collector still sees the attempt)
sunk = {"exports": 0, "bytes": 0}  # what `sink` took


def hex_ids_to_base64(node, path=""):
    """OTLP/JSON ids (hex) → protobuf JSON mapping ids (base64), in place; raises on bad hex."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ID_FIELDS and isinstance(value, str):
                if value != value.lower():
                    raise ValueError(f"{path}.{key}: ids are lowercase hex in OTLP/JSON, got {value!r}")
                node[key] = base64.b64encode(binascii.unhexlify(value)).decode()
            else:
                hex_ids_to_base64(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            hex_ids_to_base64(item, f"{path}[{i}]")


def base64_ids_to_hex(node):
    """The decoded request as tests read it: ids as lowercase hex, in place."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ID_FIELDS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                base64_ids_to_hex(value)
    elif isinstance(node, list):
        for item in node:
            base64_ids_to_hex(item)


def decode(path, content_type, body):
    """The request message for `path` from `body`; a list of problems beside it."""
    request_type = SIGNALS[path][0]
    message = request_type()
    problems = []
    if content_type == "application/x-protobuf":
        message.ParseFromString(body)
    elif content_type == "application/json":
        document = json.loads(body)
        hex_ids_to_base64(document)
        try:
            json_format.ParseDict(document, message)
        except json_format.ParseError as strict:
            # Receivers must ignore unknown fields (OTLP spec); the tests still want to hear of them.
            problems.append(f"strict JSON parse: {strict}")
            message = request_type()
            json_format.ParseDict(document, message, ignore_unknown_fields=True)
    else:
        raise ValueError(f"unsupported content type {content_type!r}")
    return message, problems


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass  # the tests read /received, not a log

    def reply(self, status, body=b"", content_type="application/json", extra=()):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):
        if self.path == "/received":
            with lock:
                document = {"exports": exports, "errors": errors, "attempts": attempts, "sunk": sunk, "mode": state}
                body = json.dumps(document).encode()
            return self.reply(200, body)
        if self.path == "/health":
            return self.reply(200, b'{"ok":true}')
        self.reply(404, b'{"error":"not found"}')

    def do_DELETE(self):
        if self.path == "/received":
            with lock:
                exports.clear()
                errors.clear()
                attempts.clear()
                sunk.update(exports=0, bytes=0)
            return self.reply(200, b"{}")
        self.reply(404, b'{"error":"not found"}')

    def do_POST(self):
        body = self.read_body()
        if self.path == "/mode":
            change = json.loads(body or b"{}")
            with lock:
                state["mode"] = change.get("mode", "ok")
                state["delay"] = float(change.get("delay", 0))
            return self.reply(200, json.dumps(state).encode())
        if self.path not in SIGNALS:
            return self.reply(404, b'{"error":"not found"}')
        content_type = (self.headers.get("content-type") or "").split(";")[0].strip().lower()
        encoding = (self.headers.get("content-encoding") or "").lower()
        received_at = time.time()
        with lock:
            mode, delay = state["mode"], state["delay"]
            if mode == "sink":
                sunk["exports"] += 1
                sunk["bytes"] += len(body)
        if mode == "sink":
            empty = SIGNALS[self.path][1]()
            if content_type == "application/json":
                return self.reply(200, b"{}")
            return self.reply(200, empty.SerializeToString(), "application/x-protobuf")
        with lock:
            attempts.append({"path": self.path, "at": received_at, "mode": mode, "bytes": len(body)})
        if mode == "hang":
            # Never answers: the thread holds the connection until the process ends.
            while True:
                time.sleep(3600)
        if mode == "refuse":
            return self.reply(503, b'{"error":"collector refusing on purpose"}', extra=[("retry-after", "1")])
        if mode == "slow":
            time.sleep(delay)
        raw = gzip.decompress(body) if encoding == "gzip" else body
        record = {
            "path": self.path,
            "contentType": content_type,
            "contentEncoding": encoding,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "at": received_at,
            # The bytes as they came over the wire, and unzipped: tests search both for secrets.
            "raw": base64.b64encode(body).decode(),
            "body": base64.b64encode(raw).decode(),
        }
        try:
            message, problems = decode(self.path, content_type, raw)
        except Exception as failure:  # noqa: BLE001 - every failure is reported to the tests
            with lock:
                errors.append({**record, "error": f"{type(failure).__name__}: {failure}"})
            return self.reply(400, json.dumps({"error": str(failure)}).encode())
        document = json_format.MessageToDict(message)
        base64_ids_to_hex(document)
        record["request"] = document
        with lock:
            exports.append(record)
            for problem in problems:
                errors.append({**record, "error": problem})
        response = SIGNALS[self.path][1]()
        if content_type == "application/json":
            return self.reply(200, json_format.MessageToJson(response).encode(), "application/json")
        self.reply(200, response.SerializeToString(), "application/x-protobuf")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mode", choices=["ok", "hang", "slow", "refuse", "sink"], default="ok")
    parser.add_argument("--delay", type=float, default=0)
    options = parser.parse_args()
    state["mode"], state["delay"] = options.mode, options.delay
    server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
    server.daemon_threads = True
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
