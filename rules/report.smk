# The report beyond the accuracy figures: Figure 3 (E0, the transformation), each model's
# NumPyro source beside its figure (the paper's Figure 2 and appendix code), the
# reproduction table (claims.csv and its page claims.html: each claim of the paper, what
# this run measured, whether it held here; criteria in analysis/claims.py), and the page of
# the runs shown (runs.html: scale, seeds, scoring, data sizes, from their info.json).
import importlib.util
import shutil

from advi_repro.analysis.claims import check_claim_id

FIG3 = f"{RESULTS}/figures/fig3_transformations"
MODEL_PAGE = f"{RESULTS}/models/{{model}}.html"
CLAIMS = f"{RESULTS}/claims.csv"
CLAIMS_PAGE = f"{RESULTS}/claims.html"
RUNS_PAGE = f"{RESULTS}/runs.html"
# Plate diagrams need the graphviz package and Graphviz's dot program; without them the
# model pages show the source only, and their caption says so.
GRAPHVIZ = importlib.util.find_spec("graphviz") is not None and shutil.which("dot") is not None
# Model -> the figures that use it and where the paper shows its (Stan) code: Figure 3's
# model (Figure 2 of the paper), then the planned experiments' (their YAML's paper_code; ""
# for a model not in the paper). Each experiment's paper claim is checked here, before any
# job runs.
MODEL_USES = {"poisson_exponential": ["fig3_transformations"]}
PAPER_CODE = {"poisson_exponential": "Figure 2"}
for _experiment in PLAN.experiments:
    check_claim_id(_experiment.name, _experiment.claim_id)
    MODEL_USES.setdefault(_experiment.model, []).append(_experiment.figure)
    PAPER_CODE.setdefault(_experiment.model, _experiment.paper_code or "")
# The info.json of every planned run (beside its trace).
RUN_INFOS = [run.info for run in PLAN.runs]
# rule all: Figure 3, the pages of the models in use, the reproduction table and the page
# of the runs.
REPORT_FILES = [f"{FIG3}.png", f"{FIG3}.pdf", CLAIMS, CLAIMS_PAGE, RUNS_PAGE,
                *expand(MODEL_PAGE, model=MODEL_USES)]


rule fig3_transformations:
    output:
        png=report(
            f"{FIG3}.png",
            caption="../report/fig3_transformations.rst",
            category="Transformation (Figure 3)",
        ),
        pdf=f"{FIG3}.pdf",
        fit=f"{FIG3}_fit.csv",
    log:
        f"{RESULTS}/logs/fig3_transformations.log",
    params:
        seed=int(config["seeds"][0]),
    script:
        "../scripts/plot_transformations.py"


rule model_source:
    output:
        report(
            MODEL_PAGE,
            caption="../report/models.rst",
            category="Models",
            labels={"model": "{model}"},
        ),
    log:
        f"{RESULTS}/logs/model_source/{{model}}.log",
    wildcard_constraints:
        model=one_of(MODEL_USES),
    params:
        diagram=GRAPHVIZ,
        paper_code=lambda wildcards: PAPER_CODE[wildcards.model],
        figures=lambda wildcards: ", ".join(MODEL_USES.get(wildcards.model, [])),
    script:
        "../scripts/render_models.py"


rule claims:
    input:
        summaries=summary_files(),
        seeds=seed_summary_files(),
        infos=RUN_INFOS,
        transformation=f"{FIG3}_fit.csv",
    output:
        table=CLAIMS,
        page=report(
            CLAIMS_PAGE,
            caption="../report/claims.rst",
            category="Reproduction of the paper's claims",
        ),
    log:
        f"{RESULTS}/logs/claims.log",
    params:
        references=", ".join(f"{name}: {e.reference_method}" for name, e in EXPERIMENTS.items()),
        claim_ids=", ".join(f"{name}: {e.claim_id}" for name, e in EXPERIMENTS.items()),
        tolerance=TOLERANCE,
    script:
        "../scripts/claims.py"


rule runs_page:
    input:
        infos=RUN_INFOS,
    output:
        report(RUNS_PAGE, caption="../report/runs.rst", category="Runs of this report"),
    log:
        f"{RESULTS}/logs/runs_page.log",
    # the checkout's code, compared with each run's: a new commit redoes this page alone
    params:
        checkout=CHECKOUT,
    script:
        "../scripts/runs_page.py"
