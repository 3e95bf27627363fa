#!/usr/bin/env python3
"""A receiver of Pyroscope's /ingest protocol on 127.0.0.1, standing in for a
Pyroscope server (not installable here).  It checks what Pyroscope's
ingest handler needs and what cfiprof promises to send, answers, and
records every request as one JSON line.

Checks (a failed one is answered 400 with the reason, and recorded):
  - method POST, path /ingest;
  - query: name parses with Pyroscope's label-set syntax (an application
    name of [a-zA-Z0-9_.\\-/], then {k=v,...} with k [a-zA-Z_][a-zA-Z0-9_.]*
    not starting with "__", no value holding ',' or '}'), from and until
    unix seconds with from <= until, spyName, sampleRate > 0, units,
    aggregationType; no `format`, which Pyroscope would let override the
    multipart Content-Type (format=pprof: the whole body read as a pprof);
  - Content-Type multipart/form-data with a boundary; the body a well-formed
    multipart with a part named `profile` that gunzips to a protobuf holding
    a pprof's sample types and string table;
  - every header given with --require-header.

Use as a module (Receiver) or as a program:
  pyroscope_receiver.py --log FILE [--profiles DIR] [--require-header 'K: V']...
prints "port N" once listening, then takes commands on stdin, one per line,
answering "ok" to each: "status N" (answer N to valid pushes from now on,
200 at start), "stop" (close the listening socket: connections are
refused), "start" (listen again on the same port), "quit"."""

import argparse
import gzip
import http.server
import json
import os
import re
import socket
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'record'))
import test_record as tr  # noqa: E402

APP_RE = re.compile(r'[a-zA-Z0-9_.\-/]+')
KEY_RE = re.compile(r'[a-zA-Z_][a-zA-Z0-9_.]*')
QUERY_KEYS = {'name', 'from', 'until', 'spyName', 'sampleRate', 'units', 'aggregationType'}


class Reject(Exception):
    pass


def parse_name(name):
    """Pyroscope's `name`: APP{k=v,...}.  Returns (app, {k: v})."""
    m = re.fullmatch(r'([^{]*)\{(.*)\}', name, re.S)
    if not m:
        raise Reject('name %r: not APP{labels}' % name)
    app, body = m.group(1), m.group(2)
    if not APP_RE.fullmatch(app):
        raise Reject('name %r: application name %r has characters Pyroscope refuses' % (name, app))
    labels = {}
    if body:
        for pair in body.split(','):
            if '=' not in pair:
                raise Reject('name %r: label %r is not k=v' % (name, pair))
            k, v = pair.split('=', 1)
            if not KEY_RE.fullmatch(k) or k.startswith('__'):
                raise Reject('name %r: label name %r' % (name, k))
            if k in labels:
                raise Reject('name %r: label %r twice' % (name, k))
            if not v or '}' in v:
                raise Reject('name %r: label %r value %r' % (name, k, v))
            labels[k] = v
    return app, labels


def parse_multipart(body, content_type):
    """[(headers dict (lower-case names), payload bytes)] of a
    multipart/form-data body, checked strictly."""
    m = re.match(r'multipart/form-data;\s*boundary=("?)([^";]+)\1\s*$', content_type or '')
    if not m:
        raise Reject('Content-Type %r: not multipart/form-data with a boundary' % content_type)
    delim = b'--' + m.group(2).encode()
    if not body.startswith(delim + b'\r\n'):
        raise Reject('multipart body does not start with its boundary')
    end = body.find(b'\r\n' + delim + b'--')
    if end < 0:
        raise Reject('multipart body has no closing boundary')
    parts = []
    for raw in body[len(delim) + 2:end].split(b'\r\n' + delim + b'\r\n'):
        head, sep, payload = raw.partition(b'\r\n\r\n')
        if not sep:
            raise Reject('multipart part without a header block')
        headers = {}
        for line in head.split(b'\r\n'):
            k, colon, v = line.decode('latin-1').partition(':')
            if not colon:
                raise Reject('multipart part header %r' % line)
            headers[k.strip().lower()] = v.strip()
        parts.append((headers, payload))
    return parts


def part_name(headers):
    cd = headers.get('content-disposition', '')
    if not cd.startswith('form-data'):
        raise Reject('part Content-Disposition %r' % cd)
    m = re.search(r';\s*name="([^"]*)"', cd)
    return m.group(1) if m else None


def check_pprof(data):
    """The top-level fields of a profile.proto, checked well-formed (with
    the record suite's protobuf reader); returns the string table."""
    try:
        fields = list(tr._fields(data))
    except (tr.Fail, IndexError) as e:
        raise Reject('pprof: not a well-formed protobuf: %s' % (e or 'truncated'))
    strings = [v.decode('utf-8', 'replace') for fn, wt, v in fields if fn == 6 and wt == 2]
    if not any(fn == 1 for fn, _, _ in fields) or not strings or strings[0] != '':
        raise Reject('pprof: no sample types or string table')
    return strings


