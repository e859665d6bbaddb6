"""The persistent compilation cache: off at import, on from the first fit in a user folder
unless the user configured JAX's or turned it off by a variable."""

import subprocess
import sys

import jax

import advi

SNIPPET = (
    "import advi, jax; print(jax.config.jax_compilation_cache_dir or 'OFF'); "
    "advi.fit(advi.from_log_density(lambda z: -0.5 * z @ z, dim=1), rng_key=jax.random.PRNGKey(0),"
    " eta=0.1, max_iter=2, eval_elbo=1, elbo_samples=2, khat_samples=0); "
    "print(jax.config.jax_compilation_cache_dir or 'OFF', "
    "jax.config.jax_persistent_cache_min_compile_time_secs)"
)


def _cache_dirs_in_child(env_extra: dict, child_env: dict) -> tuple[str, str]:
    """The cache folder after ``import advi`` and after a first fit (with the minimum
    compile time), in a fresh interpreter with ``child_env`` (HOME in the test's tmp_path)."""
    env = {**child_env, **env_extra}
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", SNIPPET], env=env,
                         capture_output=True, text=True, check=True)
    after_import, after_fit = out.stdout.strip().splitlines()[-2:]
    return after_import, after_fit


def test_cache_is_on_from_the_first_fit_in_the_user_cache_folder(tmp_path, child_env):
    folder = tmp_path / ".cache" / "advi" / "jax"
    assert _cache_dirs_in_child({}, child_env) == ("OFF", f"{folder} 0.05")
    assert folder.is_dir() and any(folder.iterdir())  # executables were written


def test_cache_can_be_turned_off_or_moved(tmp_path, child_env):
    assert _cache_dirs_in_child({"ADVI_COMPILATION_CACHE": "0"}, child_env) == ("OFF", "OFF 1.0")
    there = tmp_path / "elsewhere"
    assert _cache_dirs_in_child({"ADVI_COMPILATION_CACHE": str(there)}, child_env)[1] == (
        f"{there} 0.05")


def test_a_folder_set_by_the_user_is_kept_with_its_settings(tmp_path, child_env):
    env = {"JAX_COMPILATION_CACHE_DIR": str(tmp_path / "mine")}
    assert _cache_dirs_in_child(env, child_env)[1] == f"{tmp_path / 'mine'} 1.0"
    assert not (tmp_path / ".cache").exists()


def test_an_explicit_call_keeps_a_folder_set_in_jax(tmp_path):
    before = jax.config.jax_compilation_cache_dir
    try:
        jax.config.update("jax_compilation_cache_dir", str(tmp_path))
        assert advi.enable_compilation_cache() == tmp_path
        assert jax.config.jax_compilation_cache_dir == str(tmp_path)
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
