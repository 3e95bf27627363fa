"""A minimal Chrome DevTools Protocol client over --remote-debugging-pipe:
headless Chromium reads NUL-terminated JSON commands on its fd 3 and
writes replies and events on its fd 4.  Enough to load a page, click with
real mouse events, answer a prompt() and take a screenshot -- no npm, no
websocket package.
"""
import base64
import json
import os
import shutil
import subprocess
import tempfile


class CDPError(Exception):
    pass


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, binary, width=1280, height=900):
        self.profile = tempfile.mkdtemp(prefix="cdp-profile-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def child_fds():
            # through copies: either pipe end may itself be fd 3 or 4
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        args = [binary, "--headless", "--no-sandbox", "--disable-gpu",
                "--remote-debugging-pipe", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking",
                "--disable-dev-shm-usage", f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}", "about:blank"]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=child_fds,
                                     pass_fds=(3, 4))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._next_id = 0
        self.events = []
        self.session = None
        self.dialog_answer = None
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"],
                                 flatten=True)["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")

    def _read_message(self):
        while b"\0" not in self._buf:
            chunk = os.read(self._from_chrome, 65536)
            if not chunk:
                raise CDPError("chromium closed the pipe")
            self._buf += chunk
        raw, _, self._buf = self._buf.partition(b"\0")
        return json.loads(raw)

    def _on_event(self, msg):
        self.events.append(msg)
        if msg.get("method") == "Page.javascriptDialogOpening" and self.dialog_answer is not None:
            answer, self.dialog_answer = self.dialog_answer, None
            self._send("Page.handleJavaScriptDialog", accept=True, promptText=answer)

    def _send(self, method, **params):
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params}
        if self.session:
            msg["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        return self._next_id

    def call(self, method, **params):
        want = self._send(method, **params)
        while True:
            msg = self._read_message()
            if msg.get("id") == want:
                if "error" in msg:
                    raise CDPError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self._on_event(msg)

    def wait_event(self, method):
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            msg = self._read_message()
            if msg.get("method") == method:
                return msg
            if "method" in msg:
                self._on_event(msg)

    def navigate(self, url):
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            raise CDPError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def click(self, x, y):
        """A real click: mouse moved, pressed and released at (x, y)."""
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        self.call("Input.dispatchMouseEvent", type="mousePressed", x=x, y=y,
                  button="left", clickCount=1)
        self.call("Input.dispatchMouseEvent", type="mouseReleased", x=x, y=y,
                  button="left", clickCount=1)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        self.session = None
        try:
            self._send("Browser.close")
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)
        shutil.rmtree(self.profile, ignore_errors=True)
