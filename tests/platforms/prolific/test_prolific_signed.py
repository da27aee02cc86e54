# ruff: noqa: F811  (the fixtures of the other Prolific tests, imported by name)
"""Prolific's signed study URLs (issue 56), against the Prolific-compatible server.

The server signs each study URL as the reference's study field ``is_external_study_url_secure``
describes (RS256, ``kid``, the URL's parameters and ``workspace_id`` in the ``prolific`` claim,
two minutes of life) and publishes its keys at ``/.well-known/study/jwks.json``. The tokens the
tests forge are made with PyJWT from the claims the server signs, changed one at a time: what
is expected of each comes from the reference's list of checks, not from the site's code.
"""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse

from annotation import services
from annotation.models import Assignment, Batch
from platforms.prolific.arrivals.services import links as prolific_links
from platforms.prolific.client import ProlificError, ProlificUnknownOutcome
from platforms.prolific.jwks import services as jwks
from platforms.prolific.models import ProlificSession
from pooling.models import QuerySet
from pooling.services import create_query_set
from tests.platforms.prolific.fake_server import FaultShares, hexid
from tests.platforms.prolific.test_prolific import (  # noqa: F401
    _publish,
    client_class,
    make_prolific_batch,
    provider,
    server,
    sleeps,
)

WORKSPACE = "workspace-1"  # the server fixture's PROLIFIC_WORKSPACE_ID


@pytest.fixture(autouse=True)
def fresh_keys(db):
    jwks.forget()
    yield
    jwks.forget()


@pytest.fixture
def signed_server(server):
    server.study_workspace = WORKSPACE
    return server


@pytest.fixture
def signed_batch(query_set, signed_server, provider):
    return _publish(make_prolific_batch(query_set, name="signed", signed_urls=True), provider)


