"""genderbias.files.atomic: writes are atomic, output folders are never invented, one streaming hash."""

import hashlib
import stat

import pytest

from genderbias.files.atomic import atomic_path, atomic_write, check_writable, file_sha256


def test_atomic_write_replaces_the_file_and_leaves_it_readable(tmp_path):
    target = tmp_path / "out.tsv"
    target.write_text("old\n")
    atomic_write(target, lambda handle: handle.write("new\n"))
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["out.tsv"]  # no temporary file left


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path):
    target = tmp_path / "out.tsv"
    target.write_text("old\n")

    def half_then_fail(handle):
        handle.write("half")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        atomic_write(target, half_then_fail)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.tsv"]


def test_a_failed_first_write_leaves_nothing(tmp_path):
    target = tmp_path / "new.parquet"
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        tmp.write_bytes(b"partial")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_check_writable_names_the_missing_folder_and_refuses_a_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"the folder .*typo does not exist"):
        check_writable(tmp_path / "typo" / "out.csv")
    assert not (tmp_path / "typo").exists()  # never created on the fly
    with pytest.raises(IsADirectoryError, match="it is a folder"):
        check_writable(tmp_path)
    assert check_writable(tmp_path / "out.csv") == tmp_path / "out.csv"


def test_file_sha256_streams_in_blocks(tmp_path):
    path = tmp_path / "data.bin"
    data = bytes(range(256)) * 100
    path.write_bytes(data)
    assert file_sha256(path, block_size=7) == file_sha256(path) == hashlib.sha256(data).hexdigest()
