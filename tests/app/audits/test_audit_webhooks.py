"""Webhook destinations: private, loopback, link-local and unresolvable hosts are refused unless allowed."""

import pytest

from app.audits.webhooks import WebhookRefused, check_destination


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/hook", "http://10.0.0.5/x", "http://192.168.1.1/",
                                 "http://169.254.169.254/latest/meta-data", "http://[::1]/", "http://localhost/",
                                 "http://0.0.0.0/", "https://no-such-host.invalid/"])
def test_non_public_destinations_are_refused(url):
    with pytest.raises(WebhookRefused):
        check_destination(url, allow_private=False)


def test_public_address_passes_and_the_operator_may_allow_private():
    check_destination("https://8.8.8.8/hook", allow_private=False)  # a literal: no DNS lookup needed
    check_destination("http://127.0.0.1:8080/hook", allow_private=True)
