"""The outside services this site connects to, declared once: their fields, which are secret,
and the environment variable that sets each (it beats a value stored on the site: ``core.selectors``).
The defaults here are the settings' (``config.settings`` reads them), so "set in the environment"
can be told from "left at its default". Pure (no Django).
"""

from __future__ import annotations

from dataclasses import dataclass

CHAT_API_URL_DEFAULT = "https://api.openai.com/v1/"
#: The request fields that can cap a chat answer's length, the first the default (the chat labeller's too).
CHAT_TOKEN_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens")
CHAT_TOKEN_LIMIT_DEFAULT = CHAT_TOKEN_LIMIT_FIELDS[0]
#: How a chat answer can be asked to be written, the first (free text) the default (the chat labeller's too).
CHAT_ANSWER_FORMATS = ("text", "json_schema", "json_object")
CHAT_ANSWER_FORMAT_DEFAULT = CHAT_ANSWER_FORMATS[0]
HUGGINGFACE_URL_DEFAULT = "https://huggingface.co"
#: Zenodo's REST API (its sandbox, for a trial deposit: https://sandbox.zenodo.org/api/).
ZENODO_API_URL_DEFAULT = "https://zenodo.org/api/"


@dataclass(frozen=True)
class ConnectionField:
    """One field of a connection: ``name`` in the API and form, ``setting`` the environment variable
    (and Django setting) that beats the site's value, ``secret`` sealed at rest and never shown again
    in full, ``choices`` the only values it takes (empty: any text)."""

    name: str
    label: str
    setting: str
    default: str = ""
    secret: bool = False
    url: bool = False
    help: str = ""
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConnectionKind:
    """An outside service: its ``kind`` (the URL segment and the stored row's key) and fields."""

    kind: str
    title: str
    fields: tuple[ConnectionField, ...]
    about: str = ""

    def field(self, name: str) -> ConnectionField:
        for field in self.fields:
            if field.name == name:
                return field
        raise KeyError(name)

    @property
    def secret_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields if f.secret)


CHAT = ConnectionKind(
    "chat",
    "Language-model endpoint",
    (
        ConnectionField(
            "api_url",
            "Base URL",
            "PRELABEL_API_URL",
            CHAT_API_URL_DEFAULT,
            url=True,
            help="Any OpenAI-compatible chat-completions endpoint, up to /v1/.",
        ),
        ConnectionField("model", "Model", "PRELABEL_MODEL", help="The model name the endpoint serves."),
        ConnectionField(
            "api_key", "API key", "PRELABEL_API_KEY", secret=True, help="Sent as a bearer token; empty: none."
        ),
        ConnectionField(
            "token_limit",
            "Answer-length field",
            "PRELABEL_TOKEN_LIMIT_FIELD",
            CHAT_TOKEN_LIMIT_DEFAULT,
            choices=CHAT_TOKEN_LIMIT_FIELDS,
            help="The request field that caps each answer: max_tokens (llama.cpp, vLLM, most servers) or "
            "max_completion_tokens (OpenAI's reasoning models); a refusal that names the other switches to it.",
        ),
        ConnectionField(
            "answer_format",
            "Answer format",
            "PRELABEL_ANSWER_FORMAT",
            CHAT_ANSWER_FORMAT_DEFAULT,
            choices=CHAT_ANSWER_FORMATS,
            help="text (the model writes the label), json_schema (structured outputs: OpenAI, vLLM, llama.cpp's "
            "llama-server) or json_object (with a schema: llama-cpp-python's server, llama-server); the structured "
            "ones hold the model to one of the four labels.",
        ),
    ),
    about="The chat pre-labeller (annotation.machine).",
)

HUGGINGFACE = ConnectionKind(
    "huggingface",
    "Hugging Face Hub",
    (
        ConnectionField(
            "endpoint", "Hub address", "HF_ENDPOINT", HUGGINGFACE_URL_DEFAULT, url=True, help="The Hub or a mirror."
        ),
        ConnectionField(
            "token", "Access token", "HF_TOKEN", secret=True, help="A write token, for publish_dataset --push."
        ),
    ),
    about="Uploading a published dataset folder to the Hub.",
)

ZENODO = ConnectionKind(
    "zenodo",
    "Zenodo",
    (
        ConnectionField(
            "api_url",
            "API address",
            "ZENODO_API_URL",
            ZENODO_API_URL_DEFAULT,
            url=True,
            help="Zenodo's REST API, or its sandbox (https://sandbox.zenodo.org/api/) for a trial deposit.",
        ),
        ConnectionField(
            "token",
            "Access token",
            "ZENODO_TOKEN",
            secret=True,
            help="A personal access token with the deposit:write and deposit:actions scopes.",
        ),
    ),
    about="Depositing a published dataset folder or a paper bundle on Zenodo (zenodo_deposit).",
)

#: Every connection of the site, by kind: the shared ones declared here, each crowd platform's added by
#: its app as Django starts (:func:`core.services.connections.register_connection`).
KINDS: dict[str, ConnectionKind] = {kind.kind: kind for kind in (CHAT, HUGGINGFACE, ZENODO)}


def hint(secret: str) -> str:
    """What is shown of a secret once stored: its last four characters, if it has at least 12."""
    if not secret:
        return ""
    return "…" + secret[-4:] if len(secret) >= 12 else "(set)"
