#!/usr/bin/python3
"""A pyas2-lib trading partner for Wharf's live interop trial.

The Go test internal/protocol/as2/interop_pyas2_test.go drives it; it is not a product.
pyas2lib itself is imported from the directory named by WHARF_INTEROP_PYAS2LIB (a checkout
of pyas2-lib, e.g. tag v1.4.4), so the trial runs the library's own code on both ends of
each exchange it plays.

  pyas2_peer.py serve CONFIG OUTDIR
      Listens on 127.0.0.1 (a free port, printed as "listening <url>" on stdout), parses
      every POSTed AS2 message with pyas2lib, writes what it got to OUTDIR
      (<n>.json with the outcome and <n>.bin with the payload), and answers the MDN the
      message asked for: in the HTTP response (sync) or POSTed to its
      Receipt-Delivery-Option (async), signed when requested. Runs until stdin closes.

  pyas2_peer.py send CONFIG CASE
      Builds one message with pyas2lib from the CASE JSON, POSTs it, waits for the MDN
      (the HTTP response, or a POST to a listener of its own for async), verifies it with
      pyas2lib and prints the outcome as JSON on stdout.

CONFIG is JSON: {"org": {"as2_name", "key_pem"}, "partner": {"as2_name", "cert_pem"}},
where key_pem names a PEM file holding our certificate and unencrypted private key and
cert_pem the partner's certificate.
"""

import hashlib
import http.server
import json
import os
import sys
import threading
import urllib.error
import urllib.request

LIB = os.environ.get("WHARF_INTEROP_PYAS2LIB")
if not LIB:
    sys.exit("WHARF_INTEROP_PYAS2LIB is not set: name a pyas2-lib source directory")
sys.path.insert(0, LIB)

from pyas2lib import Mdn, Message, Organization, Partner  # noqa: E402

TIMEOUT = 30


def load_config(path):
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    with open(cfg["org"]["key_pem"], "rb") as f:
        key = f.read()
    with open(cfg["partner"]["cert_pem"], "rb") as f:
        cert = f.read()
    return cfg, key, cert


def raw_message(headers, body):
    """Joins HTTP headers and body the way pyas2lib's parsers expect them."""
    head = "".join(f"{k}: {v}\r\n" for k, v in headers)
    return head.encode("utf-8") + b"\r\n" + body


def read_request(handler):
    length = int(handler.headers.get("Content-Length", "0"))
    body = handler.rfile.read(length)
    return raw_message(handler.headers.items(), body)


def filename_of(payload):
    try:
        return payload.get_filename() or ""
    except Exception:  # pylint: disable=broad-except
        return ""


