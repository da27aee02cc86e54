"""The team in a real browser, at 1280 and 390 px: add annotators (a password shown once, a link
usable once), deactivate one, restrict a batch to a team and follow its members' progress live."""

import re

import pytest
from playwright.sync_api import expect

from platforms.inhouse.selectors import get_member
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for
from tests.browser_jobs import JOB_DEADLINE_MS

SHOTS = "/tmp/ux-team"


def _shoot(page, name: str, width: int) -> None:
    """Screenshots of the page in light and dark mode, for a person to look at."""
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=f"{SHOTS}-{width}-{name}-{scheme}.png", full_page=True)
    page.emulate_media(color_scheme="light")


def _log_in(page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state()


def _nav(page, name: str):
    return page.get_by_role("navigation", name="Main").get_by_role("link", name=name, exact=True)


def _add(page, username: str, access: str):
    _nav(page, "Team").click()
    page.get_by_label("Username").fill(username)
    page.get_by_label(access).check()
    with page.expect_navigation() as navigation:
        page.get_by_role("button", name="Add annotator").click()
    return navigation.value


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.slow
def test_researcher_manages_the_team_from_the_site(width, local_batch, annotators, researcher, page, browser):
    page.set_viewport_size({"width": width, "height": 900})
    _log_in(page, researcher.username, "pw-secret-123")

    # A generated password, shown once on a page no cache keeps.
    response = _add(page, "pw-made", "Generated password")
    assert "no-store" in response.headers["cache-control"]
    password = page.locator("#member-password").inner_text()
    assert len(password) >= 20 and "shown only this once" in page.locator(".messages").inner_text()
    _shoot(page, "credentials", width)
    with page.expect_navigation():
        _nav(page, "Team").click()
    assert password not in page.content()

    # A one-time link: the annotator chooses a password, then the link is refused.
    _add(page, "invited", "One-time link")
    link = page.locator("#member-link").inner_text()
    assert re.fullmatch(r"http://[^/]+/annotation/welcome/[^/]+/[^/]+/", link)

    annotator_context = browser.new_context(base_url=page.url.split("/annotation")[0])
    phone = annotator_context.new_page()
    phone.set_viewport_size({"width": width, "height": 900})
    phone.goto(link)
    assert "welcome/" in phone.url and phone.url.endswith("/set-password/")  # the token left the address bar
    phone.get_by_label("New password:", exact=True).fill("my-own-secret-31")
    phone.get_by_label("New password confirmation:", exact=True).fill("my-own-secret-31")
    _shoot(phone, "welcome", width)
    with phone.expect_navigation():
        phone.get_by_role("button", name="Set password").click()
    assert "Your password is set" in phone.locator(".messages").inner_text()
    _log_in(phone, "invited", "my-own-secret-31")
    assert _nav(phone, "Next task").is_visible()
    again = phone.goto(link)
    assert again.status == 410 and phone.locator("#link-refused").is_visible()
    _shoot(phone, "link-refused", width)

    _nav(page, "Team").click()
    expect(page.locator("#team-members tbody tr")).to_have_count(5)  # ann-a, ann-b, ann-c, invited, pw-made
    assert "active" in page.locator('tr[data-username="invited"]').inner_text()
    _shoot(page, "team", width)

    # Deactivate pw-made, who is logged in elsewhere: their session ends, logging in fails.
    other_context = browser.new_context(base_url=page.url.split("/annotation")[0])
    other = other_context.new_page()
    _log_in(other, "pw-made", password)
    assert _nav(other, "Next task").is_visible()
    page.get_by_role("link", name="pw-made").click()
    page.get_by_role("button", name="Deactivate pw-made").click()
    assert "can no longer log in" in page.locator(".messages").inner_text()
    assert page.locator("#member-status").inner_text() == "deactivated"
    _shoot(page, "member", width)
    other.goto("/annotation/next/")
    assert "/accounts/login/" in other.url
    _log_in(other, "pw-made", password)
    assert "/accounts/login/" in other.url and not _nav(other, "Next task").is_visible()

    # Restrict the batch to invited: the outsider ann-b gets no HIT of it; invited does.
    page.goto(f"/annotation/batches/{local_batch.name}/")
    team_form = page.locator("#team-form")
    team_form.get_by_label("invited", exact=True).check()
    team_form.get_by_role("button", name="Save team").click()
    assert "restricted to its team: invited" in page.locator(".messages").inner_text()
    assert page.locator("#team-scope").inner_text() == "Only this team may work on the batch."
    assert page.locator('#team-progress tr[data-username="invited"] .answered').inner_text() == "0 / 2"

    outsider_context = browser.new_context(base_url=page.url.split("/annotation")[0])
    outsider = outsider_context.new_page()
    _log_in(outsider, "ann-b", "pw-secret-123")
    outsider.goto("/annotation/next/")
    assert "No more HITs" in outsider.content()

    phone.goto("/annotation/next/")
    assert re.search(r"/annotation/assignments/\d+/$", phone.url)
    invited = get_member("invited")
    assignment = next_assignment(invited)
    submit_local_assignment(assignment, answers_for(assignment))
    # The batch page follows the member's progress by itself (htmx polls while published).
    page.locator('#team-progress tr[data-username="invited"] .answered').filter(has_text="1 / 2").wait_for(
        timeout=JOB_DEADLINE_MS
    )
    _shoot(page, "batch-team", width)
    page.goto("about:blank")  # stop polling before the live server stops
    for context in (annotator_context, other_context, outsider_context):
        context.close()
