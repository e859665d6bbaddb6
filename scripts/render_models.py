"""Snakemake script: one model's NumPyro source, as the paper shows its Stan code (Figure 2
for the Poisson model, Appendices F to J for the others), rendered into an HTML page for the
report (rules/report.smk).

The page has the model module's docstring (the model in mathematical notation), the source
of its ``model`` function and of the helpers from ``models`` that it calls, and, where
``params.diagram`` is true (the ``graphviz`` Python package and Graphviz's ``dot`` are
installed), NumPyro's plate diagram of the model (``numpyro.render_model``) drawn on the
module's ``example_data()``, tiny made-up data of the right shapes.

Run by Snakemake, or ``render_page(name, diagram=...)`` from Python (tests).
"""


import html
import inspect
import logging
import types
from collections.abc import Iterator
from typing import Any

from advi_repro import models
from advi_repro.planning.files import atomic_open
from advi_repro.planning.scriptlog import log_to

PLUMBING = ("advi_repro.models._checks", "advi_repro.models._plate")
"""Helper modules left out of the page: argument checks and row gathering, not the model."""


def _names(code: types.CodeType) -> Iterator[str]:
    """The global and attribute names ``code`` and the functions nested in it refer to."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def model_sources(module: types.ModuleType) -> list[tuple[str, str]]:
    """(qualified name, source) of ``module.model`` and of the functions and classes of the
    ``models`` package it calls (one level deep: e.g. the shared Poisson likelihood of the
    two factorisations, the ordered Gamma prior), leaving out :data:`PLUMBING`."""
    model = module.model
    names = list(dict.fromkeys(_names(model.__code__)))
    found: dict[str, Any] = {}
    for name in names:
        obj = module.__dict__.get(name)
        if isinstance(obj, types.ModuleType):  # e.g. factorisation.observe
            for attribute in names:
                if inspect.isfunction(member := getattr(obj, attribute, None)):
                    found.setdefault(f"{obj.__name__}.{attribute}", member)
        elif inspect.isfunction(obj) or inspect.isclass(obj):
            found.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    helpers = [(qualified, obj) for qualified, obj in found.items()
               if obj.__module__.startswith(f"{models.__name__}.")
               and obj.__module__ not in PLUMBING and obj is not model]
    return [(f"{module.__name__}.model", inspect.getsource(model))] + [
        (qualified, inspect.getsource(obj)) for qualified, obj in helpers
    ]


def plate_diagram_svg(name: str) -> str:
    """NumPyro's plate diagram of model ``name`` (with each site's distribution) as SVG."""
    import numpyro  # here: only pages with a diagram need it

    module = models.get(name)
    graph = numpyro.render_model(module.model, model_kwargs=module.example_data(),
                                 render_distributions=True)
    svg = graph.pipe(format="svg").decode()
    return svg[svg.index("<svg"):]  # drop the XML prologue and DOCTYPE for inline use


def highlight(source: str) -> str:
    """``source`` as HTML, syntax-highlighted by Pygments when it is installed."""
    try:
        from pygments import highlight as pygmentize
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return f"<pre>{html.escape(source)}</pre>"
    return pygmentize(source, PythonLexer(), HtmlFormatter(noclasses=True, nobackground=True))


def render_page(name: str, *, diagram: bool) -> str:
    """The HTML page of model ``name``: docstring, plate diagram (if ``diagram``), sources."""
    module = models.get(name)
    parts = [f"<h2>models/{name}.py</h2>",
             f"<pre>{html.escape(inspect.getdoc(module) or '')}</pre>"]
    if diagram:
        parts += ["<h3>Plate diagram (numpyro.render_model, on made-up data)</h3>",
                  plate_diagram_svg(name)]
    else:
        parts.append("<p><em>No plate diagram: it needs the graphviz Python package and "
                     "Graphviz's dot program, which are not installed here.</em></p>")
    for qualified, source in model_sources(module):
        parts += [f"<h3>{html.escape(qualified)}</h3>", highlight(source)]
    body = "\n".join(parts)
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{name}</title>"
            "<style>body{font-family:sans-serif;margin:1em}pre{font-size:13px}</style>"
            f"</head><body>\n{body}\n</body></html>\n")


def main() -> None:
    """Writes ``snakemake.output[0]`` for ``snakemake.wildcards.model``."""
    log_to(snakemake.log[0])  # noqa: F821
    name, diagram = snakemake.wildcards.model, bool(snakemake.params.diagram)  # noqa: F821
    with atomic_open(snakemake.output[0]) as f:  # noqa: F821
        f.write(render_page(name, diagram=diagram))
    logging.info("%s: source%s", name, " and plate diagram" if diagram else " only")


if __name__ == "__main__":
    main()
