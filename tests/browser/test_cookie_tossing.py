"""Login fixation by cookie tossing, in real Chromium (issue 31 item 4): a server on another port of 127.0.0.1
(cookies are not separated by port) sets ``fairsolve_session`` to the attacker's own session id in the victim's
browser. The victim's dashboard used to become the attacker's account (the victim's upload landed in the
attacker's datasets); now the session is bound to the browser that signed in, so the victim is signed out instead
and nothing lands anywhere. A tossed copy beside the real cookie (another ``Path``) signs out too; when the
attacker tosses both values of their pair, every page names the account signed in and the page itself notices
that this browser did not sign in as that account; and a session id is no API key."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.support.browser import other_site, sign_in

pytestmark = pytest.mark.integration


@pytest.fixture
def tossing_site():
    """An HTTP server on another port of 127.0.0.1 whose page answers with the Set-Cookie headers the test sets."""
    tossed: list[str] = []
    body = b"<!doctype html><title>tossed</title><p>nothing to see</p>"
    with other_site(lambda _path: (200, [("set-cookie", header) for header in tossed], body)) as url:
        yield url + "/", tossed


def attacker_session(stack, key: str) -> dict[str, str]:
    """The attacker signs in with their own key, as the dashboard's form does; their session's cookies."""
    answer = httpx.post(stack.url + "/signin", data={"api_key": key, "next": "/"},
                        headers={"origin": stack.url}, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    return {name: value for name, value in answer.cookies.items()}


def upload_from_dashboard(page) -> int:
    """What the dashboard's own script does on an upload: a same-origin multipart POST with the cookies."""
    return page.evaluate("""async () => {
        const form = new FormData();
        form.append("name", "victims-private-data");
        form.append("file", new Blob(["a,b\\n1,2\\n3,4\\n"], {type: "text/csv"}), "private.csv");
        const r = await fetch("/api/v1/datasets", {method: "POST", body: form, credentials: "same-origin"});
        return r.status;
    }""")


def names(stack, key: str) -> list[str]:
    with stack.client(key) as client:
        return [d["name"] for d in client.get("/api/v1/datasets").json()]


@pytest.mark.parametrize("path", ["/", "/datasets"])
def test_a_tossed_session_id_signs_the_victim_out_not_in_as_the_attacker(web_stack, owner_key, other_key, page,
                                                                        browser_context, tossing_site, path):
    site, tossed = tossing_site
    attacker = attacker_session(web_stack, other_key)
    sign_in(page, web_stack, owner_key, "/datasets")
    assert "browser-alice" in page.inner_text("#signed-in-as")  # every page names the account

    tossed.append(f"fairsolve_session={attacker['fairsolve_session']}; Path={path}; HttpOnly; SameSite=Lax")
    page.goto(site)  # the victim opens a page on another port of the same host
    assert page.title() == "tossed"
    sent = [c for c in browser_context.cookies() if c["name"] == "fairsolve_session"]
    assert attacker["fairsolve_session"] in [c["value"] for c in sent]  # the toss did reach the victim's browser

    page.goto(web_stack.url + "/datasets")
    page.wait_for_url(re.compile(r"/signin\?next=%2Fdatasets$"))  # signed out, not signed in as the attacker
    assert "victims-private-data" not in names(web_stack, other_key)
    assert upload_from_dashboard(page) == 401
    assert "victims-private-data" not in names(web_stack, other_key) + names(web_stack, owner_key)


def test_a_tossed_pair_is_caught_by_the_page_and_a_session_id_is_no_api_key(web_stack, owner_key, other_key,
                                                                            page, tossing_site):
    """Both values of the attacker's own pair tossed: the server cannot tell, but the page names the account and
    this origin's record of the account it signed in as (out of another port's reach) does not match, so the page
    signs out, revoking the tossed session. Signing in as another account through the form is not flagged."""
    site, tossed = tossing_site
    attacker = attacker_session(web_stack, other_key)
    sign_in(page, web_stack, owner_key, "/")
    tossed.extend(f"{name}={value}; Path=/; HttpOnly" for name, value in attacker.items())
    page.goto(site)
    page.goto(web_stack.url + "/datasets")
    page.wait_for_url(re.compile(r"/signin\?next=%2Fdatasets$"))
    assert httpx.get(web_stack.url + "/api/v1/datasets", cookies=attacker).status_code == 401  # revoked
    assert "victims-private-data" not in names(web_stack, other_key)

    page.fill("#api_key", other_key)  # a real second sign-in, as another account, in the same browser
    page.click("#signin-form button[type=submit]")
    page.wait_for_url(web_stack.url + "/datasets")
    page.wait_for_load_state("load")
    assert "browser-mallory" in page.inner_text("#signed-in-as") and page.locator("#session-mismatch").count() == 0

    fresh = attacker_session(web_stack, other_key)
    assert "Signed in as <strong>browser-mallory</strong>" in httpx.get(web_stack.url + "/datasets", cookies=fresh).text
    for headers in ({"authorization": f"Bearer {fresh['fairsolve_session']}"},
                    {"x-api-key": fresh["fairsolve_session"]},
                    {"authorization": f"Bearer {fresh['fairsolve_session']}.{fresh['fairsolve_bind']}"}):
        answer = httpx.get(web_stack.url + "/api/v1/datasets", headers=headers)
        assert answer.status_code == 401 and "not an API key" in answer.json()["detail"]
    assert httpx.get(web_stack.url + "/api/v1/datasets", cookies=fresh).status_code == 200
