"""Cross-site request forgery from the same site, in real Chromium: a page served on another port of
127.0.0.1 (the same *site*, so the SameSite=Strict session cookie goes along) tries to cancel the
signed-in victim's job, upload a dataset and start an audit run. Each is refused (403) and changes
nothing, while the same requests from the dashboard's own pages still work. The cookie holds a session
id, not the key, and signing out revokes it on the server."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from tests.support.browser import other_site, sign_in
from bench.common.jobs import job_spec

pytestmark = pytest.mark.integration

ATTACK = """<!doctype html><html><body><form id="f" method="post" target="sink" action="{api}/api/v1/jobs/{job}/cancel">
</form><iframe name="sink"></iframe><script>
(async () => {{
  const opts = {{method: "POST", mode: "no-cors", credentials: "include"}};
  const results = [];
  results.push(await fetch("{api}/api/v1/jobs/{job}/cancel", opts).then(() => "sent", (e) => String(e)));
  const form = new FormData();
  form.append("name", "planted-by-attacker");
  form.append("file", new Blob(["a,b\\n1,2\\n3,4\\n"], {{type: "text/csv"}}), "x.csv");
  results.push(await fetch("{api}/api/v1/datasets", {{...opts, body: form}}).then(() => "sent", (e) => String(e)));
  results.push(await fetch("{api}/api/v1/audits/{audit}/run", opts).then(() => "sent", (e) => String(e)));
  document.querySelector("iframe").addEventListener("load", () => {{
    document.title = "done " + results.join(",");
  }});
  document.getElementById("f").submit();  // a plain cross-origin form POST (a navigation) as well
}})();
</script></body></html>"""


@pytest.fixture
def attacker_site():
    """An HTTP server on another port of 127.0.0.1 serving the attack page set by the test."""
    pages: dict[str, bytes] = {}
    with other_site(lambda path: (200, [], pages[path]) if pages.get(path) else (404, [], b"")) as url:
        yield url, pages


def refusals(stack) -> list[str]:
    """The paths of the POSTs the API answered 403, from its JSON access log."""
    paths = []
    for line in (stack.home / "api.log").read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("method") == "POST" and entry.get("status") == 403:
            paths.append(entry["path"])
    return paths


def test_another_port_cannot_change_state_with_the_victims_cookie(web_stack, owner_key, dataset, succeeded_job,
                                                                  page, browser_context, attacker_site):
    with web_stack.client(owner_key) as client:
        job = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=5_000_000, time_limit_s=600))
        assert job.status_code == 202, job.text
        job_id = job.json()["id"]
        audit = client.post("/api/v1/audits", json={"job_id": succeeded_job["id"], "dataset_id": dataset["id"],
                                                    "metrics": [{"type": "accuracy", "threshold": 0.0}]})
        assert audit.status_code == 201, audit.text
        audit_id = audit.json()["id"]
        n_datasets = len(client.get("/api/v1/datasets").json())

    try:
        sign_in(page, web_stack, owner_key, f"/jobs/{job_id}")
        cookie = next(c for c in browser_context.cookies() if c["name"] == "fairsolve_session")
        assert cookie["value"].startswith("fss_") and owner_key not in cookie["value"]  # a session id, not the key

        origin, pages = attacker_site
        pages["/attack.html"] = ATTACK.format(api=web_stack.url, job=job_id, audit=audit_id).encode()
        before = len(refusals(web_stack))
        attack = page.context.new_page()
        attack.goto(origin + "/attack.html")
        attack.wait_for_function("document.title.startsWith('done')", timeout=30_000)
        assert attack.title() == "done sent,sent,sent"  # the browser did send each request, cookie and all
        assert "cross-origin request refused" in attack.frame_locator("iframe").locator("body").inner_text()
        refused = refusals(web_stack)[before:]
        assert sorted(refused) == sorted([f"/api/v1/jobs/{job_id}/cancel"] * 2 + ["/api/v1/datasets",
                                                                                  f"/api/v1/audits/{audit_id}/run"])

        with web_stack.client(owner_key) as client:
            state = client.get(f"/api/v1/jobs/{job_id}").json()
            assert state["status"] in ("queued", "running"), state
            assert len(client.get("/api/v1/datasets").json()) == n_datasets
            assert client.get(f"/api/v1/audits/{audit_id}/runs").json() == []

        # the dashboard's own pages still change state with the same cookie
        result = page.evaluate("""async ([job, audit]) => {
            const post = (url) => fetch(url, {method: "POST", credentials: "same-origin"}).then((r) => r.status);
            return [await post("/api/v1/audits/" + audit + "/run"), await post("/api/v1/jobs/" + job + "/cancel")];
        }""", [job_id, audit_id])
        assert result[0] == 202 and result[1] in (200, 202), result
        with web_stack.client(owner_key) as client:
            web_stack.wait_job(client, job_id, {"cancelled"}, timeout=60)
    finally:  # never leave the long job holding the stack's only worker
        with web_stack.client(owner_key) as client:
            client.post(f"/api/v1/jobs/{job_id}/cancel")

    # the key itself is never accepted from the cookie, and signing out revokes the session on the server
    pair = {c["name"]: c["value"] for c in browser_context.cookies() if c["name"].startswith("fairsolve_")}
    assert httpx.get(web_stack.url + "/api/v1/jobs", cookies={"fairsolve_session": owner_key}).status_code == 401
    assert httpx.get(web_stack.url + "/api/v1/jobs", cookies=pair).status_code == 200
    page.click(".signout button")
    # the sign-out's redirect, or the job page's own on its next poll's 401 (which carries ?next=): both sign in again
    page.wait_for_url(re.compile(r"/signin(\?next=[^&]*)?$"))
    assert httpx.get(web_stack.url + "/api/v1/jobs", cookies=pair).status_code == 401
