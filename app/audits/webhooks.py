"""Where alert webhooks may go: public addresses only, unless the operator allows private ones.

A webhook URL comes from a user, and the worker POSTs to it from inside the deployment, so an
unguarded URL could reach internal services (the database's admin port, a cloud metadata address
such as 169.254.169.254). Before each delivery the host is resolved and every address must be
globally routable; ``FAIRSOLVE_WEBHOOK_ALLOW_PRIVATE=true`` lifts this for deployments whose
receivers live on a private network. Redirects are never followed. (A DNS answer that changes
between this check and the connection is not covered.)
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit


class WebhookRefused(ValueError):
    pass


def check_destination(url: str, allow_private: bool) -> None:
    """Raise :class:`WebhookRefused` unless every address ``url``'s host resolves to is public."""
    if allow_private:
        return
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        infos = socket.getaddrinfo(host, parts.port or (443 if parts.scheme == "https" else 80),
                                   proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise WebhookRefused(f"webhook host {host!r} does not resolve: {exc}") from exc
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%", 1)[0])
        if not address.is_global:
            raise WebhookRefused(f"webhook host {host!r} resolves to a non-public address ({address}); "
                                 "set FAIRSOLVE_WEBHOOK_ALLOW_PRIVATE=true to allow it")