class Receiver:
    def __init__(self, log_path, profiles_dir=None, require_headers=(), port=0):
        self.log_path = log_path
        self.profiles_dir = profiles_dir
        self.require = [(k.strip().lower(), v.strip())
                        for k, v in (h.split(':', 1) for h in require_headers)]
        self.status = 200
        self.count = 0
        self.conns = set()
        self.lock = threading.Lock()
        self.server = None
        self.thread = None
        self.port = port
        self.start()

    def start(self):
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                with receiver.lock:
                    receiver.conns.add(self.connection)

            def finish(self):
                with receiver.lock:
                    receiver.conns.discard(self.connection)
                super().finish()

            def do_POST(self):
                receiver.handle(self, 'POST')

            def do_GET(self):
                receiver.handle(self, 'GET')

            def do_PUT(self):
                receiver.handle(self, 'PUT')

        class Server(http.server.ThreadingHTTPServer):
            allow_reuse_address = True
            daemon_threads = True

        self.server = Server(('127.0.0.1', self.port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        """Refuses connections from now on, and cuts the kept-alive ones,
        as a server that went down would."""
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
        with self.lock:
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def handle(self, req, method):
        n = int(req.headers.get('Content-Length') or 0)
        body = req.rfile.read(n) if n else b''
        url = urllib.parse.urlsplit(req.path)
        rec = {'time': time.time(), 'method': method, 'path': url.path,
               'raw_query': url.query,
               'headers': {k.lower(): v for k, v in req.headers.items()},
               'body_bytes': len(body)}
        try:
            rec.update(self.check(method, url, req.headers, body))
            status = self.status
        except Reject as e:
            rec['error'] = str(e)
            status = 400
        rec['status'] = status
        with self.lock:
            self.count += 1
            rec['seq'] = self.count
            if status == 200 and self.profiles_dir and 'profile' in rec:
                path = os.path.join(self.profiles_dir, '%06d.pb.gz' % self.count)
                with open(path, 'wb') as f:
                    f.write(rec['profile'])
                rec['profile_file'] = path
            rec.pop('profile', None)
            with open(self.log_path, 'a') as f:
                f.write(json.dumps(rec) + '\n')
        answer = b'' if status == 200 else (rec.get('error', 'status %d' % status) + '\n').encode()
        req.send_response(status)
        req.send_header('Content-Type', 'text/plain')
        req.send_header('Content-Length', str(len(answer)))
        req.end_headers()
        req.wfile.write(answer)

    def check(self, method, url, headers, body):
        if method != 'POST':
            raise Reject('method %s, not POST' % method)
        if url.path != '/ingest':
            raise Reject('path %s, not /ingest' % url.path)
        q = urllib.parse.parse_qs(url.query, keep_blank_values=True, strict_parsing=True)
        for k, v in q.items():
            if len(v) != 1:
                raise Reject('query parameter %s given %d times' % (k, len(v)))
        q = {k: v[0] for k, v in q.items()}
        if 'format' in q:
            raise Reject('format=%s: Pyroscope would read the body as that format, '
                         'not as the multipart form' % q['format'])
        if set(q) != QUERY_KEYS:
            raise Reject('query parameters %s, not %s' % (sorted(q), sorted(QUERY_KEYS)))
        app, labels = parse_name(q['name'])
        try:
            t0, t1, rate = int(q['from']), int(q['until']), int(q['sampleRate'])
        except ValueError:
            raise Reject('from, until, sampleRate: not integers')
        # Equal when an interval cut short (SIGTERM's) lasted under a second.
        if not 1e9 < t0 <= t1 < 1e10:
            raise Reject('from %d, until %d: not unix seconds with from <= until' % (t0, t1))
        if rate <= 0:
            raise Reject('sampleRate %d' % rate)
        if q['spyName'] != 'cfiprof' or q['units'] != 'samples' or q['aggregationType'] != 'sum':
            raise Reject('spyName, units, aggregationType: %s %s %s' %
                         (q['spyName'], q['units'], q['aggregationType']))
        for k, v in self.require:
            if headers.get(k) != v:
                raise Reject('header %s: %r, not %r' % (k, headers.get(k), v))
        if headers.get('Content-Length') is None:
            raise Reject('no Content-Length')
        parts = parse_multipart(body, headers.get('Content-Type'))
        names = [part_name(h) for h, _ in parts]
        if names.count('profile') != 1 or not set(names) <= {'profile', 'sample_type_config'}:
            raise Reject('multipart parts %s' % names)
        hdrs, payload = parts[names.index('profile')]
        try:
            pprof = gzip.decompress(payload)
        except (OSError, EOFError) as e:
            raise Reject('profile part does not gunzip: %s' % e)
        strings = check_pprof(pprof)
        return {'app': app, 'labels': labels, 'from': t0, 'until': t1, 'sample_rate': rate,
                'query': q, 'profile': payload, 'profile_bytes': len(payload),
                'part_headers': hdrs, 'strings': len(strings)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--log', required=True)
    ap.add_argument('--profiles')
    ap.add_argument('--port', type=int, default=0)
    ap.add_argument('--require-header', action='append', default=[])
    a = ap.parse_args()
    r = Receiver(a.log, a.profiles, a.require_header, a.port)
    print('port %d' % r.port, flush=True)
    listening = True
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == 'status':
            r.status = int(cmd[1])
        elif cmd[0] == 'stop' and listening:
            r.stop()
            listening = False
        elif cmd[0] == 'start' and not listening:
            r.start()
            listening = True
        elif cmd[0] == 'quit':
            break
        print('ok', flush=True)
    if listening:
        r.stop()


if __name__ == '__main__':
    main()
