"""A minimal Chrome DevTools Protocol client over --remote-debugging-pipe (Python 3 standard
library only): Chromium reads NUL-terminated JSON commands on fd 3 and writes replies and events
on fd 4, so no WebSocket and no port are needed."""

import base64
import json
import os
import select
import subprocess
import tempfile
import time


class Browser:
    FLAGS = [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--ignore-certificate-errors", "--remote-debugging-pipe", "--window-size=1400,1000",
        "--hide-scrollbars",
    ]

    def __init__(self, binary="chromium"):
        self.profile = tempfile.mkdtemp(prefix="draplane-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # The child sees the command pipe as fd 3 and the reply pipe as fd 4, moved through high
        # numbers first since the pipes may themselves occupy 3 and 4. Python's own descriptors
        # are close-on-exec, so the browser inherits only these two.
        def setup():
            os.dup2(to_child_r, 200)
            os.dup2(from_child_w, 201)
            os.dup2(200, 3)
            os.dup2(201, 4)
            os.close(200)
            os.close(201)
        self.proc = subprocess.Popen(
            [binary, *self.FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=setup, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self._next_id = 0
        self._buffer = b""

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except Exception:  # the browser may be gone already
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # only the process this client started
            self.proc.wait()
        os.close(self._to_child)
        os.close(self._from_child)
        subprocess.run(["rm", "-rf", self.profile], check=False)

    def _read_message(self, deadline):
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child], [], [], left)[0]:
                raise TimeoutError("no reply from chromium")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=None, timeout=60):
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def open(self, url, before_scripts=""):
        """A new tab at `url`; returns its session. `before_scripts` (JavaScript) runs in every
        document of the tab before the page's own scripts."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable", session=session)
        self.call("Runtime.enable", session=session)
        if before_scripts:
            self.call("Page.addScriptToEvaluateOnNewDocument", {"source": before_scripts},
                      session=session)
        self.call("Page.navigate", {"url": url}, session=session)
        return session

    def evaluate(self, session, expression):
        result = self.call("Runtime.evaluate",
                           {"expression": expression, "returnByValue": True,
                            "awaitPromise": True}, session=session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, session, expression, what, timeout=90):
        """Re-evaluates `expression` until it is truthy (the timeout guards against hangs)."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(session, expression)
            if value:
                return value
            if time.monotonic() > deadline:
                shown = str(self.evaluate(session, "location.origin + location.pathname + "
                                          "(location.hash.includes('token=') ? ' #token=(not taken)'"
                                          " : location.hash) + ' (' + document.readyState + ')'"))
                shown += "\n" + str(self.evaluate(session, "document.body?.innerText.slice(0, 3000)"))
                shown += "\n" + str(self.evaluate(session, "JSON.stringify({"
                    "resources: performance.getEntriesByType('resource').map("
                    "e => e.name.split('?')[0] + ' ' + e.responseStatus + ' ' + "
                    "Math.round(e.duration) + 'ms'),"
                    "state: typeof state === 'undefined' ? null : {token: !!state.token, "
                    "loaded: [...state.loaded], errors: state.errors}})"))
                raise AssertionError(f"timed out waiting for {what}; the page shows:\n{shown}")
            time.sleep(0.25)

    def key(self, session, name, code, vk, text=""):
        """Presses and releases one key in the focused element (as a keyboard does)."""
        for kind in ("keyDown", "keyUp"):
            params = {"type": kind, "key": name, "code": code, "windowsVirtualKeyCode": vk}
            if text and kind == "keyDown":
                params["text"] = text
            self.call("Input.dispatchKeyEvent", params, session=session)

    def screenshot(self, session, path):
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True},
                         session=session)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