def _path(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def _arrive(browser, url: str):
    """Open the signed study URL as a browser does: the token, then the page it redirects to."""
    first = browser.get(_path(url))
    if first.status_code != 302 or "prolific_token" not in url:
        return first
    return browser.get(first["Location"])


def _nothing_recorded(batch, session: str, browser) -> None:
    assert not ProlificSession.objects.filter(session_id=session).exists()
    assert not Assignment.objects.filter(provider_assignment_id=session).exists()
    assert "prolific_signed" not in browser.session and "prolific_browser" not in browser.session


def test_a_signed_study_is_asked_for_and_its_participants_come_in_without_an_api_call(
    signed_server, signed_batch, client_class
):
    study = signed_server.studies[signed_batch.hit_type_id]
    assert study["is_external_study_url_secure"] is True
    calls_before = list(signed_server.calls)

    sessions = []
    for i in range(4):
        session, url = signed_server.start(signed_batch.hit_type_id, hexid(f"sig{i}"))
        assert "prolific_token=" in url
        browser = client_class()
        page = _arrive(browser, url)
        assert page.status_code == 302 and "/prolific/hits/" in page["Location"], page.content[:300]
        # The token left the address: the HIT page is reached from the clean start page.
        assert browser.get(page["Location"]).status_code == 200
        sessions.append(session)

    made = signed_server.calls[len(calls_before) :]
    assert "get_submission" not in made  # no API call per arrival
    assert made.count("jwks") == 1  # the key set fetched once, then cached
    kept = ProlificSession.objects.filter(session_id__in=sessions)
    assert kept.count() == 4 and {s.status for s in kept} == {prolific_links.SIGNED}
    assert {a.worker.identity.external_id for a in Assignment.objects.filter(provider_assignment_id__in=sessions)} == {
        hexid(f"sig{i}") for i in range(4)
    }


def test_a_reload_in_the_same_browser_keeps_the_place(signed_server, signed_batch, client_class):
    session, url = signed_server.start(signed_batch.hit_type_id, hexid("reload"))
    browser = client_class()
    first = _arrive(browser, url)
    again = _arrive(browser, url)  # the same token, the same browser: a reload
    assert first.status_code == again.status_code == 302 and first["Location"] == again["Location"]
    assert Assignment.objects.filter(provider_assignment_id=session).count() == 1


def _refused(signed_server, batch, client_class, url: str, session: str, words: bytes):
    browser = client_class()
    page = _arrive(browser, url)
    assert page.status_code == 403, page.content[:300]
    assert words in page.content
    assert b"open the study again" in page.content or b"another Prolific" in page.content
    _nothing_recorded(batch, session, browser)
    return page


def _with_token(url: str, token: str) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    query["prolific_token"] = token
    from urllib.parse import urlencode

    return f"{parts.scheme}://{parts.netloc}{parts.path}?{urlencode(query)}"


def _signed_url(signed_server, batch, pid: str) -> tuple[str, str, dict]:
    session, url = signed_server.start(batch.hit_type_id, hexid(pid))
    plain = url.split("&prolific_token=")[0]
    return session, plain, signed_server.study_claims(plain)


def test_forged_expired_and_misdirected_tokens_are_refused_and_nothing_is_recorded(
    signed_server, signed_batch, client_class, settings
):
    from cryptography.hazmat.primitives.asymmetric import rsa

    # Forged: the right kid, another key.
    session, plain, claims = _signed_url(signed_server, signed_batch, "forged")
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = signed_server.sign_study_claims(claims, key=other)
    _refused(signed_server, signed_batch, client_class, _with_token(plain, forged), session, b"not signed by Prolific")

    # Changed after signing: another participant's id in a genuine token's payload.
    import base64
    import json

    head, body, sig = signed_server.sign_study_claims(claims).split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["prolific"]["PROLIFIC_PID"] = hexid("someoneelse")
    tampered = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    _refused(
        signed_server,
        signed_batch,
        client_class,
        _with_token(plain, f"{head}.{tampered}.{sig}"),
        session,
        b"not signed by Prolific",
    )

    # Expired: signed three minutes ago (two minutes of life).
    old = signed_server.study_claims(plain, now=time.time() - 180)
    _refused(
        signed_server,
        signed_batch,
        client_class,
        _with_token(plain, signed_server.sign_study_claims(old)),
        session,
        b"has expired",
    )

    # Another audience: another site, and another batch of this site.
    for audience in (
        "https://elsewhere.example/annotation/prolific/signed/",
        "http://testserver/annotation/prolific/x/",
    ):
        wrong = dict(claims, aud=audience)
        _refused(
            signed_server,
            signed_batch,
            client_class,
            _with_token(plain, signed_server.sign_study_claims(wrong)),
            session,
            b"another site or study",
        )

    # Another workspace; and, with an organisation set here, a token without it.
    wrong = dict(claims, prolific={**claims["prolific"], "workspace_id": "workspace-2"})
    _refused(
        signed_server,
        signed_batch,
        client_class,
        _with_token(plain, signed_server.sign_study_claims(wrong)),
        session,
        b"another Prolific workspace",
    )
    settings.PROLIFIC_ORGANISATION_ID = "org-1"
    _refused(
        signed_server,
        signed_batch,
        client_class,
        _with_token(plain, signed_server.sign_study_claims(claims)),
        session,
        b"another Prolific organisation",
    )
    with_org = dict(claims, prolific={**claims["prolific"], "organisation_id": "org-1"})
    admitted = _arrive(client_class(), _with_token(plain, signed_server.sign_study_claims(with_org)))
    assert admitted.status_code == 302 and "/prolific/hits/" in admitted["Location"]
    assert "get_submission" not in signed_server.calls


def test_the_domain_audience_of_prolifics_page_is_accepted(signed_server, signed_batch, client_class):
    signed_server.token_audience = "domain"  # "The aud claim is the correct domain for your tool"
    _session, url = signed_server.start(signed_batch.hit_type_id, hexid("domain"))
    page = _arrive(client_class(), url)
    assert page.status_code == 302 and "/prolific/hits/" in page["Location"]


def test_a_replayed_token_is_refused_in_another_browser(signed_server, signed_batch, client_class):
    session, url = signed_server.start(signed_batch.hit_type_id, hexid("replayed"))
    owner = _arrive(client_class(), url)
    assert owner.status_code == 302
    thief = client_class()
    page = _arrive(thief, url)
    assert page.status_code == 403 and b"already used in another browser" in page.content
    assert "prolific_signed" not in thief.session
    assert Assignment.objects.filter(provider_assignment_id=session).count() == 1


@pytest.mark.parametrize("respell", ["pad-end", "pad-sig"])
def test_a_replayed_token_spelled_otherwise_is_refused_by_the_replay_guard(
    signed_server, signed_batch, client_class, respell
):
    """Base64url decoding ignores padding, so ``token + "=="`` (or the signature padded) verifies with
    the same signature: the replay guard keys the token's canonical spelling, not its text (issue 68)."""
    session, url = signed_server.start(signed_batch.hit_type_id, hexid(respell))
    assert _arrive(client_class(), url).status_code == 302
    token = parse_qs(urlsplit(url).query)["prolific_token"][0]
    if respell == "pad-end":
        other = token + "=="
    else:
        head, body, signature = token.split(".")
        other = f"{head}.{body}.{signature}" + "=" * (-len(signature) % 4 or 4)
    assert other != token
    thief = client_class()
    page = _arrive(thief, _with_token(url, other))
    assert page.status_code == 403 and b"already used in another browser" in page.content
    assert Assignment.objects.filter(provider_assignment_id=session).count() == 1


def test_keys_are_fetched_again_for_an_unknown_kid_but_not_for_every_made_up_one(
    signed_server, signed_batch, client_class
):
    _, url = signed_server.start(signed_batch.hit_type_id, hexid("k1"))
    assert _arrive(client_class(), url).status_code == 302
    assert signed_server.calls.count("jwks") == 1

    signed_server.rotate_study_key()  # Prolific signs with a new key from now on
    _, url = signed_server.start(signed_batch.hit_type_id, hexid("k2"))
    assert _arrive(client_class(), url).status_code == 302
    assert signed_server.calls.count("jwks") == 2

    # Made-up kids: refused, and the key set is not asked for again within UNKNOWN_KID_SECONDS of the
    # last fetch an unknown kid caused (the rotation's, just now) ...
    session, plain, claims = _signed_url(signed_server, signed_batch, "k3")
    for n in range(5):
        token = signed_server.sign_study_claims(claims, kid=f"made-up-{n}")
        _refused(signed_server, signed_batch, client_class, _with_token(plain, token), session, b"key Prolific")
    assert signed_server.calls.count("jwks") == 2
    # ... and once after it: one fetch for many made-up kids.
    jwks._memory["tried"] -= jwks.UNKNOWN_KID_SECONDS + 1
    for n in range(5, 10):
        token = signed_server.sign_study_claims(claims, kid=f"made-up-{n}")
        _refused(signed_server, signed_batch, client_class, _with_token(plain, token), session, b"key Prolific")
    assert signed_server.calls.count("jwks") == 3


def test_the_key_set_is_refreshed_when_old_and_kept_when_prolific_fails(signed_server, signed_batch, settings):
    settings.PROLIFIC_JWKS_REFRESH_SECONDS = 3600
    kid = signed_server.rotate_study_key()
    t0 = time.time()
    assert kid in jwks.verification_keys(kid, now=t0)
    assert kid in jwks.verification_keys(kid, now=t0 + 3599)
    assert signed_server.calls.count("jwks") == 1
    jwks._memory["fetched"] = t0  # this process's copy as fetched at t0
    assert kid in jwks.verification_keys(kid, now=t0 + 3601)
    assert signed_server.calls.count("jwks") == 2
    # Prolific failing: the last set is kept, the fetch bounded to two attempts.
    signed_server.standing["jwks"] = "error"
    assert kid in jwks.verification_keys(kid, now=t0 + 2 * 3601)
    assert signed_server.calls.count("jwks") == 4
    # Never more than a day, whatever is set.
    settings.PROLIFIC_JWKS_REFRESH_SECONDS = 10 * 86400
    assert jwks.refresh_seconds() == 86400


def test_with_no_key_set_at_all_the_participant_waits(signed_server, signed_batch, client_class):
    signed_server.standing["jwks"] = "error"
    session, url = signed_server.start(signed_batch.hit_type_id, hexid("nokeys"))
    browser = client_class()
    page = browser.get(_path(url))
    assert page.status_code == 503 and b'http-equiv="refresh"' in page.content
    _nothing_recorded(signed_batch, session, browser)
    del signed_server.standing["jwks"]
    jwks._memory["tried"] = 0.0
    assert _arrive(browser, url).status_code == 302


# -- the "not open yet" window (issue 56) -------------------------------------------------------
def _big_batch(n_queries: int, per_query: int, **options) -> Batch:
    query_set = create_query_set(
        "launch", [(str(i), f"launch query {i}") for i in range(n_queries)], origin=QuerySet.Origin.IMPORTED
    )
    batch_settings = services.BatchSettings(
        provider="prolific",
        assignments_per_query=per_query,
        queries_per_hit=1,
        reward="0.50",
        gold_per_hit=0,
        provider_options={"estimated_minutes": 2, **options},
    )
    return services.create_batch("launch", batch_settings, query_set=query_set, gold=[])


@pytest.mark.slow
def test_a_launch_of_120_under_throttling_with_lost_answers_admits_everyone_with_signed_urls(
    signed_server, provider, client_class, settings, django_capture_on_commit_callbacks, monkeypatch
):
    """The study goes live on Prolific while the site still counts it as publishing (the answers to the
    create and the publish lost, then Prolific failing); 120 participants take every place at once.
    Each one gets a page that waits and reloads, none a dead end; the first arrival starts the
    publication again, and once the site has caught up every one of them is let in."""
    monkeypatch.setattr(prolific_links, "RESUME_SECONDS", 0)  # a waiting arrival may start it again at once
    settings.PROLIFIC_WEBHOOKS = False
    batch = _big_batch(40, 3, signed_urls=True)  # 40 HITs x 3 = 120 places
    signed_server.shares = FaultShares(throttled=0.10, lost=0.05, retry_after=0, seed=56)
    # The first publication: the create's answer lost.
    signed_server.faults["create_study"] = ["lose_response"]
    with pytest.raises(ProlificUnknownOutcome):
        services.publish_batch(batch, provider)
    batch.refresh_from_db()  # as a new job reads it
    # The second: the study found and published, the answer to the publish lost, then Prolific failing
    # every read of the study: Prolific has it live, the site still counts it as publishing.
    signed_server.faults["transition_study"] = ["lose_response"]
    signed_server.faults["get_study"] = ["none"] + ["error"] * 6
    with pytest.raises(ProlificError):
        services.publish_batch(batch, provider)
    batch.refresh_from_db()
    assert len(signed_server.studies) == 1
    study_id = next(iter(signed_server.studies))
    assert signed_server.studies[study_id]["status"] == "ACTIVE"
    assert batch.status == Batch.Status.DRAFT and batch.hit_type_id == study_id

    participants = []
    for i in range(120):
        session, url = signed_server.start(study_id, hexid(f"l{i}"))
        participants.append((session, url, client_class()))
    assert signed_server._taken(study_id) == 120

    admitted, waited, dead_ends = set(), 0, []
    for session, url, browser in participants:  # the burst: every one opens the link
        with django_capture_on_commit_callbacks(execute=True):  # a job started is sent at the commit
            page = browser.get(_path(url))
            if page.status_code == 302 and "prolific_token" in url:
                page = browser.get(page["Location"])
        if page.status_code == 302:
            admitted.add(session)
        elif page.status_code in (202, 503) and b'http-equiv="refresh"' in page.content:
            waited += 1
        else:
            dead_ends.append((page.status_code, page.content[:200]))
    assert dead_ends == []
    assert waited > 0  # the window was real

    start = reverse("annotation:prolific-start", args=[batch.name])
    for _round in range(20):  # each waiting page reloads by itself; a worker picks up the publication
        for session, _url, browser in participants:
            if session in admitted:
                continue
            with django_capture_on_commit_callbacks(execute=True):
                page = browser.get(start)
            if page.status_code == 302:
                admitted.add(session)
            else:
                assert page.status_code in (202, 503) and b'http-equiv="refresh"' in page.content, page.content[:300]
        if len(admitted) == 120:
            break

    batch.refresh_from_db()
    assert batch.status == Batch.Status.PUBLISHED and batch.hit_type_id == study_id
    assert len(admitted) == 120
    assert len(signed_server.studies) == 1  # the create happened once
    assert "get_submission" not in signed_server.calls  # no API call per arrival
    held = Assignment.objects.filter(hit__batch=batch)
    assert held.count() == 120 and held.values("worker").distinct().count() == 120
    assert all(h.assignments.count() == 3 for h in batch.hits.all())


def test_an_unsigned_arrival_in_the_window_waits_and_the_poll_catches_the_site_up(
    server, provider, query_set, client_class, settings, django_capture_on_commit_callbacks
):
    """Without signed URLs the window is the same: a page that waits (never HTTP 400), and
    ``poll_prolific`` finds the study live on Prolific and finishes the publication."""
    settings.PROLIFIC_WEBHOOKS = False
    batch = make_prolific_batch(query_set, name="window")
    server.faults["transition_study"] = ["lose_response"]
    server.faults["get_study"] = ["none"] + ["error"] * 6
    with pytest.raises(ProlificError):
        services.publish_batch(batch, provider)
    batch.refresh_from_db()
    assert batch.status == Batch.Status.DRAFT and server.studies[batch.hit_type_id]["status"] == "ACTIVE"

    session, url = server.start(batch.hit_type_id, hexid("window1"))
    browser = client_class()
    page = browser.get(_path(url))
    assert page.status_code == 202 and b'http-equiv="refresh"' in page.content
    assert b"The study is opening" in page.content
    assert not Assignment.objects.filter(provider_assignment_id=session).exists()

    with django_capture_on_commit_callbacks(execute=True):
        started = prolific_links.resume_interrupted_publications(provider)
    assert started == [batch.name]
    batch.refresh_from_db()
    assert batch.status == Batch.Status.PUBLISHED
    assert server.calls.count("transition_study") == 1  # published once, the lost answer looked up
    page = browser.get(_path(url))
    assert page.status_code == 302 and "/prolific/hits/" in page["Location"]
    # A draft never sent to Prolific is not in the window: still refused at once.
    draft = make_prolific_batch(query_set, name="never")
    assert prolific_links.resume_interrupted_publications(provider) == []
    assert Batch.objects.get(pk=draft.pk).status == Batch.Status.DRAFT


def test_a_signed_participant_who_returns_or_times_out_frees_their_place(
    signed_server, signed_batch, provider, client_class
):
    from annotation.crowd.services.sync import sync_batch

    hit = signed_batch.hits.get(position=1)
    people = []
    for i in range(2):  # the first group's two places
        session, url = signed_server.start(signed_batch.hit_type_id, hexid(f"free{i}"))
        page = _arrive(client_class(), url)
        assert page.status_code == 302
        people.append(session)
    assert {a.hit_id for a in Assignment.objects.filter(provider_assignment_id__in=people)} == {hit.pk}
    signed_server.set_status(people[0], "RETURNED")
    signed_server.set_status(people[1], "TIMED-OUT")
    sync_batch(signed_batch, provider)
    assert set(Assignment.objects.filter(provider_assignment_id__in=people).values_list("status", flat=True)) == {
        Assignment.Status.ABANDONED
    }
    # The freed places are the first group's again: the next signed arrivals take them.
    for i in range(2):
        session, url = signed_server.start(signed_batch.hit_type_id, hexid(f"next{i}"))
        assert _arrive(client_class(), url).status_code == 302
        assert Assignment.objects.get(provider_assignment_id=session).hit_id == hit.pk


def test_tokens_of_another_algorithm_or_no_signature_or_garbage_are_refused(signed_server, signed_batch, client_class):
    """The classic JWT forgeries: ``alg: none``, HS256 keyed with Prolific's *public* key (an RS256 verifier
    that trusted the header would accept it), a token far too long, and text that is no JWT."""
    import base64
    import hashlib
    import hmac
    import json

    from cryptography.hazmat.primitives import serialization

    session, plain, claims = _signed_url(signed_server, signed_batch, "algs")
    kid, key = signed_server.study_keys[-1]

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    body = b64(json.dumps(claims).encode())
    unsigned = f"{b64(json.dumps({'alg': 'none', 'kid': kid, 'typ': 'JWT'}).encode())}.{body}."
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    head = b64(json.dumps({"alg": "HS256", "kid": kid, "typ": "JWT"}).encode())
    confused = f"{head}.{body}.{b64(hmac.new(public, f'{head}.{body}'.encode(), hashlib.sha256).digest())}"
    for token in (unsigned, confused, "x" * 9000, "not-a-jwt"):
        browser = client_class()
        page = _arrive(browser, _with_token(plain, token))
        assert page.status_code == 403, (token[:40], page.status_code)
        assert b"open the study again from there" in page.content
        _nothing_recorded(signed_batch, session, browser)
