"""Steps every browser test takes: sign in with an API key, keep a screenshot."""

from __future__ import annotations

import re


def sign_in(page, stack, key: str, path: str = "/") -> None:
    page.goto(stack.url + path)
    page.wait_for_url(re.compile(r"/signin\?next="))
    page.fill("#api_key", key)
    page.click("#signin-form button[type=submit]")
    page.wait_for_url(re.compile(re.escape(stack.url + path) + r"$"))


def shot(page, tmp_path, name: str) -> None:
    page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
