"""Settings the validation suite's worker applies before it fits (``bench_suite.py --set``),
so that each tuned constant of the library can be measured with and without it
(``bench_ablation.py``).

A setting is ``module.NAME=value`` (an ``advi`` module's constant: ``lbfgs.RUNAWAY=inf``) or
``option=value`` (an :func:`advi.fit` option: ``laplace_starts=1``); the value is a Python
literal, or ``inf`` / ``-inf``.

A constant is set in every ``advi`` module that holds the same object under its name (a
module that imported it with ``from .lbfgs import RUNAWAY`` reads its own binding), and in
the defaults of the functions and methods of ``advi`` whose parameter is the constant's name
in lower case (``hessian_max_dim: int = HESSIAN_MAX_DIM``), which Python binds once, when
the function is defined.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import sys
from typing import Any


def parse(setting: str) -> tuple[str, Any]:
    """``"name=value"`` -> (name, value).

    Raises:
        ValueError: where there is no ``=``, or the value is not a literal nor inf.
    """
    name, sep, text = setting.partition("=")
    if not sep or not name:
        raise ValueError(f"setting {setting!r} is not NAME=VALUE (module.NAME=VALUE for a "
                         "constant of advi, option=VALUE for an advi.fit option)")
    text = text.strip()
    if text.lstrip("+-") == "inf":
        return name.strip(), -math.inf if text.startswith("-") else math.inf
    try:
        return name.strip(), ast.literal_eval(text)
    except (ValueError, SyntaxError) as err:
        raise ValueError(f"setting {setting!r}: {text!r} is not a Python literal or inf"
                         ) from err


def _advi_modules() -> list[Any]:
    return [m for n, m in list(sys.modules.items()) if n == "advi" or n.startswith("advi.")]


def _functions(module: Any) -> list[Any]:
    """The functions of ``module`` and the methods of its classes defined there."""
    found = []
    for _, member in inspect.getmembers(module):
        if inspect.isfunction(member) and member.__module__ == module.__name__:
            found.append(member)
        elif inspect.isclass(member) and member.__module__ == module.__name__:
            found += [f for f in vars(member).values() if inspect.isfunction(f)]
    return found


def _set_defaults(function: Any, parameter: str, old: Any, value: Any) -> int:
    """Replace ``function``'s default of ``parameter`` where it is ``old``; 1 if it did."""
    names = function.__code__.co_varnames[:function.__code__.co_argcount]
    defaults = function.__defaults__ or ()
    offset = len(names) - len(defaults)
    if parameter in names[offset:] and defaults[names.index(parameter) - offset] is old:
        index = names.index(parameter) - offset
        function.__defaults__ = defaults[:index] + (value,) + defaults[index + 1:]
        return 1
    kw = function.__kwdefaults__ or {}
    if kw.get(parameter, None) is old and parameter in kw:
        function.__kwdefaults__ = {**kw, parameter: value}
        return 1
    return 0


def set_constant(name: str, value: Any) -> int:
    """Set the ``advi`` constant ``module.NAME`` to ``value`` everywhere it is read (module
    docstring); returns how many bindings changed.

    Raises:
        ValueError: where the module has no such constant.
    """
    module_name, _, constant = name.rpartition(".")
    module = importlib.import_module(f"advi.{module_name}")
    if not constant.isupper() or not hasattr(module, constant):
        raise ValueError(f"advi.{module_name} has no constant {constant!r}")
    old, changed = getattr(module, constant), 0
    for other in _advi_modules():
        if getattr(other, constant, None) is old:
            setattr(other, constant, value)
            changed += 1
        for function in _functions(other):
            changed += _set_defaults(function, constant.lower(), old, value)
    return changed


def apply(settings: list[str]) -> dict[str, Any]:
    """Apply ``settings`` (module docstring): constants are set at once; the options are
    returned, for the fits to pass to :func:`advi.fit`.

    Raises:
        ValueError: for a malformed setting or an unknown constant.
    """
    importlib.import_module("advi")
    options = {}
    for setting in settings:
        name, value = parse(setting)
        if "." in name:
            set_constant(name, value)
        else:
            options[name] = value
    return options
