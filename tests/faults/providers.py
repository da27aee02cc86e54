"""Crowd-provider test servers the fault tests publish to, one adapter per provider.

A fault test parametrised over ``PROVIDER_SERVERS`` runs once per provider. An adapter
starts its provider's compatible test server on loopback and tells the test:

- ``provider``: the name batches use (``annotation.crowd.providers`` registry);
- ``env``: the environment a process (worker, command) needs to reach the server;
- ``batch_options``: the batch's ``provider_options``;
- ``made()``: remote id -> the local group it was made for, for every object the server holds
  (MTurk: one HIT per local HIT; Prolific: one study per batch);
- ``recorded(batches)``: local group -> the remote id the database recorded for it;
- ``create_calls()``: how many create requests (HIT, study) the server received;
- ``slow(seconds)``: make every create request take that long (to interrupt publishing midway);
- ``kill_point(batch)``: true once a publish is midway, a create request in flight.

``HIT_SERVERS`` are the providers that make one remote HIT per local HIT (the worker
tests count create calls per HIT); Prolific makes one study per batch, so it takes part
in the publish test only. Adding a provider is one adapter class and one entry.
"""

from __future__ import annotations

import time

from annotation.models import Batch, Hit
from platforms.prolific.provider import ProlificProvider
from tests.platforms.mturk.fake_server import FakeMTurk, serve
from tests.platforms.prolific import fake_server as fake_prolific


class _SlowFakeMTurk(FakeMTurk):
    create_delay: float = 0.0

    def CreateHITWithHITType(self, body):
        time.sleep(self.create_delay)
        return super().CreateHITWithHITType(body)


class MTurkTestServer:
    """The MTurk-compatible server of tests/platforms/mturk/fake_server.py (HITs named by RequesterAnnotation)."""

    provider = "mturk"
    batch_options: dict = {}

    def __init__(self) -> None:
        self.fake = _SlowFakeMTurk()
        self.url, self._http = serve(self.fake)
        self.env = {
            "MTURK_ENDPOINT_URL": self.url,
            "MTURK_LIVE": "0",
            "MTURK_MAX_CALLS_PER_SECOND": "1000",  # no client-side limit worth the name
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        }

    def slow(self, seconds: float) -> None:
        self.fake.create_delay = seconds

    def made(self) -> dict[str, str]:
        return {hit_id: hit["RequesterAnnotation"] for hit_id, hit in dict(self.fake.hits).items()}

    def recorded(self, batches: list[Batch]) -> dict[str, str | None]:
        return {self.group_of(hit): hit.provider_id for batch in batches for hit in batch.hits.all()}

    def kill_point(self, batch: Batch) -> bool:
        """Three HITs recorded and the fourth being created."""
        return batch.hits.exclude(provider_id=None).count() >= 3 and self.create_calls() > 3

    def create_calls(self) -> int:
        return self.fake.calls.count("CreateHITWithHITType")

    @staticmethod
    def group_of(hit: Hit) -> str:
        return f"{hit.batch.name} HIT {hit.position}"

    def stop(self) -> None:
        self._http.shutdown()


class _SlowFakeProlific(fake_prolific.FakeProlific):
    create_delay: float = 0.0

    def create_study(self, args, query, body):
        self.create_requests += 1
        time.sleep(self.create_delay)
        return super().create_study(args, query, body)


class ProlificTestServer:
    """The Prolific-compatible server of tests/platforms/prolific/fake_server.py (one study per batch)."""

    provider = "prolific"
    batch_options = {"estimated_minutes": 4}
    project = "project-faults"

    def __init__(self) -> None:
        self.fake = _SlowFakeProlific()
        self.fake.create_requests = 0
        self.url, self._http = fake_prolific.serve(self.fake)
        self.env = {
            "PROLIFIC_API_URL": f"{self.url}/api/v1/",
            "PROLIFIC_API_TOKEN": fake_prolific.TOKEN,
            "PROLIFIC_PROJECT_ID": self.project,
            "PROLIFIC_WORKSPACE_ID": "workspace-faults",
            "PROLIFIC_COMPLETION_URL": f"{self.url}/submissions/complete?cc=",
        }

    def slow(self, seconds: float) -> None:
        self.fake.create_delay = seconds

    def made(self) -> dict[str, str]:
        return {study_id: study["internal_name"] for study_id, study in dict(self.fake.studies).items()}

    def recorded(self, batches: list[Batch]) -> dict[str, str | None]:
        return {ProlificProvider.internal_name(batch): batch.hit_type_id or None for batch in batches}

    def create_calls(self) -> int:
        return self.fake.create_requests  # counted on arrival: the study is made only after the delay

    def kill_point(self, batch: Batch) -> bool:
        """The study's create request is in flight (its answer not yet sent)."""
        return self.create_calls() >= 1

    def stop(self) -> None:
        self._http.shutdown()


#: provider name -> its test server adapter.
PROVIDER_SERVERS = {"mturk": MTurkTestServer, "prolific": ProlificTestServer}
#: The providers that make one remote HIT per local HIT.
HIT_SERVERS = ("mturk",)
