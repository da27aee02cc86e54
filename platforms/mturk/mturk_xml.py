"""MTurk's question and answer XML: HTMLQuestion out, QuestionFormAnswers in.

Pure (no Django). The HIT page carries query text, so the XML survives anything in it: a literal ``]]>``,
a carriage return (parsers turn it into a line feed), characters XML cannot carry.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

HTML_QUESTION_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2011-11-11/HTMLQuestion.xsd"
ANSWERS_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/QuestionFormAnswers.xsd"

#: MTurk refuses question XML larger than 64 kB (65,535 bytes), whitespace included.
MAX_QUESTION_BYTES = 65535

# Characters XML 1.0 does not allow anywhere, not even as character references.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_DOCTYPE = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


def check_xml_chars(text: str, what: str) -> None:
    """``ValueError`` naming the first character of ``text`` that XML cannot carry."""
    bad = _NOT_XML.search(text)
    if bad:
        raise ValueError(
            f"{what} contains the character U+{ord(bad.group()):04X} at position {bad.start()}, "
            "which XML cannot carry; remove it from the data"
        )


def _cdata(text: str) -> str:
    """``text`` as CDATA that a parser gives back exactly (``]]>`` split, ``\\r`` as ``&#13;`` between sections)."""
    body = text.replace("]]>", "]]]]><![CDATA[>").replace("\r", "]]>&#13;<![CDATA[")
    return f"<![CDATA[{body}]]>"


def html_question(html: str, frame_height: int = 0) -> str:
    """The HTMLQuestion XML for a HIT page (``frame_height`` in pixels; 0: the whole window); ValueError for
    characters XML cannot carry and for pages over MTurk's 64 kB."""
    if not isinstance(html, str):
        raise TypeError("html must be a str")
    if int(frame_height) < 0:
        raise ValueError("frame_height cannot be negative")
    check_xml_chars(html, "the HIT page")
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<HTMLQuestion xmlns="{HTML_QUESTION_NS}">'
        f"<HTMLContent>{_cdata(html)}</HTMLContent>"
        f"<FrameHeight>{int(frame_height)}</FrameHeight>"
        "</HTMLQuestion>"
    )
    size = len(xml.encode("utf-8"))
    if size > MAX_QUESTION_BYTES:
        raise ValueError(
            f"the HIT's question XML is {size} bytes; MTurk accepts at most {MAX_QUESTION_BYTES} "
            "(put fewer queries in each HIT)"
        )
    return xml


def parse_answers(xml: str | bytes) -> dict[str, str]:
    """{QuestionIdentifier: FreeText} from an assignment's QuestionFormAnswers XML, exactly as submitted (else
    its SelectionIdentifiers joined by ``|``, or ``""``). ValueError for malformed XML, another root, an
    answer without identifier or answered twice, and any DTD (the only way to smuggle entity expansion)."""
    text = xml.decode("utf-8", errors="replace") if isinstance(xml, bytes) else xml
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the answer XML is empty")
    if _DOCTYPE.search(text):
        raise ValueError("the answer XML contains a DTD, which MTurk never sends; refusing to parse it")
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ValueError(f"malformed QuestionFormAnswers XML: {exc}") from None
    namespace, _, name = root.tag[1:].partition("}") if root.tag.startswith("{") else ("", "", root.tag)
    if name != "QuestionFormAnswers" or namespace not in (ANSWERS_NS, ""):
        raise ValueError(f"expected a QuestionFormAnswers document, got <{root.tag}>")
    ns = f"{{{namespace}}}" if namespace else ""

    answers: dict[str, str] = {}
    for number, answer in enumerate(root.findall(f"{ns}Answer"), start=1):
        identifier = answer.findtext(f"{ns}QuestionIdentifier")
        if not identifier:
            raise ValueError(f"answer {number} has no QuestionIdentifier")
        if identifier in answers:
            raise ValueError(f"question {identifier!r} is answered more than once")
        free_text = answer.find(f"{ns}FreeText")
        if free_text is not None:
            answers[identifier] = free_text.text or ""
        else:
            answers[identifier] = "|".join(e.text or "" for e in answer.findall(f"{ns}SelectionIdentifier"))
    return answers
