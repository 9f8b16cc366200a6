"""Thin client for the internal ledger service.

Requests are built by ``build_request`` and handed to a transport callable that
performs the actual HTTP exchange, so this module never opens a socket itself.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

BASE_URL = "https://ledger.svc.corvid.internal"
USER_AGENT = "corvid-ledgerclient/0.4"


@dataclass
class Request:
    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None


class LedgerError(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"ledger returned {status}: {detail}")
        self.status = status


def build_request(method: str, path: str, body: Any = None) -> Request:
    """Return the Request for ``method`` on ``path`` (a path relative to BASE_URL)."""
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    data = None
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    return Request(method=method.upper(), url=BASE_URL + path, headers=headers, body=data)


Transport = Callable[[Request], "tuple[int, bytes]"]


class LedgerClient:
    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        status, payload = self._transport(build_request(method, path, body))
        if status >= 400:
            raise LedgerError(status, payload.decode("utf-8", "replace"))
        return json.loads(payload) if payload else None

    def get_account(self, account_id: str) -> dict:
        return self._call("GET", f"/accounts/{account_id}")

    def list_entries(self, account_id: str, limit: int = 50) -> list:
        return self._call("GET", f"/accounts/{account_id}/entries?limit={limit}")

    def post_entry(self, account_id: str, amount_cents: int, memo: str) -> dict:
        return self._call("POST", f"/accounts/{account_id}/entries",
                          {"amount_cents": amount_cents, "memo": memo})

    def void_entry(self, entry_id: str) -> None:
        self._call("DELETE", f"/entries/{entry_id}")
