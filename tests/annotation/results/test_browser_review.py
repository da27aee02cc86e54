"""A researcher reviews agreement in a real browser and drills down to a disputed query's votes."""

import pytest

from platforms.inhouse.services.annotators import local_worker
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_agreement_page_drills_down_to_the_votes_of_a_disputed_query(local_batch, annotators, researcher, page, login):
    # Two annotators agree on everything but query 104 (Other vs Female): 104 is disputed.
    for user, override in zip(annotators[:2], [{}, {"104": "f"}], strict=True):
        while (assignment := next_assignment(user, local_batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment, override=override))
    worker_names = {local_worker(user).pseudonym for user in annotators[:2]}

    # The fixture's researcher (staff) logs in through the real login form.
    login(researcher.username)
    page.goto(f"/annotation/batches/{local_batch.name}/agreement/")
    assert page.get_by_role("heading", name="Set aside: disputed or too few votes").is_visible()
    page.get_by_role("link", name="104").first.click()

    assert page.locator("#majority").inner_text() == "disputed"
    votes = {
        (cells[0], cells[1])
        for cells in (row.locator("td").all_inner_texts() for row in page.locator("#votes tbody tr").all())
    }
    assert {label for _, label in votes} == {"Other or multiple genders", "Female"}
    assert {worker for worker, _ in votes} == worker_names  # pseudonyms, never account names
    assert not {user.username for user in annotators} & {worker for worker, _ in votes}
