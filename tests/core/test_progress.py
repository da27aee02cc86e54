"""core.progress: a tqdm bar on a terminal only; redirected output holds no bar residue."""

import io

from core.progress import Progress


def run_progress() -> None:
    with Progress("Reading coll.tsv", total=1000, unit="B") as progress:
        for done in range(0, 1001, 100):
            progress.update_to(done)


def test_no_bar_when_standard_error_is_not_a_terminal(capsys):
    run_progress()
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_no_bar_when_standard_error_is_a_file(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    run_progress()
    assert stream.getvalue() == ""


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as a shell's standard error does."""

    def isatty(self) -> bool:
        return True


def test_a_bar_on_a_terminal(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    run_progress()
    drawn = terminal.getvalue()
    assert "Reading coll.tsv" in drawn and "\r" in drawn
