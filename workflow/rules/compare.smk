# Upgrades: each framework's current cells against an earlier version's cells still on disk.


def _cell_files(framework, version):
    return sorted(glob.glob(f"results/cells/{framework}/{version}/*/*/b*.nc"))


def baseline_version(framework):
    """The configured baseline, else the most recently written earlier version on disk."""
    chosen = config["compare"]["baseline"].get(framework)
    if chosen:
        if not _cell_files(framework, chosen):
            raise ValueError(
                f"compare.baseline.{framework}: no cells for version {chosen!r} "
                f"under results/cells/{framework}/"
            )
        return chosen
    earlier = [
        Path(path).name
        for path in glob.glob(f"results/cells/{framework}/*")
        if Path(path).name != VERSION[framework]
        and _cell_files(framework, Path(path).name)
    ]
    if not earlier:
        return None
    newest = lambda version: max(
        os.path.getmtime(p) for p in _cell_files(framework, version)
    )
    return max(earlier, key=newest)


BASELINES = {fw: baseline_version(fw) for fw in FRAMEWORKS}
COMPARED = [fw for fw in FRAMEWORKS if BASELINES[fw]]


def current_cells(framework):
    return [
        "results/cells/{framework}/{version}/{mode}/{arch}/b{batch}.nc".format(**cell)
        for cell in CELLS
        if cell["framework"] == framework
    ]


rule compare_framework:
    input:
        old=lambda wildcards: _cell_files(
            wildcards.framework, BASELINES[wildcards.framework]
        ),
        new=lambda wildcards: current_cells(wildcards.framework),
    output:
        table="results/compare/{framework}.csv",
        figure=report(
            "results/compare/{framework}.png",
            caption="../report/compare.rst",
            category="inference",
        ),
    log:
        "results/logs/compare/{framework}.log",
    conda:
        "../../envs/analysis.yaml"
    resources:
        timing_slot=1,
    params:
        settings=lambda wildcards: dict(
            threshold_pct=config["compare"]["threshold_pct"],
            alpha=config["stats"]["alpha"],
            confidence=config["stats"]["confidence"],
            resamples=config["stats"]["bootstrap_resamples"],
            seed=config["seed"],
        ),
    script:
        "../scripts/compare.py"


rule compare:
    input:
        tables=expand("results/compare/{framework}.csv", framework=COMPARED),
    output:
        "results/compare/summary.md",
    log:
        "results/logs/compare/summary.log",
    conda:
        "../../envs/analysis.yaml"
    resources:
        timing_slot=1,
    script:
        "../scripts/compare_summary.py"
