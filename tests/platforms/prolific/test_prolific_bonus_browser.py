"""A researcher pays a Prolific batch's bonuses from its page in a real browser (Debian's Chromium):
the panel previews each participant's bonus and the total with Prolific's fee, and a double
click on *Pay* pays each participant once (the test server's ledger says so)."""

import pytest

from tests.platforms.prolific import test_prolific as base
from tests.platforms.prolific import test_prolific_bonus as bonus

server, provider, sleeps, client_class = base.server, base.provider, base.sleeps, base.client_class
batch = bonus.batch


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_double_click_on_pay_pays_each_participant_once(server, provider, batch, researcher, page, login):
    login("researcher")
    page.goto(f"/annotation/batches/{batch.name}/#bonuses")
    total = page.locator("#bonus-total")
    assert "$0.50 + $0.17 Prolific's fee = $0.67" in total.inner_text()
    assert page.locator("#bonus-preview tbody tr").count() == 3
    with page.expect_navigation():
        page.get_by_role("button", name="Pay $0.67").dblclick()
    page.wait_for_load_state()  # the pay's job page (it runs in the background)
    assert "Pay bonuses of bon" in page.content()
    page.goto(f"/annotation/batches/{batch.name}/#bonuses")
    assert bonus.ledger(server, batch) == bonus.OWED
    assert server.calls.count("pay_bonuses") == 1
    assert "paid already: $0.67 with fees" in page.locator("#bonus-total").inner_text()
    assert page.get_by_role("button", name="Pay $0.67").count() == 0
