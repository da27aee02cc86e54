"""HTMLQuestion out, QuestionFormAnswers in: user data must survive the XML exactly."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from platforms.mturk.mturk_xml import (
    ANSWERS_NS,
    HTML_QUESTION_NS,
    MAX_QUESTION_BYTES,
    html_question,
    parse_answers,
)
from tests.platforms.mturk.fake_server import build_answers_xml

Q = f"{{{HTML_QUESTION_NS}}}"

NASTY = [
    "",
    "plain query",
    "]]>",
    "a]]>b]]>c",
    "]]]]>",
    "]]",
    "ends with ]]",
    "]",
    "<![CDATA[ nested ]]>",
    '<script>alert("x")</script>',
    "Tom & Jerry &amp; &lt;b&gt; &#x41; &nbsp;",
    "\"quotes\" and 'apostrophes'",
    "Männer über 50, naïve café, Ελληνικά, 日本語の検索",
    "emoji 👩\u200d🔬 🏳️\u200d⚧️ 🧔🏽",
    "tabs\tand\nnew lines\n",
    "carriage\r\nreturns\rhere ]]\r> and \r]]>",
    "\ud7ff\ue000\ufffd\U0010ffff",
]


def recovered_html(xml: str) -> str:
    root = ET.fromstring(xml)
    assert root.tag == f"{Q}HTMLQuestion"
    return root.find(f"{Q}HTMLContent").text or ""


@pytest.mark.parametrize("text", NASTY)
def test_html_content_comes_back_exactly(text):
    html = f"<!DOCTYPE html><html><body><p>{text}</p><p>{text}</p></body></html>"
    assert recovered_html(html_question(html)) == html


@pytest.mark.parametrize("text", NASTY)
def test_bare_nasty_content_comes_back_exactly(text):
    assert recovered_html(html_question(text)) == text


def test_html_question_shape():
    xml = html_question("<p>hi</p>", frame_height=600)
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.fromstring(xml)
    assert [child.tag for child in root] == [f"{Q}HTMLContent", f"{Q}FrameHeight"]
    assert root.find(f"{Q}FrameHeight").text == "600"
    assert html_question("x").count("<FrameHeight>0</FrameHeight>") == 1


def test_html_stays_in_cdata_not_parsed_as_markup():
    """The page's tags must be text inside HTMLContent, not child elements of it."""
    root = ET.fromstring(html_question("<form><input name='q-1'></form>]]><b>x</b>"))
    content = root.find(f"{Q}HTMLContent")
    assert list(content) == []


@pytest.mark.parametrize("char", ["\x00", "\x08", "\x0b", "\x0c", "\x1f", "\ufffe", "\uffff", "\ud800"])
def test_characters_xml_cannot_carry_are_refused_clearly(char):
    with pytest.raises(ValueError, match=f"U\\+{ord(char):04X} at position 4"):
        html_question(f"abcd{char}efg")


def test_pages_over_mturks_limit_are_refused():
    assert recovered_html(html_question("x" * 60000)) == "x" * 60000
    with pytest.raises(ValueError, match="at most 65535"):
        html_question("é" * (MAX_QUESTION_BYTES // 2))


def test_negative_frame_height_is_refused():
    with pytest.raises(ValueError):
        html_question("x", frame_height=-1)


# -- answers ---------------------------------------------------------------------------

MTURK_ANSWER = f"""<?xml version="1.0" encoding="ASCII"?>
<QuestionFormAnswers xmlns="{ANSWERS_NS}">
<Answer>
<QuestionIdentifier>q-1</QuestionIdentifier>
<FreeText>n</FreeText>
</Answer>
<Answer>
<QuestionIdentifier>q-2</QuestionIdentifier>
<FreeText>f</FreeText>
</Answer>
<Answer>
<QuestionIdentifier>hit-token</QuestionIdentifier>
<FreeText>abc&amp;def</FreeText>
</Answer>
<Answer>
<QuestionIdentifier>comment</QuestionIdentifier>
<FreeText></FreeText>
</Answer>
</QuestionFormAnswers>"""


def test_parse_answers_as_mturk_sends_them():
    assert parse_answers(MTURK_ANSWER) == {"q-1": "n", "q-2": "f", "hit-token": "abc&def", "comment": ""}


def test_parse_answers_accepts_bytes():
    assert parse_answers(MTURK_ANSWER.encode("ascii"))["q-2"] == "f"


def test_selection_answers_are_joined():
    xml = (
        f'<QuestionFormAnswers xmlns="{ANSWERS_NS}"><Answer><QuestionIdentifier>pick</QuestionIdentifier>'
        "<SelectionIdentifier>a</SelectionIdentifier><SelectionIdentifier>b</SelectionIdentifier>"
        "</Answer></QuestionFormAnswers>"
    )
    assert parse_answers(xml) == {"pick": "a|b"}


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        ("", "empty"),
        ("not xml at all", "malformed QuestionFormAnswers XML"),
        (f'<QuestionFormAnswers xmlns="{ANSWERS_NS}"><Answer>', "malformed QuestionFormAnswers XML"),
        ('<Other xmlns="urn:x"/>', "expected a QuestionFormAnswers document"),
        ('<QuestionFormAnswers xmlns="urn:wrong"/>', "expected a QuestionFormAnswers document"),
        (
            f'<QuestionFormAnswers xmlns="{ANSWERS_NS}"><Answer><FreeText>n</FreeText></Answer></QuestionFormAnswers>',
            "answer 1 has no QuestionIdentifier",
        ),
        (
            f'<QuestionFormAnswers xmlns="{ANSWERS_NS}">'
            "<Answer><QuestionIdentifier>q-1</QuestionIdentifier><FreeText>n</FreeText></Answer>"
            "<Answer><QuestionIdentifier>q-1</QuestionIdentifier><FreeText>m</FreeText></Answer>"
            "</QuestionFormAnswers>",
            "answered more than once",
        ),
        (
            f'<?xml version="1.0"?><!DOCTYPE lol [<!ENTITY lol "lol">]><QuestionFormAnswers xmlns="{ANSWERS_NS}"/>',
            "DTD",
        ),
    ],
)
def test_malformed_answers_raise_value_error(xml, message):
    with pytest.raises(ValueError, match=message):
        parse_answers(xml)


def test_an_empty_answer_document_is_no_answers():
    assert parse_answers(f'<QuestionFormAnswers xmlns="{ANSWERS_NS}"/>') == {}


@pytest.mark.parametrize("value", NASTY)
def test_build_then_parse_round_trips_exactly(value):
    answers = {"q-1": "n", "q-2": value, "comment": value + " & more", "näme 👩": value}
    xml = build_answers_xml(answers)
    assert parse_answers(xml) == answers
    root = ET.fromstring(xml)
    assert root.tag == f"{{{ANSWERS_NS}}}QuestionFormAnswers"


def test_build_refuses_what_xml_cannot_carry():
    with pytest.raises(ValueError, match="U\\+0001"):
        build_answers_xml({"q-1": "a\x01"})
    with pytest.raises(ValueError, match="empty"):
        build_answers_xml({"": "n"})
