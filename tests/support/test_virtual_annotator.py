"""The virtual annotator reads the level of the site's newest message from Django's own ``messages`` cookie."""

import pytest
from django.contrib.messages import constants
from django.contrib.messages.storage.base import Message
from django.contrib.messages.storage.cookie import CookieStorage
from django.test import RequestFactory

from tests.support.virtual_annotator import newest_message_level


@pytest.mark.parametrize("count", [1, 40])  # 40: long enough to be compressed
def test_newest_message_level_reads_djangos_messages_cookie(count):
    messages = [Message(constants.SUCCESS, "Thank you: your answers were recorded.")] * count
    messages.append(Message(constants.INFO, "You already submitted that HIT."))
    cookie = CookieStorage(RequestFactory().get("/"))._encode(messages)  # what the site sets
    if count > 1:
        assert cookie.startswith(".")  # the compressed form is read too
    assert newest_message_level(cookie) == constants.INFO
    assert newest_message_level("") is None
    assert newest_message_level("not-base64!:sig") is None
