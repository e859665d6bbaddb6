"""posteriordb's posteriors in the validation suite (``benchmarks/suite_posteriordb.py``):
each port takes the stored data its source names, and the builder stores a posterior's data
and reference moments from a posteriordb checkout."""

import inspect
import io
import json
import zipfile

import numpy as np
import pytest
from bench_scripts import load

posteriordb = load("suite_posteriordb")
build = load("suite_posteriordb_build")


def _zip(path, name, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, json.dumps(content))
    path.write_bytes(buffer.getvalue())


def _checkout(root, rng):
    """A posteriordb tree holding ARMA(1, 1)'s posterior: two chains of reference draws."""
    base = root / "posterior_database"
    (base / "posteriors").mkdir(parents=True)
    (base / "posteriors" / "arma-arma11.json").write_text(json.dumps(
        {"data_name": "arma", "reference_posterior_name": "arma-arma11"}))
    _zip(base / "data" / "data" / "arma.json.zip", "arma.json",
         {"T": 3, "y": [0.5, -1.0, 2.0]})
    chains = [{q: list(rng.normal(i, 1 + i, 50)) for i, q in
               enumerate(["mu", "phi", "theta", "sigma"])} for _ in range(2)]
    _zip(base / "reference_posteriors" / "draws" / "draws" / "arma-arma11.json.zip",
         "arma-arma11.json", chains)
    return chains


@pytest.mark.parametrize("name", sorted(posteriordb.MODELS))
def test_each_port_takes_the_data_its_source_keeps(name):
    model, _, _ = posteriordb.MODELS[name]
    _, keep = posteriordb.SOURCES[name]
    assert tuple(inspect.signature(model).parameters) == keep
    stored = json.loads(posteriordb.DATA.read_text())["posteriors"][name]
    assert tuple(stored["data"]) == keep
    assert len(stored["mean"]) == len(stored["sd"]) == len(stored["quantities"])


def test_the_builder_stores_the_kept_data_and_the_draws_moments(tmp_path, monkeypatch):
    chains = _checkout(tmp_path / "posteriordb", np.random.default_rng(0))
    entry = build.entry(tmp_path / "posteriordb", "arma11")
    assert entry["data"] == {"y": [0.5, -1.0, 2.0]} and entry["data_file"] == "arma.json"
    assert entry["quantities"] == ["mu", "phi", "theta", "sigma"]
    draws = np.array([[x for c in chains for x in c[q]] for q in entry["quantities"]])
    np.testing.assert_allclose(entry["mean"], draws.mean(1), atol=5e-7)
    np.testing.assert_allclose(entry["sd"], draws.std(1), atol=5e-7)

    stored = tmp_path / "stored.json"
    stored.write_text(json.dumps({"source": "s", "posteriors": {"kept": {"data": {}}}}))
    monkeypatch.setattr(posteriordb, "DATA", stored)
    build.main([str(tmp_path / "posteriordb"), "arma11"])
    written = json.loads(stored.read_text())["posteriors"]
    assert written == {"kept": {"data": {}}, "arma11": entry}
