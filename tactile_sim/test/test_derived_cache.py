"""Cache files of derived data: key names, checksummed payloads, atomic writes, unwritable folders."""

from __future__ import annotations

from tactile_sim import derived_cache as dc


def test_key_names_differ_for_different_part_lists():
    assert dc.key_name("ab", "c") == dc.key_name(b"ab", b"c")
    assert dc.key_name("ab", "c") != dc.key_name("a", "bc")  # length-prefixed parts
    assert dc.key_name("ab", "c") != dc.key_name("abc")
    assert len(dc.key_name("x")) == 32


def test_a_payload_reads_back_and_damage_reads_as_absent(tmp_path):
    path = tmp_path / "kind" / dc.key_name("k")
    assert dc.read_payload(path) is None
    dc.write_payload(path, b"payload bytes")
    assert dc.read_payload(path) == b"payload bytes"
    assert [p.name for p in path.parent.iterdir()] == [path.name], "no temporary file is left"
    data = bytearray(path.read_bytes())
    for damaged in (bytes(data[:-1]), bytes(data[:20]), bytes(data[:32]) + b"payload bytez"):
        path.write_bytes(damaged)
        assert dc.read_payload(path) is None


def test_an_unwritable_folder_is_ignored(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would be")
    dc.write_payload(blocker / "kind" / "name", b"data")
    assert dc.read_payload(blocker / "kind" / "name") is None


def test_the_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(dc.ENV_VAR, str(tmp_path))
    assert dc.cache_dir("fps") == tmp_path / "fps"
    monkeypatch.delenv(dc.ENV_VAR)
    assert dc.cache_dir("fps").parts[-3:] == (".cache", "tactile_sim", "fps")
