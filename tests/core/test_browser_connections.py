"""The Connections page in a real browser: a researcher saves the language model's endpoint,
tests it, and the card shows the outcome by itself; the key is never on the page; no sideways
scroll at 1280 or 390 px."""

import pytest

from core.sealing import new_key
from tests.annotation.machine import openai_server as openai_chat
from tests.browser_jobs import JOB_DEADLINE_MS

SECRET_END = "9xYz"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_researcher_sets_and_tests_the_language_model_on_the_page(page, login, django_user_model, settings):
    settings.CONNECTIONS_KEY = new_key()
    fake = openai_chat.FakeOpenAI()
    url, server = openai_chat.serve(fake)
    try:
        django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)
        login("researcher")
        page.goto("/connections/")
        card = page.locator("#connection-chat")
        card.get_by_label("Base URL").fill(url)
        card.get_by_label("Model").fill(fake.model)
        card.locator("#id_chat-api_key").fill("sk-wrong-key-000" + SECRET_END)
        card.get_by_role("button", name="Save", exact=True).click()
        page.wait_for_load_state()
        card = page.locator("#connection-chat")
        assert card.locator("#chat-api_key").inner_text().count("…" + SECRET_END) == 1
        assert "sk-wrong" not in page.content()

        card.get_by_role("button", name="Test the connection").click()
        page.locator("#connection-test-chat .message.error").wait_for(
            timeout=JOB_DEADLINE_MS
        )  # shown when the job ends
        assert "401: 127.0.0.1 refused the API key" in page.locator("#connection-test-chat").inner_text()

        card = page.locator("#connection-chat")
        card.locator("#id_chat-api_key").fill(openai_chat.KEY)
        card.get_by_role("button", name="Save", exact=True).click()
        page.wait_for_load_state()
        page.locator("#connection-chat").get_by_role("button", name="Test the connection").click()
        page.locator("#connection-test-chat .message.success").wait_for(timeout=JOB_DEADLINE_MS)
        assert f"{fake.model} answered" in page.locator("#connection-test-chat").inner_text()

        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 800})
            page.goto("/connections/")
            assert page.evaluate("document.documentElement.scrollWidth") <= width, width
    finally:
        server.shutdown()
