"""A headless Chromium driven over the DevTools protocol (aiohttp's websocket client; no browser download):
open a page, run JavaScript in it, click by visible text. Debian's `chromium` is installed when missing and
the tests run as root with apt (as tests/cluster/start_slurm.sh does for SLURM); otherwise the caller skips, or
fails under DPIW_CI_STRICT=1 (CI)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def ensure_chromium() -> tuple[str | None, str]:
    """(the chromium binary, "") when it is here or apt installs it; (None, the reason) otherwise, with the
    failing apt command's own error (one test process at a time: apt holds a lock of its own)."""
    from helpers import one_at_a_time

    with one_at_a_time("apt"):
        return _ensure_chromium()


def _ensure_chromium() -> tuple[str | None, str]:
    exe = shutil.which("chromium")
    if exe:
        return exe, ""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return None, "no chromium, and it cannot be installed here (needs root and apt-get)"
    from helpers import apt_install

    reason = apt_install("chromium", recommends=True)
    if reason:
        return None, reason
    exe = shutil.which("chromium")
    return (exe, "") if exe else (None, "apt-get installed chromium but there is no chromium on PATH")


class Page:
    """One page of a headless Chromium: ``evaluate(js)`` returns the value, ``click_text(text)`` clicks the
    innermost visible element whose text is exactly ``text``."""

    def __init__(self, exe: str):
        self.profile = tempfile.mkdtemp(prefix="dpiw-chromium-")
        self.proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
                                      "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.time() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.1)
        self.port = int(port_file.read_text().split()[0])
        self.loop = asyncio.new_event_loop()
        self.loop.run_until_complete(self._connect())
        self.next_id = 0

    async def _connect(self):
        import aiohttp

        self.session = aiohttp.ClientSession()
        for _ in range(50):
            async with self.session.get(f"http://127.0.0.1:{self.port}/json/list") as r:
                pages = [t for t in await r.json(content_type=None) if t["type"] == "page"]
            if pages:
                break
            await asyncio.sleep(0.1)
        self.ws = await self.session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)

    async def _call(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        mid = self.next_id
        await self.ws.send_str(json.dumps({"id": mid, "method": method, "params": params or {}}))
        while True:
            msg = json.loads((await self.ws.receive()).data)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def call(self, method: str, params: dict | None = None) -> dict:
        return self.loop.run_until_complete(self._call(method, params))

    def evaluate(self, js: str):
        res = self.call("Runtime.evaluate", {"expression": js, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in res:
            raise RuntimeError(f"{js[:80]}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def open(self, url: str, ready_js: str = "document.readyState === 'complete'", timeout: float = 30) -> None:
        """Load ``url`` afresh (also when it is the current page) and wait until ``ready_js`` holds in it."""
        self.evaluate("window.__dpiw_previous_page = true")
        self.call("Page.navigate", {"url": url})
        self.wait(f"!window.__dpiw_previous_page && ({ready_js})", timeout)

    def wait(self, js: str, timeout: float = 15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = self.evaluate(js)
            if value:
                return value
            time.sleep(0.1)
        raise TimeoutError(f"waited {timeout} s for: {js}")

    def click_text(self, text: str) -> None:
        clicked = self.evaluate(f"""(() => {{
            const want = {json.dumps(text)};
            const all = Array.from(document.querySelectorAll('body *')).filter(
                el => el.offsetParent !== null && el.textContent.trim() === want);
            const inner = all.filter(el => !all.some(other => other !== el && el.contains(other)));
            if (!inner.length) return false;
            inner[0].click();
            return true;
        }})()""")
        if not clicked:
            raise LookupError(f"nothing on the page reads {text!r}")

    def frame_text(self, url_prefix: str, timeout: float = 15) -> str:
        """The visible text of the (first) child frame whose URL starts with ``url_prefix``, read inside that
        frame (an isolated world: a data: frame is another origin to the page)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            frames = self.call("Page.getFrameTree")["frameTree"].get("childFrames", [])
            match = [f["frame"] for f in frames if f["frame"].get("url", "").startswith(url_prefix)]
            if match:
                ctx = self.call("Page.createIsolatedWorld", {"frameId": match[0]["id"]})["executionContextId"]
                res = self.call("Runtime.evaluate", {"expression": "document.readyState === 'complete' ? "
                                                     "document.body.innerText : ''", "contextId": ctx,
                                                     "returnByValue": True})
                text = res["result"].get("value")
                if text:
                    return text
            time.sleep(0.1)
        raise TimeoutError(f"no frame {url_prefix!r} with text")

    def click_selector_in_row(self, row_text: str, selector: str) -> None:
        """Click ``selector`` inside the table row whose first cell ends with ``row_text``."""
        clicked = self.evaluate(f"""(() => {{
            const row = Array.from(document.querySelectorAll('tr')).find(
                tr => tr.cells.length && tr.cells[0].textContent.trim().endsWith({json.dumps(row_text)}));
            const target = row && row.querySelector({json.dumps(selector)});
            if (!target) return false;
            target.click();
            return true;
        }})()""")
        if not clicked:
            raise LookupError(f"no row ending with {row_text!r} holds {selector!r}")

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.ws.close())
            self.loop.run_until_complete(self.session.close())
        finally:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            shutil.rmtree(self.profile, ignore_errors=True)
            self.loop.close()
