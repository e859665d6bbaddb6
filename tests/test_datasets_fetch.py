"""Fetching the real data: from the mirror, from upstream (derived byte for byte), checked."""

import re

import pytest
import yaml
from conftest import skip_unless_fetchable
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from advi_repro.planning.datasets import fetch as fetching
from advi_repro.planning.paths import checkout_conf

CONF = checkout_conf(__file__)

MIRROR = fetching.default_mirror()
needs_mirror = pytest.mark.skipif(MIRROR is None, reason="no data mirror")


def _offline(url, timeout):
    raise fetching.urllib.error.URLError("[Errno -2] Name or service not known")


@needs_mirror
@pytest.mark.parametrize("name", ["election88", "frey_faces"])
def test_fetch_copies_checked_files_from_the_mirror(tmp_path, name):
    folder = fetching.fetch(name, tmp_path, mirror_dir=MIRROR)
    assert folder == tmp_path / name
    for file in fetching.FILES[name]:
        assert fetching.sha256_of(folder / file) == fetching.CHECKSUMS[name][file]
    assert sorted(p.name for p in folder.iterdir()) == sorted(fetching.FILES[name])


@needs_mirror
def test_a_corrupted_mirror_copy_is_refused_with_both_hashes(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "frey_faces").mkdir(parents=True)
    source = MIRROR / "frey_faces" / "frey_rawface.npy"
    corrupted = bytearray(source.read_bytes())
    corrupted[-1] ^= 0xFF
    (mirror / "frey_faces" / "frey_rawface.npy").write_bytes(bytes(corrupted))
    expected = fetching.CHECKSUMS["frey_faces"]["frey_rawface.npy"]
    actual = fetching.sha256_of(mirror / "frey_faces" / "frey_rawface.npy")
    with pytest.raises(ValueError) as error:
        fetching.fetch("frey_faces", tmp_path / "data", mirror_dir=mirror)
    message = str(error.value)
    assert "frey_rawface.npy" in message and expected in message and actual in message
    assert list((tmp_path / "data" / "frey_faces").iterdir()) == []


@needs_mirror
@pytest.mark.parametrize("name", ["election88", "frey_faces"])
def test_download_and_derive_reproduce_the_checked_files(tmp_path, monkeypatch, name):
    """Upstream URLs replaced by file:// URLs of the mirror's originals; no network needed."""
    originals = {file: (f"file://{MIRROR / name / file}",) for file in fetching.UPSTREAM[name]}
    monkeypatch.setitem(fetching.UPSTREAM, name, originals)
    empty_mirror = tmp_path / "empty"
    empty_mirror.mkdir()
    folder = fetching.fetch(name, tmp_path / "data", mirror_dir=empty_mirror)
    for file in (*fetching.FILES[name], *fetching.UPSTREAM[name]):
        assert fetching.sha256_of(folder / file) == fetching.CHECKSUMS[name][file]


@needs_mirror
def test_checked_files_already_in_place_are_kept(tmp_path):
    folder = fetching.fetch("election88", tmp_path, mirror_dir=MIRROR)
    stamp = (folder / "election88_full.csv").stat().st_mtime_ns
    fetching.fetch("election88", tmp_path, mirror_dir=tmp_path / "election88")
    assert (folder / "election88_full.csv").stat().st_mtime_ns == stamp


def test_unreachable_upstream_names_the_file(tmp_path, monkeypatch):
    missing = f"file://{tmp_path / 'nowhere.mat'}"
    monkeypatch.setitem(fetching.UPSTREAM, "frey_faces", {"frey_rawface.mat": (missing,)})
    (tmp_path / "empty").mkdir()
    with pytest.raises(OSError, match="frey_rawface.mat.*nowhere.mat"):
        fetching.fetch("frey_faces", tmp_path / "data", mirror_dir=tmp_path / "empty")


def test_a_file_the_mirror_lacks_is_named_when_the_fallback_download_fails(tmp_path,
                                                                          monkeypatch):
    missing = f"file://{tmp_path / 'nowhere.mat'}"
    monkeypatch.setitem(fetching.UPSTREAM, "frey_faces", {"frey_rawface.mat": (missing,)})
    mirror = tmp_path / "mirror"
    (mirror / "frey_faces").mkdir(parents=True)
    with pytest.raises(OSError, match=r"mirror \(mirror_dir\) .*frey_faces lacks frey_rawface"
                                      r"\.npy, frey_rawface\.mat; downloading the original"):
        fetching.fetch("frey_faces", tmp_path / "data", mirror_dir=mirror)


def test_offline_without_a_mirror_the_error_names_mirror_dir_and_where_it_looked(
        tmp_path, monkeypatch):
    monkeypatch.setattr(fetching.urllib.request, "urlopen", _offline)
    monkeypatch.setattr(fetching, "DEFAULT_MIRROR", tmp_path / "shared" / "data")
    with pytest.raises(OSError) as error:
        fetching.fetch("election88", tmp_path / "results")
    message = str(error.value)
    assert f"mirror_dir is not set and the default mirror {tmp_path}/shared/data does not " \
           "exist" in message
    assert "could not download election88.data.json" in message
    assert "Name or service not known" in message
    assert ("set mirror_dir to a folder that holds election88/election88_full.csv, "
            "election88_states.csv: snakemake ... --config 'overrides=[\"mirror_dir=") in message


def test_the_offline_message_names_the_config_form_the_workflow_takes(tmp_path, monkeypatch):
    monkeypatch.setattr(fetching.urllib.request, "urlopen", _offline)
    monkeypatch.setattr(fetching, "DEFAULT_MIRROR", tmp_path / "shared" / "data")
    with pytest.raises(OSError) as error:
        fetching.fetch("election88", tmp_path / "results")
    key, value = re.search(r"--config '(\w+)=(.*?)'", str(error.value)).groups()
    default = yaml.safe_load((CONF / "workflow.yaml").read_text())
    schema = str(CONF / "workflow.schema.yaml")
    given = {**default, key: yaml.safe_load(value)}  # as snakemake --config parses it
    validate(given, schema)
    assert given["overrides"] == ["mirror_dir=/path/to/mirror"]
    with pytest.raises(WorkflowError, match="Additional properties are not allowed"):
        validate({**default, "mirror_dir": "/path/to/mirror"}, schema)  # the form it is not


def test_tests_that_need_the_real_data_skip_offline_saying_how_to_set_the_mirror(
        tmp_path, monkeypatch):
    monkeypatch.setattr(fetching.urllib.request, "urlopen", _offline)
    monkeypatch.setattr(fetching, "DEFAULT_MIRROR", tmp_path / "shared" / "data")
    with pytest.raises(pytest.skip.Exception, match="needs the real data sets: no data "
                       "mirror: mirror_dir is not set"):
        skip_unless_fetchable(tmp_path / "data")


def test_unknown_data_set_and_missing_mirror_are_named(tmp_path):
    with pytest.raises(ValueError, match="'imageclef'.*election88, frey_faces"):
        fetching.fetch("imageclef", tmp_path)
    with pytest.raises(ValueError, match="no_such_dir"):
        fetching.fetch("election88", tmp_path, mirror_dir=tmp_path / "no_such_dir")


def test_sha256_of_a_known_string(tmp_path):
    (tmp_path / "abc").write_bytes(b"abc")
    digest = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert fetching.sha256_of(tmp_path / "abc") == digest
