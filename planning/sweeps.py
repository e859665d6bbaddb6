"""The runs of a sweep and the folders they write: a sweep's override lists expanded as
Hydra's ``-m`` expands them, and a check that no two runs of a workflow or of a ``fit.py
-m`` sweep write into one folder (:mod:`advi_repro.planning.workflow`,
:mod:`advi_repro.planning.cli`)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

from hydra import compose
from hydra.core.override_parser.overrides_parser import OverridesParser

from advi_repro.planning.config import to_run


def expand_sweeps(overrides: Sequence[str]) -> list[list[str]]:
    """The override lists of a sweep, as ``-m`` runs them (Hydra's basic sweeper): ``a=1,2
    b=x`` -> ``[a=1 b=x], [a=2 b=x]``; without a sweep, the overrides themselves. A key given
    twice keeps its last value, in its first place.

    Raises:
        ValueError: an interval sweep (``interval(0,1)``), which ``-m`` cannot expand
            either; list the values (``a=1,2,3``) or give a range (``range(1,4)``).
    """
    choices: dict[str, list[str]] = {}
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        key = override.get_key_element()
        if not override.is_sweep_override():
            choices[key] = [f"{key}={override.get_value_element_as_str()}"]
        elif override.is_discrete_sweep():
            choices[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            raise ValueError(f"override {override.input_line!r}: an interval cannot be "
                             "swept; list the values (a=1,2,3) or give a range(1,4)")
    return [list(combination) for combination in itertools.product(*choices.values())]


class RunFolders:
    """The run folders of a set of runs (a workflow's, a ``fit.py -m`` sweep's), each
    claimed by one run: a second run in a folder is refused, naming the settings that tell
    the two apart, which the folder name (:func:`advi_repro.planning.paths.run_dir`) does not
    record."""

    def __init__(self) -> None:
        self._overrides: dict[Path, tuple[str, ...]] = {}

    def claim(self, folder: Path, overrides: Sequence[str]) -> None:
        """Records that the run of ``overrides`` writes ``folder``.

        Raises:
            ValueError: an earlier run claimed ``folder``; the message names both runs and
                the settings in which they differ.
        """
        earlier = self._overrides.get(Path(folder))
        if earlier is None:
            self._overrides[Path(folder)] = tuple(overrides)
            return
        if earlier == tuple(overrides):
            raise ValueError(f"the run {' '.join(overrides)} is listed twice (folder {folder})")
        before, after = _settings(earlier), _settings(overrides)
        differ = [f"{key} ({before.get(key, 'unset')} / {after.get(key, 'unset')})"
                  for key in dict.fromkeys([*before, *after]) if before.get(key) != after.get(key)]
        both = f"two runs would write {folder}: {' '.join(earlier)} and {' '.join(overrides)}"
        if not differ:
            raise ValueError(
                f"{both}; they are the same run: a later override sets a key an earlier one "
                "set (an experiment's method list and the workflow's overrides both set it), "
                "so both resolve to the same settings; set each key once (e.g. pick the method "
                "with method=... so the experiment's list is not used)")
        raise ValueError(
            f"{both}; they differ in {', '.join(differ)}, which the folder name does not "
            "record; to sweep over it, record it in the method's folder name (run_name() in "
            "planning/methods.py) or give each value its own results_dir"
        )


def _settings(overrides: Sequence[str]) -> dict[str, str]:
    """``{key: value}`` of a list of (non-sweep) overrides, the last value of a key winning."""
    parsed = OverridesParser.create().parse_overrides(list(overrides))
    return {o.get_key_element(): o.get_value_element_as_str() for o in parsed}


def refuse_shared_folders(overrides: Sequence[str], config_name: str = "config") -> None:
    """Refuses a ``fit.py -m`` sweep that would write two runs into one folder, before any
    runs: composes each run of the sweep (:func:`expand_sweeps`) with Hydra's global
    instance, which the Hydra app has initialised, and claims its folder.

    Raises:
        ValueError: as :meth:`RunFolders.claim`, or a config value out of range.
    """
    folders = RunFolders()
    for choice in expand_sweeps(overrides):
        folders.claim(to_run(compose(config_name, choice)).run_dir(), choice)
