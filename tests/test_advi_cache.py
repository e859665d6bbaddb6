"""The persistent compilation cache: on by default in a user folder, off by a variable."""

import subprocess
import sys

import jax

import advi

SNIPPET = "import advi, jax; print(jax.config.jax_compilation_cache_dir or 'OFF')"


def _cache_dir_in_child(env_extra: dict, tmp_path) -> str:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env_extra}
    out = subprocess.run([sys.executable, "-c", SNIPPET], env=env, capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def test_cache_is_on_by_default_in_the_user_cache_folder(tmp_path):
    assert _cache_dir_in_child({}, tmp_path) == str(tmp_path / ".cache" / "advi" / "jax")
    assert (tmp_path / ".cache" / "advi" / "jax").is_dir()


def test_cache_can_be_turned_off_or_moved(tmp_path):
    assert _cache_dir_in_child({"ADVI_COMPILATION_CACHE": "0"}, tmp_path) == "OFF"
    there = tmp_path / "elsewhere"
    assert _cache_dir_in_child({"ADVI_COMPILATION_CACHE": str(there)}, tmp_path) == str(there)


def test_a_folder_set_in_jax_is_kept(tmp_path):
    before = jax.config.jax_compilation_cache_dir
    try:
        jax.config.update("jax_compilation_cache_dir", str(tmp_path))
        assert advi.enable_compilation_cache() == tmp_path
        assert jax.config.jax_compilation_cache_dir == str(tmp_path)
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