def serve(config_path, outdir):
    cfg, key, cert = load_config(config_path)
    org = Organization(as2_name=cfg["org"]["as2_name"], sign_key=key, decrypt_key=key)
    partner = Partner(
        as2_name=cfg["partner"]["as2_name"],
        verify_cert=cert,
        encrypt_cert=cert,
        validate_certs=False,
    )
    counter = {"n": 0}
    lock = threading.Lock()

    def record(result, payload):
        with lock:
            counter["n"] += 1
            n = counter["n"]
        base = os.path.join(outdir, str(n))
        with open(base + ".bin", "wb") as f:
            f.write(payload)
        with open(base + ".json.tmp", "w", encoding="utf-8") as f:
            json.dump(result, f)
        os.rename(base + ".json.tmp", base + ".json")

    def post_async(mdn):
        req = urllib.request.Request(
            mdn.mdn_url, data=mdn.content, headers=mdn.headers, method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
                resp.read()
        except (urllib.error.URLError, OSError) as e:
            print(f"async MDN to {mdn.mdn_url}: {e}", file=sys.stderr, flush=True)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the stdlib's name)
            raw = read_request(self)
            msg = Message()
            status, exception, mdn = msg.parse(
                raw,
                find_org_cb=lambda name: org if name == org.as2_name else None,
                find_partner_cb=lambda name: partner
                if name == partner.as2_name
                else None,
            )
            payload = b""
            if msg.payload is not None and not msg.payload.is_multipart():
                payload = msg.payload.get_payload(decode=True) or b""
            record(
                {
                    "message_id": msg.message_id,
                    "status": status,
                    "error": str(exception[0]) if exception[0] else "",
                    "signed": msg.signed,
                    "encrypted": msg.encrypted,
                    "compressed": msg.compressed,
                    "digest_alg": msg.digest_alg,
                    "enc_alg": msg.enc_alg,
                    "filename": filename_of(msg.payload) if msg.payload else "",
                    "sha256": hashlib.sha256(payload).hexdigest(),
                    "mdn": mdn.mdn_mode if mdn else None,
                },
                payload,
            )
            if mdn and mdn.mdn_mode == "SYNC":
                body = mdn.content
                self.send_response(200)
                for k, v in mdn.headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            if mdn:
                threading.Thread(target=post_async, args=(mdn,), daemon=True).start()

        def log_message(self, *args):  # quiet: the outcome files say what happened
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening http://127.0.0.1:{server.server_port}/as2", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # the driver closes stdin to stop us
    server.shutdown()


def await_async_mdn():
    """Starts a listener for one async MDN; returns its URL and a getter."""
    got = {}
    done = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            got["raw"] = read_request(self)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            done.set()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def wait():
        ok = done.wait(TIMEOUT)
        server.shutdown()
        return got.get("raw") if ok else None

    return f"http://127.0.0.1:{server.server_port}/mdn", wait


def send(config_path, case_path):
    cfg, key, cert = load_config(config_path)
    with open(case_path, encoding="utf-8") as f:
        case = json.load(f)
    mdn_url, wait = None, None
    if case.get("mdn_mode") == "ASYNC":
        mdn_url, wait = await_async_mdn()
    org = Organization(
        as2_name=cfg["org"]["as2_name"], sign_key=key, decrypt_key=key, mdn_url=mdn_url
    )
    partner = Partner(
        as2_name=cfg["partner"]["as2_name"],
        verify_cert=cert,
        encrypt_cert=cert,
        validate_certs=False,
        compress=case.get("compress", False),
        sign=case.get("sign", False),
        digest_alg=case.get("digest_alg", "sha256"),
        sign_alg=case.get("sign_alg", "rsassa_pkcs1v15"),
        encrypt=case.get("encrypt", False),
        enc_alg=case.get("enc_alg", "aes_256_cbc"),
        mdn_mode=case.get("mdn_mode"),
        mdn_digest_alg=case.get("mdn_digest_alg"),
    )
    with open(case["file"], "rb") as f:
        data = f.read()
    msg = Message(org, partner)
    try:
        msg.build(
            data,
            filename=case["filename"],
            content_type=case.get("content_type", "application/octet-stream"),
        )
    except Exception as e:  # pylint: disable=broad-except
        # e.g. RC2 or RC4 with an OpenSSL 3 that leaves them out: reported, not sent.
        print(json.dumps({"build_error": f"{type(e).__name__}: {e}"}))
        return
    result = {"message_id": msg.message_id, "mic": msg.mic.decode() if msg.mic else ""}
    req = urllib.request.Request(
        case["url"], data=msg.content, headers=msg.headers, method="POST"
    )
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
            result["http_status"] = resp.status
            raw = raw_message(resp.getheaders(), resp.read())
    except urllib.error.HTTPError as e:
        result["http_status"] = e.code
        result["http_body"] = e.read().decode("utf-8", "replace")[:2000]
        print(json.dumps(result))
        return
    if case.get("mdn_mode") == "ASYNC":
        raw = wait()
        if raw is None:
            result["mdn_status"] = "no async MDN arrived"
            print(json.dumps(result))
            return
    if case.get("mdn_mode"):
        mdn = Mdn()
        status, detail = mdn.parse(raw, find_message_cb=lambda mid, rcpt: msg)
        result["mdn_status"] = status
        result["mdn_detail"] = detail or ""
        result["mdn_signed"] = b"multipart/signed" in raw.split(b"\r\n\r\n", 1)[0]
        result["mdn_mic"] = mic_of(raw)
    print(json.dumps(result))


def mic_of(raw):
    """The Received-Content-MIC value of an MDN, or ""."""
    for line in raw.split(b"\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"received-content-mic":
            return value.strip().decode("ascii", "replace").split(",")[0].strip()
    return ""


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("serve", "send"):
        sys.exit(__doc__)
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    else:
        send(sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    main()
