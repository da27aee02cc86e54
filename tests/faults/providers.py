"""Crowd-provider test servers the fault tests publish to, one adapter per provider.

A fault test parametrised over ``PROVIDER_SERVERS`` runs once per provider. An adapter
starts its provider's compatible test server on loopback and tells the test:

- ``provider``: the name batches use (``annotation.providers`` registry);
- ``env``: the environment a process (worker, command) needs to reach the server;
- ``hits()``: provider HIT id -> the local HIT it was made for, for every HIT the server holds;
- ``create_calls()``: how many create-HIT requests the server received;
- ``slow(seconds)``: make every create-HIT request take that long (to interrupt publishing midway).

Adding a provider (Prolific, with its own test server) is one adapter class and one entry.
"""

from __future__ import annotations

import time

from annotation.models import Hit
from tests.annotation.fake_mturk import FakeMTurk, serve


class _SlowFakeMTurk(FakeMTurk):
    create_delay: float = 0.0

    def CreateHITWithHITType(self, body):
        time.sleep(self.create_delay)
        return super().CreateHITWithHITType(body)


class MTurkTestServer:
    """The MTurk-compatible server of tests/annotation/fake_mturk.py (HITs named by RequesterAnnotation)."""

    provider = "mturk"

    def __init__(self) -> None:
        self.fake = _SlowFakeMTurk()
        self.url, self._http = serve(self.fake)
        self.env = {
            "MTURK_ENDPOINT_URL": self.url,
            "MTURK_LIVE": "0",
            "MTURK_MAX_CALLS_PER_SECOND": "0",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        }

    def slow(self, seconds: float) -> None:
        self.fake.create_delay = seconds

    def hits(self) -> dict[str, str]:
        return {hit_id: hit["RequesterAnnotation"] for hit_id, hit in dict(self.fake.hits).items()}

    def create_calls(self) -> int:
        return self.fake.calls.count("CreateHITWithHITType")

    @staticmethod
    def group_of(hit: Hit) -> str:
        return f"{hit.batch.name} HIT {hit.position}"

    def stop(self) -> None:
        self._http.shutdown()


#: provider name -> its test server adapter.
PROVIDER_SERVERS = {"mturk": MTurkTestServer}
