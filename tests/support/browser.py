"""Steps every browser test takes: sign in with an API key, keep a screenshot."""

from __future__ import annotations

import http.server
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def sign_in(page, stack, key: str, path: str = "/") -> None:
    page.goto(stack.url + path)
    page.wait_for_url(re.compile(r"/signin\?next="))
    page.fill("#api_key", key)
    page.click("#signin-form button[type=submit]")
    page.wait_for_url(re.compile(re.escape(stack.url + path) + r"$"))


def shot(page, tmp_path, name: str) -> None:
    page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)


@contextmanager
def other_site(answer: Callable[[str], tuple[int, list[tuple[str, str]], bytes]]) -> Iterator[str]:
    """An HTTP server on another port of 127.0.0.1 (another origin, the same host: cookies are shared) whose GET of
    a path is ``answer(path)``: (status, extra headers, HTML body). Yields its base URL (no trailing slash)."""
    from bench.common.stack import free_port

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            status, headers, body = answer(self.path)
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
