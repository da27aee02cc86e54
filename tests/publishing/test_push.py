"""--push: without HF_TOKEN the command refuses and names the upload command; with a token, a Hub that
cannot be reached (a closed port, a server that never answers) is a clean CommandError after a few tries.
No machine of the project reaches the Hub, so no test uploads anything."""

import contextlib
import socket

import pytest
from django.core.management import CommandError, call_command

from core.errors import ServiceError
from publishing.services.dataset import HubError, publish_dataset, push_folder, upload_command
from tests.publishing.test_dataset_folder import _kept_annotated, annotated  # noqa: F401 (fixture)


@pytest.fixture(autouse=True)
def _default_hub_client(monkeypatch):
    """Online (huggingface_hub reads HF_HUB_OFFLINE once, at import: another test's offline loading may
    have set it) with the default client factory after each test."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    yield
    from huggingface_hub import set_client_factory
    from huggingface_hub.utils._http import default_client_factory

    set_client_factory(default_client_factory)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the block ends


def test_without_a_token_the_command_writes_the_folder_and_names_the_upload(annotated, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.delenv("HF_TOKEN", raising=False)
    out = tmp_path / "d"
    with pytest.raises(CommandError) as refused:
        call_command(
            "publish_dataset", annotated.name, "--out", str(out), "--license", "mit", "--push", "me/gq", "--private"
        )
    message = str(refused.value)
    assert "HF_TOKEN is not set, so nothing was uploaded" in message
    assert f"hf upload me/gq {out} . --repo-type dataset --private" in message
    assert (out / "croissant.json").is_file()  # the folder is there to upload by hand


def test_a_bad_repository_id_or_folder_is_refused_before_any_request(annotated, tmp_path):  # noqa: F811
    publish_dataset(annotated, tmp_path / "d", "mit")
    with pytest.raises(ServiceError, match="OWNER/NAME"):
        push_folder(tmp_path / "d", "just-a-name", token="hf_x")
    with pytest.raises(ServiceError, match="not a dataset folder"):
        push_folder(tmp_path, "me/gq", token="hf_x")
    assert (
        upload_command("/x y", "me/gq")
        == "hf upload me/gq '/x y' . --repo-type dataset --exclude .publish_dataset.json"
    )


def test_an_unreachable_hub_is_a_clean_command_error(annotated, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")  # read at call time
    with pytest.raises(CommandError, match=r"upload of .* to the Hub dataset me/gq failed: ConnectError"):
        call_command(
            "publish_dataset", annotated.name, "--out", str(tmp_path / "d"), "--license", "mit", "--push", "me/gq"
        )


def test_a_silent_hub_times_out(annotated, tmp_path):  # noqa: F811
    publish_dataset(annotated, tmp_path / "d", "mit")
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(HubError, match="Timeout") as failed:
            push_folder(tmp_path / "d", "me/gq", token="hf_x", endpoint=endpoint, timeout=0.5)
        silent.setblocking(False)
        tries = 0
        with contextlib.suppress(BlockingIOError):
            while True:
                silent.accept()[0].close()
                tries += 1
    assert failed.value.upstream  # the API answers 502: trying later may work
    assert 1 <= tries <= 6, tries  # a few tries, each ended by its timeout: not a wait without end
